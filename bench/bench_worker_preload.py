"""How long the warm worker's preload takes before it listens, everything against what it preloads now
(ocr_hook.warm.worker.NOT_SERVED left out), each in a fresh interpreter, interleaved.

    python bench/bench_worker_preload.py [ROUNDS]
"""

from __future__ import annotations

import subprocess
import sys

_CODE = """
import sys, time
t = time.perf_counter()
from ocr_hook.warm import worker
worker.preload(worker.NOT_SERVED if sys.argv[1] == "now" else ())
print(time.perf_counter() - t)
"""


def main(rounds: int) -> None:
    times: dict[str, list[float]] = {"everything": [], "now": []}
    for _ in range(rounds):
        for kind in times:
            out = subprocess.run([sys.executable, "-c", _CODE, kind], capture_output=True, text=True, check=True)
            times[kind].append(float(out.stdout.split()[-1]))
    ratios = sorted(n / e for n, e in zip(times["now"], times["everything"], strict=True))  # same round
    for kind, values in times.items():
        values = sorted(values)
        print(f"{kind:>10}: median {values[len(values) // 2]:.2f} s, range {values[0]:.2f}-{values[-1]:.2f} s")
    print(f"now/everything: median {ratios[len(ratios) // 2]:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
