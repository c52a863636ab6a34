"""Benchmark: a review longer than the context window, with two-stage compaction and without.

Run: python bench/bench_compaction.py [--turns N] [--window TOKENS]

One staged file of a real scratch repository, reviewed through the agent API against the fake
Messages API (100 ms per answer): N turns, each reading another 80 lines of the file (about 2.5k
tokens), then task_done. The context window is set small (default 40k tokens) so that the
conversation outgrows it. Three ways, each on a fresh fake server:
  * notes + elision (the product): at 60 % of the window the model is asked for notes on its older
    turns in the background (the fake answers in 1 s); at 80 % the review waits for them;
  * elision only: the fake refuses every notes request (HTTP 400), so only elision at 80 % is left;
  * no compaction: the window set out of reach, to show how big the conversation gets without it.
Printed per way: requests, the largest request as a share of the window (over 100 %: the real API
would refuse it), billed input-token equivalents (input + 1.25 x cache writes + 0.1 x cache reads),
wall time, the file's state, and the cost the fake billed next to the cost the run reported (higher
when a request was cut off after it was sent: its worst case is counted). Targets: with compaction
no request passes 80 % of the window and the file is reviewed; the background notes cost less than
10 % extra wall time over elision only.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))

from agent_support import is_notes_request  # noqa: E402
from fake_api import FakeMessagesAPI, Fault, Reply, task_done, text, tool_use  # noqa: E402
from gitrepo import commit_all, git, make_repo, write  # noqa: E402  (also isolates git config)

from ocr_hook.agent import ReviewJob, review_files  # noqa: E402
from ocr_hook.budget.ledger import Budget  # noqa: E402
from ocr_hook.budget.tokens import estimate_tokens  # noqa: E402
from ocr_hook.changes import collect_changes, open_snapshot, select_files  # noqa: E402
from ocr_hook.changes.scope import Scope  # noqa: E402
from ocr_hook.settings import load  # noqa: E402

PATH = "src/ledger.py"
LINES_PER_READ = 80
WRITE_FACTOR = 1.25
READ_FACTOR = 0.1
NOTES = ("Notes on my earlier turns: I read src/ledger.py in 80-line steps; every entry_N function "
         "validates its amount, converts it with to_cents() and appends it to the ledger; none of them "
         "handles a negative amount differently. No comment sent yet. Still to check: the new "
         "function at the end of the file and its callers.")


def build_repo(root: Path, lines: int) -> Path:
    repo = make_repo(root / "repo")
    body = "".join(f"def entry_{i}(ledger, amount):\n    ledger.append(to_cents(amount) + {i})  # step {i}\n\n"
                   for i in range(lines // 3))
    write(repo, PATH, body)
    commit_all(repo, "base")
    write(repo, PATH, body + "def balance(ledger):\n    return sum(ledger) / len(ledger)\n")
    git(repo, "add", "--", PATH)
    return repo


def equivalents(usages: list[dict[str, int]]) -> float:
    return sum(u.get("input_tokens", 0) + WRITE_FACTOR * u.get("cache_creation_input_tokens", 0)
               + READ_FACTOR * u.get("cache_read_input_tokens", 0) for u in usages)


def run(repo: Path, turns: int, window: int, notes_mode: str) -> dict[str, Any]:
    with FakeMessagesAPI(latency_s=0.1) as fake:
        counter = itertools.count()

        def answer(body: dict[str, Any]) -> Reply:
            n = next(counter)
            if n >= turns:
                return task_done()
            start = 1 + LINES_PER_READ * n
            return Reply([tool_use("file_read", {"file_path": PATH, "start_line": start,
                                                 "end_line": start + LINES_PER_READ - 1})])

        if notes_mode == "refuse":
            fake.handle(is_notes_request, lambda body: Fault(status=400))
        else:
            fake.handle(is_notes_request, lambda body: Reply([text(NOTES)], delay_s=1.0))
        fake.default(answer)
        environ = {**os.environ, "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "bench-key-not-secret",
                   "NO_PROXY": "127.0.0.1,localhost"}
        settings = load(repo, None, {}, environ={})._replace(
            cache=False, review_filter=False, plan_threshold=10**9, max_rounds=turns + 5, max_file_lines=100_000,
            max_file_bytes=10**8, context_window=10**9 if notes_mode == "off" else window)
        change_set = collect_changes(str(repo), Scope("staged"), (), environ)
        snapshot = open_snapshot(str(repo), change_set)
        try:
            files = [s.change for s in select_files(change_set, snapshot, settings) if s.action == "review"]
            budget = Budget(max_cost_usd=50.0, max_tokens=10**9, deadline=time.monotonic() + 600,
                            pricing=settings.pricing)
            start = time.perf_counter()
            result = review_files(ReviewJob(change_set=change_set, snapshot=snapshot, files=files,
                                            settings=settings, budget=budget, cache=None, environ=environ))
            wall = time.perf_counter() - start
        finally:
            snapshot.close()
        answered = [r for r in fake.requests if r.usage is not None]
        main = [r for r in fake.requests if not is_notes_request(r.body)]
        billed_usd = fake.billed_cost(settings.pricing)
    peak = max(estimate_tokens(r.raw.decode("utf-8", "replace")) for r in main)
    return {"requests": len(answered), "notes": len(answered) - len(main), "peak": peak / window,
            "billed": equivalents([r.usage for r in answered if r.usage is not None]), "wall": wall,
            "state": result.files[0].state, "notes_text": "; ".join(result.notes),
            "billed_usd": billed_usd, "reported_usd": result.usage.cost_usd}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--window", type=int, default=40_000)
    args = parser.parse_args()

    import anthropic  # noqa: F401  (its one-time import, about 1 s, must not count against the first way)

    scratch = Path(tempfile.mkdtemp(prefix="ocr-hook-bench-compaction-"))
    try:
        repo = build_repo(scratch, LINES_PER_READ * (args.turns + 2))
        results = {label: run(repo, args.turns, args.window, mode)
                   for label, mode in (("notes + elision", "notes"), ("elision only", "refuse"),
                                       ("no compaction", "off"))}
        print(f"{args.turns} turns of {LINES_PER_READ}-line reads, context window {args.window:,} tokens, "
              f"fake latency 100 ms (notes: 1 s)")
        for label, r in results.items():
            print(f"{label:16} {r['requests']:3} requests ({r['notes']} for notes), largest request "
                  f"{r['peak']:6.1%} of the window, billed input {r['billed']:11,.0f} equivalents, "
                  f"{r['wall']:5.2f} s, {r['state']}; cost billed ${r['billed_usd']:.4f}, "
                  f"reported ${r['reported_usd']:.4f}")
        product, elision = results["notes + elision"], results["elision only"]
        print("notes:", product["notes_text"] or "(none)")
        slower = product["wall"] / elision["wall"] - 1
        print(f"background notes vs elision only: wall {slower:+.1%}, billed input "
              f"{product['billed'] / elision['billed'] - 1:+.1%}")
        ok = (product["state"] == elision["state"] == "reviewed" and product["peak"] < 0.8
              and elision["peak"] < 0.8 and slower < 0.10)
        print("verdict (both reviewed, no request past 80 % of the window, notes add < 10 % wall):",
              "PASS" if ok else "FAIL")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
