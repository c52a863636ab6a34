"""What a file's profile adds to its review requests, given what the model accepts (DESIGN.md section 8).

Adaptive thinking and `output_config.effort` go only to a model whose capabilities list them; with
capabilities unknown neither is sent. No sampling parameter is ever sent (current models reject
`temperature`, `top_p` and `top_k`), and tool_choice is never forced (not allowed with thinking).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ocr_hook.agent.capabilities import Capabilities
from ocr_hook.effort import Profile

# Output tokens added to a request's max_tokens when thinking is on: thinking counts against max_tokens
# (and is billed as output, so the budget reserves it as part of the request's worst case). Adaptive
# thinking decides its own depth; this is its ceiling per turn. Sized so that the default concurrency
# (8 files in flight) of deep requests fits the default $2 cap: 8 x (4,096 + 8,192) output tokens at
# $15 per million is about $1.50 of reservations.
THINKING_ROOM = {"standard": 4_096, "deep": 8_192}
DEFAULT_THINKING_ROOM = 4_096


@dataclass(frozen=True)
class RequestOptions:
    thinking: dict[str, Any] | None = None
    output_config: dict[str, Any] | None = None
    thinking_room: int = 0

    def max_tokens(self, base: int, model_limit: int | None = None) -> int:
        """`base` output tokens for the answer itself, plus room for thinking, within the model's limit."""
        wanted = base + self.thinking_room
        return min(wanted, model_limit) if model_limit else wanted

    def as_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self.thinking is not None:
            params["thinking"] = self.thinking
        if self.output_config is not None:
            params["output_config"] = self.output_config
        return params


NONE = RequestOptions()


def options_for(profile: Profile | None, caps: Capabilities) -> RequestOptions:
    if profile is None or not caps.known:
        return NONE
    thinking = {"type": "adaptive"} if profile.thinking and caps.adaptive_thinking else None
    output_config = {"effort": profile.output_effort} if caps.supports_effort(profile.output_effort) else None
    room = THINKING_ROOM.get(profile.name, DEFAULT_THINKING_ROOM) if thinking else 0
    return RequestOptions(thinking, output_config, room)


def fitting_max_tokens(base: int, wanted: int, fits: Callable[[int], bool]) -> int:
    """`wanted` (the answer's allowance plus the thinking room), or the largest of its halvings down to
    `base` that the budget can reserve now: a tight cost cap shrinks the room for thinking (thinking
    then shares the answer's allowance) instead of refusing the request."""
    limit = wanted
    while limit > base and not fits(limit):
        limit = max(base, limit // 2)
    return limit
