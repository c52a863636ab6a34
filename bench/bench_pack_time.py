"""Benchmark: the context pack on code built to be slow (issue 41 item 16): one Go package of 20 files of
~90 KB and a staged change adding a function that uses 200 names (tests/slow_code.py builds it); --shape c is
the same in C (each file names every used name, so each is a candidate for each); --shape callers is a changed
Python signature called 200 times from each of --files modules of --size bytes.

Run:  python bench/bench_pack_time.py [--shape go|c|callers] [--files N] [--size BYTES] [--identifiers N]
                                      [--repeat N] [--timeout S]

The real CLI (`python -m ocr_hook review`, a fresh process each time) reviews the change against the scripted
fake Messages API started in this process, with the pack and with `--no-context`, --repeat times each in
alternating order; printed: the median wall time of each, their ratio (target <= 1.25x), and one run with
--timeout S whose wall time must stay under S (no pack outlives the deadline).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
for _p in (REPO_ROOT / "tests", REPO_ROOT):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from fake_api import FakeMessagesAPI, task_done  # noqa: E402
from slow_code import c_tree, go_tree, py_callers_tree  # noqa: E402

TARGET_RATIO = 1.25


SHAPES = {"go": ("big/file00.go", lambda root, a: go_tree(root, a.files, a.size, a.identifiers)),
          "c": ("src/file00.c", lambda root, a: c_tree(root, a.files, a.size, a.identifiers)),
          "callers": ("lib.py", lambda root, a: py_callers_tree(root, a.files, a.size, a.identifiers))}


def review(repo: Path, fake: FakeMessagesAPI, reviewed: str, *flags: str) -> tuple[float, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY="bench-not-secret", NO_PROXY="127.0.0.1,localhost",
               no_proxy="127.0.0.1,localhost")
    fake.script(reviewed, [task_done()])
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ocr_hook", "review", "--no-cache", "--no-memory", "--quiet", *flags],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode not in (0, 1):
        print(proc.stdout[-600:], proc.stderr[-600:], file=sys.stderr)
    return time.monotonic() - started, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="go")
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--size", type=int, default=90_000)
    parser.add_argument("--identifiers", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=15.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, FakeMessagesAPI() as fake:
        reviewed, build = SHAPES[args.shape]
        repo = build(Path(scratch) / args.shape, args)
        with_pack: list[float] = []
        without: list[float] = []
        for _ in range(args.repeat):
            for flags, into in (((), with_pack), (("--no-context",), without)):
                wall, code = review(repo, fake, reviewed, *flags)
                if code not in (0, 1):
                    print(f"review {' '.join(flags) or '(with the pack)'} exited {code}", file=sys.stderr)
                    return 2
                into.append(wall)
        bounded, code = review(repo, fake, reviewed, "--timeout", str(args.timeout))
    a, b = statistics.median(with_pack), statistics.median(without)
    what = "call sites in each" if args.shape == "callers" else "names used"
    print(f"{args.shape}: {args.files} files of {args.size:,} bytes, {args.identifiers} {what}, "
          f"{args.repeat} runs each")
    print(f"  with the pack    median {a:.2f} s  (range {min(with_pack):.2f}-{max(with_pack):.2f})")
    print(f"  --no-context     median {b:.2f} s  (range {min(without):.2f}-{max(without):.2f})")
    met = "met" if a / b <= TARGET_RATIO else "NOT met"
    print(f"  ratio            {a / b:.2f}x  (target <= {TARGET_RATIO}x: {met})")
    within = "within" if bounded < args.timeout else "PAST"
    print(f"  --timeout {args.timeout:g}     {bounded:.2f} s, exit {code}  ({within} the deadline)")
    return 0 if a / b <= TARGET_RATIO and bounded < args.timeout else 1


if __name__ == "__main__":
    raise SystemExit(main())
