import random
import threading
from fractions import Fraction
from types import SimpleNamespace

import pytest

from ocr_hook.budget.ledger import Budget, Reservation, usage_counts
from ocr_hook.budget.pricing import cost_exact
from ocr_hook.errors import ConfigError
from ocr_hook.settings import Price

SONNET = Price(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3)
PRICING = {"sonnet": SONNET}


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make(max_cost: float = 1.0, max_tokens: int = 10**9, seconds: float = 600.0,
         clock: FakeClock | None = None) -> Budget:
    clock = clock or FakeClock()
    return Budget(max_cost_usd=max_cost, max_tokens=max_tokens, deadline=clock.now + seconds,
                  pricing=PRICING, clock=clock)


def test_reservation_is_priced_at_the_dearest_input_price_plus_max_output() -> None:
    budget = make()
    reservation = budget.reserve("sonnet", 10_000, 4_096)
    assert reservation is not None
    assert reservation.tokens == 14_096
    assert reservation.cost == Fraction(10_000 * 375, 100) / 10**6 + Fraction(4_096 * 15, 10**6)
    assert budget.reserved_usd == pytest.approx((10_000 * 3.75 + 4_096 * 15) / 1e6)
    assert budget.spent_usd == 0.0


def test_settle_replaces_the_reservation_by_the_billed_usage() -> None:
    budget = make()
    reservation = budget.reserve("sonnet", 10_000, 4_096)
    assert reservation is not None
    budget.settle(reservation, {"input_tokens": 1_000, "output_tokens": 200,
                                "cache_creation_input_tokens": 3_000, "cache_read_input_tokens": 5_000})
    assert budget.reserved_usd == 0.0
    expected = (1_000 * 3.0 + 200 * 15.0 + 3_000 * 3.75 + 5_000 * 0.3) / 1e6
    assert budget.spent_usd == pytest.approx(expected)
    usage = budget.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (1, 1_000, 200)
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (3_000, 5_000)
    assert usage.cost_usd == pytest.approx(expected)
    assert budget.spent_tokens == 9_200


def test_settle_accepts_sdk_style_objects_with_none_fields() -> None:
    budget = make()
    reservation = budget.reserve("sonnet", 100, 100)
    assert reservation is not None
    budget.settle(reservation, SimpleNamespace(input_tokens=50, output_tokens=7,
                                               cache_creation_input_tokens=None, cache_read_input_tokens=None))
    assert budget.usage.input_tokens == 50
    assert budget.usage.cache_read_input_tokens == 0
    assert usage_counts({"input_tokens": None}) == {
        "input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def test_usage_is_a_copy() -> None:
    budget = make()
    budget.usage.requests = 99
    assert budget.usage.requests == 0


def test_settling_twice_is_an_error_but_release_is_idempotent() -> None:
    budget = make()
    reservation = budget.reserve("sonnet", 10, 10)
    assert reservation is not None
    budget.settle(reservation, {"input_tokens": 10, "output_tokens": 10})
    with pytest.raises(ValueError):
        budget.settle(reservation, {"input_tokens": 10, "output_tokens": 10})
    assert budget.usage.requests == 1
    other = budget.reserve("sonnet", 10, 10)
    assert other is not None
    budget.release(other)
    budget.release(other)
    assert budget.reserved_usd == 0.0
    assert budget.usage.requests == 1


def test_release_frees_the_room_for_the_next_request() -> None:
    # Worst case of (100k in, 10k out) = 0.375 + 0.15 = $0.525: two do not fit under $1.
    budget = make(max_cost=1.0)
    first = budget.reserve("sonnet", 100_000, 10_000)
    assert first is not None
    assert not budget.fits("sonnet", 100_000, 10_000)
    assert budget.exhausted_reason is None  # fits() records nothing
    assert budget.reserve("sonnet", 100_000, 10_000) is None
    assert budget.exhausted_reason == "cost cap of $1.00 reached"
    budget.release(first)
    assert budget.fits("sonnet", 100_000, 10_000)
    assert budget.reserve("sonnet", 100_000, 10_000) is not None


def test_spent_money_counts_against_later_reservations() -> None:
    budget = make(max_cost=0.5)
    reservation = budget.reserve("sonnet", 10_000, 1_000)
    assert reservation is not None
    budget.settle(reservation, {"input_tokens": 0, "output_tokens": 30_000})  # $0.45, more than reserved
    assert budget.spent_usd == pytest.approx(0.45)
    assert budget.fits("sonnet", 1_000, 2_000)  # 0.00375 + 0.03 -> 0.48375
    assert not budget.fits("sonnet", 1_000, 3_500)  # 0.00375 + 0.0525 -> 0.50625
    assert budget.reserve("sonnet", 1_000, 3_500) is None
    assert budget.exhausted_reason == "cost cap of $0.50 reached"


def test_exact_fit_is_allowed() -> None:
    # 1,000,000 output tokens at $15/M is exactly $15.
    budget = make(max_cost=15.0)
    assert budget.reserve("sonnet", 0, 1_000_000) is not None
    assert budget.reserve("sonnet", 0, 1) is None


def test_token_cap() -> None:
    budget = make(max_tokens=100_000)
    first = budget.reserve("sonnet", 50_000, 40_000)
    assert first is not None
    assert budget.reserve("sonnet", 5_000, 5_001) is None
    assert budget.exhausted_reason == "token cap of 100000 reached"
    # Cache reads count against the token cap too.
    budget.settle(first, {"input_tokens": 10, "output_tokens": 10, "cache_read_input_tokens": 89_980})
    assert budget.spent_tokens == 90_000
    assert budget.fits("sonnet", 5_000, 5_000)
    assert not budget.fits("sonnet", 5_000, 5_001)


def test_deadline_with_an_injected_clock() -> None:
    clock = FakeClock(50.0)
    budget = make(seconds=600.0, clock=clock)
    assert budget.remaining_seconds() == 600.0
    clock.now += 599.5
    assert budget.remaining_seconds() == pytest.approx(0.5)
    assert budget.reserve("sonnet", 10, 10) is not None
    clock.now += 0.5
    assert budget.remaining_seconds() == 0.0
    assert budget.reserve("sonnet", 10, 10) is None
    assert budget.exhausted_reason == "time limit of 600 s reached"
    clock.now += 100
    assert budget.remaining_seconds() == 0.0  # never negative


def test_first_reason_is_kept() -> None:
    clock = FakeClock()
    budget = make(max_tokens=10, clock=clock)
    assert budget.reserve("sonnet", 10, 10) is None
    clock.now += 10_000
    assert budget.reserve("sonnet", 1, 1) is None
    # Nothing was spent: the cap is below one request's estimate, not used up (issue 54.8).
    assert budget.exhausted_reason == "token cap of 10 is below the estimated worst case of one request (20 tokens); " \
        "nothing was spent"


def test_small_caps_are_shown_with_their_digits() -> None:
    budget = make(max_cost=0.005)
    assert budget.reserve("sonnet", 0, 1_000) is None  # $0.015
    assert budget.exhausted_reason == "cost cap of $0.005 is below the estimated worst case of one request ($0.01); " \
        "nothing was spent"


def test_infinite_cost_cap_means_no_cost_cap() -> None:
    budget = make(max_cost=float("inf"))
    assert budget.reserve("sonnet", 10**8, 10**8) is not None


def test_missing_price_is_a_config_error_naming_model_and_setting() -> None:
    budget = make()
    with pytest.raises(ConfigError) as info:
        budget.reserve("claude-mystery-9", 10, 10)
    message = str(info.value)
    assert "claude-mystery-9" in message and "`pricing`" in message and "sonnet" in message
    with pytest.raises(ConfigError):
        budget.fits("claude-mystery-9", 10, 10)


def test_negative_counts_are_rejected() -> None:
    budget = make()
    with pytest.raises(ValueError):
        budget.reserve("sonnet", -1, 10)


def test_many_threads_never_exceed_the_cap_and_totals_are_exact() -> None:
    cap = 0.75
    budget = make(max_cost=cap)
    settled: list[dict[str, int]] = []
    record = threading.Lock()
    barrier = threading.Barrier(16)
    peaks: list[Fraction] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        barrier.wait()
        for _ in range(300):
            input_tokens = rng.randint(0, 20_000)
            max_out = rng.randint(1, 4_000)
            reservation = budget.reserve("sonnet", input_tokens, max_out)
            if reservation is None:
                continue
            # Committed money (spent + reserved) must never pass the cap, even mid-flight.
            committed = Fraction(budget.spent_usd) + Fraction(budget.reserved_usd)
            with record:
                peaks.append(committed)
            if rng.random() < 0.2:
                budget.release(reservation)
                continue
            # The API bills at most the worst case: some cache writes, reads, output below the max.
            written = rng.randint(0, input_tokens)
            read = rng.randint(0, input_tokens - written)
            usage = {"input_tokens": input_tokens - written - read, "output_tokens": rng.randint(0, max_out),
                     "cache_creation_input_tokens": written, "cache_read_input_tokens": read}
            budget.settle(reservation, usage)
            with record:
                settled.append(usage)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    expected = sum((cost_exact(SONNET, **u) for u in settled), Fraction(0))
    usage = budget.usage
    assert usage.requests == len(settled) > 0
    assert usage.input_tokens == sum(u["input_tokens"] for u in settled)
    assert usage.output_tokens == sum(u["output_tokens"] for u in settled)
    assert usage.cache_read_input_tokens == sum(u["cache_read_input_tokens"] for u in settled)
    assert budget.spent_usd == float(expected)
    assert expected <= Fraction(cap)
    assert max(peaks) <= Fraction(cap) * (1 + Fraction(1, 10**9))  # float readings of exact sums
    assert budget.reserved_usd == 0.0
    assert budget.exhausted_reason == "cost cap of $0.75 reached"


def test_reservation_exposes_its_cost_as_float() -> None:
    reservation = Reservation(id=1, model="sonnet", tokens=3, cost=Fraction(1, 4))
    assert reservation.cost_usd == 0.25


def test_shared_by_asyncio_tasks() -> None:
    import asyncio

    budget = make(max_cost=0.1)

    async def file_loop(seed: int) -> int:
        rng = random.Random(seed)
        sent = 0
        for _ in range(20):
            reservation = budget.reserve("sonnet", rng.randint(100, 5_000), 1_000)
            if reservation is None:
                break
            await asyncio.sleep(0)  # the request is in flight; other files run meanwhile
            budget.settle(reservation, {"input_tokens": 100, "output_tokens": rng.randint(0, 1_000)})
            sent += 1
        return sent

    async def main() -> list[int]:
        return await asyncio.gather(*(file_loop(seed) for seed in range(10)))

    sent = asyncio.run(main())
    assert budget.usage.requests == sum(sent) > 0
    assert budget.spent_usd <= 0.1
    assert budget.exhausted_reason == "cost cap of $0.10 reached"


def test_forfeit_counts_the_worst_case_as_spent() -> None:
    budget = make(max_cost=1.0)
    reservation = budget.reserve("sonnet", 100_000, 10_000)  # worst case $0.525
    assert reservation is not None
    budget.forfeit(reservation)
    assert budget.reserved_usd == 0.0
    assert budget.spent_usd == pytest.approx(0.525)
    assert budget.forfeited_usd == pytest.approx(0.525) and budget.forfeited_requests == 1
    assert budget.usage.requests == 0 and budget.usage.cost_usd == pytest.approx(0.525)
    assert budget.spent_tokens == 110_000
    assert budget.reserve("sonnet", 100_000, 10_000) is None  # the room is gone
    budget.forfeit(reservation)  # twice: no double count
    budget.release(reservation)
    assert budget.spent_usd == pytest.approx(0.525)
    with pytest.raises(ValueError):
        budget.settle(reservation, {"input_tokens": 1})


def test_an_optional_request_that_does_not_fit_leaves_the_budget_unexhausted() -> None:
    budget = make(max_cost=1.0)
    assert budget.reserve("sonnet", 1_000_000, 10_000, optional=True) is None  # worst case over $1
    assert budget.exhausted_reason is None  # other work goes on
    assert budget.reserved_usd == 0.0
    assert budget.reserve("sonnet", 1_000_000, 10_000) is None
    assert budget.exhausted_reason == "cost cap of $1.00 is below the estimated worst case of one request ($3.90); " \
        "nothing was spent"
