"""provider: claude-code's clear failures and its doctor (DESIGN.md 15, issue 42): the extra missing or a CLI too
old is exit 2 naming the fix before anything is reviewed; a rate limit or a plan's usage limit is that file FAILED
with Claude Code's reason (exit 3); `doctor` names the CLI, its version and the credential Claude Code reports, and
`--probe` reviews the sample through Claude Code. The real bundled CLI against the fake Messages API; four CLI
conversations in all, in one module fixture."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_support import assert_incomplete_everywhere, assert_one_line, calc_repo, run_review
from fake_api import USAGE_KEYS, FakeMessagesAPI, Fault, Reply, error_json, first_user_text, tool_use
from gitrepo import run_cli

from ocr_hook.agent import registry
from ocr_hook.agent.claude_code import MIN_CLI_VERSION
from ocr_hook.agent.diagnostics import SAMPLE_AFTER
from ocr_hook.install_command import add_extra_hint, upgrade_extra_hint

LIMITED_PATH, LIMITED_MARKER = "limited.py", "SERVER-LIMITED-4b1"
PLAN_PATH, PLAN_MARKER = "plan.py", "PLAN-LIMITED-6d2"
OUT_OF_CREDITS = "You're out of usage credits."
SERVER_LIMIT = "Number of request tokens has exceeded your per-minute rate limit"
SAMPLE_LINE = "total / (len(values) - 1)"  # in the probe's sample: its request is scripted by it
OLD = ".".join(map(str, (*MIN_CLI_VERSION[:2], MIN_CLI_VERSION[2] - 1)))
# What a child Python sees when the extra is not installed: `import claude_agent_sdk` raises ImportError and
# importlib.util.find_spec returns None, as for a package that is not there.
WITHOUT_EXTRA = ("import runpy, sys; sys.modules['claude_agent_sdk'] = None; sys.argv[0] = 'ocr-hook'; "
                 "runpy.run_module('ocr_hook', run_name='__main__', alter_sys=True)")


def plan_limit(reset_epoch: int) -> Fault:
    """A Claude plan's 5-hour limit reached, as the API answers a subscriber: 429 rate_limit_error with the
    unified rate-limit headers Claude Code reads (status rejected, which window, when it resets)."""
    return Fault(429, headers={"anthropic-ratelimit-unified-status": "rejected",
                               "anthropic-ratelimit-unified-representative-claim": "five_hour",
                               "anthropic-ratelimit-unified-reset": str(reset_epoch), "retry-after": "0"},
                 body=error_json(429, "Rate limited"), times=20)


def credits_ran_out(body: dict[str, Any]) -> Fault:
    """A plan's usage credits running out under a request: a stream the API cuts with an `error` event (it reports
    errors inside a 200 stream that way), and then the request refused (what Claude Code's fallback to a
    non-streaming request gets). Claude Code tells this error by `error.details.error_code`
    `extra_usage_out_of_credits` (read in its 2.1.332 bundle); the message is ours."""
    error = error_json(400, OUT_OF_CREDITS)
    error["error"]["details"] = {"error_code": "extra_usage_out_of_credits"}
    if not body.get("stream"):
        return Fault(400, body=error, times=20)
    start = {"type": "message_start", "message": {
        "id": "msg_fake_cut", "type": "message", "role": "assistant", "model": body["model"], "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {**dict.fromkeys(USAGE_KEYS, 0), "output_tokens": 1}}}
    events = [("message_start", start), ("ping", {"type": "ping"}), ("error", error)]
    return Fault(200, body="".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events),
                 content_type="text/event-stream", times=20)


def _script(path: Path, text: str, mode: int = 0o755) -> str:
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return str(path)


def _doctor(repo: Path, env: dict[str, str], *args: str) -> tuple[int, dict[str, dict[str, str]], str]:
    proc = run_cli(repo, "doctor", "--format", "json", *args, env=env)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    return proc.returncode, checks, proc.stdout


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("claude-code-failures")
    repo = calc_repo(base / "repo", {LIMITED_PATH: f"# {LIMITED_MARKER}\nA = 1\n",
                                     PLAN_PATH: f"# {PLAN_MARKER}\nB = 2\n"})
    bin_dir = base / "bin"
    bin_dir.mkdir()
    clis = {"old": _script(bin_dir / "claude-old", f"#!/bin/sh\necho '{OLD} (Claude Code)'\n"),
            "garbage": _script(bin_dir / "claude-garbage", "#!/bin/sh\necho 'usage: frobnicate [-x]'\n"),
            "not_executable": _script(bin_dir / "claude-plain", "#!/bin/sh\necho '9.9.9 (Claude Code)'\n", 0o644)}
    out: dict[str, Any] = {}
    with FakeMessagesAPI() as fake:
        env = {"HOME": str(base / "home"), "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "",
               "ANTHROPIC_AUTH_TOKEN": "", "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-test",
               "XDG_CACHE_HOME": str(base / "cache"), "OCR_HOOK_PROVIDER": "claude-code", "PRE_COMMIT": "1"}
        fake.script(LIMITED_MARKER, [Fault(429, headers={"retry-after": "0"}, body=error_json(429, SERVER_LIMIT),
                                           times=20)])
        out["reset"] = int(time.time()) + 3 * 3600
        fake.script(PLAN_MARKER, [plan_limit(out["reset"])])
        fake.script(SAMPLE_LINE, [Reply([tool_use("task_done", {"state": "DONE"})])])

        out["without_extra"] = subprocess.run([sys.executable, "-c", WITHOUT_EXTRA, "review", "--no-cache"], cwd=repo,
                                              env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
        out["bad_cli"] = {name: run_cli(repo, "review", "--no-cache", env={**env, "OCR_HOOK_CLAUDE_CODE_PATH": cli})
                          for name, cli in clis.items()}
        out["doctor_old"] = _doctor(repo, {**env, "OCR_HOOK_CLAUDE_CODE_PATH": clis["old"]})
        out["sent_before_reviews"] = len(fake.requests)

        out["limited"] = run_review(repo, env, base / "out-limited", LIMITED_PATH)
        out["limited_requests"] = fake.requests_for(LIMITED_MARKER)
        out["plan"] = run_review(repo, env, base / "out-plan", PLAN_PATH)
        out["plan_requests"] = fake.requests_for(PLAN_MARKER)

        mark = len(fake.requests)
        out["probe"] = _doctor(repo, env, "--probe")
        out["probe_requests"] = fake.requests[mark:]
        fake.handle(lambda body: SAMPLE_LINE in first_user_text(body), credits_ran_out)
        mark = len(fake.requests)
        out["probe_no_credit"] = _doctor(repo, env, "--probe")
        out["probe_no_credit_requests"] = fake.requests[mark:]
        no_login = {**env, "CLAUDE_CODE_OAUTH_TOKEN": "", "HOME": str(base / "empty-home")}
        mark = len(fake.requests)
        out["doctor_no_login"] = _doctor(repo, no_login, "--probe")
        out["no_login_requests"] = len(fake.requests) - mark
    return out


def test_the_extra_missing_is_exit_2_naming_the_fix(runs: dict[str, Any]) -> None:
    proc = runs["without_extra"]
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    line = proc.stderr.strip()
    assert_one_line(line)
    assert add_extra_hint("claude-code") in line, line  # this installation's own command (test_install_command)


@pytest.mark.parametrize(("cli", "says", "fix"), [
    ("old", f"{OLD} at ", upgrade_extra_hint("claude-code")),
    ("garbage", "does not look like Claude Code", "claude_code_path"),
    ("not_executable", "does not run", "chmod +x"),
])
def test_a_claude_that_is_too_old_or_no_claude_is_exit_2_before_any_request(
        runs: dict[str, Any], cli: str, says: str, fix: str) -> None:
    proc = runs["bad_cli"][cli]
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    line = proc.stderr.strip()
    assert_one_line(line)
    assert says in line and fix in line, line
    if cli == "old":
        assert "too old" in line and ".".join(map(str, MIN_CLI_VERSION)) in line, line
    assert runs["sent_before_reviews"] == 0


def test_doctor_fails_a_claude_that_is_too_old(runs: dict[str, Any]) -> None:
    code, checks, _ = runs["doctor_old"]
    assert code == 2
    assert checks["claude-code"]["status"] == "FAIL" and "too old" in checks["claude-code"]["message"]
    assert upgrade_extra_hint("claude-code") in checks["claude-code"]["fix"]


def test_a_server_rate_limit_fails_the_file_with_claude_codes_reason(runs: dict[str, Any]) -> None:
    run = runs["limited"]
    assert run.code == 3, run.proc.stdout
    state, reason = run.coverage_state(LIMITED_PATH)
    assert state == "failed" and reason.startswith("Claude Code: ") and SERVER_LIMIT in reason, reason
    assert_one_line(reason)
    assert_incomplete_everywhere(run)
    # Claude Code retried it itself, as many times as ocr-hook allows it (CLAUDE_CODE_MAX_RETRIES=2), then gave up
    assert [r.status for r in runs["limited_requests"]] == [429, 429, 429]


def test_a_plans_usage_limit_fails_the_file_at_once_with_when_it_resets(runs: dict[str, Any]) -> None:
    run = runs["plan"]
    assert run.code == 3, run.proc.stdout
    state, reason = run.coverage_state(PLAN_PATH)
    assert state == "failed" and "hit your" in reason and "limit" in reason and "resets" in reason, reason
    assert_one_line(reason)
    assert_incomplete_everywhere(run)
    assert [r.status for r in runs["plan_requests"]] == [429]  # a plan's limit is not retried


def test_doctor_probe_reviews_the_sample_through_claude_code(runs: dict[str, Any]) -> None:
    code, checks, stdout = runs["probe"]
    assert code == 0, stdout
    version = checks["claude-code"]
    assert version["status"] == "OK" and "(Claude Code)" in version["message"], version
    credentials = checks["credentials"]
    assert credentials["status"] == "OK" and "`claude auth status`" in credentials["message"], credentials
    assert "OAuth token" in credentials["message"] and "CLAUDE_CODE_OAUTH_TOKEN" in credentials["message"]
    probe = checks["probe"]
    assert probe["status"] == "OK" and "through Claude Code" in probe["message"], probe
    [request] = runs["probe_requests"]  # one request, the sample's, through Claude Code with the review's tools
    assert probe["message"].startswith(f"through Claude Code: model {request.body['model']} called 1 tool(s)")
    assert SAMPLE_AFTER.splitlines()[-1].strip() in request.first_user_text
    six = {f"mcp__ocr-hook__{spec.name}" for spec in registry.tools_for_phase("main")}
    assert {t["name"] for t in request.body["tools"]} == six
    assert "sk-ant-oat01-test" not in stdout


def test_credits_running_out_fail_the_probe_with_claude_codes_reason(runs: dict[str, Any]) -> None:
    code, checks, _ = runs["probe_no_credit"]
    assert code == 2
    probe = checks["probe"]
    assert probe["status"] == "FAIL" and OUT_OF_CREDITS in probe["message"], probe
    assert_one_line(probe["message"])
    # the cut stream, then Claude Code's non-streaming fallback refused: never a pass
    assert [(r.body.get("stream"), r.status) for r in runs["probe_no_credit_requests"]][:2] == [(True, 200),
                                                                                              (False, 400)]


def test_doctor_without_a_login_fails_and_sends_nothing(runs: dict[str, Any]) -> None:
    code, checks, _ = runs["doctor_no_login"]
    assert code == 2
    credentials = checks["credentials"]
    assert credentials["status"] == "FAIL" and "not logged in" in credentials["message"], credentials
    assert f"`{checks['claude-code']['message'].split(':')[0]} auth login`" in credentials["fix"], credentials
    assert checks["probe"]["status"] == "WARN" and runs["no_login_requests"] == 0


def test_on_macos_only_a_login_counts_not_any_claude_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ocr_hook.agent.claude_code import credential_kind

    monkeypatch.setattr(sys, "platform", "darwin")  # the keychain branch: what decides is the file's content
    (tmp_path / ".claude.json").write_text(json.dumps({"firstStartTime": "2026-12-03T18:38:11Z"}))  # any run
    assert credential_kind({"HOME": str(tmp_path)}) is None
    (tmp_path / ".claude.json").write_text(json.dumps({"oauthAccount": {"accountUuid": "a"}}))  # after a login
    assert credential_kind({"HOME": str(tmp_path)}) == "Claude Code login (macOS keychain)"
