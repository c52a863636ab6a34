"""Linked tickets through the real CLI on GitLab, Azure DevOps, Gitea and Bitbucket Cloud, with Jira (issue 60).

One repository, reviewed once per forge in its CI (the forge's variables, its fake on 127.0.0.1, every request
checked against its API description), with one fake Messages API for the module. The trusted settings (the base
revision) make `linked-issues` a block check and name the fake Jira (https, the test CA) with project ABC; the
pull request's own settings name another Jira and project EVIL, which no run ever reaches. Each review's checks
pass answers with a requirement not met: the check fails with the tickets each forge linked, and the gate fails.
On main there is no linked-issues check and no ticket read: every test here fails there by construction.
"""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import forked_cli
import pytest
from agent_support import main_opening
from ci_repos import ci_free_env
from fake_api import FakeMessagesAPI, Reply, task_done, tool_use
from fake_azure import Change, FakeAzure, Iteration
from fake_bitbucket import FakeBitbucket
from fake_gitea import FakeGitea
from fake_gitlab import FakeGitLab
from fake_jira import FakeJira
from gitrepo import commit_all, git, make_repo, write
from publish_support import ROUTING_OFF, messages_env

TLS = Path(__file__).parent / "data" / "tls"
PATH = "auth.py"
BEFORE = "def login(user, password):\n    return check(user, password)\n"
AFTER = ("def login(user, password):\n    if not password:\n        raise ValueError('empty')\n"
         "    return check(user, password)\n")
TRUSTED = "tickets:\n  mode: block\n  jira:\n    url: {jira}\n    projects: [ABC]\n"
OWN = "tickets:\n  mode: 'off'\n  jira:\n    url: https://127.0.0.1:{port}\n    projects: [ABC, EVIL]\n"
CRITERIA = "Acceptance criteria:\n- refuse an empty password\n- lock after five failures\n"
ADF = {"type": "doc", "version": 1, "content": [{"type": "paragraph", "content": [{"type": "text", "text": CRITERIA}]}]}
EMAIL, JIRA_TOKEN = "ci@example.com", "ATATT3x-jiraTokenForTheCliTests"
TOKENS = {"gitlab": "glpat-ticketsCli0123456789", "azure": "az-ticketsCliToken", "gitea": "gitea-ticketsCliToken",
          "bitbucket": "bb-ticketsCliToken"}
PASS_OPENING = "Evaluate the team's checks"


class World:
    def __init__(self, root: Path, api: FakeMessagesAPI, jira: FakeJira) -> None:
        self.root, self.api, self.jira = root, api, jira
        self.evil = socket.socket()  # the Jira the pull request's own settings name: nothing may connect
        self.evil.bind(("127.0.0.1", 0))
        self.evil.listen(4)
        self.evil.setblocking(False)
        self.repo = make_repo(root / "repo")
        write(self.repo, PATH, BEFORE)
        write(self.repo, ".ocr-hook.yaml", TRUSTED.format(jira=jira.url))
        self.base = commit_all(self.repo, "base")
        git(self.repo, "checkout", "-q", "-b", "login-rules")
        write(self.repo, PATH, AFTER)
        write(self.repo, ".ocr-hook.yaml", OWN.format(port=self.evil.getsockname()[1]))
        self.head = commit_all(self.repo, "login: refuse an empty password (EVIL-1)")
        self.diff = git(self.repo, "diff", "main", "login-rules")
        jira.cloud = (EMAIL, JIRA_TOKEN)
        jira.add_issue("ABC-7", "Lock accounts", ADF)
        jira.add_issue("EVIL-1", "never read", None)
        api.script(main_opening(PATH), [task_done()])
        self.runs = 0

    def review(self, env: dict[str, str], keys: list[str]) -> dict[str, Any]:
        """One review in a forge's CI whose checks pass says each ticket in `keys` has a requirement not met."""
        requirements = [{"ticket": key, "requirement": f"what {key} asks", "status": "not_met",
                         "reason": "Nothing in the change does it.", "evidence": []} for key in keys]
        self.api.script(PASS_OPENING, [Reply([tool_use("check_verdict", {
            "check": "linked-issues", "verdict": "fail", "reason": "A requirement is not met.", "evidence": [],
            "requirements": requirements})]), task_done()])
        self.runs += 1
        out = self.root / f"run{self.runs}.json"
        full = {k: v for k, v in ci_free_env(NO_PROXY="127.0.0.1,localhost").items()
                if not k.endswith("_TOKEN") and not k.startswith(("ANTHROPIC_", "JIRA_"))}
        full.update({**ROUTING_OFF, **messages_env(self.api), "SSL_CERT_FILE": str(TLS / "ca.pem"),
                     "JIRA_EMAIL": EMAIL, "JIRA_API_TOKEN": JIRA_TOKEN,
                     "OCR_HOOK_CACHE_DIR": str(self.root / f"cache{self.runs}"), **env})
        proc: subprocess.CompletedProcess[str] = forked_cli.run(
            ["review", "--base", "main", "--no-review-filter", "--filter-mode", "nofilter", "--format", "text",
             "--json-output", str(out)], cwd=self.repo, env=full, timeout=120, errors="replace")
        assert "Traceback" not in proc.stderr, proc.stderr
        assert not any(token in proc.stdout + proc.stderr for token in (*TOKENS.values(), JIRA_TOKEN))
        assert proc.returncode == 1, proc.stdout + proc.stderr  # the block check failed
        report = json.loads(out.read_text(encoding="utf-8"))
        return {"text": proc.stdout + proc.stderr, "json": report,
                "check": next(c for c in report["checks"] if c["name"] == "linked-issues")}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with FakeMessagesAPI() as api, FakeJira(tls=(TLS / "server.pem", TLS / "server.key")) as jira:
        yield World(tmp_path_factory.mktemp("tickets-forges"), api, jira)
        jira.assert_conforms()


def keys(check: dict[str, Any]) -> list[str]:
    return [t["key"] for t in check["tickets"]]


def jira_reads(world: World) -> list[str]:
    reads = [r.path for r in world.jira.requests]
    world.jira.reset()
    return reads


def test_gitlab_closing_issue_and_a_jira_key_fail_the_check(world: World) -> None:
    with FakeGitLab() as gitlab:
        gitlab.fresh(TOKENS["gitlab"], "ocr-bot")
        gitlab.add_mr(3, world.head, world.base, [{"old_path": PATH, "new_path": PATH, "diff": world.diff,
                                                  "new_file": False, "renamed_file": False, "deleted_file": False}])
        gitlab.add_issue(1, "Refuse empty passwords", CRITERIA)
        gitlab.mrs[3].closes = [("group/app", 1)]
        got = world.review({"GITLAB_CI": "true", "CI_API_V4_URL": gitlab.api, "CI_PROJECT_ID": "42",
                            "CI_PROJECT_PATH": "group/app", "CI_MERGE_REQUEST_IID": "3",
                            "CI_MERGE_REQUEST_TITLE": "Login rules", "GITLAB_TOKEN": TOKENS["gitlab"],
                            "CI_MERGE_REQUEST_DESCRIPTION": "Closes #1. Also ABC-7; hashed with SHA-256."},
                           ["#1", "ABC-7"])
        assert any(r.path.endswith("/merge_requests/3/closes_issues") for r in gitlab.requests)
        gitlab.assert_conforms()
    assert (got["check"]["verdict"], got["check"]["mode"]) == ("fail", "block")
    assert keys(got["check"]) == ["#1", "ABC-7"]
    assert got["check"]["tickets"][1]["url"] == f"{world.jira.url}/browse/ABC-7"
    assert jira_reads(world) == ["/rest/api/3/issue/ABC-7"]  # EVIL-1 (the commit) is not a listed project
    with pytest.raises(BlockingIOError):
        world.evil.accept()  # the pull request's own tickets.jira.url was never reached


def test_azure_linked_work_item_and_ab_reference_fail_the_check(world: World) -> None:
    with FakeAzure() as azure:
        azure.tokens[TOKENS["azure"]] = "write"
        pull = azure.add_pull(7, [Iteration(world.head, world.base, [Change("/" + PATH)])])
        pull.work_items, pull.description = [77], "Also AB#79."
        azure.work_items = {77: {"System.Title": "Refuse empty passwords", "System.Description": "<p>Refuse</p>",
                                 "Microsoft.VSTS.Common.AcceptanceCriteria": "<ul><li>refuse</li></ul>"},
                            79: {"System.Title": "Lock accounts", "System.Description": "<p>Lock</p>"}}
        got = world.review({"TF_BUILD": "True", "SYSTEM_COLLECTIONURI": azure.collection_uri,
                            "SYSTEM_TEAMPROJECT": "Fabrikam", "BUILD_REPOSITORY_ID": azure.repository_id,
                            "BUILD_REPOSITORY_PROVIDER": "TfsGit", "SYSTEM_PULLREQUEST_PULLREQUESTID": "7",
                            "SYSTEM_PULLREQUEST_SOURCECOMMITID": world.head,
                            "SYSTEM_PULLREQUEST_SOURCEBRANCH": "refs/heads/login-rules",
                            "SYSTEM_PULLREQUEST_TARGETBRANCH": "refs/heads/main",
                            "SYSTEM_ACCESSTOKEN": TOKENS["azure"]}, ["AB#77", "AB#79"])
        azure.assert_conforms()
    assert got["check"]["verdict"] == "fail" and keys(got["check"]) == ["AB#77", "AB#79"]
    assert got["check"]["tickets"][0]["url"] == f"{azure.collection_uri}Fabrikam/_workitems/edit/77"
    assert jira_reads(world) == []


def test_gitea_referenced_issue_fails_the_check(world: World) -> None:
    with FakeGitea() as gitea:
        gitea.tokens[TOKENS["gitea"]] = "write"
        gitea.add_pull(3, world.head, world.diff)
        gitea.add_issue(5, "Refuse empty passwords", CRITERIA)
        event = world.root / "gitea-event.json"
        event.write_text(json.dumps({"number": 3, "pull_request": {
            "number": 3, "title": "Login rules", "body": "Fixes #5.", "head": {"sha": world.head, "ref": "login-rules"},
            "base": {"ref": "main"}}}), encoding="utf-8")
        got = world.review({"GITEA_ACTIONS": "true", "GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "octo/app",
                            "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
                            "GITHUB_API_URL": gitea.api, "GITEA_TOKEN": TOKENS["gitea"]}, ["#5"])
        assert any(r.path == "/api/v1/repos/octo/app/issues/5" for r in gitea.requests)
        gitea.assert_conforms()
    assert got["check"]["verdict"] == "fail" and keys(got["check"]) == ["#5"]
    assert jira_reads(world) == []


def test_bitbucket_jira_key_in_the_title_fails_the_check_and_its_issues_are_not_read(world: World) -> None:
    with FakeBitbucket() as bitbucket:
        bitbucket.tokens[TOKENS["bitbucket"]] = "write"
        bitbucket.add_pull(7, world.head, world.base, world.diff)
        bitbucket.pulls[7].update(title="ABC-7: login rules", description="Hashes with SHA-256.")
        got = world.review({"BITBUCKET_BUILD_NUMBER": "42", "BITBUCKET_WORKSPACE": "team",
                            "BITBUCKET_REPO_SLUG": "app", "BITBUCKET_COMMIT": world.head,
                            "BITBUCKET_BRANCH": "login-rules", "BITBUCKET_PR_ID": "7",
                            "BITBUCKET_PR_DESTINATION_BRANCH": "main", "BITBUCKET_API_URL": bitbucket.api_url,
                            "BITBUCKET_ACCESS_TOKEN": TOKENS["bitbucket"]}, ["ABC-7"])
        bitbucket.assert_conforms()
    assert got["check"]["verdict"] == "fail" and keys(got["check"]) == ["ABC-7"]
    assert any("Bitbucket Cloud's own issues are not read" in n for n in got["json"]["notes"])
    assert jira_reads(world) == ["/rest/api/3/issue/ABC-7"]
