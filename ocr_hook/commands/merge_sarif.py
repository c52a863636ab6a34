"""`ocr-hook merge-sarif`: join shard outputs into one SARIF run."""

from __future__ import annotations

from collections.abc import Sequence


def run(inputs: Sequence[str], output: str) -> int:
    from ocr_hook.reports.atomic_write import write_json_atomic
    from ocr_hook.reports.merge_sarif import merge_sarif

    write_json_atomic(output, merge_sarif(list(inputs)))
    return 0
