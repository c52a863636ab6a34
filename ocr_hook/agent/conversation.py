"""One file's conversation: the message list, its prompt-cache breakpoints, its size, its compaction."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ocr_hook.agent.tool_api import ToolSpec
from ocr_hook.budget.tokens import estimate_tokens

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
ELIDED = "[older tool output removed to save space; call the tool again if you still need it]"
MAX_ECHOED_STRING = 20_000
# Tool results shorter than this are kept when compacting: they cost little and often matter.
_KEEP_SHORT_CHARS = 300


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_result_block(tool_use_id: str, text: str, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}
    if is_error:
        block["is_error"] = True
    return block


def tools_param(specs: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool definitions with a cache breakpoint after the last one (tools are the cache prefix's start)."""
    tools = [spec.to_api() for spec in specs]
    if tools:
        tools[-1] = {**tools[-1], "cache_control": EPHEMERAL}
    return tools


def assistant_blocks(content: Sequence[Any]) -> list[dict[str, Any]]:
    """The response's content as request params, keeping only what may be sent back."""
    blocks: list[dict[str, Any]] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            if block.text:
                blocks.append(text_block(block.text))
        elif kind == "tool_use":
            # Input that is not an object cannot be sent back; the tool result explains the error.
            tool_input = _bounded_input(block.input) if isinstance(block.input, dict) else {}
            blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "input": tool_input})
        elif kind in ("thinking", "redacted_thinking"):
            # Thinking that precedes tool use must go back unchanged, signature included.
            blocks.append(block.model_dump(exclude_none=True))
    return blocks


def _bounded_input(value: Any) -> Any:
    """The model's tool input as echoed in the history, with absurdly long strings cut: a megabyte
    quote must not be paid for again on every later turn."""
    if isinstance(value, str):
        return value if len(value) <= MAX_ECHOED_STRING else value[:MAX_ECHOED_STRING] + " …[cut]"
    if isinstance(value, dict):
        return {k: _bounded_input(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_bounded_input(v) for v in value]
    return value


def _with_breakpoint(message: dict[str, Any]) -> dict[str, Any]:
    content = list(message["content"])
    content[-1] = {**content[-1], "cache_control": EPHEMERAL}
    return {**message, "content": content}


@dataclass
class Conversation:
    messages: list[dict[str, Any]] = field(default_factory=list)

    def add_user(self, blocks: Sequence[dict[str, Any]]) -> None:
        self.messages.append({"role": "user", "content": list(blocks)})

    def add_assistant(self, blocks: Sequence[dict[str, Any]]) -> None:
        # The API rejects an empty assistant turn; a placeholder keeps the roles alternating.
        self.messages.append({"role": "assistant", "content": list(blocks) or [text_block("(no reply)")]})

    def append_to_last_user(self, blocks: Sequence[dict[str, Any]]) -> None:
        """Add text after the tool results of the pending user message (tool results must come first)."""
        self.messages[-1]["content"].extend(blocks)

    def for_request(self) -> list[dict[str, Any]]:
        """The messages with two cache breakpoints: the newest user message, which extends the cached
        prefix, and the previous one, where the last request's cache entry ends, so it is read even
        when a turn adds many blocks. With the tools and the system prompt that makes four."""
        messages = list(self.messages)
        user_indexes = [i for i, m in enumerate(messages) if m["role"] == "user" and m["content"]]
        for i in user_indexes[-2:]:
            messages[i] = _with_breakpoint(messages[i])
        return messages

    def estimate_tokens(self, system: Any, tools: Any) -> int:
        payload = {"system": system, "tools": tools, "messages": self.messages}
        return estimate_tokens(json.dumps(payload, ensure_ascii=False, default=str))

    def compact(self, keep_recent: int = 4) -> int:
        """Replace the contents of older tool results with a short note; returns how many were elided.

        The first message (the task and the diff) and the last `keep_recent` messages stay whole."""
        elided = 0
        for message in self.messages[1 : max(1, len(self.messages) - keep_recent)]:
            if message["role"] != "user":
                continue
            for i, block in enumerate(message["content"]):
                if (block.get("type") == "tool_result" and isinstance(block.get("content"), str)
                        and len(block["content"]) > _KEEP_SHORT_CHARS):
                    message["content"][i] = {**block, "content": ELIDED}
                    elided += 1
        return elided


def sendable(text: str) -> str:
    """Text JSON can carry: undecodable bytes (kept as lone surrogates by surrogateescape) become U+FFFD."""
    if text.isascii():  # a flag of the string: no pass over it, where most source is ASCII
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace")


class SecretMasker:
    """The one gate every repository text passes on its way to the API: made sendable, secrets masked
    and counted for the run's notes."""

    _KEPT = 64  # texts remembered: a file's patch goes out in its plan and again in its main loop, the same
    # checklist in every file's first message; a file in flight is masked once (the count is the same as before)

    def __init__(self, mask: Callable[[str], tuple[str, int]]) -> None:
        import threading

        self._mask = mask
        self.count = 0
        self._done: dict[str, tuple[str, int]] = {}
        self._lock = threading.Lock()  # (tools' answers are masked from worker threads too)

    def __call__(self, text: str) -> str:
        with self._lock:
            known = self._done.get(text)
        if known is None:
            known = self._mask(sendable(text))
            with self._lock:
                self._done[text] = known
                if len(self._done) > self._KEPT:
                    del self._done[next(iter(self._done))]
        masked, found = known
        with self._lock:
            self.count += found
        return masked
