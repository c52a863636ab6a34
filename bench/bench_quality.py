"""Benchmark: how good are the reviews? Real bug fixes from open-source histories, reversed and reviewed.

  python bench/bench_quality.py cases --repo PATH [--url URL] [--max N]
      candidate cases from a clone's history, as JSONL, for a person to read and accept
  python bench/bench_quality.py run --config a.yaml [--config b.yaml ...] [--cases FILE] [--repos DIR]
      [--max-cost USD] [--judge-model MODEL] [--json FILE] [--fake]
      every case reviewed with every configuration through the real CLI; one table side by side
  python bench/bench_quality.py estimate --config a.yaml [...] [--cases FILE] [--repos DIR]
      what `run` would cost: `ocr-hook preview` on every case (no key, no requests)

See docs/quality.md, "Measuring review quality".
"""

from __future__ import annotations

import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

from quality.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
