"""`ocr-hook merge-sarif`: join shard outputs into one SARIF run."""

from __future__ import annotations

from collections.abc import Sequence


def run(inputs: Sequence[str], output: str) -> int:
    from ocr_hook.reports.merge_sarif import merge_sarif
    from ocr_hook.reports.sarif import dump_sarif
    from ocr_hook.store.atomic import write_atomic

    write_atomic(output, dump_sarif(merge_sarif(list(inputs))))
    return 0
