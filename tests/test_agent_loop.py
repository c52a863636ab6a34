"""The agent loop end to end: real SDK → HTTP → scripted fake Messages API, real scratch repos."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from agent_support import (
    FINAL_TOOLS,
    MAIN_TOOLS,
    PLAN_TOOLS,
    breakpoints,
    is_filter,
    keep_all,
    last_user_blocks,
    main_opening,
    plan_opening,
    review_job,
    settings_for,
    staged_repo,
    tool_names,
)
from fake_api import FakeMessagesAPI, Fault, Reply, task_done, text, tool_use

from ocr_hook.agent import ReviewJob, check_credentials, review_files, review_files_async
from ocr_hook.agent.conversation import ELIDED
from ocr_hook.agent.prompts import system_prompt
from ocr_hook.errors import ConfigError
from ocr_hook.findings import Category, Severity

CALC_BEFORE = "def add(a, b):\n    return a + b\n"
CALC_AFTER = (
    "def add(a, b):\n    return a + b\n\n\n"
    "def mean(values):\n    return sum(values) / len(values)\n\n\n"
    + "".join(f"def f{n}(x):\n    return x * {n}\n\n\n" for n in range(8))
)
UTIL_AFTER = "import os\n\n\ndef run(cmd):\n    os.system(cmd)\n"
NOTES_AFTER = "def greet(name):\n    print('hello ' + name)\n"


@pytest.fixture
def three_files(tmp_path: Path) -> Path:
    return staged_repo(tmp_path / "repo", {"app/calc.py": CALC_BEFORE, "README.md": "demo\n"},
                       {"app/calc.py": CALC_AFTER, "app/util.py": UTIL_AFTER, "app/notes.py": NOTES_AFTER})


def test_three_file_review_with_plan_phase(three_files: Path, fake_api: FakeMessagesAPI,
                                           sdk_env: dict[str, str]) -> None:
    fake_api.handle(is_filter, keep_all)
    fake_api.script(plan_opening("app/calc.py"), [
        Reply([tool_use("code_search", {"search_text": "def add"})]),
        Reply([text("- check that mean() handles an empty list\n- check callers of add")]),
    ])
    fake_api.script(main_opening("app/calc.py"), [
        Reply([text("Looking around."),
               tool_use("file_read", {"file_path": "app/calc.py", "start_line": 5, "end_line": 6}),
               tool_use("file_find", {"query_name": "util"})]),
        Reply([tool_use("code_comment", {"comments": [{
            "content": "mean() divides by zero for an empty list.",
            "existing_code": "    return sum(values) / len(values)",
            "suggestion_code": "    return sum(values) / len(values) if values else 0.0",
            "severity": "high", "category": "bug"}]})]),
        task_done("DONE"),
    ])
    fake_api.script(main_opening("app/util.py"), [
        Reply([tool_use("code_comment", {"comments": [{
            "content": "Shell injection: cmd reaches os.system unchecked.",
            "existing_code": "os.system(cmd)", "severity": "critical", "category": "security"}]})]),
        task_done("DONE"),
    ])
    fake_api.script(main_opening("app/notes.py"), [task_done("DONE")])
    events: list[tuple[str, str, str]] = []
    with review_job(three_files, sdk_env, events=events, plan_threshold=20) as job:
        result = review_files(job)

    assert {(f.path, f.state) for f in result.files} == {
        ("app/calc.py", "reviewed"), ("app/util.py", "reviewed"), ("app/notes.py", "reviewed")}
    assert result.complete
    assert fake_api.errors == []

    plan_requests = fake_api.requests_for(plan_opening("app/calc.py"))
    assert len(plan_requests) == 2
    for req in plan_requests:
        assert tool_names(req) == PLAN_TOOLS
    # Only the large file gets a plan phase.
    assert fake_api.requests_for(plan_opening("app/util.py")) == []
    # The plan's answer to the search came back as a tool_result, and its checklist reaches the main phase.
    assert "app/calc.py:1:def add(a, b):" in last_user_blocks(plan_requests[1])[0]["content"]
    calc = fake_api.requests_for(main_opening("app/calc.py"))
    assert len(calc) == 3
    assert "check that mean() handles an empty list" in calc[0].first_user_text

    for req in [*plan_requests, *calc, *fake_api.requests_for(main_opening("app/util.py"))]:
        body = req.body
        assert body["system"][0]["text"] == system_prompt()
        assert all(t["strict"] is True and t["input_schema"]["additionalProperties"] is False
                   for t in body["tools"])
        assert "cache_control" in body["tools"][-1] and "cache_control" in body["system"][-1]
        assert 3 <= breakpoints(body) <= 4
        assert "tool_choice" not in body
    for req in calc:
        assert tool_names(req) == MAIN_TOOLS
    # Tools and system prompt are byte-identical across files, so one cache entry serves them all.
    util_first = fake_api.requests_for(main_opening("app/util.py"))[0].body
    assert json.dumps(util_first["tools"]) == json.dumps(calc[0].body["tools"])
    assert util_first["system"] == calc[0].body["system"]

    # Both tool results of the first turn arrive in one message, in call order.
    first_calls = [b for b in calc[1].body["messages"][1]["content"] if b["type"] == "tool_use"]
    results = last_user_blocks(calc[1])
    assert [r["tool_use_id"] for r in results if r["type"] == "tool_result"] == [c["id"] for c in first_calls]
    assert results[0]["content"].splitlines() == ["5|def mean(values):", "6|    return sum(values) / len(values)"]
    assert results[1]["content"].strip() == "app/util.py"
    # The first user message carries the diff and the list of the other changed files.
    opening = calc[0].first_user_text
    assert "+def mean(values):" in opening and "- app/util.py" in opening and "- app/notes.py" in opening

    by_path = {f.path: f for f in result.findings}
    mean = by_path["app/calc.py"]
    assert (mean.start_line, mean.end_line, mean.anchored) == (6, 6, True)
    assert mean.severity is Severity.HIGH and mean.category is Category.BUG
    assert mean.message == "mean() divides by zero for an empty list."
    assert mean.suggestion == "    return sum(values) / len(values) if values else 0.0"
    assert mean.existing_code == "    return sum(values) / len(values)"
    shell = by_path["app/util.py"]
    assert (shell.start_line, shell.severity, shell.category) == (5, Severity.CRITICAL, Category.SECURITY)
    assert len(result.findings) == 2
    assert ("app/util.py", "done", "1 comment(s)") in events
    assert ("app/notes.py", "reviewing", "") in events
    assert result.usage.requests == len([r for r in fake_api.requests if r.usage is not None])


def test_task_done_failed_marks_the_file_failed(three_files: Path, fake_api: FakeMessagesAPI,
                                                sdk_env: dict[str, str]) -> None:
    fake_api.handle(is_filter, keep_all)
    fake_api.script(main_opening("app/util.py"), [
        Reply([tool_use("code_comment", {"comments": [{
            "content": "Shell injection.", "existing_code": "os.system(cmd)",
            "severity": "critical", "category": "security"}]})]),
        task_done("FAILED"),
    ])
    with review_job(three_files, sdk_env) as job:
        result = review_files(job)
    util = next(f for f in result.files if f.path == "app/util.py")
    assert util.state == "failed" and util.incomplete
    assert "task_done FAILED" in util.reason
    assert not result.complete
    # What was collected before is still reported.
    assert [f.path for f in result.findings] == ["app/util.py"]


def test_no_tool_turn_gets_a_nudge(three_files: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    fake_api.script(main_opening("app/notes.py"), [Reply([text("This looks fine to me.")]), task_done()])
    with review_job(three_files, sdk_env) as job:
        result = review_files(job)
    notes = fake_api.requests_for(main_opening("app/notes.py"))
    assert len(notes) == 2
    nudge = last_user_blocks(notes[1])
    assert nudge[0]["type"] == "text" and "called no tool" in nudge[0]["text"]
    assert notes[1].body["messages"][1]["content"][0]["text"] == "This looks fine to me."
    assert next(f for f in result.files if f.path == "app/notes.py").state == "reviewed"


def test_round_limit_offers_only_final_tools_in_the_last_round(three_files: Path, fake_api: FakeMessagesAPI,
                                                               sdk_env: dict[str, str]) -> None:
    looking = [Reply([tool_use("file_find", {"query_name": f"name{n}"})]) for n in range(3)]
    fake_api.script(main_opening("app/notes.py"), [*looking, Reply([tool_use("file_find", {"query_name": "x"})])])
    with review_job(three_files, sdk_env, max_rounds=3) as job:
        result = review_files(job)
    notes = fake_api.requests_for(main_opening("app/notes.py"))
    assert [tool_names(r) for r in notes] == [MAIN_TOOLS, MAIN_TOOLS, FINAL_TOOLS]
    last = last_user_blocks(notes[2])
    assert last[-1]["type"] == "text" and "last round" in last[-1]["text"]
    coverage = next(f for f in result.files if f.path == "app/notes.py")
    assert coverage.state == "failed" and "3 rounds" in coverage.reason


def test_final_round_tool_outside_phase_is_an_error_result(three_files: Path, fake_api: FakeMessagesAPI,
                                                           sdk_env: dict[str, str]) -> None:
    fake_api.script(main_opening("app/notes.py"), [
        Reply([tool_use("file_find", {"query_name": "a"})]),
        Reply([tool_use("file_find", {"query_name": "b"})]),
    ])
    with review_job(three_files, sdk_env, max_rounds=2) as job:
        review_files(job)
    notes = fake_api.requests_for(main_opening("app/notes.py"))
    assert [tool_names(r) for r in notes] == [MAIN_TOOLS, FINAL_TOOLS]
    assert len(notes) == 2  # the run stopped after the final round


def test_repeat_guard(three_files: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    same = Reply([tool_use("file_find", {"query_name": "calc"})])
    fake_api.script(main_opening("app/notes.py"), [same] * 10)
    with review_job(three_files, sdk_env) as job:
        result = review_files(job)
    notes = fake_api.requests_for(main_opening("app/notes.py"))
    assert notes[1].body["messages"][-1]["content"][0]["content"].strip() == "app/calc.py"
    second = notes[2].body["messages"][-1]["content"][0]
    assert "already called file_find with exactly this input" in second["content"]
    coverage = next(f for f in result.files if f.path == "app/notes.py")
    assert coverage.state == "failed" and "repeated identical tool calls" in coverage.reason
    assert len(notes) == 4  # first answer, then three repeats end the file


def test_invalid_input_and_unknown_tool_come_back_as_errors(three_files: Path, fake_api: FakeMessagesAPI,
                                                            sdk_env: dict[str, str]) -> None:
    fake_api.script(main_opening("app/notes.py"), [
        Reply([tool_use("code_comment", {"comments": [{"content": "x", "existing_code": "print",
                                                        "severity": "urgent", "category": "bug"}]}),
               tool_use("run_shell", {"cmd": "ls"}),
               tool_use("file_read", "not an object")]),
        Reply([tool_use("code_comment", {"comments": [{
            "content": "Use an f-string.", "existing_code": "    print('hello ' + name)",
            "severity": "low", "category": "style"}]})]),
        task_done(),
    ])
    fake_api.handle(is_filter, keep_all)
    with review_job(three_files, sdk_env) as job:
        result = review_files(job)
    notes = fake_api.requests_for(main_opening("app/notes.py"))
    errors = last_user_blocks(notes[1])
    assert [b.get("is_error") for b in errors] == [True, True, True]
    assert "`comments[0].severity`" in errors[0]["content"] and "critical, high, medium, low" in errors[0]["content"]
    assert "no tool named" in errors[1]["content"]
    assert "file_read" in errors[2]["content"]
    assert [f.message for f in result.findings if f.path == "app/notes.py"] == ["Use an f-string."]
    assert next(f for f in result.files if f.path == "app/notes.py").state == "reviewed"


def test_api_fault_fails_one_file_and_the_others_go_on(three_files: Path, fake_api: FakeMessagesAPI,
                                                       sdk_env: dict[str, str]) -> None:
    fake_api.handle(is_filter, keep_all)
    fake_api.script(main_opening("app/util.py"), [
        Reply([tool_use("code_comment", {"comments": [{
            "content": "Shell injection.", "existing_code": "os.system(cmd)",
            "severity": "critical", "category": "security"}]})]),
        Fault(status=400, times=5),
    ])
    with review_job(three_files, sdk_env) as job:
        result = review_files(job)
    states = {f.path: (f.state, f.reason) for f in result.files}
    assert states["app/util.py"][0] == "failed"
    assert states["app/util.py"][1].startswith("API error 400: fake API: injected 400 fault")
    assert "\n" not in states["app/util.py"][1]
    assert states["app/calc.py"][0] == "reviewed" and states["app/notes.py"][0] == "reviewed"
    # The comment made before the failure is kept, and anchored.
    shell = [f for f in result.findings if f.path == "app/util.py"]
    assert len(shell) == 1 and shell[0].start_line == 5
    # No re-location or filter request for a file whose API calls fail.
    assert not any(is_filter(r.body) and "app/util.py" in r.first_user_text for r in fake_api.requests)


def test_missing_key_is_a_config_error_before_any_request(three_files: Path, fake_api: FakeMessagesAPI,
                                                          sdk_env_without_key: dict[str, str]) -> None:
    with review_job(three_files, sdk_env_without_key) as job:
        with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
            check_credentials(job.settings, job.environ)
        with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
            review_files(job)
    assert fake_api.requests == []


# --- stop reasons and long conversations --------------------------------------------------------------------


def test_refusal_fails_the_file(three_files: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    fake_api.script(main_opening("app/notes.py"), [Reply([text("I won't review this.")], stop_reason="refusal")])
    with review_job(three_files, sdk_env) as job:
        result = review_files(job)
    coverage = next(f for f in result.files if f.path == "app/notes.py")
    assert coverage.state == "failed" and "declined" in coverage.reason
    assert len(fake_api.requests_for(main_opening("app/notes.py"))) == 1


def test_output_limit_continues_once_then_fails(three_files: Path, fake_api: FakeMessagesAPI,
                                                sdk_env: dict[str, str]) -> None:
    cut = Reply([text("Let me write a very long")], stop_reason="max_tokens")
    fake_api.script(main_opening("app/notes.py"), [cut, task_done()])
    fake_api.script(main_opening("app/util.py"), [cut, cut, task_done()])
    with review_job(three_files, sdk_env) as job:
        result = review_files(job)
    states = {f.path: (f.state, f.reason) for f in result.files}
    notes = fake_api.requests_for(main_opening("app/notes.py"))
    assert "cut off at the output limit" in last_user_blocks(notes[1])[0]["text"]
    assert states["app/notes.py"] == ("reviewed", "")
    assert states["app/util.py"][0] == "failed" and "output limit" in states["app/util.py"][1]
    assert len(fake_api.requests_for(main_opening("app/util.py"))) == 2


def test_context_overflow_compacts_then_fails_if_it_recurs(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                           sdk_env: dict[str, str]) -> None:
    long_file = "".join(f"value_{n} = {n}  # some filler text to make the line long enough\n" for n in range(400))
    root = staged_repo(tmp_path / "repo", {"data.py": long_file}, {"data.py": long_file + "extra = 1\n",
                                                                    "other.py": "x = 2\n"})
    reads = [Reply([tool_use("file_read", {"file_path": "data.py", "start_line": 1 + 100 * n,
                                           "end_line": 100 + 100 * n})]) for n in range(3)]
    overflow = Reply([text("…")], stop_reason="model_context_window_exceeded")
    seen: list[int] = []

    def once_then_done(body: dict[str, Any]) -> Reply:
        seen.append(len(body["messages"]))
        return overflow if len(seen) == 1 else task_done()

    fake_api.handle(lambda b: main_opening("data.py") in first_text(b) and assistant_count(b) == 3, once_then_done)
    fake_api.script(main_opening("data.py"), reads)
    fake_api.script(main_opening("other.py"), [overflow])
    with review_job(root, sdk_env) as job:
        result = review_files(job)
    states = {f.path: (f.state, f.reason) for f in result.files}
    assert states["data.py"] == ("reviewed", "")
    data = fake_api.requests_for(main_opening("data.py"))
    assert len(data) == 5 and seen == [7, 7]  # the cut reply was dropped and the round asked again
    retry = data[4].body["messages"]
    contents = [b["content"] for m in retry if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"]
    assert contents[0] == ELIDED and contents[-1].startswith("201|")
    assert data[3].body["messages"][2]["content"][0]["content"].startswith("1|")
    assert states["other.py"][0] == "failed" and "context window" in states["other.py"][1]


def first_text(body: dict[str, Any]) -> str:
    return body["messages"][0]["content"][0]["text"]


def assistant_count(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


# --- result cache -----------------------------------------------------------------------------------------

CACHED_RUN = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from agent_support import review_job
from ocr_hook.agent import review_files
import os
with review_job(Path(sys.argv[2]), dict(os.environ), cache_dir=Path(sys.argv[3]), cache=True) as job:
    if sys.argv[4] == "none":
        job.files = []
    result = review_files(job)
print(json.dumps({"anthropic": "anthropic" in sys.modules, "states": [f.state for f in result.files],
                  "findings": [f.fingerprint for f in result.findings]}))
"""


def test_result_cache_hit_sends_nothing_and_never_loads_the_sdk(three_files: Path, fake_api: FakeMessagesAPI,
                                                                sdk_env: dict[str, str], tmp_path: Path) -> None:
    fake_api.handle(is_filter, keep_all)
    fake_api.script(main_opening("app/util.py"), [
        Reply([tool_use("code_comment", {"comments": [{
            "content": "Shell injection.", "existing_code": "os.system(cmd)",
            "severity": "critical", "category": "security"}]})]),
        task_done(),
    ])
    cache_dir = tmp_path / "cache"
    events: list[tuple[str, str, str]] = []
    with review_job(three_files, sdk_env, cache_dir=cache_dir, cache=True) as job:
        first = review_files(job)
    sent = len(fake_api.requests)
    assert sent >= 4 and {f.state for f in first.files} == {"reviewed"}

    with review_job(three_files, sdk_env, cache_dir=cache_dir, cache=True, events=events) as job:
        again = review_files(job)
    assert len(fake_api.requests) == sent
    assert {f.state for f in again.files} == {"cached"}
    assert again.findings == first.findings and len(again.findings) == 1
    assert ("app/util.py", "cached", "1 comment(s)") in events

    tests_dir = str(Path(__file__).parent)
    for files in ("all", "none"):
        proc = subprocess.run([sys.executable, "-c", CACHED_RUN, tests_dir, str(three_files), str(cache_dir), files],
                              env=sdk_env, capture_output=True, text=True, timeout=60, cwd=three_files)
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        assert report["anthropic"] is False
        assert report["states"] == ([] if files == "none" else ["cached"] * 3)
    assert len(fake_api.requests) == sent

    # A changed setting that decides findings is a different key: reviewed again.
    with review_job(three_files, sdk_env, cache_dir=cache_dir, cache=True, max_rounds=7) as job:
        changed = review_files(job)
    assert {f.state for f in changed.files} == {"reviewed"} and len(fake_api.requests) > sent


# --- budget and deadline -----------------------------------------------------------------------------------

HEAVY = {"input_tokens": 49_500, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def test_token_cap_cuts_the_running_file_and_skips_the_rest(three_files: Path, fake_api: FakeMessagesAPI,
                                                            sdk_env: dict[str, str]) -> None:
    with review_job(three_files, sdk_env, max_tokens=100_000, max_output_tokens=1_000, concurrency=1,
                    review_filter=False) as job:
        first, *rest = [f.path for f in job.files]
        quote = {"app/calc.py": "def mean(values):", "app/util.py": "os.system(cmd)",
                 "app/notes.py": "print('hello ' + name)"}[first]
        fake_api.script(main_opening(first), [
            Reply([tool_use("file_find", {"query_name": "calc"})], usage=HEAVY),
            Reply([tool_use("code_comment", {"comments": [{"content": "Kept although the file was cut short.",
                                                           "existing_code": quote, "severity": "high",
                                                           "category": "bug"}]})], usage=HEAVY),
            task_done(),
        ])
        result = review_files(job)
    assert len(fake_api.requests) == 2
    assert fake_api.billed()["input_tokens"] + fake_api.billed()["output_tokens"] <= 100_000
    states = {f.path: f for f in result.files}
    assert states[first].state == "failed" and states[first].incomplete
    assert states[first].reason == "review cut short: token cap of 100000 reached"
    for path in rest:
        assert states[path].state == "skipped" and states[path].incomplete
        assert states[path].reason == "not reviewed: token cap of 100000 reached"
    assert [f.message for f in result.findings] == ["Kept although the file was cut short."]
    assert result.findings[0].anchored
    assert not result.complete
    assert any("budget ran out" in note for note in result.notes)


def test_cost_cap_too_small_for_any_request_sends_nothing(three_files: Path, fake_api: FakeMessagesAPI,
                                                          sdk_env: dict[str, str]) -> None:
    with review_job(three_files, sdk_env, max_cost=0.00001) as job:
        result = review_files(job)
    assert fake_api.requests == []
    assert all(f.state == "skipped" and f.incomplete and "cost cap" in f.reason for f in result.files)


def test_deadline_cuts_retry_after_sleeps(three_files: Path, fake_api: FakeMessagesAPI,
                                         sdk_env: dict[str, str]) -> None:
    fake_api.fail_all(Fault(status=429, headers={"retry-after": "60"}))
    started = time.monotonic()
    # 8 s: enough for all three first requests on a busy machine; the bound stays far below the 60 s sleep.
    with review_job(three_files, sdk_env, timeout=8.0) as job:
        result = review_files(job)
    elapsed = time.monotonic() - started
    assert elapsed < 40  # not 60 s: the run's own deadline cut the SDK's retry sleep
    assert len(fake_api.requests) == 3  # one attempt per file, cut while waiting to retry
    assert not result.complete
    assert all(f.incomplete and "time limit" in f.reason for f in result.files)
    # Nothing came back, so nothing is known to be billed: each cut request counts at its worst case,
    # and the notes say the cost is an upper bound.
    assert result.usage.requests == 0 and result.usage.cost_usd > 0
    assert result.usage.cost_usd == pytest.approx(job.budget.forfeited_usd)
    assert any("3 request(s) were cut off" in n and "upper bound" in n for n in result.notes)


def test_budget_stop_allows_one_smaller_closing_round(three_files: Path, fake_api: FakeMessagesAPI,
                                                      sdk_env: dict[str, str]) -> None:
    heavy = {**HEAVY, "input_tokens": 40_000}
    with review_job(three_files, sdk_env, max_tokens=100_000, max_output_tokens=20_000, concurrency=1,
                    review_filter=False) as job:
        first = job.files[0].path
        quote = {"app/calc.py": "def mean(values):", "app/util.py": "os.system(cmd)",
                 "app/notes.py": "print('hello ' + name)"}[first]
        fake_api.script(main_opening(first), [
            Reply([tool_use("file_find", {"query_name": "calc"})], usage=heavy),
            Reply([tool_use("file_find", {"query_name": "util"})], usage=heavy),
            Reply([tool_use("code_comment", {"comments": [{"content": "Sent in the closing round.",
                                                           "existing_code": quote, "severity": "medium",
                                                           "category": "bug"}]}),
                   tool_use("task_done", {"state": "DONE"})]),
        ])
        result = review_files(job)
    requests = fake_api.requests_for(main_opening(first))
    assert len(requests) == 3
    closing = requests[2].body
    assert closing["max_tokens"] == 2_048 and tool_names(requests[2]) == FINAL_TOOLS
    assert "last round" in closing["messages"][-1]["content"][-1]["text"]
    coverage = next(f for f in result.files if f.path == first)
    assert coverage.state == "failed" and coverage.reason == "review cut short: token cap of 100000 reached"
    assert [f.message for f in result.findings] == ["Sent in the closing round."]
    assert any("closing round added 1 comment(s)" in note for note in result.notes)


def test_comment_cap_and_oversized_quotes(three_files: Path, fake_api: FakeMessagesAPI,
                                          sdk_env: dict[str, str]) -> None:
    huge = "    print('hello ' + name)\n" + "x = 1\n" * 200_000  # about 1.2 MB
    many = [{"content": f"Comment {n}.", "existing_code": "def greet(name):", "severity": "low",
             "category": "style"} for n in range(55)]
    fake_api.script(main_opening("app/notes.py"), [
        # Billed like a normal reply: the fake would otherwise charge the megabyte as output tokens.
        Reply([tool_use("code_comment", {"comments": [{"content": "Huge quote.", "existing_code": huge,
                                                        "severity": "low", "category": "style"}]})],
              usage={"output_tokens": 100}),
        Reply([tool_use("code_comment", {"comments": many})]),
        task_done(),
    ])
    with review_job(three_files, sdk_env, review_filter=False) as job:
        result = review_files(job)
    notes = fake_api.requests_for(main_opening("app/notes.py"))
    assert "shortened" in last_user_blocks(notes[1])[0]["content"]
    assert "limit of 50 comments per file is reached" in last_user_blocks(notes[2])[0]["content"]
    assert len(notes[2].raw) < 200_000  # the megabyte never travels back to the API in our own text
    mine = [f for f in result.findings if f.path == "app/notes.py"]
    huge_finding = next(f for f in mine if f.message == "Huge quote.")
    # Cut to its first 80 lines, the quote no longer matches the file: kept, unanchored, never misplaced.
    assert len(huge_finding.existing_code.splitlines()) == 80 and not huge_finding.anchored
    assert len([f for f in mine if f.message.startswith("Comment ")]) <= 49
    assert any("6 comment(s) over the limit of 50" in n for n in result.notes)
    assert any("shortened" in n for n in result.notes)


def test_credentials_named_per_provider(tmp_path: Path) -> None:
    settings = settings_for(staged_repo(tmp_path / "r", {"a.py": "a = 1\n"}, {"a.py": "a = 2\n"}))
    check_credentials(settings, {"ANTHROPIC_API_KEY": "k"})
    check_credentials(settings, {"ANTHROPIC_AUTH_TOKEN": "t"})
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        check_credentials(settings, {"ANTHROPIC_API_KEY": ""})
    bedrock = settings._replace(provider="bedrock")
    with pytest.raises(ConfigError, match="AWS_REGION"):
        check_credentials(bedrock, {"ANTHROPIC_API_KEY": "k"})
    check_credentials(bedrock, {"AWS_REGION": "us-east-1", "AWS_BEARER_TOKEN_BEDROCK": "b"})
    vertex = settings._replace(provider="vertex")
    with pytest.raises(ConfigError, match="CLOUD_ML_REGION"):
        check_credentials(vertex, {})
    with pytest.raises(ConfigError, match="ANTHROPIC_VERTEX_PROJECT_ID"):
        check_credentials(vertex, {"CLOUD_ML_REGION": "us-east5"})


def test_task_done_while_planning_ends_the_plan(three_files: Path, fake_api: FakeMessagesAPI,
                                                sdk_env: dict[str, str]) -> None:
    fake_api.script(plan_opening("app/calc.py"), [task_done()])
    with review_job(three_files, sdk_env, plan_threshold=20) as job:
        result = review_files(job)
    assert len(fake_api.requests_for(plan_opening("app/calc.py"))) == 1
    main = fake_api.requests_for(main_opening("app/calc.py"))
    assert len(main) == 1 and "checklist" not in main[0].first_user_text
    assert "at most 29" in main[0].first_user_text  # the plan's round counts against max_rounds
    assert next(f for f in result.files if f.path == "app/calc.py").state == "reviewed"


def test_interrupting_the_run_cancels_every_request(three_files: Path, fake_api: FakeMessagesAPI,
                                                    sdk_env: dict[str, str]) -> None:
    fake_api.default(lambda body: Reply([tool_use("task_done", {"state": "DONE"})], delay_s=30))

    async def interrupt(job: ReviewJob) -> None:
        run = asyncio.create_task(review_files_async(job))
        while len(fake_api.requests) < 3:
            await asyncio.sleep(0.02)
        cancelled_at.append(time.monotonic())
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    cancelled_at: list[float] = []
    with review_job(three_files, sdk_env) as job:
        asyncio.run(interrupt(job))
        assert job.budget.reserved_usd == 0  # every reservation was given back
    assert time.monotonic() - cancelled_at[0] < 20  # at once, not after the 30 s replies
    assert all(r.usage is None for r in fake_api.requests)  # nothing answered, nothing billed


def test_bedrock_provider_goes_through_the_sdks_bedrock_client(three_files: Path, fake_api: FakeMessagesAPI,
                                                               sdk_env: dict[str, str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"AWS_REGION": "us-east-1", "AWS_BEARER_TOKEN_BEDROCK": "bedrock-test-token",
           "ANTHROPIC_BEDROCK_BASE_URL": fake_api.url}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with review_job(three_files, {**sdk_env, **env}, provider="bedrock", review_filter=False) as job:
        result = review_files(job)
    paths = {r.path.split("?")[0] for r in fake_api.requests}
    assert paths and all(p.startswith("/model/") and p.endswith("/invoke") for p in paths)
    assert all(r.headers.get("authorization") == "Bearer bedrock-test-token" for r in fake_api.requests)
    # The fake serves only the Messages API path, so every file fails with a one-line reason.
    assert all(f.state == "failed" and f.reason.startswith("API error 404") for f in result.files)
    assert "bedrock-test-token" not in " ".join(f.reason for f in result.files)


def test_a_plan_call_asked_again_in_the_main_phase_is_answered(three_files: Path, fake_api: FakeMessagesAPI,
                                                               sdk_env: dict[str, str]) -> None:
    search = Reply([tool_use("code_search", {"search_text": "def add"})])
    fake_api.script(plan_opening("app/calc.py"), [search, Reply([text("- check add")])])
    fake_api.script(main_opening("app/calc.py"), [search, task_done()])
    with review_job(three_files, sdk_env, plan_threshold=20) as job:
        review_files(job)
    main = fake_api.requests_for(main_opening("app/calc.py"))
    assert last_user_blocks(main[1])[0]["content"].startswith("app/calc.py:1:def add(a, b):")
