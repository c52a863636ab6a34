"""Two-stage compaction of one file's conversation as it nears the model's context window.

At 60 % of the window the model is asked, in the background, for notes on its older turns while the
review goes on; when the notes arrive they replace those turns at the next request. At 80 % the
review waits for the notes (asking for them now if it has not yet); when there are none (the request
failed, was refused, or the budget could not cover it) older tool output is elided instead, which
costs nothing. Either way the review continues instead of failing at the window's edge.

The notes request repeats the conversation's cached prefix, so it is billed mostly at the cache-read
price. It is optional spending: a budget that cannot cover it is not marked exhausted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ocr_hook.agent.conversation import EPHEMERAL, Conversation, text_block

BACKGROUND_AT = 0.6
BLOCKING_AT = 0.8
# The newest messages always stay whole: the model's current line of work.
KEEP_RECENT = 4
# Each round of notes replaces the previous one; more than a few means the recent turns alone are
# too big, and only elision helps.
MAX_SUMMARIES = 3

Summarise = Callable[[list[dict[str, Any]]], Awaitable[str | None]]


def older_turns_end(messages: list[dict[str, Any]], keep_recent: int = KEEP_RECENT) -> int | None:
    """Where the kept part of the conversation starts: the latest assistant message that leaves
    `keep_recent` messages whole and at least one complete turn (assistant, user) before it to
    summarise. None when there is no such turn."""
    for end in range(len(messages) - keep_recent, 2, -1):
        if messages[end]["role"] == "assistant":
            return end
    return None


def notes_request(messages: list[dict[str, Any]], end: int, instruction: str) -> list[dict[str, Any]]:
    """The messages that ask for notes on `messages[1:end]`: the conversation up to there (a copy),
    with a cache breakpoint where that prefix was cached when it was the newest request, then the
    instruction."""
    head = [{**m, "content": list(m["content"])} for m in messages[:end]]
    content = head[-1]["content"]
    content[-1] = {**content[-1], "cache_control": EPHEMERAL}
    content.append(text_block(instruction))
    return head


def replace_older_turns(messages: list[dict[str, Any]], end: int, notes: dict[str, Any],
                        old_notes: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The first message (with `notes` in place of any earlier notes), then `messages[end:]`.

    `messages[end]` is an assistant message, so the roles still alternate, and every tool_use kept
    keeps its tool_result."""
    first = [block for block in messages[0]["content"] if block is not old_notes]
    return [{**messages[0], "content": [*first, notes]}, *messages[end:]]


class Compactor:
    """Keeps one conversation within the context window; one per conversation."""

    def __init__(self, conv: Conversation, window_tokens: int, instruction: str,
                 notes_text: Callable[[str], str], summarise: Summarise) -> None:
        self.conv = conv
        self.window = window_tokens
        self._instruction = instruction
        self._notes_text = notes_text
        self._summarise = summarise
        self._pending: asyncio.Task[str | None] | None = None
        self._pending_end = 0
        self._notes_block: dict[str, Any] | None = None
        self._gave_up = False
        self.summaries = 0
        self.elisions = 0

    async def before_request(self, measure: Callable[[], int]) -> bool:
        """Adopt finished notes, then act on the conversation's size (`measure()`, in tokens).
        True when older turns changed, so earlier tool answers are no longer in view."""
        changed = self._adopt()
        if self._pending is None and len(self.conv.messages) <= 1 + KEEP_RECENT:
            return changed  # nothing older to summarise or elide, so no size to measure (a JSON dump of it all)
        tokens = measure()
        if tokens >= BLOCKING_AT * self.window:
            if self._pending is None:
                self._start()
            if self._pending is not None:
                await asyncio.wait({self._pending})
                changed = self._adopt() or changed
                tokens = measure()
            if tokens >= BLOCKING_AT * self.window and self.conv.compact():
                self.elisions += 1
                changed = True
        elif tokens >= BACKGROUND_AT * self.window and self._pending is None:
            self._start()
        return changed

    def elide_now(self, keep_recent: int) -> bool:
        """The API said the request did not fit after all: elide without waiting for anything."""
        if self.conv.compact(keep_recent=keep_recent):
            self.elisions += 1
            return True
        return False

    def detach(self) -> asyncio.Task[str | None] | None:
        """The conversation is over: hand back a notes request still in flight, whose answer is no
        longer needed (the caller decides whether to let it finish or cancel it)."""
        task, self._pending = self._pending, None
        return task if task is not None and not task.done() else None

    def _start(self) -> None:
        if self._gave_up or self.summaries >= MAX_SUMMARIES:
            return
        end = older_turns_end(self.conv.messages)
        if end is None:
            return
        self._pending_end = end
        self._pending = asyncio.ensure_future(
            self._summarise(notes_request(self.conv.messages, end, self._instruction)))

    def _adopt(self) -> bool:
        task = self._pending
        if task is None or not task.done():
            return False
        self._pending = None
        # The notes coroutine turns API and budget failures into None; anything else is a bug of ours
        # and fails the file like any other (task.result() raises it).
        notes = None if task.cancelled() else task.result()
        if not notes:
            self._gave_up = True  # one failed attempt is enough: elision still guards the window
            return False
        block = text_block(self._notes_text(notes))
        self.conv.messages = replace_older_turns(self.conv.messages, self._pending_end, block, self._notes_block)
        self._notes_block = block
        self.summaries += 1
        return True
