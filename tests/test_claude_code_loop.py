"""provider: claude-code runs the main loop's rules as the API path does (DESIGN.md 15, issue 42): the last round
is announced with the results that open it and answered with only its tools, a lone round is offered only those,
identical calls are answered from the earlier round and end the file at the third repeat, and a reply without a
tool call is nudged (a model that never calls one fails as one without tool support). The same scripted
reviews run through the real Claude Code CLI and through the Messages API client; the fake sees the same
conversations from both (tool names aside: Claude Code prefixes them)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from e2e_support import calc_repo, run_review
from fake_api import FakeMessagesAPI, RecordedRequest, Reply, text, tool_use

from ocr_hook.agent import prompts, registry
from ocr_hook.agent.loop import MAX_NUDGES, MAX_REPEATS, NO_TOOL_USE

REPEAT_PATH, REPEAT_MARKER = "repeats.py", "SAME-CALL-AGAIN-3b8"
LAST_PATH, LAST_MARKER = "last.py", "LAST-ROUND-7e1"
ONE_PATH, ONE_MARKER = "one.py", "ONE-ROUND-5a2"
QUIET_PATH, QUIET_MARKER = "quiet.py", "TEXT-FIRST-4c6"
MUTE_PATH, MUTE_MARKER = "mute.py", "NEVER-A-TOOL-9d3"
BIG_DATA = "table.py"  # staged, not reviewed: what the last-round file's first look reads
BIG_TEXT = "".join(f"ROW_{n:03} = {'x' * 120!r}\n" for n in range(500))  # 500 lines, 70,000 characters
CLAUDE_CODE_KEEPS = 50_000  # characters of one tool result; more becomes a 2 KB preview the model cannot follow
ROUNDS = 4
REPEATED = "You already called file_read with exactly this input"
PROVIDERS = ("claude-code", "anthropic")


def _read(path: str, end: int) -> dict[str, Any]:
    return tool_use("file_read", {"file_path": path, "start_line": 1, "end_line": end})


def _latest_user_text(request: RecordedRequest) -> str:
    """Every text of the request's last user message, tool results included, however the sender nests it."""
    found: list[str] = []

    def walk(part: Any) -> None:
        if isinstance(part, dict):
            if isinstance(part.get("text"), str):
                found.append(part["text"])
            walk(part.get("content"))
        elif isinstance(part, list):
            for item in part:
                walk(item)
        elif isinstance(part, str):
            found.append(part)

    walk(request.body["messages"][-1]["content"])
    return "\n".join(found)


def _tools(request: RecordedRequest) -> set[str]:
    return {t["name"].rsplit("__", 1)[-1] for t in request.body.get("tools") or []}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    base = tmp_path_factory.mktemp("claude-code-loop")
    repo = calc_repo(base / "repo", {REPEAT_PATH: f"# {REPEAT_MARKER}\nA = 1\n", LAST_PATH: f"# {LAST_MARKER}\nB = 2\n",
                                     ONE_PATH: f"# {ONE_MARKER}\nC = 3\n", QUIET_PATH: f"# {QUIET_MARKER}\nD = 4\n",
                                     MUTE_PATH: f"# {MUTE_MARKER}\nE = 5\n", BIG_DATA: BIG_TEXT})
    out: dict[str, dict[str, Any]] = {}
    with FakeMessagesAPI() as fake:
        # the same call every turn, never task_done
        fake.script(REPEAT_MARKER, [Reply([_read(REPEAT_PATH, 2)]) for _ in range(ROUNDS + 2)])
        # a new look each turn (the first at a long file: issue 58 item 23); in the last one a look (which that
        # round refuses) and task_done
        fake.script(LAST_MARKER, [Reply([_read(BIG_DATA, 500)])]
                    + [Reply([_read(LAST_PATH, n)]) for n in range(2, ROUNDS)]
                    + [Reply([_read(LAST_PATH, ROUNDS), tool_use("task_done", {"state": "DONE"})])])
        fake.script(ONE_MARKER, [Reply([tool_use("task_done", {"state": "DONE"})])])
        # text first, then task_done once nudged; and a model that only ever writes text
        fake.script(QUIET_MARKER, [Reply([text("Looks fine to me.")]),
                                   Reply([tool_use("task_done", {"state": "DONE"})])])
        fake.script(MUTE_MARKER, [Reply([text("Nothing to add.")]) for _ in range(ROUNDS + 2)])
        for provider in PROVIDERS:
            env = {"HOME": str(base / "home"), "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_AUTH_TOKEN": "",
                   "XDG_CACHE_HOME": str(base / "cache"), "OCR_HOOK_PROVIDER": provider, "PRE_COMMIT": "1",
                   "OCR_HOOK_MAX_ROUNDS": str(ROUNDS)}
            env.update({"CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-test", "ANTHROPIC_API_KEY": ""}
                       if provider == "claude-code" else {"ANTHROPIC_API_KEY": "test-key-not-secret"})
            mark = len(fake.requests)
            run = run_review(repo, env, base / f"out-{provider}", REPEAT_PATH, LAST_PATH, QUIET_PATH, MUTE_PATH)
            sent = fake.requests[mark:]
            mark = len(fake.requests)
            lone = run_review(repo, {**env, "OCR_HOOK_MAX_ROUNDS": "1"}, base / f"out-one-{provider}", ONE_PATH)
            out[provider] = {"run": run, "lone": lone, "lone_requests": fake.requests[mark:],
                             "repeats": [r for r in sent if REPEAT_MARKER in r.first_user_text],
                             "last": [r for r in sent if LAST_MARKER in r.first_user_text],
                             "quiet": [r for r in sent if QUIET_MARKER in r.first_user_text],
                             "mute": [r for r in sent if MUTE_MARKER in r.first_user_text]}
    return out


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_last_round_is_announced_with_the_results_that_open_it(runs: dict[str, Any], provider: str) -> None:
    side = runs[provider]
    announce = prompts.final_round(LAST_PATH)
    assert [announce in _latest_user_text(r) for r in side["last"]] == [False] * (ROUNDS - 1) + [True]
    assert side["run"].coverage_state(LAST_PATH) == ("reviewed", "")


def test_claude_code_announces_the_last_round_as_the_api_does(runs: dict[str, Any]) -> None:
    seen = {provider: [_latest_user_text(r) for r in runs[provider]["last"]] for provider in PROVIDERS}
    assert len(seen["claude-code"]) == len(seen["anthropic"]) == ROUNDS
    # Claude Code announces it inside the first tool result of the round before the last, the API after them
    announce = prompts.final_round(LAST_PATH)
    assert seen["claude-code"][-1].count(announce) == seen["anthropic"][-1].count(announce) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_lone_round_is_offered_only_the_last_rounds_tools(runs: dict[str, Any], provider: str) -> None:
    side = runs[provider]
    [request] = side["lone_requests"]
    assert _tools(request) == {spec.name for spec in registry.tools_for_phase("final")}
    assert prompts.final_round(ONE_PATH) in request.first_user_text
    assert side["lone"].code == 0 and side["lone"].coverage_state(ONE_PATH) == ("reviewed", "")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_repeated_calls_are_answered_from_before_and_end_the_file(runs: dict[str, Any], provider: str) -> None:
    side = runs[provider]
    requests = side["repeats"]
    # the first call is answered (in the second request); each repeat is told it was one, and after the
    # MAX_REPEATS-th nothing is sent
    assert len(requests) == MAX_REPEATS + 1 == ROUNDS, len(requests)
    assert [REPEATED in _latest_user_text(r) for r in requests] == [False, False] + [True] * (MAX_REPEATS - 1)
    state, reason = side["run"].coverage_state(REPEAT_PATH)
    assert state == "failed" and f"repeated identical tool calls {MAX_REPEATS} times" in reason, reason
    assert side["run"].code == 3
    assert side["run"].report["usage"]["requests"] == sum(len(side[k]) for k in ("repeats", "last", "quiet", "mute"))


def test_claude_code_answers_a_repeat_in_the_api_paths_words(runs: dict[str, Any]) -> None:
    def answer(provider: str) -> str:
        text = _latest_user_text(runs[provider]["repeats"][2])
        return text[text.index(REPEATED):].split("\n")[0]

    assert answer("claude-code") == answer("anthropic")
    assert json.dumps(runs["claude-code"]["repeats"][0].body).count("mcp__ocr-hook__file_read") >= 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_reply_without_a_tool_call_is_nudged(runs: dict[str, Any], provider: str) -> None:
    side = runs[provider]
    first, nudged = side["quiet"]
    assert prompts.nudge(QUIET_PATH) not in _latest_user_text(first)
    assert prompts.nudge(QUIET_PATH) in _latest_user_text(nudged)
    assert "Looks fine to me." in json.dumps(nudged.body["messages"])  # the reply stays in the conversation
    assert side["run"].coverage_state(QUIET_PATH) == ("reviewed", "")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_model_that_never_calls_a_tool_fails_as_one_without_tool_support(runs: dict[str, Any],
                                                                          provider: str) -> None:
    side = runs[provider]
    requests = side["mute"]
    # nudged after each reply until the round limit (the last nudge opens the last round and says so)
    assert len(requests) == ROUNDS == MAX_NUDGES + 1
    assert [prompts.nudge(MUTE_PATH) in _latest_user_text(r) for r in requests] == [False] + [True] * MAX_NUDGES
    assert prompts.final_round(MUTE_PATH) in _latest_user_text(requests[-1])
    assert side["run"].coverage_state(MUTE_PATH) == ("failed", NO_TOOL_USE)


@pytest.mark.parametrize(("provider", "limit"), [("claude-code", 45_000), ("anthropic", 60_000)])
def test_a_long_result_is_cut_by_ocr_hook_below_what_the_model_side_keeps(runs: dict[str, Any], provider: str,
                                                                            limit: int) -> None:
    """Issue 58 item 23: Claude Code keeps 50,000 characters of a result; ocr-hook cuts below that on this
    provider, with the note that says where to go on, as the API path cuts at its own 60,000."""
    side = runs[provider]
    result = _latest_user_text(side["last"][1])  # the answer to the first look
    assert f"to stay under {limit} characters; `{BIG_DATA}` has 500 lines. Continue with start_line" in result
    assert "[Output cut at line " in result and "1|ROW_000" in result, result[:300]
    assert "persisted-output" not in result and "Output too large" not in result  # Claude Code's own cut
    assert len(result) <= limit + 500 and (provider == "anthropic" or len(result) < CLAUDE_CODE_KEEPS), len(result)
    assert side["run"].coverage_state(LAST_PATH) == ("reviewed", "")
