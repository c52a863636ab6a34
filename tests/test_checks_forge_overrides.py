"""A maintainer's resolve of a failed check's thread is that check's override; the pull request's author's is not
(issue 59 item 6, DESIGN.md 18 and 20), on all five forges, through the real CLI: `review` (the real checks pass,
the real SDK, the scripted fake Messages API) → `publish` (one thread per failed check) → people act on the
forge's fake (every request checked against its API description; GitHub's GraphQL against its schema) → the
next `review` in that forge's CI reads the threads: the maintainer's check is overridden (who, their reply as the
reason, the forge), the author's still fails and still blocks.

Two `block` checks fail, each with evidence on a changed line: `api-tests` (a maintainer resolves its thread)
and `changelog` (the author resolves its). The first review is paid once; every later one reads its verdicts
from the cache (the same inputs), so only the forge's threads differ.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import forked_cli
import pytest
from agent_support import main_opening
from ci_repos import ci_free_env
from fake_api import FakeMessagesAPI, Reply, task_done, tool_use
from gitrepo import commit_all, git, make_repo, write
from publish_support import AFTER, BEFORE, PATH, ROUTING_OFF, messages_env

from ocr_hook.publish.check_threads import check_key

TOKEN = "forgeTokenForTheOverrideTests0123456789abcd"
API_TESTS, CHANGELOG = "api-tests", "changelog"
CHECK = "---\npaths: [\"app.py\"]\nmode: block\n---\n{}\n"
REASON = "The spec owner agreed: f3's test lands with the next change."
PASS_OPENING = "Evaluate the team's checks"


def marker(name: str) -> str:
    return f"<!-- ocr-hook check={check_key(name)} -->"


class World:
    def __init__(self, root: Path, api: FakeMessagesAPI) -> None:
        self.root, self.api = root, api
        self.repo = make_repo(root / "repo")
        write(self.repo, PATH, BEFORE)
        write(self.repo, ".ocr-hook/checks/api-tests.md", CHECK.format("Every changed function has a test."))
        write(self.repo, ".ocr-hook/checks/changelog.md", CHECK.format("A behaviour change has a CHANGES.md entry."))
        self.base = commit_all(self.repo, "base")
        git(self.repo, "checkout", "-q", "-b", "feature")
        write(self.repo, PATH, AFTER)
        self.head = commit_all(self.repo, "feature")
        diff = git(self.repo, "diff", "main...feature")
        self.unified, self.patch = diff, diff[diff.index("@@"):]
        api.script(main_opening(PATH), [task_done()])
        api.script(PASS_OPENING, [Reply([
            tool_use("check_verdict", {"check": API_TESTS, "verdict": "fail", "reason": "f3 changed; no test calls it.",
                                       "evidence": [{"path": PATH, "code": "    return x * 3"}]}),
            tool_use("check_verdict", {"check": CHANGELOG, "verdict": "fail", "reason": "No CHANGES.md entry.",
                                       "evidence": [{"path": PATH, "code": "    return x - 2"}]})]),
            task_done()])
        self.runs = 0
        self.first, self.report = self.review({}, 1)

    def cli(self, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        full = {k: v for k, v in ci_free_env(NO_PROXY="127.0.0.1,localhost").items()
                if not k.endswith("_TOKEN") and k != "SYSTEM_ACCESSTOKEN" and not k.startswith("ANTHROPIC_")}
        full.update({**ROUTING_OFF, **messages_env(self.api), "OCR_HOOK_CACHE_DIR": str(self.root / "cache"), **env})
        proc = forked_cli.run(list(args), cwd=self.repo, env=full, timeout=120, errors="replace")
        assert "Traceback" not in proc.stderr and TOKEN not in proc.stdout + proc.stderr, proc.stderr
        return proc

    def review(self, env: dict[str, str], expected: int) -> tuple[dict[str, Any], Path]:
        self.runs += 1
        out = self.root / f"run{self.runs}.json"
        proc = self.cli(env, "review", "--base", "main", "--no-review-filter", "--filter-mode", "nofilter", "-q",
                        "--format", "json", "--json-output", str(out))
        assert proc.returncode == expected, proc.stderr
        return json.loads(out.read_text(encoding="utf-8")), out

    def publish(self, env: dict[str, str]) -> str:
        proc = self.cli(env, "publish", "--from", str(self.report))
        assert proc.returncode == 0 and "2 failed check thread(s)" in proc.stderr, proc.stderr
        return proc.stderr

    def overridden(self, env: dict[str, str], by: str, where: str, expected: int = 1) -> dict[str, Any]:
        """The next review in that forge's CI: api-tests overridden by `by` with the reason; changelog not."""
        report, _ = self.review(env, expected)
        checks = {c["name"]: c for c in report["checks"]}
        assert checks[API_TESTS]["verdict"] == "fail" and checks[API_TESTS]["override"] == {
            "by": by, "reason": REASON, "where": where}
        if expected == 1:
            assert checks[CHANGELOG]["override"] is None  # the author's resolve: nothing
            assert "blocking check" in report["verdict"]
        return checks


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with FakeMessagesAPI() as api:
        yield World(tmp_path_factory.mktemp("checks-overrides"), api)


def test_the_first_review_fails_on_two_block_checks(world: World) -> None:
    checks = {c["name"]: c for c in world.first["checks"]}
    assert {n: (c["verdict"], c["mode"], c["evidence"][0]["start_line"]) for n, c in checks.items()} == {
        API_TESTS: ("fail", "block", 6), CHANGELOG: ("fail", "block", 4)}


def test_github(world: World, tmp_path: Path) -> None:
    from fake_github import FakeGitHub

    with FakeGitHub() as github:
        github.tokens[TOKEN] = "write"
        pull = github.add_pull(7, world.head, {PATH: world.patch})
        pull.author = "contributor"
        github.associations.update({"maint": "MEMBER", "contributor": "CONTRIBUTOR"})
        github.permissions.update({"maint": "write", "contributor": "write"})
        event = tmp_path / "event.json"
        event.write_text(json.dumps({"number": 7, "pull_request": {"number": 7, "head": {"sha": world.head},
                                                                   "base": {"ref": "main"}}}), encoding="utf-8")
        env = {"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "octo/app", "GITHUB_EVENT_NAME": "pull_request",
               "GITHUB_EVENT_PATH": str(event), "GITHUB_API_URL": github.url, "GITHUB_TOKEN": TOKEN,
               "GITHUB_REF": "refs/pull/7/merge"}
        world.publish(env)
        tested, logged = (github.comment_starting(7, marker(n)) for n in (API_TESTS, CHANGELOG))
        assert (tested["path"], tested["line"], logged["line"]) == (PATH, 6, 4)
        github.reply_in_thread(7, tested["id"], REASON, "maint")
        github.resolve_thread(7, tested["id"], "maint")
        github.resolve_thread(7, logged["id"], "contributor")
        world.overridden(env, "maint", "github")
        # The maintainer resolves the other one too: the gate passes, each check overridden on its own.
        github.resolve_thread(7, logged["id"], "maint")
        checks = world.overridden(env, "maint", "github", expected=0)
        assert checks[CHANGELOG]["override"] == {"by": "maint", "reason": "resolved the check's thread",
                                                 "where": "github"}
    # `outcomes` counts the checks from the reviews' history: per change (the first review's line of work, pull
    # request 7) each check's latest verdict: failed there, overridden here.
    outcomes = world.cli({}, "outcomes", "--format", "json")
    assert outcomes.returncode == 0, outcomes.stderr
    by_check = json.loads(outcomes.stdout)["checks"]["by_check"]
    assert {n: (c["changes"], c["fail"], c["overridden"], c["override_rate"]) for n, c in by_check.items()} == {
        API_TESTS: (2, 1, 1, 0.5), CHANGELOG: (2, 1, 1, 0.5)}


def test_gitlab(world: World) -> None:
    from fake_gitlab import FakeGitLab

    with FakeGitLab() as server:
        gitlab = server.fresh(TOKEN)
        gitlab.add_mr(3, world.head, world.base, [{"old_path": PATH, "new_path": PATH, "diff": world.patch,
                                                    "new_file": False, "renamed_file": False, "deleted_file": False}])
        gitlab.person("dev", access=40)  # the request's author: a maintainer, and still not their own judge
        gitlab.person("maria", access=40)
        env = {"GITLAB_CI": "true", "CI_API_V4_URL": gitlab.api, "CI_PROJECT_ID": "42", "CI_PROJECT_PATH": "group/app",
               "CI_MERGE_REQUEST_IID": "3", "CI_PIPELINE_SOURCE": "merge_request_event", "GITLAB_TOKEN": TOKEN}
        world.publish(env)
        gitlab.reply_as(3, check_key(API_TESTS), "maria", REASON)
        gitlab.resolve_as(3, check_key(API_TESTS), "maria")
        gitlab.resolve_as(3, check_key(CHANGELOG), "dev")
        world.overridden(env, "maria", "gitlab")
        server.assert_conforms()


def test_gitea(world: World, tmp_path: Path) -> None:
    from fake_gitea import FakeGitea

    with FakeGitea() as gitea:
        gitea.tokens[TOKEN] = "admin"  # Gitea tells a repository administrator's token who may write
        gitea.add_pull(7, world.head, world.unified)
        gitea.permissions.update({"maint": "write", "author": "admin"})
        event = tmp_path / "event.json"
        event.write_text(json.dumps({"action": "synchronized", "number": 7, "pull_request": {
            "number": 7, "head": {"sha": world.head, "ref": "feature"}, "base": {"ref": "main"}}}), encoding="utf-8")
        env = {"GITEA_ACTIONS": "true", "GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "octo/app",
               "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event), "GITHUB_API_URL": gitea.api,
               "GITHUB_SERVER_URL": gitea.url, "GITEA_TOKEN": TOKEN, "GITHUB_REF": "refs/pull/7/head"}
        world.publish(env)
        tested, logged = (gitea.comment_at(7, check_key(n)) for n in (API_TESTS, CHANGELOG))
        gitea.person_comment(7, PATH, 6, REASON, "maint")
        gitea.resolve(tested, "maint")
        gitea.resolve(logged, "author", uid=21)  # the pull request's own author, an administrator at that
        world.overridden(env, "maint", "gitea")
        gitea.assert_conforms()


def test_azure(world: World) -> None:
    from fake_azure import AUTHOR, Change, FakeAzure, Iteration, person

    member = person(3, "A Member")
    with FakeAzure() as azure:
        azure.tokens = {TOKEN: "write"}
        azure.add_pull(7, [Iteration(world.head, world.base, [Change("/" + PATH)])])
        azure.files = {(world.head, "/" + PATH): AFTER}
        env = {"TF_BUILD": "True", "SYSTEM_COLLECTIONURI": azure.collection_uri, "SYSTEM_TEAMPROJECT": "Fabrikam",
               "BUILD_REPOSITORY_ID": azure.repository_id, "BUILD_REPOSITORY_PROVIDER": "TfsGit",
               "SYSTEM_PULLREQUEST_PULLREQUESTID": "7", "SYSTEM_PULLREQUEST_SOURCECOMMITID": world.head,
               "SYSTEM_PULLREQUEST_TARGETBRANCH": "refs/heads/main",
               "SYSTEM_PULLREQUEST_SOURCEBRANCH": "refs/heads/feature", "SYSTEM_ACCESSTOKEN": TOKEN}
        world.publish(env)
        threads = {t["comments"][0]["content"].split("\n", 1)[0]: t for t in azure.pulls[7].threads}
        tested, logged = threads[marker(API_TESTS)], threads[marker(CHANGELOG)]
        # Azure records no author for a status: the member sets it, then says so with the documented phrase
        azure.set_status(tested, "byDesign")
        azure.reply(tested, f"/ocr-hook dismiss {REASON}", member)
        azure.set_status(logged, "wontFix")  # the pull request's author, phrase and all: never an override
        azure.reply(logged, "/ocr-hook dismiss Not needed.", AUTHOR)
        world.overridden(env, member["id"], "azure")
        [status] = azure.pulls[7].statuses
        assert "checks: 2 fail; failed: api-tests, changelog" in status["description"]
        azure.assert_conforms()


def test_bitbucket(world: World) -> None:
    from fake_bitbucket import AUTHOR, FakeBitbucket, account

    member = account(3, "A Member")
    with FakeBitbucket() as bitbucket:
        bitbucket.tokens[TOKEN] = "write"
        bitbucket.commits = {world.head}
        bitbucket.files = {(world.head, PATH): AFTER}
        bitbucket.add_pull(7, world.head, world.base, world.unified)
        bitbucket.permissions.update({member["uuid"]: "write", AUTHOR["uuid"]: "admin"})
        env = {"BITBUCKET_BUILD_NUMBER": "42", "BITBUCKET_WORKSPACE": "team", "BITBUCKET_REPO_SLUG": "app",
               "BITBUCKET_COMMIT": world.head, "BITBUCKET_BRANCH": "feature", "BITBUCKET_PR_ID": "7",
               "BITBUCKET_PR_DESTINATION_BRANCH": "main", "BITBUCKET_API_URL": bitbucket.api_url,
               "BITBUCKET_ACCESS_TOKEN": TOKEN, "OCR_HOOK_BITBUCKET_COMMENTS": "true"}
        world.publish(env)
        tested, logged = (bitbucket.comment_with(7, marker(n)) for n in (API_TESTS, CHANGELOG))
        bitbucket.tokens[TOKEN] = "admin"  # a workspace administrator's token tells who may write
        bitbucket.person_comment(7, REASON, member, parent=tested)
        bitbucket.person_resolve(tested, member)
        bitbucket.person_resolve(logged, AUTHOR)
        world.overridden(env, member["uuid"], "bitbucket")
        bitbucket.assert_conforms()
