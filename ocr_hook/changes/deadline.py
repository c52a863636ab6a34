"""The run's deadline, for the preparation before the budget exists (issue 55.8): reading the diff of a large tree
and selecting its files stop where `--timeout` falls, and what they did not reach is listed as not reviewed."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocr_hook.outcome import FileCoverage

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


_NOT_STARTED, _CUT_SHORT = "not reviewed: ", "review cut short: "


def stopped_note(files: Sequence[FileCoverage]) -> str | None:
    """What a run the clock or a cap stopped did and did not do, in one note (issue 62.10): how many files were
    reviewed, how many were begun and cut short (what the model said before the stop is kept and reported),
    how many were never begun; None when no file was stopped. The why is the first stopped file's."""
    begun = [f for f in files if f.incomplete and (f.reason or "").startswith(_CUT_SHORT)]
    never = [f for f in files if f.incomplete and (f.reason or "").startswith(_NOT_STARTED)]
    if not begun and not never:
        return None
    first = (begun or never)[0].reason or ""
    why = first.split(": ", 1)[1]
    if why.startswith("time limit"):
        head = f"the run was stopped by the clock ({why})"
    else:
        head = why if why == "the run was stopped" else f"the budget ran out ({why})"
    reviewed = sum(1 for f in files if f.state in ("reviewed", "cached"))
    return (f"{head}: {reviewed} file(s) reviewed, {len(begun)} begun and cut short (what the model said before "
            f"the stop is kept and reported), {len(never)} not reviewed at all")
