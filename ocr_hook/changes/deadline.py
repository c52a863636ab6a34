"""The run's deadline, for the preparation before the budget exists (issue 55.8): reading the diff of a large tree
and selecting its files stop where `--timeout` falls, and what they did not reach is listed as not reviewed."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

_deadline: ContextVar[tuple[float, str] | None] = ContextVar("ocr_hook_run_deadline", default=None)


@contextlib.contextmanager
def bounded(at: float, reason: str) -> Iterator[None]:
    """Within this block, `passed()` says `reason` once time.monotonic() reaches `at`."""
    token = _deadline.set((at, reason))
    try:
        yield
    finally:
        _deadline.reset(token)


def passed() -> str | None:
    """Why the preparation must stop ("time limit of 20 s reached"), or None while there is time."""
    found = _deadline.get()
    return found[1] if found is not None and time.monotonic() >= found[0] else None


def time_limit_text(seconds: float) -> str:
    """"time limit of 20 s reached": the limit as given (a deadline computed a moment late reads 599.98 -> 600)."""
    shown = f"{round(seconds)} s" if seconds >= 10 else f"{seconds:.2g} s"
    return f"time limit of {shown} reached"

