"""One spending budget for a whole run: cost, tokens and a wall-clock deadline, shared by every file.

The cap is a ceiling, never a target. Before each request the caller reserves the request's worst
case; a reservation that does not fit next to what was already spent and what other requests have
reserved is refused, so the request is never sent. When the response arrives the reservation is
replaced by what the API actually billed.

Why the worst case holds: the input side is priced at the dearest input price (a cache write costs
more than plain input, a cache read less), the output side at `max_output_tokens`, which the API
never exceeds. The input token count is the caller's estimate, made with
`ocr_hook.budget.tokens.estimate_tokens` at 3 bytes per token, while Claude tokenizers average about
3.5-4 bytes per token on source code and prose, so the estimate is normally 15-30 % high. Text made
mostly of rare characters (CJK, emoji, long runs of punctuation) can tokenize denser than 3 bytes per
token; then the API may bill more input than was reserved. `settle` records the real amount anyway,
so usage and cost are always truthful, and the next reservation sees the overshoot.

Thread-safe and usable from asyncio: every method takes a `threading.Lock` briefly and never blocks
otherwise, so calling it from the event loop thread is fine.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ocr_hook.errors import ConfigError
from ocr_hook.outcome import Usage
from ocr_hook.settings import Price

if TYPE_CHECKING:
    from fractions import Fraction

_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class Reservation(NamedTuple):
    """The worst case of one request, held against the budget until settled or released."""

    id: int
    model: str
    tokens: int
    cost: Fraction

    @property
    def cost_usd(self) -> float:
        return float(self.cost)


def usage_counts(usage: Any) -> dict[str, int]:
    """The four token counts from an SDK usage object or a mapping; missing or None counts as 0."""
    counts = {}
    for name in _USAGE_FIELDS:
        value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
        counts[name] = int(value or 0)
    return counts


def _money(value: Fraction | float | int) -> str:
    amount = float(value)
    return f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.2g}"


class Budget:
    """Spending limits of one run. See the module docstring for the guarantee and its one edge."""

    def __init__(
        self,
        *,
        max_cost_usd: float,
        max_tokens: int,
        deadline: float,
        pricing: Mapping[str, Price],
        clock: Callable[[], float] = time.monotonic,
        time_limit: float | None = None,
    ) -> None:
        if max_cost_usd < 0 or max_tokens < 0:
            raise ValueError("budget limits must not be negative")
        # Exact arithmetic (fractions) starts with the first reservation: a run answered wholly from the cache
        # builds a budget too, and need not load fractions and decimal (~2 ms). Until then the sums are 0.
        self._max_cost: Fraction | None = None  # Fraction(max_cost_usd), made then; math.inf means no cap
        self._max_cost_usd = max_cost_usd
        self._max_tokens = max_tokens
        self._deadline = deadline
        # The limit as given (--timeout), when the run started before the budget was built (issue 55.8).
        self._time_limit = time_limit if time_limit is not None else max(0.0, deadline - clock())
        self._pricing = dict(pricing)
        self._clock = clock
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._outstanding: dict[int, Reservation] = {}
        self._settled: set[int] = set()
        self._reserved_cost: Fraction | int = 0
        self._reserved_tokens = 0
        self._spent: Fraction | int = 0
        self._spent_tokens = 0
        self._forfeited: Fraction | int = 0
        self._forfeited_requests = 0
        self._usage = Usage()
        self._exhausted_reason: str | None = None
        self._stopped = False
        self._stop_watchers: dict[int, Callable[[], None]] = {}
        self._watcher_ids = itertools.count(1)

    # --- queries ---------------------------------------------------------------------------------

    @property
    def exhausted_reason(self) -> str | None:
        """Why the first refused reservation was refused, e.g. "cost cap of $0.50 reached"; else None.

        A refusal means one request did not fit; a smaller one (a closing round) may still fit. The
        caller should stop starting new work once this is set.
        """
        with self._lock:
            return self._exhausted_reason

    @property
    def usage(self) -> Usage:
        """A copy of the settled totals; cost_usd includes any forfeited worst cases."""
        with self._lock:
            copy = Usage()
            copy.add(self._usage)
            copy.cost_usd = float(self._spent)
            return copy

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return float(self._spent)

    @property
    def reserved_usd(self) -> float:
        """Worst-case cost of the requests in flight."""
        with self._lock:
            return float(self._reserved_cost)

    @property
    def spent_tokens(self) -> int:
        with self._lock:
            return self._spent_tokens

    def remaining_seconds(self) -> float:
        return max(0.0, self._deadline - self._clock())

    @property
    def time_limit_reached(self) -> str:
        """What a run the clock stopped says, e.g. "time limit of 20 s reached"."""
        from ocr_hook.changes.deadline import time_limit_text

        return time_limit_text(self._time_limit)

    def price(self, model: str) -> Price:
        price = self._pricing.get(model)
        if price is None:
            known = ", ".join(sorted(self._pricing)) or "none"
            raise ConfigError(
                f"no price for model '{model}': add it to the `pricing` setting in .ocr-hook.yaml as "
                f"{model}: {{input, output, cache_write, cache_read}} in USD per million tokens "
                f"(priced models: {known})"
            )
        return price

    def worst_case(self, model: str, input_tokens: int, max_output_tokens: int) -> tuple[int, Fraction]:
        """Tokens and cost of a request if every input token were a cache write and output ran to the max."""
        from ocr_hook.budget.pricing import cost_exact

        price = self.price(model)
        dearest_input = Price(input=max(price.input, price.cache_write), output=price.output,
                              cache_write=0.0, cache_read=0.0)
        cost = cost_exact(dearest_input, input_tokens, max_output_tokens)
        return input_tokens + max_output_tokens, cost

    def fits(self, model: str, input_tokens: int, max_output_tokens: int) -> bool:
        """Whether `reserve` would succeed now; reserves nothing and records nothing."""
        tokens, cost = self.worst_case(model, input_tokens, max_output_tokens)
        with self._lock:
            return self._refusal(tokens, cost) is None

    # --- stopping early ----------------------------------------------------------------------------

    def stop(self, reason: str) -> None:
        """End the run now, as if its deadline had passed: no request is sent any more, and requests in
        flight are cut off the way the deadline cuts them (their worst case counts as spent). For an
        entry point whose caller cancels the run; `reason` becomes exhausted_reason unless one is set.
        Callable from any thread."""
        with self._lock:
            if self._exhausted_reason is None:
                self._exhausted_reason = reason
            self._deadline = min(self._deadline, self._clock())
            self._stopped = True
            watchers = list(self._stop_watchers.values())
        for watcher in watchers:
            watcher()

    def on_stop(self, watcher: Callable[[], None]) -> Callable[[], None]:
        """Call `watcher` when stop() is called (at once if it already was), from stop()'s thread.
        Returns the function that removes the watcher again."""
        with self._lock:
            key = next(self._watcher_ids)
            self._stop_watchers[key] = watcher
            stopped = self._stopped
        if stopped:
            watcher()

        def remove() -> None:
            with self._lock:
                self._stop_watchers.pop(key, None)

        return remove

    # --- reservations ----------------------------------------------------------------------------

    def reserve(self, model: str, input_tokens: int, max_output_tokens: int,
                optional: bool = False) -> Reservation | None:
        """Hold the worst case of one request; None (and exhausted_reason set) when it does not fit.

        An `optional` request (one the review can do without) that does not fit leaves
        exhausted_reason alone, so it never stops other work."""
        if input_tokens < 0 or max_output_tokens < 0:
            raise ValueError("token counts must not be negative")
        tokens, cost = self.worst_case(model, input_tokens, max_output_tokens)
        with self._lock:
            refusal = self._refusal(tokens, cost)
            if refusal is not None:
                if self._exhausted_reason is None and not optional:
                    self._exhausted_reason = refusal
                return None
            reservation = Reservation(id=next(self._ids), model=model, tokens=tokens, cost=cost)
            self._outstanding[reservation.id] = reservation
            self._reserved_cost += cost
            self._reserved_tokens += tokens
            return reservation

    def settle(self, reservation: Reservation, usage: Any) -> None:
        """Replace the reservation by what the API billed (`usage`: SDK object or mapping); one request."""
        from ocr_hook.budget.pricing import cost_exact

        counts = usage_counts(usage)
        price = self.price(reservation.model)
        cost = cost_exact(price, **counts)
        tokens = sum(counts.values())
        with self._lock:
            if reservation.id in self._settled:
                raise ValueError(f"reservation {reservation.id} was already settled")
            self._drop(reservation)
            self._settled.add(reservation.id)
            self._spent += cost
            self._spent_tokens += tokens
            self._usage.add(Usage(requests=1, **counts))

    def record(self, model: str, usage: Any) -> None:
        """Count a request someone else sent and billed (Claude Code's, as its usage streams in): settled
        at once, with no reservation of its own; the next `reserve` sees it."""
        self.settle(Reservation(id=next(self._ids), model=model, tokens=0, cost=0), usage)  # type: ignore[arg-type]

    def release(self, reservation: Reservation) -> None:
        """Give the reservation back: the request failed and nothing was billed. Safe to call twice."""
        with self._lock:
            self._drop(reservation)

    def forfeit(self, reservation: Reservation) -> None:
        """Count the reservation's worst case as spent: the request may have been billed but no usage
        came back (cut off by the deadline after it was sent). Keeps the cap a ceiling in that case."""
        with self._lock:
            if reservation.id in self._settled or reservation.id not in self._outstanding:
                return
            self._drop(reservation)
            self._settled.add(reservation.id)
            self._spent += reservation.cost
            self._spent_tokens += reservation.tokens
            self._forfeited += reservation.cost
            self._forfeited_requests += 1

    @property
    def forfeited_usd(self) -> float:
        """Worst-case cost counted for requests whose billing is unknown (see forfeit)."""
        with self._lock:
            return float(self._forfeited)

    @property
    def forfeited_requests(self) -> int:
        with self._lock:
            return self._forfeited_requests

    # --- internals (call with the lock held) -----------------------------------------------------

    def _drop(self, reservation: Reservation) -> None:
        held = self._outstanding.pop(reservation.id, None)
        if held is not None:
            self._reserved_cost -= held.cost
            self._reserved_tokens -= held.tokens

    def _refusal(self, tokens: int, cost: Fraction) -> str | None:
        if self._clock() >= self._deadline:
            return self.time_limit_reached
        if self._max_cost is None and not math.isinf(self._max_cost_usd):
            from fractions import Fraction

            self._max_cost = Fraction(self._max_cost_usd)
        if self._max_cost is not None and self._spent + self._reserved_cost + cost > self._max_cost:
            if not self._spent and not self._reserved_cost and not self._outstanding:
                # Nothing spent yet: the cap is below one request's estimate, not used up (issue 54.8).
                return (f"cost cap of {_money(self._max_cost)} is below the estimated worst case of one request "
                        f"({_money(cost)}); nothing was spent")
            return f"cost cap of {_money(self._max_cost)} reached"
        if self._spent_tokens + self._reserved_tokens + tokens > self._max_tokens:
            if not self._spent_tokens and not self._reserved_tokens and not self._outstanding:
                return (f"token cap of {self._max_tokens} is below the estimated worst case of one request "
                        f"({tokens} tokens); nothing was spent")
            return f"token cap of {self._max_tokens} reached"
        return None
