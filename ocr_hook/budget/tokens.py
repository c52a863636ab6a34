"""Token estimates made without a tokenizer: deliberately on the high side, for budgets and previews."""

from __future__ import annotations

import math

# Claude tokenizers average about 3.5-4 bytes per token on source code; 3 errs towards more tokens,
# so a reservation made from this estimate is rarely smaller than what the API bills.
BYTES_PER_TOKEN = 3.0


def estimate_tokens(text: str) -> int:
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogateescape"))  # (isascii: no pass)
    return math.ceil(size / BYTES_PER_TOKEN)


def estimate_tokens_per_char(text: str) -> int:
    """The estimate a server's count of the input is judged against (compat.prompt_cut): a character
    where estimate_tokens counts a byte. Outside ASCII a character takes 2-4 bytes in UTF-8, but
    tokenisers do not read such text in fewer tokens per character than ASCII text (Claude's count
    for Korean, Devanagari or Malayalam is well over a token per 3 characters), so this is the same
    as estimate_tokens for code and never counts a non-Latin file at 2-4 times what it costs."""
    return math.ceil(len(text) / BYTES_PER_TOKEN)
