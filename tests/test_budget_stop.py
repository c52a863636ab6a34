"""Budget.stop: an entry point ends a run early through the same deadline the run already obeys."""

from __future__ import annotations

import asyncio
import threading
import time

from ocr_hook.budget import Budget
from ocr_hook.settings import Price

PRICES = {"m": Price(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3)}


def _budget() -> Budget:
    return Budget(max_cost_usd=10.0, max_tokens=10**9, deadline=time.monotonic() + 600, pricing=PRICES)


def test_a_stopped_budget_refuses_every_request_and_says_why() -> None:
    budget = _budget()
    held = budget.reserve("m", 1000, 100)
    assert held is not None
    budget.stop("the review was cancelled")
    assert budget.exhausted_reason == "the review was cancelled"
    assert budget.remaining_seconds() == 0
    assert budget.reserve("m", 1, 1) is None
    assert budget.reserve("m", 1, 1, optional=True) is None
    budget.forfeit(held)  # a request in flight when stopped counts at its worst case
    assert budget.spent_usd == held.cost_usd and budget.forfeited_requests == 1


def test_an_earlier_reason_is_kept() -> None:
    budget = Budget(max_cost_usd=0.0, max_tokens=10**9, deadline=time.monotonic() + 600, pricing=PRICES)
    assert budget.reserve("m", 10, 10) is None
    budget.stop("cancelled")
    assert budget.exhausted_reason == "cost cap of $0.00 reached"


def test_watchers_run_on_stop_or_at_once_when_already_stopped_and_can_be_removed() -> None:
    budget = _budget()
    calls: list[str] = []
    remove = budget.on_stop(lambda: calls.append("removed"))
    budget.on_stop(lambda: calls.append("first"))
    remove()
    stopper = threading.Thread(target=budget.stop, args=("cancelled",))
    stopper.start()
    stopper.join()
    assert calls == ["first"]
    budget.on_stop(lambda: calls.append("late"))
    assert calls == ["first", "late"]


def test_stopping_from_another_thread_cuts_a_request_in_flight_at_once() -> None:
    """What Api.create does around each request: the stop moves its timeout to now."""
    from ocr_hook.agent.client import _expire_soon

    budget = _budget()

    async def in_flight() -> float:
        loop = asyncio.get_running_loop()
        threading.Timer(0.1, budget.stop, args=("cancelled",)).start()
        started = time.monotonic()
        try:
            async with asyncio.timeout(budget.remaining_seconds()) as limit:
                unwatch = budget.on_stop(lambda: _expire_soon(loop, limit))
                try:
                    await asyncio.sleep(30)
                finally:
                    unwatch()
        except TimeoutError:
            return time.monotonic() - started
        raise AssertionError("the sleep was not cut off")

    assert asyncio.run(in_flight()) < 2.0
