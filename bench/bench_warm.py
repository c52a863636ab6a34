"""Benchmark: a commit-time review served by the warm worker, against a cold run and the floor (issue 31).

Run: python bench/bench_warm.py [--runs N] [--python PATH]

Under pre-commit's environment (PRE_COMMIT=1, so the quick profile) against the fake Messages API on
127.0.0.1, which answers at once (its default reply ends each file's review in one request), with the result
cache and review memory off so that every run reviews and sends its requests. For a one-file and a 10-file
commit, the medians of N rounds, each running all three once (interleaved, so load hits them alike):
  * floor: `python -c "import click, yaml"` + `git diff --cached --quiet`, measured in the same run
  * cold:  `ocr-hook review` with OCR_HOOK_WARM=off (a fresh interpreter imports the SDK)
  * warm:  the same with the worker running (started once with `ocr-hook warm start`)
Target: warm at most 3x the floor, for both commits. Each run's output and request count are checked to
be the same cold and warm. The worker is stopped at the end.
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

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))

from fake_api import FakeMessagesAPI  # noqa: E402
from gitrepo import commit_all, git, make_repo, write  # noqa: E402  (also isolates git config)

TARGET = 3.0
FLOOR_IMPORTS = "import click, yaml"


def ocr_hook_command(python: str) -> list[str]:
    script = Path(python).with_name("ocr-hook")
    return [str(script)] if script.exists() else [python, "-m", "ocr_hook"]


def bench_env(fake: FakeMessagesAPI, scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OCR_HOOK_", "PRE_COMMIT"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as on a user's machine: modules load from bytecode
    runtime = scratch / "run"
    runtime.mkdir(mode=0o700)
    env.update({"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "bench-key-not-secret",
                "XDG_CACHE_HOME": str(scratch / "cache"), "XDG_RUNTIME_DIR": str(runtime),
                "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
                "PRE_COMMIT": "1", "OCR_HOOK_CACHE": "false", "OCR_HOOK_MEMORY": "false"})
    return env


def build_repo(root: Path, files: int) -> Path:
    repo = make_repo(root)
    for n in range(files):
        write(repo, f"pkg/mod{n}.py", "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(30)))
    commit_all(repo, "base")
    for n in range(files):
        path = f"pkg/mod{n}.py"
        write(repo, path, (repo / path).read_text() + f"def added_{n}(items):\n    return sum(items) / len(items)\n")
        git(repo, "add", "--", path)
    return repo


def run(cmd: list[str], cwd: Path, env: dict[str, str], expect: int = 0) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True)
    wall = time.perf_counter() - start
    if proc.returncode != expect:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr.decode(errors='replace')}")
    return wall, proc


def _timeless(report: bytes) -> object:
    """The JSON report without what differs between any two runs (its duration)."""
    data = json.loads(report)

    def strip(node: object) -> object:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "elapsed_s"}
        return [strip(v) for v in node] if isinstance(node, list) else node

    return strip(data)


def measure(python: str, fake: FakeMessagesAPI, env: dict[str, str], repo: Path, runs: int) -> dict[str, float]:
    review = [*ocr_hook_command(python), "review", "-q", "--format", "json"]
    cold_env = {**env, "OCR_HOOK_WARM": "off"}
    warm_env = {**env, "OCR_HOOK_WARM": "on"}
    for cmd in ([python, "-c", FLOOR_IMPORTS], review):  # file-system and bytecode caches
        subprocess.run(cmd, cwd=repo, env=cold_env, capture_output=True)
    sent = len(fake.requests)
    _, cold_proc = run(review, repo, cold_env)
    per_run = len(fake.requests) - sent
    _, warm_proc = run(review, repo, warm_env)  # served warm: the worker was started before
    if _timeless(warm_proc.stdout) != _timeless(cold_proc.stdout) or warm_proc.stderr != cold_proc.stderr:
        import difflib

        raise SystemExit("a warm run printed something else than a cold one:\n" + "\n".join(difflib.unified_diff(
            cold_proc.stdout.decode().splitlines(), warm_proc.stdout.decode().splitlines(), lineterm="")))
    # Interleaved, one of each per round, so that a load spike on a shared machine hits all three alike.
    times: dict[str, list[float]] = {"floor": [], "cold": [], "warm": []}
    sent = len(fake.requests)
    for _ in range(runs):
        times["floor"].append(run([python, "-c", FLOOR_IMPORTS], repo, env)[0]
                              + run(["git", "diff", "--cached", "--quiet"], repo, env, expect=1)[0])
        times["cold"].append(run(review, repo, cold_env)[0])
        times["warm"].append(run(review, repo, warm_env)[0])
    if len(fake.requests) - sent != 2 * per_run * runs:
        raise SystemExit("a warm run sent another number of requests than a cold one")
    floor, cold, warm = (statistics.median(times[k]) for k in ("floor", "cold", "warm"))
    return {"floor": floor, "cold": cold, "warm": warm, "requests": per_run}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--python", default=sys.executable, metavar="PATH",
                        help="interpreter whose ocr-hook install to measure (default: this one)")
    args = parser.parse_args()
    python = str(Path(args.python).absolute())
    scratch = Path(tempfile.mkdtemp(prefix="ocr-warm-"))
    ok = True
    try:
        with FakeMessagesAPI() as fake:
            env = bench_env(fake, scratch)
            control = ocr_hook_command(python)
            started = subprocess.run([*control, "warm", "start"], env=env, capture_output=True, text=True)
            if started.returncode != 0:
                raise SystemExit(f"warm start failed: {started.stderr}")
            try:
                results = {files: measure(python, fake, env, build_repo(scratch / f"repo{files}", files), args.runs)
                           for files in (1, 10)}
            finally:
                subprocess.run([*control, "warm", "stop"], env=env, capture_output=True)
        load = os.getloadavg()[0]
        print(f"machine: {os.cpu_count()} CPUs, load average {load:.2f}; interpreter {python}; medians of {args.runs}")
        for files, r in results.items():
            ratio = r["warm"] / r["floor"]
            ok = ok and ratio <= TARGET
            print(f"{files:2d}-file commit ({r['requests']:.0f} requests): floor {r['floor'] * 1000:6.1f} ms   "
                  f"cold {r['cold'] * 1000:7.1f} ms = {r['cold'] / r['floor']:5.2f}x   "
                  f"warm {r['warm'] * 1000:6.1f} ms = {ratio:4.2f}x floor  (target <= {TARGET}x)")
        print("verdict:", "PASS" if ok else "FAIL")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
