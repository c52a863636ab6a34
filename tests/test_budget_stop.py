"""Budget.stop: an entry point ends a run early through the same deadline the run already obeys."""

from __future__ import annotations

import asyncio
import threading
import time

from fake_api import FakeMessagesAPI, Reply, text

from ocr_hook.budget.ledger import Budget
from ocr_hook.settings import Price
from ocr_hook.settings import load as load_settings

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
    assert budget.exhausted_reason.startswith("cost cap of $0.00 is below the estimated worst case of one request")


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


def test_stopping_from_another_thread_cuts_off_api_create_in_flight(
    fake_api: FakeMessagesAPI, sdk_env: dict[str, str]
) -> None:
    """The real Api.create, through the real SDK over HTTP: a request the fake holds (until the test ends)
    ends at once when another thread stops the budget, counted at its worst case, and nothing is sent
    after. The other thread stops it once the fake has the request: in flight, however slow the machine."""
    from ocr_hook.agent.client import Api, BudgetStop, open_api

    fake_api.script("held request", [Reply([text("too late")], hold=threading.Event())])
    budget = _budget()
    api = open_api(load_settings(None, environ={}), sdk_env, budget)
    messages = [{"role": "user", "content": "held request"}]

    stopped_at: list[float] = []

    def stop_once_in_flight() -> None:
        if fake_api.wait_for_requests(1, timeout=60):
            stopped_at.append(time.monotonic())
            budget.stop("the review was cancelled")

    async def run(api: Api) -> tuple[float, BaseException | None]:
        threading.Thread(target=stop_once_in_flight, daemon=True).start()
        outcome: BaseException | None = None
        try:
            # The outer bound only keeps a broken wiring from hanging the test; it raises TimeoutError,
            # which is not what the deadline path raises.
            await asyncio.wait_for(api.create(model="m", max_tokens=100, messages=messages), 60)
        except BaseException as exc:  # asserted on below, outside the loop
            outcome = exc
        elapsed = time.monotonic() - stopped_at[0] if stopped_at else float("inf")
        try:
            await api.create(model="m", max_tokens=100, messages=messages)
        except BudgetStop:
            pass
        else:
            raise AssertionError("a request was sent after the budget was stopped")
        finally:
            await api.aclose()
        return elapsed, outcome

    elapsed, outcome = asyncio.run(run(api))
    assert isinstance(outcome, BudgetStop), f"expected BudgetStop, got {outcome!r}"
    assert str(outcome) == "the review was cancelled"
    assert elapsed < 10.0  # from the stop to the end of the call: not a wait for the held reply
    assert len(fake_api.requests) == 1  # the held request reached the fake; the later one was never sent
    assert fake_api.requests[0].status == 0  # and it was cut off before the fake answered
    assert budget.forfeited_requests == 1
    # Worst case: the whole output cap is counted (besides the input estimate), not a real usage.
    assert budget.spent_usd == budget.forfeited_usd >= float(budget.worst_case("m", 0, 100)[1]) > 0
    assert budget.spent_tokens > 100 and budget.usage.requests == 0
    assert budget.reserved_usd == 0
