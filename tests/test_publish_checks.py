"""Checks on the pull request (issue 59, DESIGN.md 20), through the real CLI on all five forges' fakes (every
request checked against the forge's API description; GitHub's GraphQL against its schema): the summary's checks
table (verdict, mode, name, reason; an override with who and why; carried said), one thread per failed check at
its first anchored evidence (a check without one in the summary, with its evidence), found again by its marker
on the next run; the forges' statuses (Azure's PR status, Bitbucket's Code Insights report) carry the checks.

The report is the publishing tests' real review (tests/review_report_case.py) with the checks' verdicts the
JSON report's `checks` list holds (ocr_hook.checks.model.verdict_as_dict).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import forked_cli
import pytest
from ci_repos import ci_free_env
from fake_azure import FakeAzure, Iteration
from fake_bitbucket import FakeBitbucket
from fake_gitea import FakeGitea
from fake_github import FakeGitHub
from fake_gitlab import FakeGitLab
from publish_support import ROUTING_OFF
from review_report_case import AFTER, LIB_AFTER, NEW_NAME, OLD_NAME, PATH, ReportCase, shared_case

from ocr_hook.checks.model import CheckVerdict, Evidence, Override, verdict_as_dict
from ocr_hook.publish.check_threads import check_key

TOKEN = "forgeTokenForTheChecksTests0123456789abcdef"
API_TESTS = CheckVerdict("api-tests", "block", "fail", "f3 changed its behaviour and no test calls it.",
                         ".ocr-hook/checks/api-tests.md",
                         (Evidence(PATH, "    return x * 3", 6, 6, True),
                          Evidence("tests/test_app.py", "def test_f3():", 0, 0, False, "not in the change")))
DOCS = CheckVerdict("docs-updated", "warn", "fail", "The README still says f3 adds.", ".ocr-hook/checks/docs.md",
                    (Evidence("README.md", "f3 adds three", 0, 0, False, "README.md is not in the change"),))
OWNED = CheckVerdict("owners", "block", "fail", "lib/ changes need an owner's word.", ".ocr-hook/checks/owners.md",
                     (Evidence(NEW_NAME, "VALUE_6 = 60", 6, 6, True),),
                     override=Override("lead", "agreed in the design review", "dismissed.yaml"))
CHANGELOG = CheckVerdict("changelog", "warn", "pass", "CHANGES.md has an entry.", ".ocr-hook/checks/changelog.md",
                         carried=True)
MIGRATIONS = CheckVerdict("migrations", "block", "not_applicable", "The change touches none of migrations/**.",
                          ".ocr-hook/checks/migrations.md")
CHECKS = [API_TESTS, DOCS, OWNED, CHANGELOG, MIGRATIONS]
MARKER = f"<!-- ocr-hook check={check_key('api-tests')} -->"


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> ReportCase:
    return shared_case(tmp_path_factory)


@pytest.fixture(scope="module")
def report(case: ReportCase) -> Path:
    return case.with_findings("with-checks", checks=[verdict_as_dict(v) for v in CHECKS])


def passing(case: ReportCase) -> Path:
    """The next push's report: api-tests passes now (a test was added)."""
    now = [API_TESTS._replace(verdict="pass", reason="tests/test_app.py calls f3.", evidence=()), *CHECKS[1:]]
    return case.with_findings("checks-pass", checks=[verdict_as_dict(v) for v in now])


def run(case: ReportCase, env: dict[str, str], report: Path) -> str:
    full = {k: v for k, v in ci_free_env(NO_PROXY="127.0.0.1,localhost").items()
            if not k.endswith("_TOKEN") and k != "SYSTEM_ACCESSTOKEN"}
    proc: subprocess.CompletedProcess[str] = forked_cli.run(
        ["publish", "--from", str(report)], cwd=case.repo, env={**full, **ROUTING_OFF, **env}, timeout=60,
        errors="replace")
    assert proc.returncode == 0 and proc.stdout == "" and "Traceback" not in proc.stderr, proc.stderr
    assert TOKEN not in proc.stderr
    [line] = proc.stderr.splitlines()
    return line


def assert_summary(body: str) -> None:
    """The checks table and the failed check without a line: what every forge's summary says."""
    assert "#### Checks" in body and "| Verdict | Mode | Check | Reason |" in body
    rows = {line.split("|")[3].strip(): line for line in body.splitlines() if line.startswith("| ") and "`" in line}
    assert set(rows) == {"`api-tests`", "`docs-updated`", "`owners`", "`changelog`", "`migrations`"}
    assert "❌ fail" in rows["`api-tests`"] and "| block |" in rows["`api-tests`"] and "see its thread" in rows[
        "`api-tests`"]
    assert "overridden by lead (dismissed.yaml): agreed in the design review" in rows["`owners`"]
    assert "carried from the last review" in rows["`changelog`"] and "✅ pass" in rows["`changelog`"]
    assert "not applicable" in rows["`migrations`"]
    listed = body.split("#### Failed checks not on a diff line", 1)[1]
    assert "`docs-updated`" in listed and "README.md is not in the change" in listed and "f3 adds three" in listed
    assert "`api-tests`" not in listed and "`owners`" not in listed  # a thread of its own; overridden


def assert_thread(body: str) -> None:
    assert body.startswith(MARKER + "\n**ocr-hook check** `api-tests` · ❌ fail · block")
    assert "no test calls it" in body and "    return x * 3" in body and "def test_f3():" in body
    assert "A maintainer who resolves this thread overrides this check" in body


# --- GitHub -------------------------------------------------------------------------------------------------


@pytest.fixture
def github(case: ReportCase) -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:  # every REST request against the description, GraphQL against the schema
        fake.tokens[TOKEN] = "write"
        fake.add_pull(7, case.head, {PATH: case.patch(PATH), NEW_NAME: case.patch(NEW_NAME)})
        yield fake


def github_env(fake: FakeGitHub, tmp: Path) -> dict[str, str]:
    event = tmp / "event.json"
    event.write_text(json.dumps({"number": 7, "pull_request": {"number": 7, "head": {"sha": fake.pulls[7].head_sha},
                                                               "base": {"ref": "main"}}}), encoding="utf-8")
    return {"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "octo/app", "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(event), "GITHUB_API_URL": fake.url, "GITHUB_TOKEN": TOKEN}


def test_github_a_thread_per_failed_check_and_the_table(case: ReportCase, report: Path, github: FakeGitHub,
                                                        tmp_path: Path) -> None:
    env = github_env(github, tmp_path)
    line = run(case, env, report)
    assert "5 check(s) in the body, 1 failed check thread(s)" in line, line
    thread = github.comment_starting(7, MARKER)
    assert (thread["path"], thread["line"]) == (PATH, 6)
    assert_thread(thread["body"])
    [review] = github.pulls[7].reviews
    assert_summary(review["body"])
    assert re.match(r"<!-- ocr-hook review exit=1 status=complete fingerprints=[0-9a-f,]* checks=[0-9a-f]{12} -->",
                    review["body"])
    # The next push: nothing new (the same checks): nothing posted; api-tests passes: its thread is resolved.
    assert "nothing new to publish" in run(case, env, report)
    assert "1 thread(s) resolved" in run(case, env, passing(case))
    assert github.pulls[7].threads[thread["id"]].resolved
    assert len([c for c in github.pulls[7].comments if c["body"].startswith(MARKER)]) == 1


# --- GitLab -------------------------------------------------------------------------------------------------


@pytest.fixture
def gitlab(case: ReportCase) -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        fake = server.fresh(TOKEN)
        fake.add_mr(3, case.head, case.base, [
            {"old_path": PATH, "new_path": PATH, "diff": case.patch(PATH), "new_file": False, "renamed_file": False,
             "deleted_file": False},
            {"old_path": OLD_NAME, "new_path": NEW_NAME, "diff": case.patch(NEW_NAME), "new_file": False,
             "renamed_file": True, "deleted_file": False}])
        yield fake
        server.assert_conforms()


def test_gitlab_a_discussion_per_failed_check_and_the_table(case: ReportCase, report: Path,
                                                            gitlab: FakeGitLab) -> None:
    env = {"GITLAB_CI": "true", "CI_API_V4_URL": gitlab.api, "CI_PROJECT_ID": "42", "CI_PROJECT_PATH": "group/app",
           "CI_MERGE_REQUEST_IID": "3", "CI_PIPELINE_SOURCE": "merge_request_event", "GITLAB_TOKEN": TOKEN}
    assert "1 failed check thread(s)" in run(case, env, report)
    mr = gitlab.mrs[3]
    [thread] = [d for d in mr.discussions if d["notes"][0]["body"].startswith(MARKER)]
    assert_thread(thread["notes"][0]["body"])
    assert (thread["notes"][0]["position"]["new_path"], thread["notes"][0]["position"]["new_line"]) == (PATH, 6)
    [note] = [d["notes"][0]["body"] for d in mr.discussions if d["notes"][0]["body"].startswith("<!-- ocr-hook review")]
    assert_summary(note)
    assert "1 thread(s) resolved" in run(case, env, passing(case))
    assert thread["notes"][0]["resolved"] is True
    assert len([d for d in mr.discussions if d["notes"][0]["body"].startswith(MARKER)]) == 1


# --- Gitea --------------------------------------------------------------------------------------------------


def test_gitea_a_comment_per_failed_check_and_the_table(case: ReportCase, report: Path, tmp_path: Path) -> None:
    with FakeGitea() as gitea:
        gitea.tokens[TOKEN] = "write"
        gitea.add_pull(7, case.head, case.unified)
        event = tmp_path / "event.json"
        event.write_text(json.dumps({"action": "synchronized", "number": 7, "pull_request": {
            "number": 7, "head": {"sha": case.head, "ref": "feature"}, "base": {"ref": "main"}}}), encoding="utf-8")
        env = {"GITEA_ACTIONS": "true", "GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "octo/app",
               "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event), "GITHUB_API_URL": gitea.api,
               "GITHUB_SERVER_URL": gitea.url, "GITEA_TOKEN": TOKEN, "GITHUB_REF": "refs/pull/7/head"}
        assert "1 failed check thread(s)" in run(case, env, report)
        comments = [c for cs in gitea.pulls[7].comments.values() for c in cs]
        [thread] = [c for c in comments if c["body"].startswith(MARKER)]
        assert_thread(thread["body"])
        assert (thread["path"], thread["position"]) == (PATH, 6)
        [review] = [r for r in gitea.pulls[7].reviews if r["body"].startswith("<!-- ocr-hook review")]
        assert_summary(review["body"])
        # Gitea's API cannot resolve: a check that passes again is said once in its thread.
        run(case, env, passing(case))
        run(case, env, passing(case))
        said = [c for cs in gitea.pulls[7].comments.values() for c in cs if "this check passes" in c["body"]]
        assert len(said) == 1 and (said[0]["path"], said[0]["position"]) == (PATH, 6)
        gitea.assert_conforms()


# --- Azure DevOps ---------------------------------------------------------------------------------------------


def test_azure_a_thread_per_failed_check_the_table_and_the_status(case: ReportCase, report: Path) -> None:
    from fake_azure import Change

    with FakeAzure() as azure:
        azure.tokens = {TOKEN: "write"}
        azure.add_pull(7, [Iteration(case.head, case.base, [Change("/" + PATH),
                                                            Change("/" + NEW_NAME, "edit, rename", "/" + OLD_NAME)])])
        azure.files = {(case.head, "/" + PATH): AFTER, (case.head, "/" + NEW_NAME): LIB_AFTER}
        env = {"TF_BUILD": "True", "SYSTEM_COLLECTIONURI": azure.collection_uri, "SYSTEM_TEAMPROJECT": "Fabrikam",
               "BUILD_REPOSITORY_ID": azure.repository_id, "BUILD_REPOSITORY_PROVIDER": "TfsGit",
               "SYSTEM_PULLREQUEST_PULLREQUESTID": "7", "SYSTEM_PULLREQUEST_SOURCECOMMITID": case.head,
               "SYSTEM_PULLREQUEST_TARGETBRANCH": "refs/heads/main",
               "SYSTEM_PULLREQUEST_SOURCEBRANCH": "refs/heads/feature", "SYSTEM_ACCESSTOKEN": TOKEN}
        assert "1 failed check thread(s)" in run(case, env, report)
        pull = azure.pulls[7]
        [thread] = [t for t in pull.threads if t["comments"][0]["content"].startswith(MARKER)]
        assert_thread(thread["comments"][0]["content"])
        assert thread["threadContext"]["filePath"] == "/app.py"
        assert thread["threadContext"]["rightFileStart"]["line"] == 6
        [general] = [t for t in pull.threads if t["comments"][0]["content"].startswith("<!-- ocr-hook review")]
        assert_summary(general["comments"][0]["content"])
        [status] = pull.statuses
        assert status["state"] == "failed"
        assert status["description"].endswith(
            "; checks: 3 fail, 1 pass, 1 not applicable; failed: api-tests, docs-updated, owners (overridden)")
        azure.assert_conforms()


# --- Bitbucket Cloud ------------------------------------------------------------------------------------------


@pytest.fixture
def bitbucket(case: ReportCase) -> Iterator[FakeBitbucket]:
    with FakeBitbucket() as fake:
        fake.tokens[TOKEN] = "write"
        fake.commits = {case.head}
        fake.files = {(case.head, PATH): (case.repo / PATH).read_text(), (case.head, NEW_NAME):
                      (case.repo / NEW_NAME).read_text()}
        yield fake
        fake.assert_conforms()


def bitbucket_env(case: ReportCase, fake: FakeBitbucket, **extra: str) -> dict[str, str]:
    return {"BITBUCKET_BUILD_NUMBER": "42", "BITBUCKET_WORKSPACE": "team", "BITBUCKET_REPO_SLUG": "app",
            "BITBUCKET_COMMIT": case.head, "BITBUCKET_BRANCH": "feature", "BITBUCKET_PR_ID": "7",
            "BITBUCKET_PR_DESTINATION_BRANCH": "main", "BITBUCKET_API_URL": fake.api_url,
            "BITBUCKET_ACCESS_TOKEN": TOKEN, **extra}


def test_bitbucket_the_report_carries_the_checks_and_a_failed_ones_annotation(
        case: ReportCase, report: Path, bitbucket: FakeBitbucket) -> None:
    run(case, bitbucket_env(case, bitbucket), report)
    posted = bitbucket.reports[(case.head, "ocr-hook")]
    data = {d["title"]: d["value"] for d in posted["data"]}
    assert data["Checks blocking"] == 1 and "failed: api-tests, docs-updated, owners (overridden)" in data["Checks"]
    assert "Checks: " in posted["details"]
    annotations = bitbucket.annotations[(case.head, "ocr-hook")]
    check = annotations[check_key("api-tests")]
    assert (check["path"], check["line"], check["severity"]) == (PATH, 6, "HIGH")
    assert "check api-tests · fail · block" in check["summary"] and "return x * 3" in check["details"]
    docs = annotations[check_key("docs-updated")]
    assert "line" not in docs and "path" not in docs  # no evidence on a line: on the report itself
    assert check_key("owners") not in annotations  # overridden


def test_bitbucket_pull_request_comments_a_thread_per_failed_check(case: ReportCase, report: Path,
                                                                   bitbucket: FakeBitbucket) -> None:
    bitbucket.add_pull(7, case.head, case.base, case.unified)
    env = bitbucket_env(case, bitbucket, OCR_HOOK_BITBUCKET_COMMENTS="true")
    assert "1 failed check thread(s)" in run(case, env, report)
    thread = bitbucket.comment_with(7, MARKER)
    assert_thread(thread["content"]["raw"])
    assert thread["inline"] == {"path": PATH, "to": 6}
    summary = bitbucket.comment_with(7, "<!-- ocr-hook review")
    assert_summary(summary["content"]["raw"])
    assert "failed: api-tests" in bitbucket.reports[(case.head, "ocr-hook")]["details"]
    assert "1 thread(s) resolved" in run(case, env, passing(case))
    assert bitbucket.comment_with(7, MARKER).get("resolution")
