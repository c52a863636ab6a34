"""Checks (DESIGN.md 20) through the real CLI on a real repository, the real SDK and the fake Messages API.

One branch adds an endpoint without a test and weakens the check that gates it (`mode: off`); the trusted
check still blocks. Later runs: unchanged (no request), a push outside the check's paths (not asked again), an
evaluation that never answers (inconclusive, never pass), and an override (`dismiss --check`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hermetic
import pytest
from conftest import TEST_API_KEY, _isolate_sdk
from fake_api import FakeMessagesAPI, Fault, Reply, check_verdict, task_done
from gitrepo import commit_all, git, make_repo, run_cli, write
from validators import schema_errors, validate_gitlab

ENDPOINT_CHECK = ("---\npaths: [\"api/**\"]\nmode: block\n---\n"
                  "Every new HTTP endpoint in api/ has a test under tests/ that calls it.\n")
DOCS_CHECK = "---\npaths: [\"docs/**\"]\nmode: warn\n---\nNew settings are documented.\n"
ROUTE = '@app.get("/users")'
PASS_OPENING = "Evaluate the team's checks"
INTENT = "Adds the users endpoint."


def _fail_verdict() -> Reply:
    return check_verdict("endpoint-test", "fail", "api/users.py adds GET /users and no test calls it.",
                         [("api/users.py", ROUTE), ("api/users.py", "not in the file")])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    mp = pytest.MonkeyPatch()
    fake = FakeMessagesAPI()
    _isolate_sdk(mp, fake.url)
    mp.setenv("ANTHROPIC_API_KEY", TEST_API_KEY)
    tmp = tmp_path_factory.mktemp("checks-e2e")
    env = hermetic.home_env(tmp / "home")  # one HOME, so one result cache, for every run of the module
    repo = make_repo(tmp / "repo")
    write(repo, ".ocr-hook/checks/endpoint-test.md", ENDPOINT_CHECK)
    write(repo, ".ocr-hook/checks/docs-settings.md", DOCS_CHECK)
    write(repo, "api/__init__.py", "")
    write(repo, "README.md", "app\n")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "api/users.py", f"from api import app\n\n\n{ROUTE}\ndef users():\n    return []\n")
    write(repo, ".ocr-hook/checks/endpoint-test.md", "---\nmode: off\n---\nNothing to check.\n")  # the PR weakens it
    write(repo, "api/.env", "API_TOKEN=hunter2-never-sent\n")  # sensitive: under the check's paths, never sent
    commit_all(repo, "users endpoint")
    fake.script(PASS_OPENING, [_fail_verdict(), task_done()])
    sarif = tmp / "out.sarif"
    args = ("review", "--base", "main", "--intent", INTENT)
    gitlab = tmp / "gl.json"
    first = run_cli(repo, *args, "--format", "json", "--sarif-output", str(sarif), "--gitlab-output", str(gitlab),
                    env=env)
    first_requests = list(fake.requests)
    text = run_cli(repo, *args, env=env)  # unchanged: every verdict from the cache
    text_requests = fake.requests[len(first_requests):]
    yield {"repo": repo, "fake": fake, "first": first, "first_requests": first_requests, "sarif": sarif,
           "text": text, "text_requests": text_requests, "gitlab": gitlab, "args": args, "env": env}
    fake.close()
    mp.undo()


def test_a_failed_block_check_fails_the_gate_in_json(world: Any) -> None:
    first = world["first"]
    assert first.returncode == 1, first.stderr
    report = json.loads(first.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    gated = checks["endpoint-test"]
    assert (gated["verdict"], gated["mode"], gated["changed_in_change"]) == ("fail", "block", True)
    anchored, lost = gated["evidence"]
    assert (anchored["path"], anchored["start_line"], anchored["anchored"]) == ("api/users.py", 4, True)
    assert lost["anchored"] is False and "not located" in lost["note"]
    assert checks["docs-settings"]["verdict"] == "not_applicable"
    assert "blocking check" in report["verdict"]
    assert any("takes effect after merge" in n for n in report["notes"])


def test_only_applicable_checks_reach_the_model_with_a_strict_enum(world: Any) -> None:
    asked = [r for r in world["first_requests"] if PASS_OPENING in r.first_user_text]
    assert len(asked) == 2  # the verdict, then task_done
    tools = {t["name"]: t for t in asked[0].body["tools"]}
    schema = tools["check_verdict"]["input_schema"]
    assert tools["check_verdict"]["strict"] is True
    assert schema["properties"]["check"]["enum"] == ["endpoint-test"]  # docs-settings: not applicable, not sent
    assert schema["properties"]["verdict"]["enum"] == ["pass", "fail", "inconclusive", "not_applicable"]
    assert "code_comment" not in tools and {"file_read", "code_search", "task_done"} <= set(tools)
    checks_part = asked[0].first_user_text.split("# The checks")[1].split("# The change")[0]
    assert "Every new HTTP endpoint" in checks_part and "Nothing to check" not in checks_part  # the trusted one
    assert "api/.env" in asked[0].first_user_text and "hunter2" not in json.dumps(asked[0].body)


def test_sarif_has_the_check_rule_and_a_result_at_the_anchored_line(world: Any) -> None:
    log = json.loads(world["sarif"].read_text())
    assert schema_errors(log) == []  # (GitHub's rules are checked on such results in test_reports_sarif.py)
    run = log["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert "Every new HTTP endpoint" in rules["ocr-hook/check/endpoint-test"]["help"]["text"]
    results = [r for r in run["results"] if r["ruleId"] == "ocr-hook/check/endpoint-test"]
    assert [(r["level"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] == \
        [("error", 4)]


def test_gitlab_code_quality_has_the_failed_check_at_its_evidence(world: Any) -> None:
    entries = json.loads(world["gitlab"].read_text())
    validate_gitlab(entries)
    found = [e for e in entries if e["check_name"] == "ocr-hook/check/endpoint-test"]
    assert [(e["location"]["path"], e["location"]["lines"]["begin"], e["severity"]) for e in found] == [
        ("api/users.py", 4, "major")]


def test_a_rerun_sends_nothing_and_says_the_verdict_was_carried(world: Any) -> None:
    text = world["text"]
    assert text.returncode == 1, text.stderr
    assert world["text_requests"] == []
    assert "FAIL [block] endpoint-test" in text.stdout and "carried" in text.stdout
    assert "N/A [warn] docs-settings" in text.stdout
    # A run blocked by a check says how to override it, with the scope the review had (pasted as printed).
    assert "a check does not hold for this change?" in text.stdout
    assert 'ocr-hook dismiss --check endpoint-test --base main --reason "..."' in text.stdout


def test_a_push_outside_the_check_s_paths_does_not_ask_it_again(world: Any) -> None:
    repo, fake = world["repo"], world["fake"]
    write(repo, "README.md", "app, now with users\n")
    commit_all(repo, "readme")
    before = len(fake.requests)
    proc = run_cli(repo, *world["args"], "--format", "json", env=world["env"])
    assert proc.returncode == 1, proc.stderr
    assert len(fake.requests) > before  # README.md was reviewed
    assert not any(PASS_OPENING in r.first_user_text for r in fake.requests[before:])
    verdict = next(c for c in json.loads(proc.stdout)["checks"] if c["name"] == "endpoint-test")
    assert (verdict["verdict"], verdict["carried"]) == ("fail", True)


def test_a_pass_that_never_answers_is_inconclusive_never_pass(world: Any) -> None:
    repo, fake = world["repo"], world["fake"]
    fake.script(PASS_OPENING, [task_done()])
    try:
        proc = run_cli(repo, *world["args"], "--format", "json", "--no-cache", env=world["env"])
    finally:
        fake.script(PASS_OPENING, [_fail_verdict(), task_done()])
    assert proc.returncode == 0, proc.stderr  # inconclusive warns unless the check says inconclusive: block
    verdict = next(c for c in json.loads(proc.stdout)["checks"] if c["name"] == "endpoint-test")
    assert verdict["verdict"] == "inconclusive" and verdict["reason"].startswith("no verdict")
    assert "inconclusive" in json.loads(proc.stdout)["verdict"]


def test_dismiss_check_overrides_one_check_and_says_who_and_why(world: Any) -> None:
    repo = world["repo"]
    git(repo, "config", "user.email", "lead@example.com")
    typo = run_cli(repo, "dismiss", "--check", "endpoint-tests", "--reason", "x", "--base", "main", env=world["env"])
    assert typo.returncode == 2 and "no such check" in typo.stderr and "endpoint-test" in typo.stderr
    done = run_cli(repo, "dismiss", "--check", "endpoint-test", "--reason", "tested by the e2e suite", "--base", "main",
                   env=world["env"])
    assert done.returncode == 0, done.stderr
    assert "checks:" in (repo / ".ocr-hook/dismissed.yaml").read_text()
    # Committed, as the command says to: the branch's range has a new last commit, the override still names it.
    # And in a merge request's CI job, whose own name for the change is the request, the range's override holds.
    commit_all(repo, "override endpoint-test")
    try:
        proc = run_cli(repo, *world["args"], env={**world["env"], "GITLAB_CI": "true", "CI_MERGE_REQUEST_IID": "7"})
    finally:
        git(repo, "reset", "-q", "HEAD~1")  # the later tests' branch as it was, the override left in the work tree
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OVERRIDDEN [block] endpoint-test" in proc.stdout
    assert "overridden by lead@example.com" in proc.stdout and "tested by the e2e suite" in proc.stdout


def test_checks_lists_what_applies_and_doctor_validates_every_file(world: Any) -> None:
    repo, env = world["repo"], {**world["env"], "ANTHROPIC_API_KEY": ""}
    listed = run_cli(repo, "checks", "--base", "main", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "endpoint-test [block, when ci]: applies (its file changes with this change" in listed.stdout
    assert "docs-settings [warn, when ci]: not applicable" in listed.stdout
    write(repo, ".ocr-hook/checks/bad.md", "---\nmode: sometimes\n---\n")
    try:
        doctor = run_cli(repo, "doctor", env=env)
    finally:
        (repo / ".ocr-hook/checks/bad.md").unlink()
    lines = [line for line in doctor.stdout.splitlines() if " checks " in f" {line} "]
    assert any("bad.md: 'mode' must be one of block, warn, off" in line for line in lines), doctor.stdout
    assert any("bad.md: the instruction" in line and "is empty" in line for line in lines)
    assert any("docs-settings.md: its paths (docs/**) match no file" in line for line in lines)


def test_commit_time_asks_only_when_commit_checks_in_one_request(world: Any, tmp_path: Path) -> None:
    fake = world["fake"]
    repo = make_repo(tmp_path / "staged")
    write(repo, ".ocr-hook/checks/endpoint-test.md", ENDPOINT_CHECK)  # when: ci: not at commit time
    write(repo, ".ocr-hook/checks/no-print.md", "---\nwhen: commit\nmode: block\n---\nNo print() calls in api/.\n")
    commit_all(repo, "checks")
    write(repo, "api/users.py", "print('hi')\n")
    git(repo, "add", "api/users.py")
    fake.script(PASS_OPENING + " below for this change (staged", [
        check_verdict("no-print", "fail", "api/users.py prints.", [("api/users.py", "print('hi')")])])
    before = len(fake.requests)
    proc = run_cli(repo, "review", "--format", "json", env=world["env"])
    assert proc.returncode == 1, proc.stderr
    asked = [r for r in fake.requests[before:] if PASS_OPENING in r.first_user_text]
    assert len(asked) == 1 and "endpoint-test" not in asked[0].first_user_text
    assert [(c["name"], c["verdict"]) for c in json.loads(proc.stdout)["checks"]] == [("no-print", "fail")]
    # An override of the staged change still holds once its own record is staged for the same commit.
    done = run_cli(repo, "dismiss", "--check", "no-print", "--reason", "a debugging aid, removed next",
                   env=world["env"])
    assert done.returncode == 0, done.stderr
    git(repo, "add", ".ocr-hook/dismissed.yaml")
    again = run_cli(repo, "review", "--format", "json", env=world["env"])
    assert again.returncode == 0, again.stderr
    override = json.loads(again.stdout)["checks"][0]["override"]
    assert override["reason"] == "a debugging aid, removed next"


def test_an_evaluation_cut_short_is_incomplete_exit_3(world: Any) -> None:
    repo, fake = world["repo"], world["fake"]
    fake.script(PASS_OPENING, [Fault(400, times=10)])  # (400: the SDK does not retry it)
    try:
        proc = run_cli(repo, "review", "--base", "main", "--intent", "Another intent: the check is asked again.",
                       "--format", "json", env=world["env"])
    finally:
        fake.script(PASS_OPENING, [_fail_verdict(), task_done()])
    report = json.loads(proc.stdout)
    assert proc.returncode == 3, proc.stderr
    verdict = next(c for c in report["checks"] if c["name"] == "endpoint-test")
    assert (verdict["verdict"], verdict["incomplete"]) == ("inconclusive", True)
    assert report["status"] == "incomplete" and "check(s) not evaluated" in report["verdict"]
