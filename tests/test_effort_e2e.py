"""Effort through the entry points: the CLI (`--effort`, OCR_HOOK_EFFORT, PRE_COMMIT=1), `preview`, and
the MCP server's `effort` argument, each against the fake Messages and Models API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from agent_support import filter_keeps_all, main_opening, plan_opening
from e2e_support import CALC_PATH, calc_repo, comment, comment_turn
from fake_api import FakeMessagesAPI, Reply, task_done, tool_use
from gitrepo import run_cli
from test_mcp_server import serving

MODEL = "claude-sonnet-5-5"


def main_requests(fake: FakeMessagesAPI, path: str = CALC_PATH) -> list[dict[str, Any]]:
    return [r.body for r in fake.requests_for(main_opening(path))]


def hook_env(sdk_env: dict[str, str], **extra: str) -> dict[str, str]:
    env = {k: v for k, v in sdk_env.items() if k not in ("PRE_COMMIT", "CI", "OCR_HOOK_EFFORT")}
    return {**env, "CI": "", **extra}


def test_cli_effort_flag_reaches_the_requests_and_the_json_report(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                  sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    fake_api.models.register(MODEL)
    filter_keeps_all(fake_api)
    fake_api.script(main_opening(CALC_PATH), [comment_turn(comment(severity="high")), task_done()])
    proc = run_cli(repo, "review", "--effort", "deep", "--format", "json", env=hook_env(sdk_env, PRE_COMMIT="1"))
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["coverage"]["effort"] == {CALC_PATH: "deep"}  # the flag beats auto's quick under pre-commit
    assert report["coverage"]["reviewed"] == [CALC_PATH]
    assert fake_api.requests_for(plan_opening(CALC_PATH))
    for body in main_requests(fake_api):
        assert body["thinking"] == {"type": "adaptive"} and body["output_config"] == {"effort": "high"}
    # Under pre-commit the report is all there is (no progress or summary lines on standard error): its
    # coverage above says which profile ran.
    assert proc.stderr == ""


def test_cli_under_pre_commit_is_quick_and_says_so(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                   sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo", {"auth/tokens.py": "def token():\n    return 'x'\n"})
    fake_api.models.register(MODEL)
    filter_keeps_all(fake_api)
    proc = run_cli(repo, "review", env=hook_env(sdk_env, PRE_COMMIT="1"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # A passing run under pre-commit is one line, and it names the profiles.
    assert proc.stdout.count("\n") == 1
    assert "2 files reviewed, 0 skipped, 0 failed (1 quick, 1 standard)" in proc.stdout
    [calc] = main_requests(fake_api)
    assert "thinking" not in calc and calc["output_config"] == {"effort": "low"}
    [auth] = main_requests(fake_api, "auth/tokens.py")
    assert auth["thinking"] == {"type": "adaptive"}
    # The full text report (outside pre-commit's brief one) lists the files by profile: with CI=true auto is
    # standard, and the risky path is raised to deep.
    full = run_cli(repo, "review", "--no-cache", env=hook_env(sdk_env, CI="true"))
    assert "Effort:\n  standard: calc.py\n  deep: auth/tokens.py" in full.stdout, full.stdout


def test_effort_from_the_environment_and_a_bad_value(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                     sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    proc = run_cli(repo, "review", "--format", "json", env=hook_env(sdk_env, OCR_HOOK_EFFORT="quick", CI="true"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["coverage"]["effort"] == {CALC_PATH: "quick"}
    bad = run_cli(repo, "review", env=hook_env(sdk_env, OCR_HOOK_EFFORT="fast"))
    assert bad.returncode == 2 and "OCR_HOOK_EFFORT" in bad.stderr and "Traceback" not in bad.stderr
    flag = run_cli(repo, "review", "--effort", "fast", env=hook_env(sdk_env))
    assert flag.returncode == 2 and "--effort" in flag.stderr


def test_preview_shows_each_files_profile(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo", {"db/migrations/0002.sql": "ALTER TABLE t ADD c int;\n"})
    env = hook_env(sdk_env, PRE_COMMIT="1")
    doc = json.loads(run_cli(repo, "preview", "--format", "json", env=env).stdout)
    efforts = {f["path"]: (f["effort"], f["effort_reason"]) for f in doc["files"]}
    assert efforts == {CALC_PATH: ("quick", "pre-commit"), "db/migrations/0002.sql": ("standard", "risky path")}
    text_ = run_cli(repo, "preview", env=env).stdout
    assert "effort: quick (pre-commit)" in text_ and "effort: standard (risky path)" in text_
    deep = json.loads(run_cli(repo, "preview", "--format", "json", "--effort", "deep", env=env).stdout)
    assert {f["effort"] for f in deep["files"]} == {"deep"}


def test_mcp_effort_argument(tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    fake_api.models.register(MODEL)
    filter_keeps_all(fake_api)
    fake_api.script(main_opening(CALC_PATH), [Reply([
        tool_use("code_comment", {"comments": [comment(severity="low")]}), tool_use("task_done", {"state": "DONE"})])])

    async def main() -> tuple[Any, Any, Any]:
        async with serving(repo, hook_env(sdk_env), tmp_path / "stderr.txt") as client:
            quick = await client.call("review", {"effort": "quick"})
            preview = await client.call("preview", {"effort": "deep"})
            bad = await client.call("review", {"effort": "fast"})
            return quick, preview, bad

    quick, preview, bad = anyio.run(main)
    assert not quick.is_error, quick.content
    assert quick.structured_content["coverage"]["effort"] == {CALC_PATH: "quick"}
    [body] = main_requests(fake_api)  # one turn; a low comment needs no filter under quick
    assert len(fake_api.requests) == 1
    assert "thinking" not in body and body["output_config"] == {"effort": "low"}
    assert [f["effort"] for f in preview.structured_content["files"]] == ["deep"]
    assert bad.is_error and "effort" in bad.content[0].text


def test_preview_estimates_fewer_requests_for_quick(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    tokens = {effort: json.loads(run_cli(repo, "preview", "--format", "json", "--effort", effort,
                                         env=hook_env(sdk_env)).stdout)["estimate"]["input_tokens"]
              for effort in ("quick", "standard", "deep")}
    assert tokens["quick"] < tokens["standard"] < tokens["deep"]
