"""Benchmark: `ocr-hook preview` on a 1,000-file, 100,000-changed-line staged diff, and CLI start-up.

Run: python bench/bench_preview.py [--runs N] [--keep]
Prints wall time and peak RSS of preview, and the start-up of `ocr-hook --help` and
`ocr-hook review --help` against a `python -c pass` baseline measured in the same run.
Targets (issue 2): preview < 3 s and < 400 MB on a 2-core machine; --help < 150 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FILES = 1_000
CHANGED_LINES = 100_000
PREVIEW_TARGET_S = 3.0
PREVIEW_TARGET_MB = 400
HELP_TARGET_MS = 150

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, check=True)


def build_repo(root: Path, env: dict[str, str]) -> Path:
    """1,000 committed files, each then rewritten: 50 lines removed and 50 added per file."""
    repo = root / "repo"
    repo.mkdir()
    run(["git", "init", "-q"], repo, env)
    per_file = CHANGED_LINES // FILES // 2
    for i in range(FILES):
        path = repo / f"pkg{i % 20:02}" / f"module_{i:04}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text("".join(f"value_{i}_{n} = {n}  # original line\n" for n in range(per_file + 10)))
    run(["git", "add", "-A"], repo, env)
    run(["git", "commit", "-q", "-m", "base"], repo, env)
    for i in range(FILES):
        path = repo / f"pkg{i % 20:02}" / f"module_{i:04}.py"
        # Replace every other line in place so hunks interleave removed and added lines.
        lines = [f"value_{i}_{n} = {n * 2}  # rewritten line\n" if n < per_file else
                 f"value_{i}_{n} = {n}  # original line\n" for n in range(per_file + 10)]
        path.write_text("".join(lines))
    run(["git", "add", "-A"], repo, env)
    return repo


# Runs one command and prints its wall time and the peak RSS of the largest process in its tree
# (RUSAGE_CHILDREN of a fresh parent covers preview and the git processes it waited for, and nothing
# the benchmark itself ran before, such as building the repository).
_MEASURE = """
import resource, subprocess, sys, time
started = time.perf_counter()
proc = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
elapsed = time.perf_counter() - started
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
sys.stderr.buffer.write(proc.stderr)
sys.stdout.buffer.write(f"{proc.returncode} {elapsed} {peak_kib}\\n".encode() + proc.stdout)
"""


def time_preview(repo: Path, env: dict[str, str], ocr_hook: list[str]) -> tuple[float, float, dict]:
    proc = subprocess.run([sys.executable, "-c", _MEASURE, *ocr_hook, "preview", "--format", "json"],
                          cwd=repo, env=env, capture_output=True)
    first, _, body = proc.stdout.partition(b"\n")
    code, elapsed, peak_kib = first.split()
    if int(code) != 0:
        sys.exit(f"preview failed ({int(code)}): {proc.stderr.decode(errors='replace')}")
    return float(elapsed), int(peak_kib) / 1024, json.loads(body)


def median_ms(cmd: list[str], cwd: Path, env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, check=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per start-up measurement (median)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch repository")
    args = parser.parse_args()

    env = {**os.environ, **GIT_ENV}
    for name in [n for n in env if n.startswith(("OCR_HOOK_", "PRE_COMMIT_", "ANTHROPIC_"))]:
        del env[name]
    ocr_hook = [sys.executable, "-m", "ocr_hook"]
    script = shutil.which("ocr-hook", path=str(Path(sys.executable).parent))
    entry = [script] if script else ocr_hook

    root = Path(tempfile.mkdtemp(prefix="ocr-bench-"))
    try:
        t0 = time.perf_counter()
        repo = build_repo(root, env)
        numstat = subprocess.run(["git", "diff", "--cached", "--numstat"], cwd=repo, env=env,
                                 capture_output=True, text=True, check=True).stdout.splitlines()
        changed = sum(int(a) + int(r) for a, r, _ in (row.split("\t") for row in numstat))
        print(f"scratch repo: {len(numstat)} staged files, {changed:,} changed lines "
              f"(built in {time.perf_counter() - t0:.1f} s) at {repo}")

        elapsed, peak_mb, doc = time_preview(repo, env, entry)
        reviewed = sum(1 for f in doc["files"] if f["action"] == "review")
        print(f"preview --format json: {elapsed:.2f} s wall, peak RSS {peak_mb:.0f} MB "
              f"({len(doc['files'])} files listed, {reviewed} to review)   "
              f"target < {PREVIEW_TARGET_S:.0f} s, < {PREVIEW_TARGET_MB} MB   "
              f"{'OK' if elapsed < PREVIEW_TARGET_S and peak_mb < PREVIEW_TARGET_MB else 'OVER TARGET'}")

        baseline = median_ms([sys.executable, "-c", "pass"], repo, env, args.runs)
        help_ms = median_ms([*entry, "--help"], repo, env, args.runs)
        review_help_ms = median_ms([*entry, "review", "--help"], repo, env, args.runs)
        print(f"python -c pass (baseline): {baseline:.0f} ms (median of {args.runs})")
        for label, value in (("ocr-hook --help", help_ms), ("ocr-hook review --help", review_help_ms)):
            verdict = "OK" if value < HELP_TARGET_MS else "OVER TARGET"
            print(f"{label}: {value:.0f} ms ({value - baseline:+.0f} ms over baseline)   "
                  f"target < {HELP_TARGET_MS} ms   {verdict}")
        print(f"(command: {' '.join(entry)})")
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
