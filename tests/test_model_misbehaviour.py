"""Issue 7, model misbehaviour: a model that calls tools that do not exist, breaks every schema, repeats
itself, never finishes, floods comments, quotes a megabyte or other files' code, or only talks.

Through the real CLI with the real SDK against the scripted fake. Every row has a clear outcome
(reviewed, or failed with a one-line reason and exit 3), and bounded time, requests and tokens: the
requests of one file never exceed the rounds cap, and the usage the report states is what was billed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agent_support import filter_keeps_all, is_relocate, last_user_blocks, main_opening
from e2e_support import (
    CALC_LINE,
    CALC_PATH,
    EARLY_MESSAGE,
    Run,
    assert_incomplete_everywhere,
    assert_one_line,
    calc_repo,
    comment,
    comment_turn,
    run_review,
)
from fake_api import FakeMessagesAPI, RecordedRequest, Reply, Turn, task_done, text, tool_use

OTHER_PATH = "notes.py"
OTHER_AFTER = "def greet(name):\n    return 'hi ' + name\n"
MAX_ROUNDS = 30  # config/defaults.yaml: the cap on one file's requests
MAX_REQUEST_BYTES = 200_000  # no request of these small files should come near this


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return calc_repo(tmp_path_factory.mktemp("misbehaviour") / "repo", {OTHER_PATH: OTHER_AFTER})


@pytest.fixture(autouse=True)
def _filter_keeps_everything(fake_api: FakeMessagesAPI) -> None:
    filter_keeps_all(fake_api)


def _calls(name: str, inputs: Sequence[Any]) -> Reply:
    return Reply([tool_use(name, i) for i in inputs])


def _errors_sent_back(requests: list[RecordedRequest], turn: int) -> list[bool]:
    return [bool(b.get("is_error")) for b in last_user_blocks(requests[turn]) if b["type"] == "tool_result"]


BAD_INPUTS: list[tuple[str, Any]] = [
    ("code_comment", {"comments": [{**comment(), "severity": "urgent"}]}),  # not in the enum
    ("code_comment", {"comments": [{"content": "no quote", "severity": "low", "category": "bug"}]}),  # required
    ("code_comment", {"comments": [{**comment(), "line": 2, "path": OTHER_PATH}]}),  # additional properties
    ("code_comment", {"comments": "return a - b"}),  # not an array
    ("file_read", {"file_path": CALC_PATH, "start_line": "one"}),
    ("file_read", {"file_path": CALC_PATH, "start_line": -5, "end_line": 10**12}),
    ("file_read", {}),
    ("code_search", {"search_text": ["a", "b"]}),
    ("file_find", {"query_name": None}),
    ("task_done", {"state": "MAYBE"}),  # must not end the review
    ("task_done", {}),
]


@dataclass
class Row:
    turns: Sequence[Turn]
    exit: int
    state: str
    reason: str = ""
    calc_requests: int | None = None
    max_s: float = 60.0  # bounded, not a benchmark: a plain run took over 20 s on a busy machine
    # Checks on what was sent back to the model: (requests of calc.py's conversation, run) -> None.
    check: Callable[[list[RecordedRequest], Run], None] | None = None
    handlers: dict[str, Callable[[dict[str, Any]], Turn]] = field(default_factory=dict)


def _unknown_tools(requests: list[RecordedRequest], run: Run) -> None:
    blocks = last_user_blocks(requests[2])
    assert [b.get("is_error") for b in blocks] == [True, True]
    assert all("no tool named" in b["content"] for b in blocks)


def _all_errors(requests: list[RecordedRequest], run: Run) -> None:
    assert _errors_sent_back(requests, 2) == [True] * len(BAD_INPUTS)
    # Each error says how to call the tool correctly: it names the tool or the field.
    for (name, _), block in zip(BAD_INPUTS, last_user_blocks(requests[2]), strict=True):
        assert name in block["content"] or "`" in block["content"], block["content"]


def _capped_comments(requests: list[RecordedRequest], run: Run) -> None:
    assert "limit of 50 comments per file is reached" in last_user_blocks(requests[2])[0]["content"]
    assert any("251 comment(s) over the limit of 50" in n for n in run.report["notes"])
    assert len([f for f in run.report["findings"] if f["path"] == CALC_PATH]) <= 50


def _shortened_quote(requests: list[RecordedRequest], run: Run) -> None:
    assert "shortened" in last_user_blocks(requests[2])[0]["content"]
    assert any("shortened" in n for n in run.report["notes"])
    huge = [f for f in run.report["findings"] if f["message"] == "A megabyte of quote."]
    # Cut to its head, the quote no longer matches: kept unanchored, never placed on a wrong line.
    assert len(huge) == 1 and (not huge[0]["anchored"] or huge[0]["start_line"] == CALC_LINE)


def _other_files_code(requests: list[RecordedRequest], run: Run) -> None:
    borrowed = [f for f in run.report["findings"] if f["message"] == "Quoted from notes.py."]
    assert len(borrowed) == 1
    assert borrowed[0]["path"] == CALC_PATH and not borrowed[0]["anchored"] and borrowed[0]["start_line"] == 0
    assert all(f["path"] != OTHER_PATH for f in run.report["findings"])
    sarif_paths = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                   for r in run.sarif["runs"][0]["results"]}
    assert sarif_paths == {CALC_PATH}


def _nudged(requests: list[RecordedRequest], run: Run) -> None:
    assert all("called no tool" in last_user_blocks(r)[-1]["text"] for r in requests[2:])


def _relocate_to_other_file(body: dict[str, Any]) -> Turn:
    # The re-location step answers with the other file's code: it still cannot anchor in calc.py.
    return Reply([text('{"locations": [{"comment": 1, "code": "    return \'hi \' + name"}]}')])


MEGABYTE = "    return a - b\n" + "filler = 'x' * 80  # padding the quote\n" * 26_000
UNIQUE_LOOKUPS = [_calls("file_find", [{"query_name": f"name{n}"}]) for n in range(MAX_ROUNDS + 10)]

ROWS: dict[str, Row] = {
    "unknown-tools": Row([comment_turn(), Reply([tool_use("run_shell", {"cmd": "rm -rf /"}),
                                                 tool_use("write_file", {"path": "calc.py", "text": ""})])],
                         0, "reviewed", calc_requests=3, check=_unknown_tools),
    "schema-breaking-inputs": Row([comment_turn(), Reply([tool_use(n, i) for n, i in BAD_INPUTS])], 0, "reviewed",
                                  calc_requests=3, check=_all_errors),
    "100-identical-calls-in-one-turn": Row([comment_turn(), _calls("file_find", [{"query_name": "calc"}] * 100)],
                                           3, "failed", "repeated identical tool calls", calc_requests=2),
    "identical-call-100-turns-in-a-row": Row([comment_turn(), *[_calls("file_find", [{"query_name": "calc"}])] * 100],
                                             3, "failed", "repeated identical tool calls", calc_requests=5),
    "never-calls-task-done": Row([comment_turn(), *UNIQUE_LOOKUPS], 3, "failed",
                                 f"no task_done within the limit of {MAX_ROUNDS} rounds", calc_requests=MAX_ROUNDS),
    "hundreds-of-comments-in-one-call": Row([comment_turn(), comment_turn(*[
        comment(f"Comment number {n}.", severity="low") for n in range(300)])], 0, "reviewed", calc_requests=3,
        check=_capped_comments),
    "megabyte-existing-code": Row([comment_turn(), Reply([tool_use("code_comment", {"comments": [
        comment("A megabyte of quote.", code=MEGABYTE, severity="low")]})], usage={"output_tokens": 100})],
        0, "reviewed", calc_requests=3, check=_shortened_quote),
    "comment-quoting-another-files-code": Row([comment_turn(), comment_turn(
        comment("Quoted from notes.py.", code="    return 'hi ' + name", severity="low"))], 0, "reviewed",
        calc_requests=3, check=_other_files_code, handlers={"relocate": _relocate_to_other_file}),
    "text-instead-of-tools-every-turn": Row([comment_turn(), *[Reply([text("Looks fine to me.")])] * 50], 3,
                                            "failed", "never called task_done", calc_requests=5, check=_nudged),
    "empty-replies-every-turn": Row([comment_turn(), *[Reply([])] * 50], 3, "failed", "never called task_done",
                                    calc_requests=5),
    "200-different-calls-in-one-turn": Row([comment_turn(), _calls("file_find", [
        {"query_name": f"n{n}"} for n in range(200)])], 0, "reviewed", calc_requests=3),
}


@pytest.mark.parametrize("row", list(ROWS.values()), ids=list(ROWS))
def test_misbehaviour(row: Row, repo: Path, tmp_path: Path, fake_api: FakeMessagesAPI,
                      sdk_env: dict[str, str]) -> None:
    if "relocate" in row.handlers:
        fake_api.handle(is_relocate, row.handlers["relocate"])
    fake_api.script(main_opening(CALC_PATH), row.turns)
    run = run_review(repo, sdk_env, tmp_path / "out")

    assert run.code == row.exit, (run.proc.stdout, run.proc.stderr)
    assert run.elapsed < row.max_s, f"took {run.elapsed:.1f}s"
    state, reason = run.coverage_state(CALC_PATH)
    assert state == row.state, reason
    assert run.coverage_state(OTHER_PATH) == ("reviewed", "")
    if row.state == "failed":
        assert row.reason in reason
        assert_one_line(reason)
        assert_incomplete_everywhere(run)
    else:
        assert run.report["status"] == "complete"

    calc = fake_api.requests_for(main_opening(CALC_PATH))
    assert len(calc) <= MAX_ROUNDS
    if row.calc_requests is not None:
        assert len(calc) == row.calc_requests
    # Bounded tokens: every request stays small, and the report's usage is what the server billed.
    assert max(len(r.raw) for r in fake_api.requests) < MAX_REQUEST_BYTES
    billed = fake_api.billed()
    usage = run.report["usage"]
    assert (usage["requests"], usage["input_tokens"], usage["output_tokens"]) == (
        billed["requests"], billed["input_tokens"], billed["output_tokens"])
    assert usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"] < 500_000

    # The first, valid comment survives whatever came after it.
    early = [f for f in run.report["findings"] if f["message"] == EARLY_MESSAGE]
    assert len(early) == 1 and early[0]["start_line"] == CALC_LINE
    if row.check is not None:
        row.check(calc, run)


def test_task_done_with_a_bad_state_does_not_end_the_review(repo: Path, tmp_path: Path, fake_api: FakeMessagesAPI,
                                                            sdk_env: dict[str, str]) -> None:
    """An invalid task_done is an error result; the review goes on and the next comment still counts."""
    fake_api.script(main_opening(CALC_PATH), [
        Reply([tool_use("task_done", {"state": "MAYBE"})]),
        comment_turn(comment("Made after the bad task_done.", severity="high")),
        task_done(),
    ])
    run = run_review(repo, sdk_env, tmp_path / "out")
    assert run.code == 1
    assert [f["message"] for f in run.report["findings"]] == ["Made after the bad task_done."]
    assert len(fake_api.requests_for(main_opening(CALC_PATH))) == 3
