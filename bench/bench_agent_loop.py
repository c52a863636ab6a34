"""Agent loop figures against the fake Messages API (real SDK over HTTP, real scratch repos).

    /work/venv/bin/python bench/bench_agent_loop.py [--latency 0.3] [--files 16] [--turns 4]

Prints:
- concurrency: N files x T turns at the given per-response latency, wall time against the ideal
  (T x latency, every file in parallel). The SDK import is excluded; client set-up, tool registry
  loading and the fake server's own CPU (same process) are included.
- caching: billed input-token equivalents of a 10-turn review of one file, with the cache breakpoints
  the loop sends (cache writes at 1.25x, reads at 0.1x) versus every token at the plain input price.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from agent_support import main_opening, review_job, staged_repo
from fake_api import FakeMessagesAPI, Reply, task_done, tool_use

from ocr_hook.agent import review_files


def concurrency(workdir: Path, files: int, turns: int, latency: float) -> None:
    changed = {f"pkg/mod_{n:02d}.py": f"value = {n}\n" for n in range(files)}
    root = staged_repo(workdir / "concurrency", {"README.md": "bench\n"}, changed)
    with FakeMessagesAPI(latency_s=latency) as fake:
        for path in changed:
            looks = [Reply([tool_use("file_find", {"query_name": f"q{k}"})]) for k in range(turns - 1)]
            fake.script(main_opening(path), [*looks, task_done()])
        env = {**os.environ, "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "bench"}
        with review_job(root, env, concurrency=files) as job:
            started = time.monotonic()
            result = review_files(job)
            wall = time.monotonic() - started
        ideal = turns * latency
        states = sorted({f.state for f in result.files})
        print(f"concurrency: {files} files x {turns} turns at {latency * 1000:.0f} ms: {len(fake.requests)} requests, "
              f"wall {wall:.2f} s, ideal {ideal:.2f} s, ratio {wall / ideal:.2f} (states: {', '.join(states)})")


def caching(workdir: Path) -> None:
    before = "".join(f"x{n} = {n}\n" for n in range(300))
    after = before.replace("x10 = 10\n", "x10 = 11\n")
    root = staged_repo(workdir / "caching", {"a.py": before}, {"a.py": after})
    with FakeMessagesAPI() as fake:
        reads = [Reply([tool_use("file_read", {"file_path": "a.py", "start_line": 1 + 30 * k,
                                               "end_line": 30 + 30 * k})]) for k in range(9)]
        fake.script(main_opening("a.py"), [*reads, task_done()])
        env = {**os.environ, "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "bench"}
        with review_job(root, env, review_filter=False) as job:
            review_files(job)
        billed = fake.billed()
    plain = billed["input_tokens"] + billed["cache_creation_input_tokens"] + billed["cache_read_input_tokens"]
    cached = (billed["input_tokens"] + 1.25 * billed["cache_creation_input_tokens"]
              + 0.1 * billed["cache_read_input_tokens"])
    print(f"caching: {billed['requests']} requests; input-token equivalents {cached:.0f} with caching vs "
          f"{plain} without: {1 - cached / plain:.1%} less (reads {billed['cache_read_input_tokens']}, "
          f"writes {billed['cache_creation_input_tokens']}, uncached {billed['input_tokens']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--turns", type=int, default=4)
    args = parser.parse_args()
    import anthropic  # noqa: F401 - loaded up front so the timing below measures the loop, not the import

    with tempfile.TemporaryDirectory(prefix="ocr-bench-agent-") as tmp:
        concurrency(Path(tmp), args.files, args.turns, args.latency)
        caching(Path(tmp))


if __name__ == "__main__":
    main()
