"""provider: claude-code end to end (DESIGN.md 15): `ocr-hook review` through the real Claude Code CLI (the
`claude-code` extra) against the fake Messages API, with only CLAUDE_CODE_OAUTH_TOKEN as credential and a fake
HOME whose ~/.claude holds a hook and a canary. One module fixture runs the few reviews (each CLI ~0.6 s); the
tests assert on them. The plan phase, re-location and the review filter go through Claude Code too: a deep review
runs all of them, each its own CLI conversation."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from agent_support import PLAN_TOOLS, is_filter, is_relocate, plan_opening
from e2e_support import (
    CALC_LINE,
    CALC_PATH,
    CALC_QUOTE,
    all_files,
    assert_one_line,
    calc_repo,
    comment,
    popen_review,
    porcelain,
    run_review,
)
from fake_api import FakeMessagesAPI, Fault, RecordedRequest, Reply, error_json, text, tool_use
from gitrepo import run_cli
from test_fake_api_claude_code import CANARY, _plant_user_settings

from ocr_hook.agent import registry
from ocr_hook.agent.claude_code import QUIET_ENV

CLEAN_PATH, CLEAN_MARKER = "clean.py", "CLEAN-MARKER-5d1"
LOOP_PATH, LOOP_MARKER = "loop.py", "NEVER-STOPS-9c2"
BROKE_PATH, BROKE_MARKER = "broke.py", "NO-CREDIT-3e7"
NO_CREDIT = "Your credit balance is too low to access the Anthropic API."
HELD_PATH, HELD_MARKER = "held.py", "HELD-FOREVER-8a0"
TIMEOUT_S = 2.0
MAX_COST = 0.06
# A deep review (outside pre-commit): a plan with one look around, then a comment whose quote must be re-located
# and one the review filter marks wrong.
PHASES_PATH, PHASES_MARKER = "phases.py", "PHASES-MARKER-2c4"
PHASES_CODE = f"# {PHASES_MARKER}\ndef ratio(a, b):\n    return a / b\n"
CHECKLIST = "PLAN-CHECKLIST-6d9: does ratio() guard b == 0?"
DROP_MARKER = "FILTER-DROPS-ME-1f8"
FILTER_REASON = "The definition shown has no typo."


# calc.py's filter request fails: as with the API, a failed filter keeps every comment.
FILTER_FAULT = Fault(400, body=error_json(400, NO_CREDIT), times=10)


def _filter_answer(body: dict[str, Any]) -> Reply | Fault:
    """The review filter: the comment that carries DROP_MARKER is wrong, every other one is kept."""
    user = json.dumps(body["messages"])
    if CALC_QUOTE in user:
        return FILTER_FAULT
    wrong = [int(n) for n in re.findall(r"Comment (\d+) \([^)]*\):\\n[^\\]*" + DROP_MARKER, user)]
    return Reply([text(json.dumps({"wrong": wrong, "reasons": {str(n): FILTER_REASON for n in wrong}}))])


def _relocate_answer(body: dict[str, Any]) -> Reply:
    return Reply([text(json.dumps({"locations": [{"comment": 1, "code": "    return a / b"}]}))])


def _contents(repo: Path) -> dict[str, str]:
    """Every file all_files lists (work tree and .git, but git's own object store and index), by content."""
    return {rel: hashlib.sha256((repo / rel).read_bytes()).hexdigest() for rel in all_files(repo)
            if not (repo / rel).is_symlink()}


def _cost(request: RecordedRequest, prices: Any) -> float:
    """What the fake billed for one request, at ocr-hook's prices (USD per million tokens)."""
    price, usage = prices[request.body["model"]], request.usage or {}
    return (usage.get("input_tokens", 0) * price.input + usage.get("output_tokens", 0) * price.output
            + usage.get("cache_creation_input_tokens", 0) * price.cache_write
            + usage.get("cache_read_input_tokens", 0) * price.cache_read) / 1_000_000


def _processes_with(marker: bytes) -> list[int]:
    """Live processes whose environment holds `marker` (Linux /proc): the CLIs a run started."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue  # gone meanwhile, or not ours
    return found


def _env(base: Path, fake: FakeMessagesAPI) -> dict[str, str]:
    return {"HOME": str(base / "home"), "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "",
            "ANTHROPIC_AUTH_TOKEN": "", "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-test",
            "XDG_CACHE_HOME": str(base / "cache"), "OCR_HOOK_PROVIDER": "claude-code", "PRE_COMMIT": "1"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("claude-code-provider")
    hook_ran = base / "hook-ran"
    _plant_user_settings(base / "home", hook_ran)
    repo = calc_repo(base / "repo", {CLEAN_PATH: f"# {CLEAN_MARKER}\nVALUE = 1\n",
                                     LOOP_PATH: f"# {LOOP_MARKER}\nN = 2\n",
                                     BROKE_PATH: f"# {BROKE_MARKER}\nM = 3\n",
                                     HELD_PATH: f"# {HELD_MARKER}\nK = 4\n", PHASES_PATH: PHASES_CODE})
    out: dict[str, Any] = {"hook_ran": hook_ran}
    with FakeMessagesAPI() as fake:
        env = _env(base, fake)
        high = comment(content="add() subtracts.", severity="high", suggestion=None)
        fake.script("return a - b", [Reply([tool_use("code_comment", {"comments": [high]}),
                                            tool_use("task_done", {"state": "DONE"})])])
        fake.script(CLEAN_MARKER, [Reply([tool_use("task_done", {"state": "DONE"})])])
        # A model that never stops: a new file_read every turn, never task_done.
        fake.script(LOOP_MARKER, [Reply([tool_use("file_read", {"file_path": LOOP_PATH, "start_line": 1,
                                                                "end_line": n})]) for n in range(1, 60)])
        fake.script(HELD_MARKER, [Reply([tool_use("task_done", {"state": "DONE"})], hold=threading.Event())])
        fake.script(BROKE_MARKER, [Fault(400, body=error_json(400, NO_CREDIT), times=5)])
        fake.handle(is_filter, _filter_answer)
        fake.handle(is_relocate, _relocate_answer)
        fake.script(plan_opening(PHASES_PATH), [Reply([tool_use("code_search", {"search_text": "ratio("})]),
                                                Reply([text(CHECKLIST)])])
        unplaced = comment(content="ratio() divides by b unchecked.", code="return a // b", severity="high",
                           suggestion=None)
        wrong = comment(content=f"{DROP_MARKER}: the name ratio is misspelt.", code="def ratio(a, b):",
                        severity="medium", suggestion=None)
        fake.script(PHASES_MARKER, [Reply([tool_use("code_comment", {"comments": [unplaced, wrong]}),
                                           tool_use("task_done", {"state": "DONE"})])])
        before = _contents(repo), porcelain(repo)
        out["blocked"] = run_review(repo, env, base / "out-blocked", CALC_PATH, CLEAN_PATH)
        out["blocked_requests"] = fake.requests
        mark = len(fake.requests)
        out["clean"] = run_review(repo, env, base / "out-clean", CLEAN_PATH)
        out["clean_requests"] = fake.requests[mark:]
        mark = len(fake.requests)
        out["phases"] = run_review(repo, {**env, "PRE_COMMIT": ""}, base / "out-phases", PHASES_PATH,
                                   "--effort", "deep")
        out["phases_requests"] = fake.requests[mark:]
        mark = len(fake.requests)
        capped_env = {**env, "PRE_COMMIT": "", "OCR_HOOK_MAX_OUTPUT_TOKENS": "1024"}
        out["capped"] = run_review(repo, capped_env, base / "out-capped", LOOP_PATH, "--max-cost", str(MAX_COST))
        out["capped_requests"] = fake.requests[mark:]
        out["broke"] = run_review(repo, env, base / "out-broke", BROKE_PATH)
        out["held"] = run_review(repo, env, base / "out-held", HELD_PATH, "--timeout", str(TIMEOUT_S))
        # Ctrl-C while Claude Code waits on its reply: the run ends interrupted and takes the CLI with it.
        held_seen = sum(1 for r in fake.requests if HELD_MARKER in r.first_user_text)
        interrupted = popen_review(repo, env, "--no-cache", HELD_PATH)
        arrived = fake.wait_for_requests(held_seen + 1, HELD_MARKER, timeout=60)
        interrupted.send_signal(signal.SIGINT)
        interrupted.communicate(timeout=60)
        out["interrupted"] = (arrived, interrupted.returncode)
        # The terminal closed (SIGHUP) while Claude Code waits: the same clean end, with 128 + SIGHUP.
        hung_up = popen_review(repo, env, "--no-cache", HELD_PATH)
        arrived = fake.wait_for_requests(held_seen + 2, HELD_MARKER, timeout=60)
        hung_up.send_signal(signal.SIGHUP)
        _out, hung_up_err = hung_up.communicate(timeout=60)
        out["hung_up"] = (arrived, hung_up.returncode, hung_up_err)
        out["survivors"] = _processes_with(f"HOME={base / 'home'}".encode())
        out["unchanged"] = (_contents(repo), porcelain(repo)) == before
        no_login = {**env, "CLAUDE_CODE_OAUTH_TOKEN": "", "HOME": str(base / "empty-home")}
        out["no_login"] = run_cli(repo, "review", "--no-cache", env=no_login)
        out["all_requests"] = fake.requests
    return out


def test_a_high_finding_blocks_anchored_in_json_and_sarif(runs: dict[str, Any]) -> None:
    run = runs["blocked"]
    assert run.code == 1, run.proc.stderr
    [finding] = run.report["findings"]
    assert (finding["path"], finding["start_line"], finding["severity"]) == (CALC_PATH, CALC_LINE, "high")
    [result] = [r for r in run.sarif["runs"][0]["results"]]
    location = result["locations"][0]["physicalLocation"]
    assert (location["artifactLocation"]["uri"], location["region"]["startLine"]) == (CALC_PATH, CALC_LINE)
    assert sorted(run.report["coverage"]["reviewed"]) == [CALC_PATH, CLEAN_PATH]


def test_a_clean_file_passes(runs: dict[str, Any]) -> None:
    run = runs["clean"]
    assert run.code == 0, run.proc.stdout
    assert run.report["findings"] == [] and run.report["coverage"]["reviewed"] == [CLEAN_PATH]


def test_one_turn_files_cost_one_request_each_under_pre_commit(runs: dict[str, Any]) -> None:
    # task_done ends the conversation at once: no request after it. Quick (pre-commit) plans nothing and, as
    # with the API, filters only comments that could block: the clean file is one request, calc.py's high
    # finding one filter request more.
    assert len(runs["clean_requests"]) == 1 and not is_filter(runs["clean_requests"][0].body)
    blocked = runs["blocked_requests"]
    assert len(blocked) == 3 and [is_filter(r.body) for r in blocked].count(True) == 1
    # every billed request is counted, though task_done ends the conversation right after its message (the
    # filter's 400 was not billed)
    assert runs["blocked"].report["usage"]["requests"] == 2 and runs["clean"].report["usage"]["requests"] == 1
    assert all(r.body.get("stream") is True for r in runs["all_requests"])
    assert all(r.status == 200 for r in runs["blocked_requests"] + runs["clean_requests"] if not is_filter(r.body))
    # the profile's effort reaches Claude Code's requests as the API path sends it (quick: low)
    assert {json.dumps(r.body.get("output_config")) for r in blocked if not is_filter(r.body)} == {
        json.dumps({"effort": "low"})}


def test_a_failed_filter_keeps_every_comment(runs: dict[str, Any]) -> None:
    run = runs["blocked"]
    [failed] = [r for r in runs["blocked_requests"] if is_filter(r.body)]
    assert failed.status == 400 and CALC_QUOTE in json.dumps(failed.body["messages"])
    assert [f["path"] for f in run.report["findings"]] == [CALC_PATH] and run.code == 1  # kept, still blocking
    [note] = [n for n in run.report["notes"] if "review filter" in n]
    assert "all comments kept" in note and "credit balance is too low" in note.lower(), note


def _kind(request: RecordedRequest) -> str:
    if is_filter(request.body):
        return "filter"
    if is_relocate(request.body):
        return "relocate"
    return "plan" if plan_opening(PHASES_PATH) in request.first_user_text else "main"


def test_only_the_phases_tools_are_offered_under_the_prefix(runs: dict[str, Any]) -> None:
    six = {spec.name for spec in registry.tools_for_phase("main")}
    assert len(six) == 6
    offered = {"main": six, "plan": set(PLAN_TOOLS), "filter": set(), "relocate": set()}
    kinds = set()
    for request in runs["all_requests"]:
        kind = _kind(request)
        kinds.add(kind)
        names = {t["name"] for t in request.body.get("tools") or []}
        assert names == {f"mcp__ocr-hook__{name}" for name in offered[kind]}, (kind, names)
    assert kinds == set(offered)


def test_plan_relocation_and_filter_go_through_claude_code(runs: dict[str, Any]) -> None:
    run, requests = runs["phases"], runs["phases_requests"]
    assert [_kind(r) for r in requests] == ["plan", "plan", "main", "relocate", "filter"]
    for request in requests:  # each one sent by the Claude Code CLI, none by the Messages API client
        assert request.headers["user-agent"].startswith("claude-cli/") and request.headers["x-app"] == "cli"
        assert request.status == 200 and request.body["stream"] is True
    plan, looked, main = requests[0], requests[1], requests[2]
    assert "tool_result" in json.dumps(looked.body["messages"])  # the plan's look around was answered in process
    assert CHECKLIST in main.first_user_text  # the plan's checklist opens the main loop
    # deep: the profile's effort on the plan's and the main loop's requests
    assert plan.body["output_config"] == main.body["output_config"] == {"effort": "high"}
    # the filter dropped the comment it marked wrong; the re-located one is anchored on its line and blocks
    assert run.code == 1, run.proc.stdout
    [finding] = run.report["findings"]
    assert (finding["path"], finding["start_line"], finding["anchored"]) == (PHASES_PATH, 3, True)
    [dropped] = run.report["dropped"]["comments"]
    assert DROP_MARKER in dropped["message"] and dropped["reason"] == FILTER_REASON
    assert run.report["coverage"]["effort"] == {PHASES_PATH: "deep"}


def test_every_phases_usage_is_in_the_report(runs: dict[str, Any]) -> None:
    usage, requests = runs["phases"].report["usage"], runs["phases_requests"]
    assert usage["requests"] == len(requests) == 5
    for key in ("input_tokens", "output_tokens"):
        assert usage[key] == sum(r.usage[key] for r in requests) > 0, (key, usage)


def test_user_settings_never_apply_and_the_repository_is_unchanged(runs: dict[str, Any]) -> None:
    assert not runs["hook_ran"].exists()
    assert all(CANARY not in r.raw.decode("utf-8", "replace") for r in runs["all_requests"])
    assert runs["unchanged"]
    assert runs["survivors"] == []  # every Claude Code process group was killed with its file's review


def test_max_cost_cuts_a_model_that_never_stops(runs: dict[str, Any]) -> None:
    run, requests = runs["capped"], runs["capped_requests"]
    assert run.code == 3, run.proc.stdout
    state, reason = run.coverage_state(LOOP_PATH)
    assert state == "failed" and "cost cap" in reason, reason
    usage = run.report["usage"]
    assert 2 <= len(requests) < 59 and usage["requests"] == len(requests), (usage, len(requests))
    # billed at most the cap plus the one request in flight: what the fake billed before the last request is
    # within the cap, and the report counted every billed request at ocr-hook's prices
    from ocr_hook.settings import load

    prices = load(None, environ={}).pricing
    costs = [_cost(r, prices) for r in requests]
    assert sum(costs[:-1]) <= MAX_COST, costs
    assert usage["cost_usd"] == pytest.approx(sum(costs), abs=1e-6), (usage, costs)


def test_no_credentials_is_exit_2_with_one_line(runs: dict[str, Any], tmp_path: Path) -> None:
    proc = runs["no_login"]
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    line = proc.stderr.strip()
    assert_one_line(line)
    assert "`setup-token` gives CLAUDE_CODE_OAUTH_TOKEN" in line and "ANTHROPIC_API_KEY" in line
    # Issue 54 item 6: the sign-in command names the CLI that reviews (the extra's bundled one, not on PATH), and
    # it runs as given.
    login = next(c for c in re.findall(r"`([^`]+)`", line) if c.endswith(" auth login"))
    argv = shlex.split(login)
    assert Path(argv[0]).is_absolute() and Path(argv[0]).name == "claude", login
    shown = subprocess.run([*argv, "--help"], capture_output=True, text=True, timeout=60,
                           env={"HOME": str(tmp_path), "PATH": os.environ["PATH"], **QUIET_ENV})
    assert shown.returncode == 0 and "Sign in to your Anthropic account" in shown.stdout, shown.stdout + shown.stderr


def test_doctor_names_the_cli_its_version_and_the_credential(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": "",
           "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-test", "OCR_HOOK_PROVIDER": "claude-code",
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = run_cli(tmp_path, "doctor", "--format", "json", env=env)
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["claude-code"]["status"] == "OK" and "Claude Code" in checks["claude-code"]["message"]
    assert checks["credentials"]["status"] == "OK" and "CLAUDE_CODE_OAUTH_TOKEN" in checks["credentials"]["message"]
    assert "sk-ant-oat01-test" not in proc.stdout


def test_a_failed_conversation_is_that_file_failed_with_the_reason(runs: dict[str, Any]) -> None:
    run = runs["broke"]
    assert run.code == 3, run.proc.stdout
    state, reason = run.coverage_state(BROKE_PATH)
    assert state == "failed" and "credit balance is too low" in reason.lower(), reason
    assert_one_line(reason)


def test_the_timeout_holds_with_a_reply_that_never_comes(runs: dict[str, Any]) -> None:
    run = runs["held"]
    assert run.code == 3, run.proc.stdout
    state, reason = run.coverage_state(HELD_PATH)
    # as with the API: a file whose first request was never answered counts as not reviewed (skipped)
    assert state == "skipped" and "time limit" in reason, reason
    assert run.elapsed < TIMEOUT_S + 5, run.elapsed


def test_ctrl_c_ends_the_run_and_its_claude_code(runs: dict[str, Any]) -> None:
    arrived, code = runs["interrupted"]
    assert arrived and code in (130, -signal.SIGINT), code
    assert runs["survivors"] == []


def test_a_closed_terminal_ends_the_run_and_its_claude_code(runs: dict[str, Any]) -> None:
    # SIGHUP's default would end ocr-hook alone, leaving its Claude Code (in a session of its own) running
    arrived, code, stderr = runs["hung_up"]
    assert arrived and code == 128 + signal.SIGHUP, (code, stderr)
    assert stderr.strip().splitlines()[-1] == "ocr-hook: terminated"
    assert runs["survivors"] == []


def test_a_filter_the_budget_cannot_cover_is_never_sent(tmp_path: Path) -> None:
    """The budget is checked before Claude Code starts: a filter that does not fit is skipped (every comment
    kept, the file's findings marked incomplete for the cache), as on the API path, and nothing is sent."""
    import asyncio

    from agent_support import review_job
    from e2e_support import CALC_AFTER

    from ocr_hook.agent.claude_code_review import ClaudeCodeReview
    from ocr_hook.agent.conversation import SecretMasker
    from ocr_hook.agent.loop import FileTask
    from ocr_hook.agent.post_review import finish_file
    from ocr_hook.findings import Category, Comment, Severity
    from ocr_hook.secrets_mask import mask_secrets

    repo = calc_repo(tmp_path / "repo")
    with FakeMessagesAPI() as fake:
        env = _env(tmp_path, fake)
        with review_job(repo, env, max_cost=1e-6, provider="claude-code") as job:
            [change] = job.files
            task = FileTask(change=change, change_set=job.change_set, snapshot=job.snapshot, settings=job.settings,
                            budget=job.budget, other_paths=())
            review = ClaudeCodeReview(task, SecretMasker(mask_secrets), env)
            comments = [Comment(CALC_PATH, "add() subtracts.", CALC_QUOTE, Severity.HIGH, Category.BUG)]
            post = asyncio.run(finish_file(comments, change, CALC_AFTER, api=None, ask=review.ask,
                                           settings=job.settings, mask=review.mask))
        assert fake.requests == []
    assert [f.start_line for f in post.findings] == [CALC_LINE] and not post.complete
    [note] = post.notes
    assert "review filter skipped, all comments kept" in note and "cost cap" in note, note


def test_files_at_once_default_to_four_with_claude_code(tmp_path: Path) -> None:
    """Each file's Claude Code is a ~180-195 MB process that takes most of a core while it starts (measured on the
    2-core machine: 8 files at 4 at once as fast as at 8): while nobody chose concurrency, 4 at once; a choice in
    any layer stands, the shipped default's own value (8) included."""
    from ocr_hook.config_files import read_yaml
    from ocr_hook.settings import CLAUDE_CODE_CONCURRENCY, load

    default = read_yaml("defaults.yaml")["concurrency"]
    assert default > CLAUDE_CODE_CONCURRENCY == 4
    claude_code = {"OCR_HOOK_PROVIDER": "claude-code"}
    assert load(None, environ=claude_code).concurrency == 4
    assert load(None, environ={**claude_code, "OCR_HOOK_CONCURRENCY": "6"}).concurrency == 6
    assert load(None, environ={**claude_code, "OCR_HOOK_CONCURRENCY": str(default)}).concurrency == default
    assert load(None, flags={"concurrency": default}, environ=claude_code).concurrency == default
    (tmp_path / ".ocr-hook.yaml").write_text(f"provider: claude-code\nconcurrency: {default}\n", encoding="utf-8")
    assert load(tmp_path, environ={}).concurrency == default
    (tmp_path / ".ocr-hook.yaml").write_text("provider: claude-code\n", encoding="utf-8")
    assert load(tmp_path, environ={}).concurrency == 4
    assert load(None, environ={}).concurrency == default
