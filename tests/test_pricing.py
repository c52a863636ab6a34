from fractions import Fraction

import pytest

from ocr_hook.budget.pricing import cost_exact, cost_usd, worst_case_input_price
from ocr_hook.settings import Price

SONNET = Price(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3)


def test_each_token_kind_uses_its_own_price() -> None:
    assert cost_usd(SONNET, 1_000_000, 0) == pytest.approx(3.0)
    assert cost_usd(SONNET, 0, 1_000_000) == pytest.approx(15.0)
    assert cost_usd(SONNET, 0, 0, cache_creation_input_tokens=1_000_000) == pytest.approx(3.75)
    assert cost_usd(SONNET, 0, 0, cache_read_input_tokens=1_000_000) == pytest.approx(0.3)


def test_mixed_request() -> None:
    # 2,000 plain input, 500 output, 10,000 written to cache, 40,000 read from it.
    expected = (2_000 * 3.0 + 500 * 15.0 + 10_000 * 3.75 + 40_000 * 0.3) / 1_000_000
    assert cost_usd(SONNET, 2_000, 500, 10_000, 40_000) == pytest.approx(expected, rel=1e-12)


def test_exact_sum_does_not_drift() -> None:
    # 0.1 and 0.3 are not exact binary floats; a million small requests must still add up exactly.
    price = Price(input=0.1, output=0.3, cache_write=0.1, cache_read=0.1)
    one = cost_exact(price, 1, 1)
    assert one * 1_000_000 == cost_exact(price, 1_000_000, 1_000_000)
    assert isinstance(one, Fraction)


def test_zero_usage_costs_nothing() -> None:
    assert cost_usd(SONNET, 0, 0) == 0.0


def test_worst_case_input_price_is_the_dearer_of_input_and_cache_write() -> None:
    assert worst_case_input_price(SONNET) == 3.75
    odd = Price(input=2.0, output=1.0, cache_write=1.0, cache_read=0.1)
    assert worst_case_input_price(odd) == 2.0
