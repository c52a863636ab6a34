"""A scripted fake of the Anthropic Messages API, served over real HTTP on 127.0.0.1.

Tests and benchmarks point the real SDK at it through ANTHROPIC_BASE_URL. It validates requests at the
level that catches agent-loop bugs, answers from per-file scripts, simulates prompt caching from the
breakpoints actually sent, bills what it answers, records every request and injects faults.

Conversations are told apart by the text of their first user message (`script(match, ...)`), and the
turn is the number of assistant messages already sent back: the server keeps no per-conversation
state, so concurrent files and SDK retries are answered deterministically.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import itertools
import json
import math
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from loopback_http import LoopbackServer, QuietHandler

MESSAGES_PATH = "/v1/messages"
MIN_CACHEABLE_TOKENS = 1024
MAX_CACHE_BREAKPOINTS = 4
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_REASONS = {529: "Overloaded"}
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


# ---------------------------------------------------------------------------------------------- script data


def tool_use(name: str, input: dict[str, Any] | str, id: str | None = None) -> dict[str, Any]:
    """A tool_use content block for a Reply. A str `input` is sent as that string instead of an object:
    the model produced input that is not a JSON object (the SDK hands it over as a str)."""
    block: dict[str, Any] = {"type": "tool_use", "name": name, "input": input}
    if id is not None:
        block["id"] = id
    return block


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def thinking(t: str) -> dict[str, Any]:
    """A thinking block for a Reply; the fake signs it when it answers (see ModelsAndThinking). Sent only
    when the request turned thinking on, as with the real API."""
    return {"type": "thinking", "thinking": t}


def redacted_thinking() -> dict[str, Any]:
    return {"type": "redacted_thinking"}


def task_done(state: str = "DONE") -> Reply:
    return Reply([tool_use("task_done", {"state": state})])


def check_verdict(check: str, verdict: str, reason: str, evidence: Sequence[tuple[str, str]] = (),
                  then_done: bool = False) -> Reply:
    """One check_verdict call of the checks pass (DESIGN.md 20); `evidence` as (path, quoted code) pairs;
    `then_done`: task_done in the same turn."""
    blocks = [tool_use("check_verdict", {"check": check, "verdict": verdict, "reason": reason,
                                         "evidence": [{"path": p, "code": c} for p, c in evidence]})]
    if then_done:
        blocks.append(tool_use("task_done", {"state": "DONE"}))
    return Reply(blocks)


@dataclass
class Reply:
    """A 200 answer. `usage` entries override the simulated ones; `delay_s` answers that much later;
    `hold` answers only once that event is set (a gate the test opens, or never: held until the client
    gives up or the fake closes), so a test waits on an event instead of racing a clock."""

    blocks: list[dict[str, Any]]
    stop_reason: str | None = None  # None: "tool_use" when a block is a tool_use, else "end_turn"
    usage: dict[str, int] | None = None
    delay_s: float = 0.0
    hold: threading.Event | None = None

    def resolved_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(b.get("type") == "tool_use" for b in self.blocks) else "end_turn"


@dataclass
class Fault:
    """An injected failure. Fires `times` times for its turn, then the turn is answered by `then` (or, with
    no `then`, by the default responder). `reset` sends the headers and part of the body, then a TCP RST."""

    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | str | dict[str, Any] | None = None  # None: an Anthropic-style error JSON for `status`
    content_type: str = "application/json"
    times: int = 1
    then: Reply | None = None
    reset: bool = False
    delay_s: float = 0.0
    hold: threading.Event | None = None  # as Reply.hold

    def body_bytes(self) -> bytes:
        if self.body is None:
            if self.status < 400:
                return b"{}"
            return json.dumps(error_json(self.status, f"fake API: injected {self.status} fault")).encode()
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode("utf-8")
        return json.dumps(self.body).encode()


Turn = Reply | Fault
Responder = Callable[[dict[str, Any]], Turn]
Predicate = Callable[[dict[str, Any]], bool]


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]  # {} when the body was not a JSON object
    received_at: float  # time.monotonic()
    method: str = "POST"
    raw: bytes = b""
    status: int = 0  # what the fake answered (0 while pending; 0 also for a reset connection)
    usage: dict[str, int] | None = None  # the usage billed for this request (200 answers only)
    answered_at: float = 0.0  # time.monotonic() when the answer was written (0 while pending)

    @property
    def first_user_text(self) -> str:
        return first_user_text(self.body)


class PriceLike(Protocol):
    input: float
    output: float
    cache_write: float
    cache_read: float


def error_json(status: int, message: str, error_type: str | None = None) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type or _ERROR_TYPES.get(status, "api_error"), "message": message}}


def first_user_text(body: Mapping[str, Any]) -> str:
    """The text of the first message (all its text blocks joined): what scripts match on."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[0], dict):
        return ""
    return _text_of(messages[0].get("content"))


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


# ---------------------------------------------------------------------------------------------- validation


class _Invalid(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _check_tools(tools: Any) -> None:
    if not isinstance(tools, list):
        raise _Invalid("tools: Input should be a valid list")
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise _Invalid(f"tools.{i}: Input should be an object")
        if tool.get("type") not in (None, "custom"):
            continue  # server tools (web search etc.) have no schema of ours to check
        name = tool.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise _Invalid(f"tools.{i}.name: String should match pattern '{_TOOL_NAME.pattern}'")
        if name in seen:
            raise _Invalid(f"tools: Tool names must be unique; '{name}' appears twice")
        seen.add(name)
        if not isinstance(tool.get("description"), str) or not tool["description"]:
            raise _Invalid(f"tools.{i}.description: Field required (a non-empty string)")
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise _Invalid(f"tools.{i}.input_schema: Field required (a JSON schema with \"type\": \"object\")")
        if tool.get("strict") is True:
            _check_strict_schema(schema, f"tools.{i}.custom.input_schema")


def _check_strict_schema(node: Any, where: str) -> None:
    """What strict tool use demands of a schema, as the real API answers it (400): every object closed, every
    enum a non-empty list of distinct values (a check_verdict whose `check` enum is empty is refused)."""
    if isinstance(node, list):
        for n, item in enumerate(node):
            _check_strict_schema(item, f"{where}.{n}")
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "object" and node.get("additionalProperties") is not False:
        raise _Invalid(f"{where}: For 'object' type, 'additionalProperties' must be explicitly set to false")
    if "enum" in node:
        values = node["enum"]
        if not isinstance(values, list) or not values or len({json.dumps(v) for v in values}) != len(values):
            raise _Invalid(f"{where}.enum: must be a non-empty list of distinct values")
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            for name, sub in value.items():
                _check_strict_schema(sub, f"{where}.{key}.{name}")
        elif key in ("items", "anyOf", "allOf", "oneOf"):
            _check_strict_schema(value, f"{where}.{key}")


def _check_blocks(i: int, content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        if not content:
            raise _Invalid(f"messages.{i}: text content must be non-empty")
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not content:
        raise _Invalid(f"messages.{i}.content: a non-empty string or a non-empty list of content blocks")
    for j, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise _Invalid(f"messages.{i}.content.{j}: a content block object with a 'type'")
        if block["type"] == "text" and (not isinstance(block.get("text"), str) or not block["text"]):
            raise _Invalid(f"messages.{i}.content.{j}: text content blocks must be non-empty")
    return content


def _check_tool_pairing(messages: list[dict[str, Any]]) -> None:
    """Every tool_use must be answered in the very next user message, and every tool_result must answer one."""
    for i, message in enumerate(messages):
        content = message["content"]
        blocks = content if isinstance(content, list) else []
        if message["role"] == "assistant":
            ids = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
            if len(set(ids)) != len(ids):
                raise _Invalid(f"messages.{i}: tool_use ids must be unique within a message")
            if not ids:
                continue
            nxt = messages[i + 1]["content"] if i + 1 < len(messages) else []
            answered = {b.get("tool_use_id") for b in nxt if isinstance(b, dict) and b.get("type") == "tool_result"}
            missing = [x for x in ids if x not in answered]
            if missing:
                raise _Invalid(
                    f"messages.{i}: tool_use ids were found without tool_result blocks in the next message: "
                    f"{', '.join(map(str, missing))}. Each tool_use block must have a matching tool_result "
                    f"block (same tool_use_id) in the user message that immediately follows it."
                )
        else:
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            if not results:
                continue
            prev = messages[i - 1]["content"] if i > 0 else []
            asked = {b.get("id") for b in prev if isinstance(b, dict) and b.get("type") == "tool_use"}
            unexpected = [x for x in results if x not in asked]
            if unexpected:
                raise _Invalid(
                    f"messages.{i}.content: unexpected tool_use_id found in tool_result blocks: "
                    f"{', '.join(map(str, unexpected))}. Each tool_result block must answer a tool_use block "
                    f"of the previous assistant message."
                )
            if len(set(results)) != len(results):
                raise _Invalid(f"messages.{i}.content: each tool_use_id may be answered by one tool_result only")


# With this beta (Claude Code 2.1 sends it) a request may carry `system` messages between the turns: per-turn
# instructions that take no part in the user/assistant alternation.
PER_TURN_BETA = "per-turn-control-2026-07-01"


def validate(body: Any, betas: Sequence[str] = ()) -> None:
    """Raise _Invalid with an API-like message for a request the real API would reject (at the level that matters)."""
    if not isinstance(body, dict):
        raise _Invalid("The request body must be a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise _Invalid("model: Field required")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise _Invalid("max_tokens: Field required (an integer >= 1)")
    temperature = body.get("temperature")
    if temperature is not None and not (isinstance(temperature, int | float) and 0 <= temperature <= 1):
        raise _Invalid("temperature: Input should be between 0 and 1")
    system = body.get("system")
    if system is not None and not isinstance(system, str):
        if not isinstance(system, list) or not all(isinstance(b, dict) and b.get("type") == "text" for b in system):
            raise _Invalid("system: a string or a list of text blocks")
    if "tools" in body:
        _check_tools(body["tools"])
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _Invalid("messages: at least one message is required")
    if PER_TURN_BETA in betas:
        for i, message in enumerate(messages):
            if isinstance(message, dict) and message.get("role") == "system":
                _check_blocks(i, message.get("content"))
        messages = [m for m in messages if not (isinstance(m, dict) and m.get("role") == "system")]
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise _Invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        expected = "user" if i % 2 == 0 else "assistant"
        if message["role"] != expected:
            raise _Invalid(
                f"messages.{i}.role: roles must alternate between 'user' and 'assistant', starting with 'user'; "
                f"expected '{expected}'"
            )
        _check_blocks(i, message.get("content"))
    _check_tool_pairing(messages)
    count = len(_segments(body)[1])
    if count > MAX_CACHE_BREAKPOINTS:
        raise _Invalid(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {count}."
        )


# ---------------------------------------------------------------------------------------------- usage simulation


def _without_cache_control(part: Any) -> Any:
    # Moving a breakpoint must not change what the cached prefix is.
    if isinstance(part, dict):
        return {k: v for k, v in part.items() if k != "cache_control"}
    return part


def _segments(body: Mapping[str, Any]) -> tuple[list[Any], list[int]]:
    """The request as cacheable parts in canonical order (tools, system, messages), and the indexes of the
    parts that end with a cache breakpoint."""
    parts: list[Any] = []
    breakpoints: list[int] = []

    def add(part: Any, marked: bool) -> None:
        parts.append(part)
        if marked:
            breakpoints.append(len(parts) - 1)

    for tool in body.get("tools") or []:
        add({"tool": _without_cache_control(tool)}, isinstance(tool, dict) and "cache_control" in tool)
    system = body.get("system")
    if isinstance(system, str):
        add({"system": system}, False)
    elif isinstance(system, list):
        for block in system:
            add({"system": _without_cache_control(block)}, isinstance(block, dict) and "cache_control" in block)
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            marked = isinstance(block, dict) and "cache_control" in block
            add({"role": message.get("role"), "block": _without_cache_control(block)}, marked)
    if isinstance(body.get("cache_control"), dict) and parts:  # top-level (automatic) caching: the last part
        if not breakpoints or breakpoints[-1] != len(parts) - 1:
            breakpoints.append(len(parts) - 1)
    return parts, breakpoints


def tokens_of(part: Any) -> int:
    # By UTF-8 bytes, as the API counts more tokens a character for non-Latin scripts than for ASCII.
    return max(1, math.ceil(len(json.dumps(part, ensure_ascii=False).encode("utf-8", "surrogatepass")) / 4))


def output_tokens_of(content: list[dict[str, Any]]) -> int:
    return tokens_of(content)


class PromptCache:
    """Server-wide prefix cache: sha256 of (model + canonical JSON of the parts up to a breakpoint) → tokens."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._prefixes: dict[str, int] = {}

    def clear(self) -> None:
        with self._lock:
            self._prefixes.clear()

    def usage_for(self, body: Mapping[str, Any]) -> dict[str, int]:
        parts, breakpoints = _segments(body)
        digest = hashlib.sha256(str(body.get("model", "")).encode())
        hashes: list[str] = []
        cumulative: list[int] = []
        total = 0
        for part in parts:
            digest.update(json.dumps(part, sort_keys=True, ensure_ascii=False).encode())
            hashes.append(digest.copy().hexdigest())
            total += tokens_of(part)
            cumulative.append(total)
        effective = [b for b in breakpoints if cumulative[b] >= MIN_CACHEABLE_TOKENS]
        read = created = 0
        with self._lock:
            if effective:
                # A read needs a breakpoint at or after the cached prefix, as with the real API.
                for i in range(effective[-1], -1, -1):
                    if hashes[i] in self._prefixes:
                        read = cumulative[i]
                        break
                created = max(0, cumulative[effective[-1]] - read)
                for b in effective:
                    self._prefixes[hashes[b]] = cumulative[b]
        return {
            "input_tokens": total - read - created,
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": read,
        }


# ---------------------------------------------------------------------------------------------- models, thinking


MODELS_PATH = "/v1/models/"
_SAMPLING = ("temperature", "top_p", "top_k")
_EFFORTS = ("low", "medium", "high", "xhigh", "max")


def _support(flag: bool) -> dict[str, bool]:
    return {"supported": flag}


def model_info_json(model: str, *, adaptive: bool, efforts: Sequence[str], max_input_tokens: int | None,
                    max_tokens: int | None) -> dict[str, Any]:
    """A `GET /v1/models/{id}` answer of the real API's shape (every capability key present)."""
    no = _support(False)
    return {
        "type": "model", "id": model, "display_name": model, "created_at": "2026-01-01T00:00:00Z",
        "lifecycle": "active", "max_input_tokens": max_input_tokens, "max_tokens": max_tokens,
        "capabilities": {
            "batch": _support(True), "citations": _support(True), "code_execution": no,
            "context_management": {"supported": False, "clear_thinking_20251015": None,
                                   "clear_tool_uses_20250919": None, "compact_20260112": None},
            "effort": {"supported": bool(efforts), **{e: _support(e in efforts) for e in _EFFORTS}},
            "image_input": _support(True), "pdf_input": _support(True),
            "server_tools": {"supported": False},
            "structured_outputs": _support(True),
            "thinking": {"supported": adaptive,
                         "types": {"adaptive": _support(adaptive), "enabled": no, "disabled": _support(True),
                                   "between_tools": no}},
        },
    }


@dataclass
class _ModelEntry:
    info: dict[str, Any]
    adaptive: bool
    efforts: tuple[str, ...]
    rejects_sampling: bool


class ModelCatalogue:
    """The Models API of the fake, and what the real API checks about thinking and effort.

    With no model registered every `GET /v1/models/{id}` is a 404, as on a compatible server. A
    registered model answers with its capabilities, and its Messages requests are checked against
    them: an unsupported thinking type or effort level is a 400, and so are sampling parameters on a
    model that rejects them. With thinking on (any model), thinking blocks sent back must carry the
    signature the fake gave them, and the assistant turn of a pending tool call must carry its
    thinking blocks unchanged, as the real API requires in a tool-use loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[str, _ModelEntry] = {}
        self._requests: list[RecordedRequest] = []
        self._key = b"fake-thinking-signing-key"
        # tool_use id → the signed thinking blocks of the reply that made the call
        self._thinking_of_call: dict[str, list[dict[str, Any]]] = {}
        self._redacted = itertools.count(1)

    def register(self, model: str, *, adaptive: bool = True, efforts: Sequence[str] = ("low", "medium", "high", "max"),
                 max_input_tokens: int | None = 200_000, max_tokens: int | None = 64_000,
                 rejects_sampling: bool | None = None) -> None:
        """Make `model` known to the Models API. `rejects_sampling` defaults to `adaptive` (current models
        both think adaptively and reject temperature, top_p and top_k)."""
        info = model_info_json(model, adaptive=adaptive, efforts=tuple(efforts), max_input_tokens=max_input_tokens,
                               max_tokens=max_tokens)
        with self._lock:
            self._models[model] = _ModelEntry(info, adaptive, tuple(efforts),
                                              adaptive if rejects_sampling is None else rejects_sampling)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every Models API request so far (kept apart from the Messages requests)."""
        with self._lock:
            return list(self._requests)

    def record(self, req: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(req)

    def answer(self, req: RecordedRequest) -> _Answer:
        if not req.headers.get("x-api-key") and not req.headers.get("authorization"):
            return _error(401, "x-api-key header is required")
        model = req.path.split("?", 1)[0][len(MODELS_PATH):]
        with self._lock:
            entry = self._models.get(model)
        if entry is None:
            return _error(404, f"model: {model}")
        return _Answer(200, json.dumps(entry.info).encode())

    # -- thinking -------------------------------------------------------------------------------------------

    def _sign(self, text_: str) -> str:
        return hmac.new(self._key, text_.encode("utf-8"), hashlib.sha256).hexdigest()

    def sign_reply(self, body: Mapping[str, Any], content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The reply's blocks as the API sends them: thinking blocks only when the request turned thinking
        on, then signed; the calls they precede remembered for the checks on the next request."""
        if not thinking_on(body):
            return [b for b in content if b.get("type") not in ("thinking", "redacted_thinking")]
        out = []
        for block in content:
            if block.get("type") == "thinking":
                block = {"type": "thinking", "thinking": block["thinking"], "signature": self._sign(block["thinking"])}
            elif block.get("type") == "redacted_thinking":
                data = f"redacted-{next(self._redacted):06d}"
                block = {"type": "redacted_thinking", "data": f"{data}.{self._sign(data)}"}
            out.append(block)
        thoughts = [b for b in out if b["type"] in ("thinking", "redacted_thinking")]
        if thoughts:
            with self._lock:
                for block in out:
                    if block["type"] == "tool_use":
                        self._thinking_of_call[block["id"]] = thoughts
        return out

    def _genuine(self, block: Mapping[str, Any]) -> bool:
        if block.get("type") == "thinking":
            return isinstance(block.get("thinking"), str) and hmac.compare_digest(
                str(block.get("signature", "")), self._sign(block["thinking"]))
        data = str(block.get("data", ""))
        head, _, signature = data.rpartition(".")
        return bool(head) and hmac.compare_digest(signature, self._sign(head))

    def check(self, body: Mapping[str, Any]) -> None:
        """Raise _Invalid for what the real API rejects about thinking, effort and sampling."""
        model = str(body.get("model"))
        with self._lock:
            entry = self._models.get(model)
        config = body.get("thinking")
        if config is not None:
            if not isinstance(config, dict) or config.get("type") not in ("adaptive", "enabled", "disabled"):
                raise _Invalid("thinking.type: Input should be 'adaptive', 'enabled' or 'disabled'")
            if entry is not None and config["type"] == "adaptive" and not entry.adaptive:
                raise _Invalid(f"thinking.type: 'adaptive' is not supported on this model ({model})")
            if entry is not None and config["type"] == "enabled" and entry.adaptive:
                raise _Invalid("thinking.type.enabled is not supported for this model. Use thinking.type.adaptive")
        output_config = body.get("output_config")
        if output_config is not None:
            effort = output_config.get("effort") if isinstance(output_config, dict) else None
            if effort not in _EFFORTS:
                raise _Invalid(f"output_config.effort: Input should be one of {', '.join(_EFFORTS)}")
            if entry is not None and effort not in entry.efforts:
                raise _Invalid(f"output_config.effort: '{effort}' is not supported on this model ({model})")
        if entry is not None and entry.rejects_sampling:
            for name in _SAMPLING:
                if name in body:
                    raise _Invalid(f"{name}: is not supported on this model; remove it (sampling parameters are "
                                   "deprecated for this model)")
        if not thinking_on(body):
            return
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
            raise _Invalid("Thinking may not be enabled when tool_choice forces tool use.")
        messages = body.get("messages") or []
        for i, message in enumerate(messages):
            content = message.get("content")
            if message.get("role") != "assistant" or not isinstance(content, list):
                continue
            for j, block in enumerate(content):
                if block.get("type") in ("thinking", "redacted_thinking") and not self._genuine(block):
                    raise _Invalid(f"messages.{i}.content.{j}: Invalid `signature` in `{block['type']}` block")
        self._check_pending_call(messages)

    def _check_pending_call(self, messages: list[dict[str, Any]]) -> None:
        """The last assistant turn, when it made the tool calls being answered now, must start with the
        thinking blocks it came with, unchanged and in order."""
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
        if last is None or not isinstance(messages[last].get("content"), list):
            return
        content = messages[last]["content"]
        calls = [b.get("id") for b in content if b.get("type") == "tool_use"]
        with self._lock:
            expected = next((self._thinking_of_call[c] for c in calls if c in self._thinking_of_call), None)
        if not expected:
            return
        sent = [{k: v for k, v in b.items() if k != "cache_control"} for b in content
                if b.get("type") in ("thinking", "redacted_thinking")]
        first = content[0].get("type") if content else None
        if first not in ("thinking", "redacted_thinking"):
            raise _Invalid(
                f"messages.{last}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. "
                "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
                "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). To avoid this requirement, "
                "disable `thinking`.")
        if sent != expected:
            raise _Invalid(f"messages.{last}.content: thinking blocks must be passed back unmodified, as received")


def thinking_on(body: Mapping[str, Any]) -> bool:
    config = body.get("thinking")
    return isinstance(config, dict) and config.get("type") in ("adaptive", "enabled")


# ---------------------------------------------------------------------------------------------- the server


@dataclass
class _Answer:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    reset: bool = False
    delay_s: float = 0.0
    usage: dict[str, int] | None = None  # billed once the answer is sent
    hold: threading.Event | None = None


class FakeMessagesAPI:
    """The fake server. Start it with the constructor (or use it as a context manager); close() stops it fast."""

    def __init__(self, latency_s: float = 0.0, tls: tuple[Path, Path] | None = None) -> None:
        """`tls`: (certificate chain, private key) to serve HTTPS with, as the real API does."""
        self.latency_s = latency_s
        # The Models API and the thinking checks (register models on it; its requests are kept apart).
        self.models = ModelCatalogue()
        # Seconds an answer takes as a function of its billed usage (a latency model for benchmarks).
        self.latency_model: Callable[[Mapping[str, int]], float] | None = None
        self.cache = PromptCache()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)  # notified when a request arrives or is answered
        self._closing = threading.Event()
        self._requests: list[RecordedRequest] = []
        self._scripts: dict[str, list[Turn]] = {}
        self._handlers: list[tuple[Predicate, Responder]] = []
        self._default: Responder = lambda body: task_done()
        self.mode = ServerMode()  # how this server differs from the API (compatible servers)
        self._fail_all: Fault | None = None
        self._fail_all_left: int | None = None
        self._fault_fired: dict[tuple[Any, ...], int] = {}
        self.errors: list[str] = []  # exceptions raised by responders (answered as 500s)
        self._ids = itertools.count(1)
        self._connections: set[socket.socket] = set()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{port}"
        if tls is not None:
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            # The handshake runs in the handler's thread, on its first read, so that a client which never
            # completes one cannot hold up the accept loop.
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True,
                                                      do_handshake_on_connect=False)
            self.url = f"https://127.0.0.1:{port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"fake-api-{port}", daemon=True
        )
        self._thread.start()

    # -- configuration -----------------------------------------------------------------------------------------

    def script(self, match: str, turns: Sequence[Turn]) -> None:
        """Answer the conversation whose first user message contains `match`: turn N = N assistant messages
        so far. Several matching scripts: the longest `match` wins. Registering `match` again replaces it."""
        with self._lock:
            self._scripts[match] = list(turns)
            for key in [k for k in self._fault_fired if isinstance(k, tuple) and k[:2] == ("script", match)]:
                del self._fault_fired[key]

    def handle(self, predicate: Predicate, responder: Responder) -> None:
        """Checked before scripts, in order of registration (review filter, re-location, ...)."""
        with self._lock:
            self._handlers.append((predicate, responder))

    def default(self, responder: Responder) -> None:
        with self._lock:
            self._default = responder

    def fail_all(self, fault: Fault | None, times: int | None = None) -> None:
        """Every request gets `fault` (after validation) until fail_all(None); with `times`, only the next
        `times` requests do. The fault's own `times`/`then` are not used here."""
        with self._lock:
            self._fail_all = fault
            self._fail_all_left = times

    def clear_cache(self) -> None:
        self.cache.clear()

    # -- inspection --------------------------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def wait_until(self, predicate: Callable[[list[RecordedRequest]], bool], timeout: float = 60.0) -> bool:
        """Block until `predicate(requests)` holds, checked whenever a request arrives or is answered; False
        if `timeout` passed first. The event a test waits on instead of sleeping."""
        with self._arrived:
            return self._arrived.wait_for(lambda: predicate(self._requests), timeout)

    def wait_for_requests(self, count: int = 1, match: str = "", timeout: float = 60.0) -> bool:
        """Block until `count` requests whose first user message contains `match` have arrived."""
        return self.wait_until(lambda reqs: sum(1 for r in reqs if match in r.first_user_text) >= count, timeout)

    def requests_for(self, match: str) -> list[RecordedRequest]:
        return [r for r in self.requests if match in r.first_user_text]

    def billed(self) -> dict[str, int]:
        totals = dict.fromkeys((*USAGE_KEYS, "requests"), 0)
        for r in self.requests:
            if r.usage is not None:
                totals["requests"] += 1
                for key in USAGE_KEYS:
                    totals[key] += r.usage.get(key, 0)
        return totals

    def billed_cost(self, prices: Mapping[str, PriceLike]) -> float:
        """USD for every billed request at its model's price (USD per million tokens)."""
        cost = 0.0
        for r in self.requests:
            if r.usage is None:
                continue
            model = str(r.body.get("model"))
            if model not in prices:
                raise KeyError(f"no price for model {model!r} (priced: {', '.join(sorted(prices))})")
            p = prices[model]
            u = r.usage
            cost += (
                u.get("input_tokens", 0) * p.input
                + u.get("output_tokens", 0) * p.output
                + u.get("cache_creation_input_tokens", 0) * p.cache_write
                + u.get("cache_read_input_tokens", 0) * p.cache_read
            ) / 1_000_000
        return cost

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        if self._closing.is_set():
            return
        self._closing.set()  # wakes every delayed answer
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            open_connections = list(self._connections)
        for conn in open_connections:  # idle keep-alive handlers are blocked reading: unblock them
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(timeout=1)

    def __enter__(self) -> FakeMessagesAPI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- answering (called from handler threads) ---------------------------------------------------------------

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            (self._connections.add if add else self._connections.discard)(conn)

    def _record(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> RecordedRequest:
        try:
            parsed = json.loads(raw) if raw else {}
        except ValueError:
            parsed = {}
        req = RecordedRequest(path, headers, parsed if isinstance(parsed, dict) else {}, time.monotonic(), method, raw)
        if method == "GET" and path.startswith(MODELS_PATH):
            self.models.record(req)
            return req
        with self._arrived:
            self._requests.append(req)
            self._arrived.notify_all()
        return req

    def _answered(self) -> None:
        with self._arrived:
            self._arrived.notify_all()

    def _answer(self, req: RecordedRequest) -> _Answer:
        if req.method == "GET" and req.path.startswith(MODELS_PATH):
            return self.models.answer(req)
        if req.method != "POST" or req.path.split("?", 1)[0] != MESSAGES_PATH:
            return _error(404, f"fake API: no route {req.method} {req.path} (only POST {MESSAGES_PATH})")
        if not req.headers.get("x-api-key") and not req.headers.get("authorization"):
            return _error(401, "x-api-key header is required")
        try:
            body = json.loads(req.raw)
            validate(body, [b.strip() for b in req.headers.get("anthropic-beta", "").split(",")])
            self.models.check(body)
        except ValueError as exc:
            return _error(400, f"The request body is not valid JSON: {exc}")
        except _Invalid as exc:
            return _error(400, exc.message)
        rejected = self.mode.reject(body)
        if rejected is not None:
            return rejected
        with self._lock:
            fault = self._fail_all
            if fault is not None and self._fail_all_left is not None:
                if self._fail_all_left <= 0:
                    fault = self._fail_all = None
                else:
                    self._fail_all_left -= 1
        if fault is not None:
            return _fault_answer(fault)
        try:
            turn = self._choose(body)
        except Exception as exc:  # a broken responder must show up in the test, not hang the client
            with self._lock:
                self.errors.append(f"{type(exc).__name__}: {exc}")
            return _error(500, f"fake API: responder raised {type(exc).__name__}: {exc}")
        if isinstance(turn, Fault):
            return _fault_answer(turn)
        return self._reply_answer(body, self.mode.reply(body, turn))

    def _choose(self, body: dict[str, Any]) -> Turn:
        """The Turn for this request, with each Fault counted against its `times` (→ its `then`)."""
        with self._lock:
            handlers = list(self._handlers)
            default = self._default
        for predicate, responder in handlers:
            if predicate(body):
                return self._settle(responder(body), ("handler", id(responder)), default, body)
        opening = first_user_text(body)
        with self._lock:
            matches = sorted((m for m in self._scripts if m in opening), key=len, reverse=True)
            turns = self._scripts[matches[0]] if matches else None
        if turns is None:
            return self._settle(default(body), ("default", id(default)), default, body)
        index = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        if index >= len(turns):
            return task_done()
        return self._settle(turns[index], ("script", matches[0], index), default, body)

    def _settle(self, turn: Turn, key: tuple[Any, ...], default: Responder, body: dict[str, Any]) -> Turn:
        if isinstance(turn, Reply):
            return turn
        if key[0] != "script":
            key = (*key, id(turn))
        with self._lock:
            fired = self._fault_fired.get(key, 0)
            if fired < turn.times:
                self._fault_fired[key] = fired + 1
                return turn
        if turn.then is not None:
            return turn.then
        fallback = default(body)
        return fallback if isinstance(fallback, Reply) else task_done()

    def _reply_answer(self, body: dict[str, Any], reply: Reply) -> _Answer:
        content = []
        offered = _offered_names(body)
        for block in reply.blocks:
            block = dict(block)
            if block.get("type") == "tool_use":
                block["id"] = block.get("id") or f"toolu_{next(self._ids):06d}"
                block["name"] = offered.get(block["name"], block["name"])
            content.append(block)
        content = self.models.sign_reply(body, content) or [text("(no reply)")]
        usage: dict[str, int] = {**self.cache.usage_for(body), "output_tokens": output_tokens_of(content)}
        usage.update(reply.usage or {})
        message = {
            "id": f"msg_fake_{next(self._ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": reply.resolved_stop_reason(),
            "stop_sequence": None,
            "usage": {**dict.fromkeys(USAGE_KEYS, 0), **usage},
        }
        delay = reply.delay_s + (self.latency_model(usage) if self.latency_model is not None else 0.0)
        if body.get("stream") is True:
            return _Answer(200, sse_events(message), "text/event-stream", delay_s=delay, usage=usage, hold=reply.hold)
        return _Answer(200, json.dumps(message).encode(), delay_s=delay, usage=usage, hold=reply.hold)

    def _sleep(self, seconds: float, hold: threading.Event | None = None) -> bool:
        """Wait without holding anything (then, with `hold`, until it is set); False when the server closed
        meanwhile."""
        if seconds > 0 and self._closing.wait(seconds):
            return False
        while hold is not None and not hold.wait(0.05):
            if self._closing.is_set():
                return False
        return True


def _error(status: int, message: str) -> _Answer:
    return _Answer(status, json.dumps(error_json(status, message)).encode())


def _fault_answer(fault: Fault) -> _Answer:
    return _Answer(fault.status, fault.body_bytes(), fault.content_type, dict(fault.headers), fault.reset,
                   fault.delay_s, hold=fault.hold)


class _Server(LoopbackServer):
    fake: FakeMessagesAPI


class _Handler(QuietHandler):
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, True)

    def finish(self) -> None:
        self.server.fake._track(self.connection, False)
        try:
            super().finish()
        except OSError:
            pass

    def _serve(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        req = fake._record(self.command, self.path, headers, raw)
        answer = fake.mode.route(req) or fake._answer(req)
        if not fake._sleep(fake.latency_s + answer.delay_s, answer.hold):
            self.close_connection = True
            return
        self._send(req, answer)

    do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = _serve

    def _send(self, req: RecordedRequest, answer: _Answer) -> None:
        reason = _REASONS.get(answer.status) or self.responses.get(answer.status, ("Unknown",))[0]
        head = {
            "content-type": answer.content_type,
            "content-length": str(len(answer.body)),
            "request-id": f"req_fake_{next(self.server.fake._ids):06d}",
            **{k.lower(): v for k, v in answer.headers.items()},
        }
        lines = [f"HTTP/1.1 {answer.status} {reason}", *(f"{k}: {v}" for k, v in head.items()), "", ""]
        payload = "\r\n".join(lines).encode("latin-1") + answer.body
        if answer.reset:
            self._reset_after(payload[: len(payload) - max(1, len(answer.body) // 2)])
            return
        # Recorded before the write: once the client has the answer, a test may read the record.
        req.status, req.usage, req.answered_at = answer.status, answer.usage, time.monotonic()
        try:
            self.wfile.write(payload)  # one write: headers and body leave together
            self.wfile.flush()
        except OSError:  # the client gave up first: nothing delivered, nothing billed
            req.status, req.usage = 0, None
            self.close_connection = True
        self.server.fake._answered()

    def _reset_after(self, partial: bytes) -> None:
        """Send `partial`, then abort the connection with a TCP RST (SO_LINGER 0 and close)."""
        self.close_connection = True
        try:
            self.wfile.write(partial)
            self.wfile.flush()
            time.sleep(0.05)  # let the partial response reach the client before the reset
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.server.fake._track(self.connection, False)
        # The socket really closes only when its file objects are closed too; the base class still flushes
        # and closes its files afterwards, so leave it harmless stand-ins.
        self.wfile.close()
        self.rfile.close()
        self.connection.close()
        self.wfile = io.BytesIO()
        self.rfile = io.BytesIO()


def _offered_names(body: Mapping[str, Any]) -> dict[str, str]:
    """Scripted tool name → the name the request offers it under. An MCP client such as Claude Code offers a
    server's tools as `mcp__<server>__<tool>`: a script written for `task_done` calls the tool offered under
    that prefix, as a model would call the name it was given."""
    names = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("name"), str)]
    found = {}
    for name in names:
        if name.startswith("mcp__") and name.count("__") >= 2:
            found.setdefault(name.split("__", 2)[2], name)
    return {short: full for short, full in found.items() if short not in names}


def sse_events(message: Mapping[str, Any]) -> bytes:
    """`message` as the Messages API streams it (`"stream": true`): server-sent events, one content block
    after another (text and thinking in two deltas, a tool's input as partial JSON), the output tokens in
    message_delta."""
    events: list[tuple[str, dict[str, Any]]] = []
    usage = dict(message["usage"])
    start_usage = {**usage, "output_tokens": 1}
    events.append(("message_start", {"type": "message_start", "message": {
        **message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}}))
    events.append(("ping", {"type": "ping"}))
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "text":
            head, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": part}
                                                           for part in _halves(block["text"])]
        elif kind == "thinking":
            head = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [*({"type": "thinking_delta", "thinking": part} for part in _halves(block["thinking"])),
                      {"type": "signature_delta", "signature": block.get("signature", "")}]
        elif kind == "tool_use":
            raw = block["input"] if isinstance(block["input"], str) else json.dumps(block["input"])
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": part} for part in _halves(raw)]
        else:  # redacted_thinking and others arrive whole
            head, deltas = dict(block), []
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": head}))
        events.extend(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
                      for d in deltas)
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": message["stop_reason"], "stop_sequence": None}, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode("utf-8")


def _halves(text_: str) -> list[str]:
    middle = len(text_) // 2
    return [part for part in (text_[:middle], text_[middle:]) if part]


def iter_tool_uses(body: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every tool_use block the client sent back in its assistant messages (helper for assertions)."""
    for message in body.get("messages") or []:
        if message.get("role") == "assistant" and isinstance(message.get("content"), list):
            yield from (b for b in message["content"] if b.get("type") == "tool_use")


# ---------------------------------------------------------------------------------------------- compatible servers


@dataclass
class ServerMode:
    """How a compatible server (Ollama, vLLM, LiteLLM, a company proxy) differs from the API; the
    defaults behave like the API. Set `fake.mode = ServerMode(...)`.

    The wording follows what real servers answer: a strict pydantic schema (Vertex, several proxies)
    says "tools.5.cache_control: Extra inputs are not permitted"; LiteLLM without drop_params says
    "litellm.UnsupportedParamsError: ... does not support parameters: {...}". (A server without the
    Models API is the default of `fake.models`: an unregistered model's lookup answers 404.) Ollama accepts
    cache_control and ignores it (no cache tokens in the usage), and with its small default context
    it drops the front of a long prompt and reports only what it kept."""

    reject_fields: tuple[str, ...] = ()  # a request carrying one of these (anywhere) gets a 400
    rejection_style: str = "pydantic"  # "pydantic" | "litellm"
    input_fraction: float | None = None  # the usage reports this share of the input tokens
    # The server's context length (Ollama's OLLAMA_CONTEXT_LENGTH): it keeps at most this many tokens of a
    # prompt and its usage counts only those, as Ollama's prompt_eval_count does.
    context_length: int | None = None
    # Count the prompt as a real tokeniser would: its JSON's bytes / this (real ones read code at 3.2-4
    # bytes a token, i.e. 75-95 % of ocr-hook's 3-bytes-a-token estimate), instead of the simulated count.
    bytes_per_token: float | None = None
    prompt_cache: bool = True  # False: cache markers are accepted and ignored (no cache tokens)
    text_only: bool = False  # the model answers every turn with text, never a tool call
    openai_models: bool = False  # GET /v1/models/{id} answers OpenAI's model object, as Ollama does

    def route(self, req: RecordedRequest) -> _Answer | None:
        """An answer that replaces the normal routing, or None."""
        if self.openai_models and req.method == "GET" and req.path.startswith(MODELS_PATH):
            model = req.path.split("?", 1)[0][len(MODELS_PATH):]
            return _Answer(200, json.dumps({"id": model, "object": "model", "created": 1767225600,
                                            "owned_by": "library"}).encode())
        return None

    def reject(self, body: Mapping[str, Any]) -> _Answer | None:
        for name in self.reject_fields:
            # Request parameters are top-level; only cache markers sit anywhere in the request.
            where = _field_path(body, name) if name == "cache_control" else (name if name in body else None)
            if where is None:
                continue
            if self.rejection_style == "litellm":
                message = (f"litellm.UnsupportedParamsError: anthropic does not support parameters: "
                           f"{{'{name}': ...}}, for model={body.get('model')}. To drop these, set "
                           f"`litellm.drop_params=True` or for proxy:\n\n`litellm_settings:\n drop_params: true`")
            else:
                message = f"{where}: Extra inputs are not permitted"
            return _error(400, message)
        return None

    def reply(self, body: Mapping[str, Any], reply: Reply) -> Reply:
        if self.text_only:
            reply = Reply([text("The change looks fine to me. No issues found.")], usage=reply.usage,
                          delay_s=reply.delay_s)
        if self.input_fraction is None and self.context_length is None and self.bytes_per_token is None \
                and self.prompt_cache:
            return reply
        total = sum(tokens_of(part) for part in _segments(body)[0])
        if self.bytes_per_token is not None:
            total = math.ceil(len(json.dumps(body, ensure_ascii=False).encode("utf-8")) / self.bytes_per_token)
        counted = max(1, int(total * self.input_fraction)) if self.input_fraction is not None else total
        if self.context_length is not None:
            counted = min(counted, self.context_length)
        usage = {"input_tokens": counted, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                 **(reply.usage or {})}
        return Reply(reply.blocks, reply.stop_reason, usage, reply.delay_s)


def _field_path(value: Any, name: str, where: str = "") -> str | None:
    """The dotted path of the first `name` key in `value` (pydantic's `loc` wording), or None."""
    if isinstance(value, Mapping):
        if name in value:
            return f"{where}.{name}" if where else name
        for key, item in value.items():
            found = _field_path(item, name, f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _field_path(item, name, f"{where}.{i}" if where else str(i))
            if found is not None:
                return found
    return None
