"""Cost arithmetic: token counts times the per-million-token prices of the settings' pricing table."""

from __future__ import annotations

from fractions import Fraction

from ocr_hook.settings import Price

PER_TOKENS = 1_000_000  # prices are USD per million tokens


def cost_exact(
    price: Price,
    input_tokens: int,
    output_tokens: int,
    cache_creation_input_tokens: int = 0,
    cache_read_input_tokens: int = 0,
) -> Fraction:
    """The cost as an exact fraction of a dollar, so sums over many requests never drift past a cap.

    `input_tokens` is what the Messages API reports as `input_tokens`: input that was neither written
    to nor read from the prompt cache (the API counts those two separately).
    """
    total = (
        Fraction(price.input) * input_tokens
        + Fraction(price.output) * output_tokens
        + Fraction(price.cache_write) * cache_creation_input_tokens
        + Fraction(price.cache_read) * cache_read_input_tokens
    )
    return total / PER_TOKENS


def cost_usd(
    price: Price,
    input_tokens: int,
    output_tokens: int,
    cache_creation_input_tokens: int = 0,
    cache_read_input_tokens: int = 0,
) -> float:
    """The cost in USD of one request (or of summed usage) at `price`."""
    return float(cost_exact(price, input_tokens, output_tokens, cache_creation_input_tokens,
                            cache_read_input_tokens))


def worst_case_input_price(price: Price) -> float:
    """The dearest way an input token can be billed: a cache write costs more than plain input."""
    return max(price.input, price.cache_write)
