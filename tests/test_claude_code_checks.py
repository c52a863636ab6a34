"""provider: claude-code evaluates the team's checks (issue 59 item 7, DESIGN.md 15 and 20): `ocr-hook review`
through the real Claude Code CLI (the `claude-code` extra) against the fake Messages API. The checks pass is one
more CLI conversation with the same first message and tools as the API's pass (the read-only four, check_verdict,
task_done, served in process; no built-in tool); the model's check_verdict is anchored and gates as on the API
path. One run: the CLI is the expensive part."""

from __future__ import annotations

from pathlib import Path

from e2e_support import CALC_AFTER, CALC_BEFORE, CALC_LINE, CALC_PATH, run_review
from fake_api import FakeMessagesAPI, Reply, tool_use
from gitrepo import commit_all, git, make_repo, write

CHECK = "---\npaths: [\"calc.py\"]\nmode: block\nwhen: commit\n---\nArithmetic changes come with a test.\n"
PASS_OPENING = "Evaluate the team's checks"


def test_claude_code_answers_the_checks_with_the_same_tools(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, CALC_PATH, CALC_BEFORE)
    write(repo, ".ocr-hook/checks/calc-tests.md", CHECK)
    commit_all(repo, "base")
    write(repo, CALC_PATH, CALC_AFTER)
    git(repo, "add", CALC_PATH)
    with FakeMessagesAPI() as fake:
        env = {"HOME": str(tmp_path / "home"), "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "",
               "ANTHROPIC_AUTH_TOKEN": "", "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-test",
               "XDG_CACHE_HOME": str(tmp_path / "cache"), "OCR_HOOK_PROVIDER": "claude-code", "PRE_COMMIT": "1"}
        fake.script("return a - b", [Reply([tool_use("task_done", {"state": "DONE"})])])
        fake.script(PASS_OPENING, [Reply([
            tool_use("check_verdict", {"check": "calc-tests", "verdict": "fail", "reason": "add() changed, no test.",
                                       "evidence": [{"path": CALC_PATH, "code": "return a - b"}]}),
            tool_use("task_done", {"state": "DONE"})])])
        run = run_review(repo, env, tmp_path / "out")
        asked = [r for r in fake.requests if PASS_OPENING in r.first_user_text]
    assert run.code == 1, run.proc.stderr  # the failed block check blocks: no finding was raised
    assert run.report["findings"] == []
    [verdict] = run.report["checks"]
    assert (verdict["name"], verdict["verdict"], verdict["reason"]) == ("calc-tests", "fail", "add() changed, no test.")
    [evidence] = verdict["evidence"]
    assert (evidence["path"], evidence["start_line"], evidence["anchored"]) == (CALC_PATH, CALC_LINE, True)
    # One request (commit time: one round answers every check; task_done ends it), the pass's tools only.
    assert len(asked) == 1
    names = {t["name"] for t in asked[0].body["tools"]}
    assert names == {f"mcp__ocr-hook__{n}" for n in ("file_read", "file_read_diff", "file_find", "code_search",
                                                      "check_verdict", "task_done")}, names
    # check_verdict's `check` is an enum of this change's checks, as on the API path (strict mode then refuses
    # any other name before a handler sees it).
    [verdict_tool] = [t for t in asked[0].body["tools"] if t["name"] == "mcp__ocr-hook__check_verdict"]
    assert verdict_tool["input_schema"]["properties"]["check"]["enum"] == ["calc-tests"], verdict_tool
