"""`provider: auto`, the default (issue 54 item 5, DESIGN.md 19): the API key when there is one; else Claude Code
when it has a credential (the real Claude Code CLI of the claude-code extra, against the fake Messages API); else
exit 2 with the three ways in. `doctor` shows the choice. Through the real CLI (forked)."""

from __future__ import annotations

import json
from pathlib import Path

from e2e_support import calc_repo, comment
from fake_api import FakeMessagesAPI, Reply, tool_use
from gitrepo import run_cli

TOKEN = "sk-ant-oat01-test"


def _no_key(tmp_path: Path, fake: FakeMessagesAPI, **extra: str) -> dict[str, str]:
    """No API key in any variable, an empty HOME (no Claude Code login), the endpoint the fake."""
    return {"HOME": str(tmp_path / "home"), "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "",
            "ANTHROPIC_AUTH_TOKEN": "", "ANTHROPIC_PROFILE": "", "CLAUDE_CODE_OAUTH_TOKEN": "",
            "ANTHROPIC_CONFIG_DIR": str(tmp_path / "anthropic-config"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "NO_COLOR": "1", **extra}


def test_without_a_key_a_claude_code_token_reviews_through_claude_code_and_says_so(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env_without_key: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    high = comment(content="add() subtracts.", severity="high", suggestion=None)
    fake_api.script("return a - b", [Reply([tool_use("code_comment", {"comments": [high]}),
                                            tool_use("task_done", {"state": "DONE"})])])
    env = _no_key(tmp_path, fake_api, CLAUDE_CODE_OAUTH_TOKEN=TOKEN)
    proc = run_cli(repo, "review", "--no-review-filter", env=env, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "add() subtracts." in proc.stdout
    assert "provider auto: reviewed through Claude Code with CLAUDE_CODE_OAUTH_TOKEN, as there is no API key" \
        in proc.stdout
    main = [r for r in fake_api.requests if "/v1/messages" in r.path and "count_tokens" not in r.path]
    # Claude Code sent them: the review tools under its MCP prefix, the OAuth token as the credential.
    assert main and all(any(t["name"] == "mcp__ocr-hook__code_comment" for t in r.body.get("tools", []))
                        for r in main)
    assert all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in main)

    doctor = run_cli(repo, "doctor", "--format", "json", env=env, timeout=120)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["provider"]["status"] == "OK"
    assert checks["provider"]["message"].startswith("auto chose claude-code: Claude Code with CLAUDE_CODE_OAUTH_TOKEN")


def test_with_neither_a_key_nor_claude_code_one_block_names_the_three_ways_in(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env_without_key: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    env = _no_key(tmp_path, fake_api)
    proc = run_cli(repo, "review", env=env)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    first, *ways = proc.stderr.splitlines()
    assert first == ("ocr-hook: error: nothing to review with: no API key and no Claude Code login. "
                     "Three ways in:")
    assert len(ways) == 3 and all(w.startswith("  - ") for w in ways), proc.stderr
    key, plan, delegate = ways
    assert "ANTHROPIC_API_KEY" in key
    assert "a Claude plan" in plan and "claude-code extra" in plan and "claude auth login" in plan
    assert "delegate mode" in delegate and "ocr-hook delegate start" in delegate
    assert fake_api.requests == []
    # The way in that needs nothing installed works as named: delegate mode starts a session with no key.
    started = run_cli(repo, "delegate", "start", env=env)
    assert started.returncode == 0 and json.loads(started.stdout)["files"], started.stderr

    doctor = run_cli(repo, "doctor", "--format", "json", env=env)
    assert doctor.returncode == 2
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["credentials"]["status"] == "FAIL"
    assert checks["credentials"]["message"].startswith("provider auto: no API key and no Claude Code login")
    assert "delegate" in checks["credentials"]["fix"] and "ANTHROPIC_API_KEY" in checks["credentials"]["fix"]


def test_a_key_is_used_as_before(tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    proc = run_cli(repo, "review", "--format", "json", env={**sdk_env, "CLAUDE_CODE_OAUTH_TOKEN": TOKEN})
    assert proc.returncode == 0, proc.stderr
    # The Claude credential beside the key is passed over, and said so (issue 58 item 24): in the run's notes and
    # in doctor's provider line; its value never.
    notes = [n for n in json.loads(proc.stdout)["notes"] if "provider auto" in n]
    assert len(notes) == 1 and "CLAUDE_CODE_OAUTH_TOKEN" in notes[0] and "passed over" in notes[0], notes
    doctor = run_cli(repo, "doctor", "--format", "json", env={**sdk_env, "CLAUDE_CODE_OAUTH_TOKEN": TOKEN})
    [provider] = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "provider"]
    assert "auto chose anthropic" in provider["message"] and "passed over" in provider["message"], provider
    assert TOKEN not in proc.stdout + doctor.stdout
    main = [r for r in fake_api.requests if "/v1/messages" in r.path and "count_tokens" not in r.path]
    # The SDK with the key, not Claude Code: the tools under their own names, no MCP prefix.
    assert main and all({t["name"] for t in r.body["tools"]} >= {"code_comment", "task_done"} for r in main)
