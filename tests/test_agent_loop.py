"""The agent loop end to end: real SDK → HTTP → scripted fake Messages API, real scratch repos."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_support import (
    FINAL_TOOLS,
    MAIN_TOOLS,
    PLAN_TOOLS,
    breakpoints,
    is_filter,
    last_user_blocks,
    main_opening,
    plan_opening,
    review_job,
    staged_repo,
    tool_names,
)
from fake_api import FakeMessagesAPI, Fault, Reply, task_done, text, tool_use

from ocr_hook.agent import check_credentials, review_files
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


def keep_all(body: dict[str, Any]) -> Reply:
    return Reply([text('{"wrong": []}')])


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
