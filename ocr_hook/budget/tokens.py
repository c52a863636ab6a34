"""Token estimates made without a tokenizer: deliberately on the high side, for budgets and previews."""

from __future__ import annotations

import math

# Claude tokenizers average about 3.5-4 bytes per token on source code; 3 errs towards more tokens,
# so a reservation made from this estimate is rarely smaller than what the API bills.
BYTES_PER_TOKEN = 3.0


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text.encode("utf-8", "surrogateescape")) / BYTES_PER_TOKEN)
