"""Benchmark: 16 files x 4 model turns at 300 ms per response, wall time against the ideal.

Run: python bench/bench_concurrency.py [--runs N] [--latency S]

The agent API (`ocr_hook.agent.review_files`, the same call the CLI makes) reviews a staged change of
16 files in a real scratch repository against the fake Messages API, which answers every request
after `latency` seconds. Each file's conversation is 4 turns (three context tools, then task_done).
Ideal = turns x latency x ceil(files / concurrency): with concurrency >= 16 every file runs at once,
so the ideal is 4 x 0.3 s = 1.2 s. Target (issue 5): wall <= 1.25x ideal at concurrency 16.
The default concurrency (8) is measured too, for information. Interpreter start-up and the SDK import
are outside the timed region (both are covered by bench_overhead.py). The fake server runs in its
own process, as the real API would, so its threads do not compete with the agent for the GIL.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))

from fake_api import FakeMessagesAPI, Reply, task_done, tool_use  # noqa: E402
from gitrepo import commit_all, git, make_repo, write  # noqa: E402  (also isolates git config)

from ocr_hook.agent import ReviewJob, review_files  # noqa: E402
from ocr_hook.budget.ledger import Budget  # noqa: E402
from ocr_hook.changes import collect_changes, open_snapshot, select_files  # noqa: E402
from ocr_hook.changes.scope import Scope  # noqa: E402
from ocr_hook.outcome import ReviewResult  # noqa: E402
from ocr_hook.settings import load  # noqa: E402

FILES = 16
TURNS = 4
TARGET = 1.25


def build_repo(root: Path, files: int) -> Path:
    repo = make_repo(root / "repo")
    for n in range(files):
        write(repo, f"src/mod{n:02}.py", "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(20)))
    commit_all(repo, "base")
    for n in range(files):
        path = f"src/mod{n:02}.py"
        write(repo, path, (repo / path).read_text() + f"def new_{n}(items):\n    return sorted(items)[0]\n")
        git(repo, "add", "--", path)
    return repo


def script(fake: FakeMessagesAPI, files: int) -> None:
    for n in range(files):
        path = f"src/mod{n:02}.py"
        fake.script(f"Review the change to `{path}`", [
            Reply([tool_use("file_read", {"file_path": path, "start_line": 75, "end_line": 83})]),
            Reply([tool_use("code_search", {"search_text": f"new_{n}"})]),
            Reply([tool_use("file_find", {"query_name": "mod"})]),
            task_done(),
        ])


def review_once(repo: Path, environ: dict[str, str], concurrency: int) -> tuple[float, ReviewResult]:
    settings = load(repo, None, {}, environ={})._replace(cache=False, concurrency=concurrency)
    change_set = collect_changes(str(repo), Scope("staged"), (), environ)
    snapshot = open_snapshot(str(repo), change_set)
    try:
        files = [s.change for s in select_files(change_set, snapshot, settings) if s.action == "review"]
        budget = Budget(max_cost_usd=settings.max_cost, max_tokens=settings.max_tokens,
                        deadline=time.monotonic() + 120, pricing=settings.pricing)
        job = ReviewJob(change_set=change_set, snapshot=snapshot, files=files, settings=settings, budget=budget,
                        cache=None, environ=environ)
        start = time.perf_counter()
        result = review_files(job)
        return time.perf_counter() - start, result
    finally:
        snapshot.close()


class ServerProcess:
    """The scripted fake Messages API in a child process (this script with --serve)."""

    def __init__(self, latency: float) -> None:
        self._proc = subprocess.Popen([sys.executable, __file__, "--serve", "--latency", str(latency)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None and self._proc.stdin is not None
        self.url = self._proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            raise SystemExit("the fake server did not start")

    def requests(self) -> int:
        assert self._proc.stdout is not None and self._proc.stdin is not None
        self._proc.stdin.write("count\n")
        self._proc.stdin.flush()
        return int(self._proc.stdout.readline())

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=10)


def serve(latency: float) -> None:
    with FakeMessagesAPI(latency_s=latency) as fake:
        script(fake, FILES)
        print(fake.url, flush=True)
        for line in sys.stdin:
            if line.strip() == "count":
                print(len(fake.requests), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency)
        return

    scratch = Path(tempfile.mkdtemp(prefix="ocr-hook-bench-concurrency-"))
    server = ServerProcess(args.latency)
    try:
        environ = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "bench-key-not-secret",
                   "NO_PROXY": "127.0.0.1,localhost"}
        repo = build_repo(scratch, FILES)
        import anthropic  # noqa: F401  (outside the timed region, as the module docstring says)

        review_once(repo, environ, FILES)  # warm-up: registry, schemas, first connections
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
        verdict = True
        for concurrency in (FILES, 8):
            ideal = TURNS * args.latency * math.ceil(FILES / concurrency)
            walls = []
            for _ in range(args.runs):
                before = server.requests()
                wall, result = review_once(repo, environ, concurrency)
                requests = server.requests() - before
                reviewed = sum(1 for f in result.files if f.state == "reviewed")
                if reviewed != FILES or requests != FILES * TURNS:
                    raise SystemExit(f"unexpected run: {reviewed} files reviewed, {requests} requests "
                                     f"(want {FILES} and {FILES * TURNS}): {result.files}")
                walls.append(wall)
            wall = statistics.median(walls)
            line = (f"concurrency {concurrency:2}: {FILES} files x {TURNS} turns at {args.latency * 1000:.0f} ms: "
                    f"wall {wall:.2f} s (median of {args.runs}; all {', '.join(f'{w:.2f}' for w in walls)}), "
                    f"ideal {ideal:.2f} s, ratio {wall / ideal:.2f}x")
            if concurrency >= FILES:
                line += f" (target <= {TARGET}x)"
                verdict = wall / ideal <= TARGET
            print(line)
        print("verdict:", "PASS" if verdict else "FAIL")
    finally:
        server.close()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
