"""Dismissals that teach (issue 21, DESIGN.md section 9), end to end through the real CLI, real git repositories,
the real SDK and the fake Messages API: block → `ocr-hook dismiss` by the short id → the re-review passes with the
finding reported dismissed, its reason in every output; the committed file's reasons teach later reviews of the
files in scope (and no other); expiry; a dismissal added by the change under review; every refusal is one line,
exit 2, nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from agent_support import filter_keeps_all, is_filter
from e2e_support import CALC_PATH, assert_clean_stderr, calc_repo, comment, comment_turn, run_review
from fake_api import FakeMessagesAPI, RecordedRequest, task_done
from gitrepo import commit_all, git, head, repo_state, run_cli, write
from validators import validate_sarif

DISMISSALS = ".ocr-hook/dismissed.yaml"
MESSAGE = "Subtraction in add() where the name promises addition."
REASON = "add() subtracts on purpose: the ledger stores debits as negative amounts (see ledger.md)"


@pytest.fixture(autouse=True)
def _filter_keeps_everything(fake_api: FakeMessagesAPI) -> None:
    filter_keeps_all(fake_api)


def script_high(fake: FakeMessagesAPI, path: str = CALC_PATH, code: str = "return a - b") -> None:
    fake.script(f"Review the change to `{path}`", [
        comment_turn(comment(MESSAGE, code=code, severity="high")), task_done()])


def system_text(req: RecordedRequest) -> str:
    system = req.body.get("system")
    if isinstance(system, str):
        return system
    return "\n".join(b.get("text", "") for b in system or [] if isinstance(b, dict))


def dismiss(repo: Path, env: dict[str, str], *args: str) -> Any:
    proc = run_cli(repo, "dismiss", *args, env=env)
    assert_clean_stderr(proc)
    return proc


def entries(repo: Path) -> list[dict[str, Any]]:
    return yaml.safe_load((repo / DISMISSALS).read_text(encoding="utf-8"))["dismissed"]


def blocked(tmp_path: Path, fake: FakeMessagesAPI, env: dict[str, str]) -> tuple[Path, Any]:
    repo = calc_repo(tmp_path / "repo")
    script_high(fake)
    run = run_review(repo, env, tmp_path / "out1")
    assert run.code == 1, run.proc.stdout
    return repo, run


# --- the whole flow -----------------------------------------------------------------------------------------


def test_block_dismiss_by_short_id_then_the_review_passes_with_the_reason_everywhere(tmp_path, fake_api, sdk_env):
    repo, first = blocked(tmp_path, fake_api, sdk_env)
    finding = first.report["findings"][0]
    short = finding["fingerprint"][:8]
    # The text report shows the id, and a blocked run ends with what to do next.
    assert f"bug  {short}" in first.proc.stdout
    tail = first.proc.stdout[first.proc.stdout.index("What to do next:"):]
    assert f'ocr-hook dismiss {short} --from {first.out_dir / "report.json"} --reason "..."' in tail
    assert tail.splitlines()[1].endswith(": ocr-hook apply")  # the finding has a fix, in review memory
    assert "SKIP=" not in tail  # not under pre-commit

    git(repo, "config", "user.email", "dev@example.com")  # repository-local: the tests have no global config
    before = repo_state(repo)
    proc = dismiss(repo, sdk_env, short, "--reason", REASON, "--from", str(first.out_dir / "report.json"))
    assert proc.returncode == 0, proc.stderr
    assert f"git add {DISMISSALS}" in proc.stdout
    after = repo_state(repo)
    # Only the new file: index, HEAD, refs and every other file as they were.
    new_files = set(after["worktree"]) - set(before["worktree"])
    assert new_files == {DISMISSALS}
    assert {k: v for k, v in after.items() if k != "worktree"} == {k: v for k, v in before.items() if k != "worktree"}
    assert all(after["worktree"][p] == h for p, h in before["worktree"].items())
    [entry] = entries(repo)
    assert entry == {"fingerprint": finding["fingerprint"], "path": CALC_PATH, "category": "bug", "severity": "high",
                     "message": MESSAGE, "reason": REASON, "paths": [CALC_PATH], "by": "dev@example.com",
                     "on": entry["on"]}

    again = run_review(repo, sdk_env, tmp_path / "out2")

    assert again.code == 0, again.proc.stdout
    [reported] = again.report["findings"]
    assert reported["suppressed"] == "dismissed" and reported["suppression_reason"] == REASON
    sarif = validate_sarif(again.out_dir / "report.sarif")  # the schema and the multitool with GitHub's rules
    [result] = sarif["runs"][0]["results"]
    assert result["suppressions"] == [{"kind": "external", "status": "accepted", "justification": REASON}]
    assert f"{short}: dismissed: {REASON}" in again.proc.stdout
    [gitlab] = [e for e in again.gitlab if e["check_name"] == "ocr-hook/dismissed"]
    assert gitlab["severity"] == "info" and REASON in gitlab["description"]
    assert gitlab["fingerprint"] != finding["fingerprint"]
    # Not committed yet: the trusted revision (HEAD) lacks it, and every output names it.
    note = next(n for n in again.report["notes"] if DISMISSALS in n and "lacks" in n)
    assert short in note and "ledger" in note
    assert note in again.proc.stdout
    notifications = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert any(n["message"]["text"] == note for n in notifications)
    assert any(e["check_name"] == "ocr-hook/run-note" and e["location"]["path"] == DISMISSALS for e in again.gitlab)


def test_a_second_dismissal_appends_and_keeps_the_first_entry_byte_for_byte(tmp_path, fake_api, sdk_env):
    repo = calc_repo(tmp_path / "repo")
    fake_api.script(f"Review the change to `{CALC_PATH}`", [comment_turn(
        comment(MESSAGE, code="return a - b", severity="high"),
        comment("Tripling where doubling is documented.", code="return x * 3", severity="high", suggestion=None)),
        task_done()])
    run = run_review(repo, sdk_env, tmp_path / "out")
    fps = [f["fingerprint"] for f in run.report["findings"]]
    report = str(run.out_dir / "report.json")
    assert dismiss(repo, sdk_env, fps[1], "--reason", "first", "--from", report).returncode == 0
    first_text = (repo / DISMISSALS).read_text()
    # A check's override (`dismiss --check`) puts its `checks:` list after the findings' list: the next finding
    # still goes into `dismissed:`, and the override is kept byte for byte (issue 59 item 6).
    write(repo, ".ocr-hook/checks/calc-tests.md", "---\nmode: block\n---\nArithmetic changes come with a test.\n")
    assert dismiss(repo, sdk_env, "--check", "calc-tests", "--reason", "tested elsewhere").returncode == 0
    with_check = (repo / DISMISSALS).read_text()
    assert with_check.startswith(first_text) and with_check[len(first_text):].startswith("checks:\n")
    proc = dismiss(repo, sdk_env, fps[0][:10], "--reason", "second", "--from", report, "--paths", "*.py",
                   "--expires", "2999-01-01")
    assert proc.returncode == 0, proc.stderr
    text_now = (repo / DISMISSALS).read_text()
    assert text_now.startswith(first_text) and text_now.endswith(with_check[len(first_text):])
    assert [c["reason"] for c in yaml.safe_load(text_now)["checks"]] == ["tested elsewhere"]
    assert [e["reason"] for e in entries(repo)] == ["first", "second"]
    assert entries(repo)[1]["paths"] == ["*.py"] and str(entries(repo)[1]["expires"]) == "2999-01-01"
    assert "by" not in entries(repo)[0]  # no user.email anywhere: left out
    # Dismissing it again adds nothing.
    proc = dismiss(repo, sdk_env, fps[1][:8], "--reason", "again", "--from", report)
    assert proc.returncode == 0 and "already dismissed" in proc.stdout
    assert (repo / DISMISSALS).read_text() == text_now
    listing = run_cli(repo, "dismissed", "--format", "json", env=sdk_env)
    assert listing.returncode == 0
    assert [(e["reason"], e["expired"]) for e in json.loads(listing.stdout)["dismissed"]] == [
        ("first", False), ("second", False)]


# --- refusals: one line, exit 2, nothing written -------------------------------------------------------------


@pytest.mark.parametrize("case", ["unknown", "ambiguous", "empty-reason", "past-expiry", "short-id", "malformed",
                                  "bad-fingerprint", "not-a-report"])
def test_every_refusal_is_one_line_exit_2_and_writes_nothing(tmp_path, fake_api, sdk_env, case):
    repo, first = blocked(tmp_path, fake_api, sdk_env)
    report = first.out_dir / "report.json"
    fp = first.report["findings"][0]["fingerprint"]
    args = [fp[:8], "--reason", REASON, "--from", str(report)]
    expected = ""
    if case == "unknown":
        args[0] = "0123abcd" if not fp.startswith("0123abcd") else "fedc9876"
        expected = "no finding of the last review has it"
    elif case == "ambiguous":
        # Two findings whose fingerprints share the first 8 characters (a report edited to have them).
        data = json.loads(report.read_text())
        twin = dict(data["findings"][0], fingerprint=fp[:8] + "0" * 24 if fp[8:] != "0" * 24 else fp[:8] + "1" * 24)
        data["findings"].append(twin)
        report.write_text(json.dumps(data))
        expected = "is ambiguous"
    elif case == "empty-reason":
        args[2] = "   "
        expected = "--reason is empty"
    elif case == "past-expiry":
        args += ["--expires", "2020-01-01"]
        expected = "the date has passed"
    elif case == "short-id":
        args[0] = fp[:7]
        expected = "first 8 or more hex characters"
    elif case == "malformed":
        write(repo, DISMISSALS, "dismissed:\n  - fingerprint: [unclosed\n")
        expected = f"dismissals file {DISMISSALS}: line"
    elif case == "bad-fingerprint":
        write(repo, DISMISSALS, yaml.safe_dump({"dismissed": [{
            "fingerprint": "xyz", "path": "a.py", "category": "bug", "severity": "high", "message": "m",
            "reason": "r", "on": "2026-01-01"}]}))
        expected = "'fingerprint' must be 32 lowercase hex characters"
    elif case == "not-a-report":
        report.write_text("{not json")
        expected = "not a JSON report"
    before = repo_state(repo)
    proc = run_cli(repo, "dismiss", *args, env=sdk_env)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("ocr-hook: error: ") and expected in line, line
    assert repo_state(repo) == before


def test_a_bad_dismissals_file_stops_the_review_before_any_request(tmp_path, fake_api, sdk_env):
    repo = calc_repo(tmp_path / "repo")
    write(repo, DISMISSALS, "dismissed:\n  - {fingerprint: 0123456789abcdef0123456789abcdef, path: calc.py}\n")
    proc = run_cli(repo, "review", "--no-cache", env=sdk_env)
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert DISMISSALS in line and "missing key 'category'" in line, line
    assert not fake_api.requests


# --- expiry and the trusted revision ---------------------------------------------------------------------


def test_an_expired_dismissal_blocks_again_with_a_note(tmp_path, fake_api, sdk_env):
    repo, first = blocked(tmp_path, fake_api, sdk_env)
    finding = first.report["findings"][0]
    write(repo, DISMISSALS, yaml.safe_dump({"dismissed": [{
        "fingerprint": finding["fingerprint"], "path": CALC_PATH, "category": "bug", "severity": "high",
        "message": MESSAGE, "reason": REASON, "on": "2020-01-01", "expires": "2021-01-01"}]}))
    run = run_review(repo, sdk_env, tmp_path / "out2")
    assert run.code == 1
    assert run.report["findings"][0]["suppressed"] is None
    note = next(n for n in run.report["notes"] if "expired on 2021-01-01" in n)
    assert finding["fingerprint"][:8] in note and note in run.proc.stdout
    listing = run_cli(repo, "dismissed", env=sdk_env)
    assert "1 expired" in listing.stdout and "EXPIRED 2021-01-01" in listing.stdout


def test_committed_reasons_teach_the_files_in_scope_and_no_other(tmp_path, fake_api, sdk_env):
    repo, first = blocked(tmp_path, fake_api, sdk_env)
    short = first.report["findings"][0]["fingerprint"][:8]
    assert dismiss(repo, sdk_env, short, "--reason", REASON, "--from",
                   str(first.out_dir / "report.json")).returncode == 0
    git(repo, "add", DISMISSALS)
    commit_all(repo, "calc with its dismissal")
    # A later change to the same file, and one to a file outside the dismissal's scope.
    write(repo, CALC_PATH, (repo / CALC_PATH).read_text() + "\n\ndef neg(a):\n    return -a\n")
    write(repo, "other.py", "def other(a):\n    return a\n")
    git(repo, "add", CALC_PATH, "other.py")
    fake_api.script(f"Review the change to `{CALC_PATH}`", [
        comment_turn(comment("neg() may overflow.", code="return -a", severity="high")), task_done()])
    fake_api.script("Review the change to `other.py`", [
        comment_turn(comment("other() does nothing.", code="return a", severity="high")), task_done()])
    sent = len(fake_api.requests)

    run = run_review(repo, sdk_env, tmp_path / "out2")

    assert run.code == 1  # the new findings still block
    later = fake_api.requests[sent:]
    calc = [r for r in later if f"`{CALC_PATH}`" in r.first_user_text or
            (is_filter(r.body) and CALC_PATH in json.dumps(r.body["messages"]))]
    other = [r for r in later if r not in calc]
    assert {("filter" if is_filter(r.body) else "main") for r in calc} == {"main", "filter"}
    assert {("filter" if is_filter(r.body) else "main") for r in other} == {"main", "filter"}
    for req in calc:
        assert REASON in system_text(req) and "do not raise" in system_text(req).lower()
    for req in other:
        assert REASON not in req.raw.decode("utf-8", "replace")
    # Committed: nothing to name in the notes any more.
    assert not any("lacks" in n for n in run.report["notes"])
    rules = run_cli(repo, "rules", "--format", "json", env=sdk_env)
    files = {f["path"]: f for f in json.loads(rules.stdout)["files"]}
    assert [d["reason"] for d in files[CALC_PATH]["dismissals"]] == [REASON]
    assert files["other.py"]["dismissals"] == []
    text_rules = run_cli(repo, "rules", env=sdk_env).stdout
    assert f"dismissed {short}" in text_rules


def test_a_dismissal_added_by_the_change_under_review_is_honoured_and_named(tmp_path, fake_api, sdk_env):
    repo, first = blocked(tmp_path, fake_api, sdk_env)
    fp = first.report["findings"][0]["fingerprint"]
    base = head(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    git(repo, "commit", "-q", "-m", "subtract")
    assert dismiss(repo, sdk_env, fp[:8], "--reason", REASON, "--from",
                   str(first.out_dir / "report.json")).returncode == 0
    commit_all(repo, "dismiss on the branch")
    # main stays at the base: the change under review (main..feature) adds the dismissal.

    run = run_review(repo, sdk_env, tmp_path / "out2", "--base", "main")

    assert run.code == 0, run.proc.stdout
    assert run.report["findings"][0]["suppressed"] == "dismissed"
    note = next(n for n in run.report["notes"] if "lacks" in n)
    assert fp[:8] in note and base[:12] in note
    assert note in run.proc.stdout
    skipped = {s["path"]: s["reason"] for s in run.report["coverage"]["skipped"]}
    assert DISMISSALS in skipped  # people review it; the model is not asked
    # The branch's own dismissal does not teach its own review: the trusted revision lacks it.
    assert all(REASON not in system_text(r) for r in fake_api.requests)


def test_a_committed_dismissal_is_part_of_the_result_cache_key(tmp_path, fake_api, sdk_env):
    repo = calc_repo(tmp_path / "repo")
    script_high(fake_api)
    cache = tmp_path / "cache"
    first = run_cli(repo, "review", "--cache-dir", str(cache), "--format", "json", env=sdk_env)
    assert first.returncode == 1
    fp = json.loads(first.stdout)["findings"][0]["fingerprint"]
    cached = run_cli(repo, "review", "--cache-dir", str(cache), "--format", "json", env=sdk_env)
    assert json.loads(cached.stdout)["coverage"]["cached"] == [CALC_PATH]
    # Commit only the dismissal: the staged change to calc.py is the same, its guidance is not.
    write(repo, DISMISSALS, yaml.safe_dump({"dismissed": [{
        "fingerprint": fp, "path": CALC_PATH, "category": "bug", "severity": "high", "message": MESSAGE,
        "reason": REASON, "on": "2026-01-01"}]}))
    git(repo, "add", DISMISSALS)
    git(repo, "commit", "-q", "-m", "dismiss", "--", DISMISSALS)
    sent = len(fake_api.requests)

    again = run_cli(repo, "review", "--cache-dir", str(cache), "--format", "json", env=sdk_env)

    doc = json.loads(again.stdout)
    assert doc["coverage"]["cached"] == [] and doc["coverage"]["reviewed"] == [CALC_PATH]
    assert any(REASON in system_text(r) for r in fake_api.requests[sent:])
    assert again.returncode == 0 and doc["findings"][0]["suppressed"] == "dismissed"


def test_the_github_job_summary_of_a_blocked_run_says_what_to_do_next(tmp_path, fake_api, sdk_env):
    repo = calc_repo(tmp_path / "repo")
    script_high(fake_api)
    summary = tmp_path / "summary.md"
    proc = run_cli(repo, "review", "--format", "github", env={**sdk_env, "GITHUB_STEP_SUMMARY": str(summary),
                                                               "GITHUB_ACTIONS": "true", "CI": "true"})
    assert proc.returncode == 1
    text_ = summary.read_text()
    block = text_[text_.index("### What to do next"):]
    # In the job, the steps are the branch's and the report's (issue 54 item 10), never the job's own checkout.
    assert "ocr-hook dismiss " in block and "--from REPORT.json" in block and "push again" in block
    assert "--patch-output" not in block and "ocr-hook apply" not in block and "SKIP=" not in block


def test_a_sensitive_dismissals_file_suppresses_but_never_teaches(tmp_path, fake_api, sdk_env):
    repo = calc_repo(tmp_path / "repo")
    script_high(fake_api)
    first = run_cli(repo, "review", "--no-cache", "--format", "json", env=sdk_env)
    fp = json.loads(first.stdout)["findings"][0]["fingerprint"]
    write(repo, ".ocr-hook.yaml", "sensitive: ['.ocr-hook/**']\n")
    write(repo, DISMISSALS, yaml.safe_dump({"dismissed": [{
        "fingerprint": fp, "path": CALC_PATH, "category": "bug", "severity": "high", "message": MESSAGE,
        "reason": REASON, "on": "2026-01-01"}]}))
    git(repo, "add", ".ocr-hook.yaml", DISMISSALS)
    git(repo, "commit", "-q", "-m", "sensitive dismissals", "--", ".ocr-hook.yaml", DISMISSALS)
    sent = len(fake_api.requests)
    again = run_cli(repo, "review", "--no-cache", "--format", "json", env=sdk_env)
    doc = json.loads(again.stdout)
    assert again.returncode == 0 and doc["findings"][0]["suppressed"] == "dismissed"
    assert len(fake_api.requests) > sent
    assert all(REASON.encode() not in r.raw for r in fake_api.requests[sent:])
    assert any("its path is sensitive" in n for n in doc["notes"])


def test_dismissed_lists_nothing_without_a_file_and_refuses_a_bad_one_in_one_line(tmp_path, sdk_env):
    repo = calc_repo(tmp_path / "repo")
    empty = run_cli(repo, "dismissed", env=sdk_env)
    assert empty.returncode == 0 and "No dismissals" in empty.stdout
    assert json.loads(run_cli(repo, "dismissed", "--format", "json", env=sdk_env).stdout) == {
        "file": DISMISSALS, "exists": False, "dismissed": []}
    write(repo, DISMISSALS, "dismissed: {not: a list}\n")
    bad = run_cli(repo, "dismissed", env=sdk_env)
    assert bad.returncode == 2 and bad.stdout == ""
    [line] = bad.stderr.splitlines()
    assert line == f"ocr-hook: error: dismissals file {DISMISSALS}: 'dismissed' must be a list, got dict"
