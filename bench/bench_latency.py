"""Benchmark: how long a commit waits, per effort profile, for 1-, 3- and 10-file commits.

Run: python bench/bench_latency.py [--first-token S] [--tokens-per-s N] [--scale F] [--sizes 1,3,10]

Each run is the real CLI in a subprocess (`python -m ocr_hook review --staged --effort P`: start-up,
git, selection, the SDK import, the agent, the reports) on a real scratch repository, against the fake
Messages and Models API in its own process. The fake answers every reply after a latency model:

    reply latency = first-token latency + output tokens / output speed

Defaults: 1.0 s to the first token and 60 output tokens per second. They are round numbers within
the range that public measurements report for Claude Sonnet-class models through Anthropic's API
(independent benchmark sites such as Artificial Analysis publish time to first token of about
0.5-2 s and output speeds of about 50-80 tokens/s for that class; Haiku-class models are faster).
Change them with --first-token and --tokens-per-s for the model you use.

What the model says is scripted, and sized like a short real turn: every file is small and needs one
main-loop turn (one low-severity comment and task_done). With thinking on, a turn also thinks:
THINKING_TOKENS per profile (assumed: adaptive thinking at effort medium thinks briefly on a small
change, at effort high longer). Output tokens are billed (and timed) as the fake counts them.

Every configuration runs twice: without latency (what the machine itself costs) and with it; the
target's pair runs `--repeat` times and the fastest of each side counts.
`--scale F` multiplies every modelled latency by F to keep the whole benchmark near a minute; the
"at full latency" column is the no-latency time plus the latency part divided by F (the latency
part is sleeps on the fake's side, which scale exactly). "Critical path" is the longest chain of
requests in which each was sent after the previous one was answered; "slowest reply" is the modelled
latency of the slowest single reply, at full latency. With 10 files and the default concurrency (8)
the last two files wait for a free slot, so their requests add to the critical path.

Target (issue 20): quick on a 3-file commit: one request on each file's critical path, and a wall
time of at most 1.3 x one reply's latency + the no-latency run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))

from fake_api import FakeMessagesAPI, Reply, first_user_text, text, thinking, tool_use  # noqa: E402
from gitrepo import commit_all, git, make_repo, write  # noqa: E402  (also isolates git config)

MODEL = "claude-sonnet-5-5"
PROFILES = ("quick", "standard", "deep")
THINKING_TOKENS = {"quick": 0, "standard": 200, "deep": 600}
TARGET = 1.3
FILTER_OPENING = "You check code review comments"


def build_repo(root: Path, files: int) -> Path:
    repo = make_repo(root / f"repo-{files}")
    for n in range(files):
        write(repo, f"src/mod{n:02}.py", "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(12)))
    commit_all(repo, "base")
    for n in range(files):
        path = f"src/mod{n:02}.py"
        write(repo, path, (repo / path).read_text() + f"def first_{n}(items):\n    return sorted(items)[0]\n")
        git(repo, "add", "--", path)
    return repo


def thought(tokens: int) -> list[dict[str, Any]]:
    # The fake counts 4 characters of JSON a token; it drops thinking blocks when thinking is off.
    return [thinking("Checking the change. " * (tokens * 4 // 21))] if tokens else []


def thinking_tokens(body: dict[str, Any]) -> int:
    """How long this turn thinks: by the effort the request asked for (none without thinking)."""
    if "thinking" not in body:
        return 0
    effort = (body.get("output_config") or {}).get("effort")
    return THINKING_TOKENS["deep" if effort == "high" else "standard"]


COMMENT = {"content": "first_() fails on an empty list.", "existing_code": "    return sorted(items)[0]",
           "severity": "low", "category": "bug"}


def script(fake: FakeMessagesAPI) -> None:
    """One main-loop turn per file (a low comment and task_done); a plan phase, where there is one,
    answers with its checklist at once; the review filter keeps everything."""
    fake.handle(lambda body: FILTER_OPENING in json.dumps(body.get("system", "")),
                lambda body: Reply([text('{"wrong": []}')]))
    fake.handle(lambda body: "Planning step for the review of `" in first_user_text(body),
                lambda body: Reply([*thought(thinking_tokens(body)), text("- check empty input")]))
    fake.handle(lambda body: "Review the change to `" in first_user_text(body),
                lambda body: Reply([*thought(thinking_tokens(body)), tool_use("code_comment", {"comments": [COMMENT]}),
                                    tool_use("task_done", {"state": "DONE"})]))


def serve(first_token: float, tokens_per_s: float, scale: float) -> None:
    """The fake in this process, driven over stdin: `latency on|off`, `stats`."""
    with FakeMessagesAPI() as fake:
        fake.models.register(MODEL)
        script(fake)
        state = {"on": False}

        def latency(usage: Any) -> float:
            return scale * (first_token + usage["output_tokens"] / tokens_per_s) if state["on"] else 0.0

        fake.latency_model = latency
        print(fake.url, flush=True)
        seen = 0
        for line in sys.stdin:
            command = line.strip()
            if command in ("latency on", "latency off"):
                state["on"] = command == "latency on"
                print("ok", flush=True)
            elif command == "stats":
                requests = fake.requests[seen:]
                seen += len(requests)
                print(json.dumps(stats(requests, latency if state["on"] else None)), flush=True)


def stats(requests: list[Any], latency: Any) -> dict[str, Any]:
    chain: dict[int, int] = {}
    ordered = sorted(requests, key=lambda r: r.received_at)
    for i, req in enumerate(ordered):
        before = [chain[j] for j, q in enumerate(ordered[:i]) if q.answered_at and q.answered_at <= req.received_at]
        chain[i] = 1 + max(before, default=0)
    replies = [latency(r.usage) for r in requests if r.usage is not None] if latency else []
    return {"requests": len(requests), "critical_path": max(chain.values(), default=0),
            "statuses": sorted({r.status for r in requests}), "reply_latency_max": max(replies, default=0.0),
            "reply_latency_min": min(replies, default=0.0)}


class Server:
    def __init__(self, args: argparse.Namespace) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--first-token", str(args.first_token),
             "--tokens-per-s", str(args.tokens_per_s), "--scale", str(args.scale)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.url = self._ask(None)

    def _ask(self, command: str | None) -> str:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        if command is not None:
            self._proc.stdin.write(command + "\n")
            self._proc.stdin.flush()
        return self._proc.stdout.readline().strip()

    def latency(self, on: bool) -> None:
        self._ask("latency on" if on else "latency off")

    def stats(self) -> dict[str, Any]:
        return json.loads(self._ask("stats"))

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=10)


def review(repo: Path, profile: str, environ: dict[str, str]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ocr_hook", "review", "--staged", "--effort", profile,
                           "--format", "json", "--no-cache", "-q"], cwd=repo, env=environ,
                          capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - started
    report = json.loads(proc.stdout)
    if report["status"] != "complete":
        raise SystemExit(f"{profile} review of {repo.name} did not complete: {report['coverage']} {proc.stderr}")
    return wall, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first-token", type=float, default=1.0, help="seconds to the first token (default 1.0)")
    parser.add_argument("--tokens-per-s", type=float, default=60.0, help="output tokens per second (default 60)")
    parser.add_argument("--scale", type=float, default=0.25, help="multiply every latency by this (default 0.25)")
    parser.add_argument("--sizes", default="1,3,10", help="files per commit (default 1,3,10)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the target's pair (quick, 3 files)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.first_token, args.tokens_per_s, args.scale)
        return

    scratch = Path(tempfile.mkdtemp(prefix="ocr-hook-bench-latency-"))
    server = Server(args)
    try:
        # The capability record is written by the first run and read by every later one (as on any day
        # after the first); the result cache is off so that every run reviews.
        environ = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "bench-key-not-secret",
                   "NO_PROXY": "127.0.0.1,localhost", "OCR_HOOK_CACHE_DIR": str(scratch / "cache")}
        for name in ("PRE_COMMIT", "CI", "OCR_HOOK_EFFORT"):
            environ.pop(name, None)
        sizes = [int(s) for s in args.sizes.split(",")]
        repos = {n: build_repo(scratch, n) for n in sizes}
        review(repos[sizes[0]], "quick", environ)  # warm-up: the Models API lookup, the OS file cache
        server.stats()
        print(f"latency model: {args.first_token:.2f} s to the first token + output tokens at "
              f"{args.tokens_per_s:.0f}/s, run at x{args.scale:g}; machine: {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.2f}")
        header = (f"{'files':>5}  {'profile':<8}  {'no latency':>10}  {'with latency':>12}  {'at full latency':>15}  "
                  f"{'critical path':>13}  {'requests':>8}  {'slowest reply':>13}")
        print(header)
        print("-" * len(header))
        verdict = None
        for files in sizes:
            for profile in PROFILES:
                # The target's pair is measured `--repeat` times (the fastest of each side counts): on a busy
                # machine one run's start-up alone varies by more than the margin being checked.
                rounds = args.repeat if (files, profile) == (3, "quick") else 1
                bares, walls = [], []
                for _ in range(rounds):
                    server.latency(False)
                    bares.append(review(repos[files], profile, environ)[0])
                    server.stats()
                    server.latency(True)
                    wall, report = review(repos[files], profile, environ)
                    walls.append(wall)
                    seen = server.stats()
                    if seen["statuses"] != [200]:
                        raise SystemExit(f"the fake answered {seen['statuses']} for {profile}/{files}")
                bare, wall = min(bares), min(walls)
                full = bare + (wall - bare) / args.scale
                slowest = seen["reply_latency_max"]
                print(f"{files:>5}  {profile:<8}  {bare:>9.2f}s  {wall:>11.2f}s  {full:>14.2f}s  "
                      f"{seen['critical_path']:>13}  {seen['requests']:>8}  {slowest / args.scale:>11.2f}s")
                if files == 3 and profile == "quick":
                    limit = TARGET * slowest + bare
                    ok = seen["critical_path"] == 1 and wall <= limit
                    verdict = (f"quick, 3 files (fastest of {rounds}): critical path {seen['critical_path']} "
                               f"request(s) (target 1), wall {wall:.2f}s vs {TARGET} x one reply {slowest:.2f}s "
                               f"+ no-latency {bare:.2f}s = {limit:.2f}s: {'PASS' if ok else 'FAIL'}")
                    assert set(report["coverage"]["effort"].values()) == {"quick"}
        if verdict:
            print(verdict)
    finally:
        server.close()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
