"""Compatible servers (Ollama's and vLLM's Anthropic endpoints, LiteLLM and other proxies).

Two things such servers do that the real API does not, and how the client copes (DESIGN.md 10):

* **They reject an optional field.** A 400 whose message names `cache_control`, `output_config`
  or `thinking` as not accepted ("Extra inputs are not permitted", LiteLLM's "does not support
  parameters", "Unsupported parameter") makes the client send that request once more without the
  field and leave the field out of every later request of the run to that model, with a run note;
  the rejection is also kept with the model's capabilities, so the next run does not pay for it
  again. Only a field the rejected request really carried is dropped, so one request is retried
  at most once per field: never a loop. Other 400s fail as before.
* **They cut prompts.** Ollama's default context (a few thousand tokens) silently drops the front
  of a longer prompt, tool definitions and instructions included; the usage it reports then counts
  what was kept. Far fewer input tokens than were sent means the review would go on blind. (Ollama
  counts the whole prompt, KV-cached part included, since its fix of June 2026; the 0.30 releases
  before it counted only the newly evaluated tokens, which this check would take for a cut.)

Pure code: no SDK import; the client hands over the status and the decoded error body.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# The fields a review can do without: prompt-cache breakpoints (anywhere in the request), and the
# effort / thinking parameters (top level).
DROPPABLE = ("cache_control", "output_config", "thinking")
_NESTED = frozenset({"cache_control"})
# Statuses a server answers a request it will not take with: 400 (the API, LiteLLM, vLLM) and 422
# (FastAPI-based gateways that return pydantic's validation errors as they are).
_REJECTING_STATUSES = frozenset({400, 422})
# How servers word "I do not take this field". Without such a phrase a message that merely mentions
# a field (the API's "when `thinking` is enabled, a final assistant message must start with a thinking
# block") is not a rejection of the field.
_REJECTION = re.compile(
    r"extra inputs are not permitted|extra_forbidden|extra fields? not permitted|not permitted|"
    r"unsupported|not supported|does not support|doesn't support|unknown (?:field|parameter|argument|key)|"
    r"unrecognized|unrecognised|unexpected (?:field|keyword|parameter|argument)|not allowed|"
    r"is not a valid (?:field|parameter)|additional properties",
    re.IGNORECASE)

# Prompt-cut detection (DESIGN.md 10), two signs:
# 1. a request of over PROMPT_CUT_MIN_ESTIMATE estimated input tokens whose reported input is under
#    PROMPT_CUT_FRACTION of the estimate (judged_estimate: a character for a byte, as non-Latin scripts
#    cost more bytes a character but not fewer tokens). Real tokenisers count code at 75-95 % of the
#    3-bytes-a-token estimate; Ollama's default 4,096-token context cutting a 7,000-token prompt reports
#    about 55 % of it (a third, the old rule, missed it), so the line sits at 60 %;
# 2. between two turns of one conversation the prompt grew by at least PROMPT_GROWTH_MIN estimated tokens
#    but the count grew by less than PROMPT_GROWTH_SHARE of that: a server that keeps only what fits its
#    context reports about the same count whatever it is sent (a real count grows by 75-95 % of it).
PROMPT_CUT_MIN_ESTIMATE = 4_000
PROMPT_CUT_FRACTION = 0.6
PROMPT_GROWTH_MIN = 500
PROMPT_GROWTH_SHARE = 0.25


# The words that name each field in servers' messages: the field itself, and for output_config its one
# setting ocr-hook sends ("effort is not supported on this model").
_FIELD_WORDS = {"cache_control": ("cache_control",), "output_config": ("output_config", "effort"),
                "thinking": ("thinking",)}


def _names(words: tuple[str, ...]) -> re.Pattern[str]:
    # A word or a path component: `tools.5.cache_control`, 'thinking', {'output_config': …}.
    alternatives = "|".join(re.escape(word) for word in words)
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z0-9_])", re.IGNORECASE)


_FIELD_PATTERNS = {name: _names(_FIELD_WORDS[name]) for name in DROPPABLE}


def error_texts(body: Any) -> list[str]:
    """The human-readable parts of an error body: the Anthropic shape (`error.message`), the OpenAI /
    LiteLLM shape (`error.message`, `error.param`), a bare string, or pydantic's `detail` list (each
    entry's `loc` and `msg`; never its `input`, which echoes the request)."""
    if isinstance(body, str):
        return [body]
    if not isinstance(body, Mapping):
        return []
    texts: list[str] = []
    error = body.get("error")
    if isinstance(error, str):
        texts.append(error)
    elif isinstance(error, Mapping):
        for key in ("message", "param", "type", "code"):
            if isinstance(error.get(key), str):
                texts.append(error[key])
    if isinstance(body.get("message"), str):
        texts.append(body["message"])
    detail = body.get("detail")
    if isinstance(detail, str):
        texts.append(detail)
    elif isinstance(detail, list):
        for entry in detail:
            if isinstance(entry, Mapping):
                loc = entry.get("loc")
                where = ".".join(str(part) for part in loc) if isinstance(loc, list | tuple) else ""
                texts.append(f"{where}: {entry.get('type', '')} {entry.get('msg', '')}")
    return texts


def rejected_fields(status: int, body: Any, payload: Mapping[str, Any]) -> list[str]:
    """The droppable fields this error rejects, among those `payload` carries (empty: not a rejection
    ocr-hook can work around)."""
    if status not in _REJECTING_STATUSES:
        return []
    texts = [t for t in error_texts(body) if _REJECTION.search(t)]
    if not texts:
        return []
    return [name for name in DROPPABLE
            if carries(payload, name) and any(_FIELD_PATTERNS[name].search(t) for t in texts)]


def carries(payload: Mapping[str, Any], field_name: str) -> bool:
    if field_name not in _NESTED:
        return field_name in payload
    return _contains_key(payload, field_name)


def _contains_key(value: Any, key: str) -> bool:
    if isinstance(value, Mapping):
        return key in value or any(_contains_key(v, key) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_contains_key(v, key) for v in value)
    return False


def _without_key(value: Any, key: str) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_key(v, key) for k, v in value.items() if k != key}
    if isinstance(value, list | tuple):
        return [_without_key(v, key) for v in value]
    return value


def without_fields(payload: Mapping[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    """`payload` without the given droppable fields (a new dict; the caller's stays as it was)."""
    out = dict(payload)
    for name in fields:
        if name in _NESTED:
            out = {k: _without_key(v, name) for k, v in out.items() if k != name}
        else:
            out.pop(name, None)
    return out


def judged_estimate(payload: Mapping[str, Any], text: str) -> int:
    """The estimate a prompt cut is judged against, from `text` (the payload's JSON): by characters, not
    bytes (a Malayalam or Korean file is not three times the tokens its characters are), and without the
    thinking blocks of earlier turns, which the API may leave out of the input it counts."""
    from ocr_hook.budget.tokens import estimate_tokens_per_char

    messages = payload.get("messages")
    if not isinstance(messages, list) or not any(
            isinstance(block, Mapping) and block.get("type") in _THINKING_BLOCKS
            for message in messages if isinstance(message, Mapping) and isinstance(message.get("content"), list)
            for block in message["content"]):
        return estimate_tokens_per_char(text)
    import json

    trimmed = [{**m, "content": [b for b in m["content"]
                                 if not (isinstance(b, Mapping) and b.get("type") in _THINKING_BLOCKS)]}
               if isinstance(m, Mapping) and isinstance(m.get("content"), list) else m for m in messages]
    return estimate_tokens_per_char(json.dumps({**payload, "messages": trimmed}, ensure_ascii=False, default=str))


_THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})


def reported_input(usage: Any) -> int:
    """All the input the server says it read: plain, cache writes and cache reads."""
    reported = 0
    for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
        reported += value if isinstance(value, int) else 0
    return reported


def prompt_cut(estimated_input: int, usage: Any) -> int | None:
    """The input tokens the server reported when they show the prompt was cut, else None."""
    if estimated_input <= PROMPT_CUT_MIN_ESTIMATE:
        return None
    reported = reported_input(usage)
    # 0 is no count at all (older Ollama versions leave prompt_eval_count out when its KV cache served
    # the prompt), not a cut.
    return reported if 0 < reported < estimated_input * PROMPT_CUT_FRACTION else None


@dataclass
class PromptCounts:
    """One conversation's last request: its judged estimate and the count the server reported (sign 2)."""

    estimate: int = 0
    reported: int = 0

    def stalled(self, estimate: int, usage: Any) -> str | None:
        """A reason when the prompt grew since the last turn but the count did not; records this turn."""
        reported = reported_input(usage)
        grew = estimate - self.estimate
        stalled = (self.reported > 0 and reported > 0 and grew >= PROMPT_GROWTH_MIN
                   and reported - self.reported < grew * PROMPT_GROWTH_SHARE)
        before = self.reported
        self.estimate, self.reported = estimate, reported
        if not stalled:
            return None
        return (f"between two turns the prompt grew by about {grew:,} tokens but the server's count went from "
                f"{before:,} to {reported:,} input tokens: " + _CUT_ADVICE)


_CUT_ADVICE = ("it cuts prompts longer than its context length, so the model would review without its "
               "instructions and tools; raise the server's context length (Ollama: OLLAMA_CONTEXT_LENGTH, "
               "e.g. 32768; vLLM: --max-model-len)")


def prompt_cut_reason(estimated_input: int, reported: int) -> str:
    return f"the server counted only {reported:,} of about {estimated_input:,} input tokens: " + _CUT_ADVICE


@dataclass
class Rejection:
    field: str
    model: str
    reason: str  # the server's one-line answer
    remembered: bool = False  # known from an earlier run (the capability cache), not seen in this one


@dataclass
class FieldPolicy:
    """Which optional fields each model's requests leave out, for one run and every file in it.

    `load(model)` gives the fields (→ the server's answer) rejected on earlier runs, kept with the
    model's capabilities; `remember(model, field, reason)` keeps a new rejection there."""

    load: Callable[[str], Mapping[str, str]] | None = None
    remember: Callable[[str, str, str], None] | None = None
    _dropped: dict[tuple[str, str], Rejection] = field(default_factory=dict)
    _loaded: set[str] = field(default_factory=set)

    def seed(self, model: str, fields: Mapping[str, str]) -> None:
        """Fields the server rejected on an earlier run: left out from the first request on."""
        for name, reason in fields.items():
            if name in DROPPABLE and (model, name) not in self._dropped:
                self._dropped[(model, name)] = Rejection(name, model, str(reason), remembered=True)

    def dropped(self, model: str) -> list[str]:
        if model not in self._loaded:
            self._loaded.add(model)
            if self.load is not None:
                try:
                    self.seed(model, self.load(model))
                except (OSError, ValueError, TypeError):  # an unreadable record is no record
                    pass
        return [name for (m, name) in self._dropped if m == model]

    def prepare(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The request as it is sent: without the fields this model's server rejected."""
        return without_fields(payload, self.dropped(str(payload.get("model", ""))))

    def after_rejection(self, status: int, body: Any, reason: str, sent: Mapping[str, Any]) -> dict[str, Any] | None:
        """The request to send once more after an error, or None when the error is not a field
        rejection (then it fails as any other error). Several files may have had the same field
        rejected at once: each retries, the first one records it."""
        fields = rejected_fields(status, body, sent)
        if not fields:
            return None
        model = str(sent.get("model", ""))
        for name in fields:
            if (model, name) not in self._dropped:
                self._dropped[(model, name)] = Rejection(name, model, reason)
                if self.remember is not None:
                    try:
                        self.remember(model, name, reason)
                    except OSError:  # a cache that cannot be written only costs the next run one retry
                        pass
        return without_fields(sent, fields)

    def notes(self) -> list[str]:
        notes = []
        for rejection in self._dropped.values():
            what = _WHAT_IT_COSTS[rejection.field]
            if rejection.remembered:
                notes.append(f"`{rejection.field}` was left out of every request to {rejection.model}: the server "
                             f"rejected it on an earlier run ({rejection.reason}; kept with the model's "
                             f"capabilities for up to 24 hours); {what}")
            else:
                notes.append(f"the server rejected `{rejection.field}` for {rejection.model} ({rejection.reason}); "
                             f"the request was sent again without it and it was left out for the rest of the run; "
                             f"{what}")
        return notes


_WHAT_IT_COSTS = {
    "cache_control": "no prompt caching, so every request pays for its whole prompt",
    "output_config": "no effort setting, so the server's default effort applies",
    "thinking": "no adaptive thinking",
}
