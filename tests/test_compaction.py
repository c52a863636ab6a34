"""Two-stage compaction: notes requested in the background at 60 % of the window, waited for at 80 %,
elision when there are no notes. Pure parts directly; the loop through the real SDK and the fake API."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_support import is_notes_request, main_opening, review_job, staged_repo
from fake_api import FakeMessagesAPI, Fault, RecordedRequest, Reply, task_done, text, tool_use

from ocr_hook.agent import review_files
from ocr_hook.agent.compaction import notes_request, older_turns_end, replace_older_turns
from ocr_hook.agent.conversation import ELIDED, text_block, tool_result_block

# --- the pure parts ---------------------------------------------------------------------------------------


def conversation(turns: int) -> list[dict[str, Any]]:
    """The opening, then `turns` pairs of (assistant tool_use, user tool_result)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [text_block("opening")]}]
    for n in range(turns):
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{n}", "name": "file_read", "input": {"file_path": "a.py"}}]})
        messages.append({"role": "user", "content": [tool_result_block(f"t{n}", f"answer {n}")]})
    return messages


def well_formed(messages: list[dict[str, Any]]) -> bool:
    """Roles alternate from a user message, and every tool_use is answered in the next message."""
    for i, message in enumerate(messages):
        if message["role"] != ("user" if i % 2 == 0 else "assistant"):
            return False
        uses = [b["id"] for b in message["content"] if b.get("type") == "tool_use"]
        if uses:
            answered = [b["tool_use_id"] for b in messages[i + 1]["content"] if b.get("type") == "tool_result"]
            if answered != uses:
                return False
    return True


def test_older_turns_end_keeps_the_recent_messages_and_needs_a_whole_turn() -> None:
    assert older_turns_end(conversation(1)) is None  # 3 messages: nothing older than the recent four
    assert older_turns_end(conversation(2)) is None  # 5 messages: one turn would leave only 2 summarised
    assert older_turns_end(conversation(3)) == 3  # 7 messages: turn 1 summarised, messages 3..6 kept
    assert older_turns_end(conversation(6)) == 9
    assert older_turns_end(conversation(6), keep_recent=2) == 11


def test_replacing_older_turns_keeps_the_conversation_well_formed() -> None:
    messages = conversation(6)
    end = older_turns_end(messages)
    assert end is not None
    notes = text_block("NOTES one")
    replaced = replace_older_turns(messages, end, notes, None)
    assert well_formed(messages) and well_formed(replaced)
    assert replaced[0]["content"] == [text_block("opening"), notes]
    assert replaced[1:] == messages[end:]
    # A second round of notes replaces the first instead of piling up.
    longer = replaced + conversation(3)[1:]
    second = text_block("NOTES two")
    again = replace_older_turns(longer, older_turns_end(longer) or 0, second, notes)
    assert well_formed(again)
    assert again[0]["content"] == [text_block("opening"), second]


def test_notes_request_copies_and_marks_the_cached_prefix() -> None:
    messages = conversation(4)
    before = repr(messages)
    request = notes_request(messages, 5, "Pause the review of `a.py`")
    assert repr(messages) == before  # the live conversation is untouched
    assert len(request) == 5 and request[-1]["role"] == "user"
    last = request[-1]["content"]
    assert last[0]["type"] == "tool_result" and last[0]["cache_control"] == {"type": "ephemeral"}
    assert last[-1] == text_block("Pause the review of `a.py`")
    assert well_formed(request)


# --- through the loop ---------------------------------------------------------------------------------------

LINE = "value_{n:04d} = compute({n}, 'a string long enough to make each line about ninety bytes')\n"
BIG = "".join(LINE.format(n=n) for n in range(1200))
WINDOW = 24_000  # tokens; the opening (system prompt, tools, diff) is about 6k of them
# The notes come back only after a main request arrived while they were pending (so a slow machine cannot
# make the review look as if it waited for them), and at least this long after they were asked for.
NOTES_DELAY_S = 0.5


def big_repo(tmp_path: Path) -> Path:
    return staged_repo(tmp_path / "repo", {"big.py": BIG}, {"big.py": BIG + "tail = 1\n"})


def reads(lines_per_read: int, count: int) -> list[Reply]:
    return [Reply([tool_use("file_read", {"file_path": "big.py", "start_line": 1 + lines_per_read * n,
                                           "end_line": lines_per_read * (n + 1)})]) for n in range(count)]


def main_loop(fake_api: FakeMessagesAPI, turns: list[Reply]) -> None:
    """Answer the main conversation turn by turn, whatever its length (notes shorten it, so the fake's
    scripts, which count assistant messages, cannot be used here)."""
    counter = itertools.count()

    def answer(body: dict[str, Any]) -> Reply:
        n = next(counter)
        return turns[n] if n < len(turns) else task_done()

    fake_api.handle(lambda body: main_opening("big.py") in _first_text(body) and not is_notes_request(body), answer)


def notes_after_the_next_main_request(fake_api: FakeMessagesAPI, notes: str) -> Callable[[dict[str, Any]], Reply]:
    """A notes responder that holds its answer until a main request arrives after it was asked (or 60 s:
    a review that waits for its notes then fails the test's "went on meanwhile" check)."""
    def answer(body: dict[str, Any]) -> Reply:
        asked = time.monotonic()
        fake_api.wait_until(lambda reqs: any(r.received_at > asked and not is_notes_request(r.body)
                                             and main_opening("big.py") in r.first_user_text for r in reqs), 60)
        return Reply([text(notes)], delay_s=NOTES_DELAY_S)

    return answer


def _first_text(body: dict[str, Any]) -> str:
    return body["messages"][0]["content"][0]["text"]


def main_requests(fake_api: FakeMessagesAPI) -> list[RecordedRequest]:
    return [r for r in fake_api.requests_for(main_opening("big.py")) if not is_notes_request(r.body)]


def notes_requests(fake_api: FakeMessagesAPI) -> list[RecordedRequest]:
    return [r for r in fake_api.requests if is_notes_request(r.body)]


def estimated_tokens(req: RecordedRequest) -> float:
    return len(req.raw) / 3  # ocr_hook.budget.tokens' rate; the request body adds a little JSON around it


def test_notes_are_made_in_the_background_and_replace_the_older_turns(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    root = big_repo(tmp_path)
    notes = "NOTES: big.py lines 1-300 define value_0000..value_0299 via compute(); nothing suspicious yet."
    fake_api.handle(is_notes_request, notes_after_the_next_main_request(fake_api, notes))
    main_loop(fake_api, reads(20, 26))  # small steps: several turns between 60 % and 80 %
    with review_job(root, sdk_env, context_window=WINDOW, plan_threshold=10_000) as job:
        result = review_files(job)

    assert [(f.state, f.reason) for f in result.files] == [("reviewed", "")]
    asked = notes_requests(fake_api)
    assert len(asked) >= 1
    first_ask = asked[0]
    mains = main_requests(fake_api)
    # It was asked for at 60 %, not before, and not yet at 80 %.
    before = [r for r in mains if r.received_at < first_ask.received_at]
    assert 0.6 * WINDOW <= estimated_tokens(before[-1]) + 6_000
    assert all(estimated_tokens(r) < 0.8 * WINDOW for r in before)
    # The review went on while the notes were being written: main requests arrived after the notes were
    # asked for and before the fake answered them (its own clock, so a slow machine cannot fake a pass or
    # a failure).
    assert first_ask.answered_at >= first_ask.received_at + NOTES_DELAY_S
    assert any(first_ask.received_at < r.received_at < first_ask.answered_at for r in mains)
    # Later requests carry the notes in the first message instead of the older turns.
    with_notes = [r for r in mains if notes in str(r.body["messages"][0]["content"])]
    assert with_notes, "no main request carried the notes"
    adopted = with_notes[0]
    previous = mains[mains.index(adopted) - 1]
    assert len(adopted.body["messages"]) < len(previous.body["messages"])
    assert adopted.body["messages"][0]["content"][0]["text"].startswith(
        previous.body["messages"][0]["content"][0]["text"][:200])
    assert "1|value_0000" not in adopted.raw.decode()  # the first read's answer is gone
    assert all(estimated_tokens(r) < WINDOW for r in mains)
    assert any("replaced by the model's notes" in n for n in result.notes)
    # The notes are billed like any request (a second one may still be in flight when the file ends).
    assert len(mains) + 1 <= result.usage.requests <= len(fake_api.requests)


def read(first: int, count: int) -> Reply:
    return Reply([tool_use("file_read", {"file_path": "big.py", "start_line": first, "end_line": first + count - 1})])


# A big first read, then small ones: at the request after the third answer the conversation passes 60 %
# with the big answer in the older turns that the notes replace.
BIG_FIRST = [read(1, 260), read(300, 20), read(400, 60)]


def test_at_80_percent_the_review_waits_for_the_notes(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                      sdk_env: dict[str, str]) -> None:
    root = big_repo(tmp_path)
    notes = "NOTES: read 1-260 of big.py; all calls to compute() pass literals."
    fake_api.handle(is_notes_request, lambda body: Reply([text(notes)], delay_s=1.5))
    main_loop(fake_api, [*BIG_FIRST, read(500, 170), read(700, 5)])  # the fourth answer passes 80 %
    with review_job(root, sdk_env, context_window=WINDOW, plan_threshold=10_000) as job:
        result = review_files(job)

    assert [f.state for f in result.files] == ["reviewed"]
    asked = notes_requests(fake_api)
    assert len(asked) == 1
    mains = main_requests(fake_api)
    after = [r for r in mains if r.received_at > asked[0].received_at]
    assert len(after) >= 2
    # The request that would have passed 80 % waited for the notes (1.5 s) and carries them instead of
    # the big first answer.
    assert after[1].received_at >= asked[0].received_at + 1.5
    assert notes in str(after[1].body["messages"][0]["content"])
    assert "1|value_0000" not in after[1].raw.decode()
    assert all(estimated_tokens(r) < 0.8 * WINDOW for r in mains)
    assert not any(ELIDED in r.raw.decode() for r in mains)


def test_without_notes_older_tool_output_is_elided_at_80_percent(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                 sdk_env: dict[str, str]) -> None:
    root = big_repo(tmp_path)
    fake_api.handle(is_notes_request, lambda body: Fault(status=400))  # a 400 is not retried by the SDK
    main_loop(fake_api, reads(60, 12))
    with review_job(root, sdk_env, context_window=WINDOW, plan_threshold=10_000) as job:
        result = review_files(job)

    assert [f.state for f in result.files] == ["reviewed"]
    assert len(notes_requests(fake_api)) == 1  # one failed attempt: no more asking
    mains = main_requests(fake_api)
    assert any(ELIDED in r.raw.decode() for r in mains)
    assert all(estimated_tokens(r) < 0.8 * WINDOW for r in mains)
    assert any("elided" in n and "notes" not in n for n in result.notes)


def test_a_notes_request_still_running_when_the_file_ends_is_not_waited_for(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    root = big_repo(tmp_path)
    fake_api.handle(is_notes_request, lambda body: Reply([text("late notes")], hold=threading.Event()))  # never
    turns = iter([*BIG_FIRST, read(700, 5)])

    def answer(body: dict[str, Any]) -> Reply:
        reply = next(turns, None)
        if reply is None:  # task_done only once the notes request has arrived
            fake_api.wait_until(lambda reqs: any(is_notes_request(r.body) for r in reqs), 60)
            return task_done()
        return reply

    fake_api.handle(lambda body: main_opening("big.py") in _first_text(body) and not is_notes_request(body), answer)
    with review_job(root, sdk_env, context_window=WINDOW, plan_threshold=10_000) as job:
        result = review_files(job)

    assert [f.state for f in result.files] == ["reviewed"]
    asked = notes_requests(fake_api)
    assert len(asked) == 1 and asked[0].status == 0  # not answered yet: the review did not wait for it
    assert not any("replaced by the model's notes" in n for n in result.notes)
    # Cancelled at the end of the run after it was sent: no usage came back, so its worst case counts.
    assert result.usage.requests == len(main_requests(fake_api))
    assert job.budget.forfeited_requests == 1
    assert any("1 request(s) were cut off" in n for n in result.notes)


def test_notes_no_longer_needed_may_finish_while_other_files_run(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    root = staged_repo(tmp_path / "repo", {"big.py": BIG, "slow.py": "x = 1\n"},
                       {"big.py": BIG + "tail = 1\n", "slow.py": "x = 2\n"})
    fake_api.handle(is_notes_request, lambda body: Reply([text("notes nobody reads")], delay_s=0.5))
    main_loop(fake_api, [*BIG_FIRST, read(700, 5)])  # big.py asks for notes, then ends one turn later

    def slow_answer(body: dict[str, Any]) -> Reply:
        # slow.py keeps the run going until the notes have been answered (after big.py was done).
        if sum(1 for m in body["messages"] if m["role"] == "assistant") < 2:
            return Reply([tool_use("file_find", {"query_name": "name"})])
        fake_api.wait_until(lambda reqs: any(is_notes_request(r.body) and r.status for r in reqs), 60)
        return task_done()

    fake_api.handle(lambda body: main_opening("slow.py") in _first_text(body), slow_answer)
    with review_job(root, sdk_env, context_window=WINDOW, plan_threshold=10_000, review_filter=False) as job:
        result = review_files(job)

    assert [f.state for f in result.files] == ["reviewed", "reviewed"]
    [asked] = notes_requests(fake_api)
    assert asked.status == 200  # answered after big.py was done, while slow.py was still being reviewed
    assert job.budget.forfeited_requests == 0  # so it is counted at its real usage
    assert result.usage.requests == len(fake_api.requests)
    assert not any("cut off" in n for n in result.notes)
