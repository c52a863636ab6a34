"""Benchmark: billed input for a 10-turn review of one file, with prompt caching and without.

Run: python bench/bench_caching.py [--turns N]

The agent API reviews one staged file of a real scratch repository against the fake Messages API,
which simulates prompt caching from the cache breakpoints actually sent: 9 turns of context tools
(each reading another part of the file, so the conversation grows) and a closing task_done.
Billed input-token equivalents = input + 1.25 x cache writes + 0.1 x cache reads (the API's relative
prices). "Without caching" replays exactly the recorded requests, with every cache_control removed,
against a fresh fake server: the agent has no switch to turn caching off, and a replay keeps the two
sides identical apart from the breakpoints. Target (issue 5): caching cuts billed input by >= 60 %.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))

from fake_api import FakeMessagesAPI, Reply, task_done, tool_use  # noqa: E402
from gitrepo import commit_all, git, make_repo, write  # noqa: E402  (also isolates git config)

from ocr_hook.agent import ReviewJob, review_files  # noqa: E402
from ocr_hook.budget.ledger import Budget  # noqa: E402
from ocr_hook.changes import collect_changes, open_snapshot, select_files  # noqa: E402
from ocr_hook.changes.scope import Scope  # noqa: E402
from ocr_hook.settings import load  # noqa: E402

TARGET_CUT = 0.60
WRITE_FACTOR = 1.25
READ_FACTOR = 0.1
PATH = "src/service.py"


def build_repo(root: Path) -> Path:
    repo = make_repo(root / "repo")
    body = "".join(f"def handler_{i}(request, store):\n    value = store.get(request.key_{i})\n"
                   f"    return value * {i} if value else None\n\n\n" for i in range(120))
    write(repo, PATH, body)
    commit_all(repo, "base")
    write(repo, PATH, body + "def summary(values):\n    return sum(values) / len(values)\n")
    git(repo, "add", "--", PATH)
    return repo


def turns(count: int) -> list[Reply]:
    # Context calls that each bring new text into the conversation, then the closing call.
    calls: list[Reply] = []
    for n in range(count - 1):
        if n % 3 == 0:
            start = 1 + (n // 3) * 60
            calls.append(Reply([tool_use("file_read", {"file_path": PATH, "start_line": start,
                                                       "end_line": start + 59})]))
        elif n % 3 == 1:
            calls.append(Reply([tool_use("code_search", {"search_text": f"handler_{n}"})]))
        else:
            calls.append(Reply([tool_use("file_find", {"query_name": "service"})]))
    return [*calls, task_done()]


def equivalents(usages: list[dict[str, int]]) -> float:
    return sum(u.get("input_tokens", 0) + WRITE_FACTOR * u.get("cache_creation_input_tokens", 0)
               + READ_FACTOR * u.get("cache_read_input_tokens", 0) for u in usages)


def strip_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def replay(bodies: list[dict[str, Any]]) -> list[dict[str, int]]:
    """POST each body to a fresh fake server (empty prompt cache); the usage it bills for each."""
    usages = []
    with FakeMessagesAPI() as fresh:
        for body in bodies:
            request = urllib.request.Request(
                fresh.url + "/v1/messages", data=json.dumps(body).encode(), method="POST",
                headers={"content-type": "application/json", "x-api-key": "bench-key-not-secret",
                         "anthropic-version": "2023-06-01"})
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            with opener.open(request, timeout=30) as response:
                usages.append(json.load(response)["usage"])
    return usages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="ocr-hook-bench-caching-"))
    try:
        repo = build_repo(scratch)
        with FakeMessagesAPI() as fake:
            fake.script(f"Review the change to `{PATH}`", turns(args.turns))
            environ = {**os.environ, "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "bench-key-not-secret",
                       "NO_PROXY": "127.0.0.1,localhost"}
            # One file, no plan phase, no review filter: exactly the scripted turns are sent.
            settings = load(repo, None, {}, environ={})._replace(cache=False, review_filter=False,
                                                                 plan_threshold=10**9,
                                                                 max_rounds=max(30, args.turns + 2))
            change_set = collect_changes(str(repo), Scope("staged"), (), environ)
            snapshot = open_snapshot(str(repo), change_set)
            try:
                files = [s.change for s in select_files(change_set, snapshot, settings) if s.action == "review"]
                budget = Budget(max_cost_usd=settings.max_cost, max_tokens=settings.max_tokens,
                                deadline=time.monotonic() + 120, pricing=settings.pricing)
                result = review_files(ReviewJob(change_set=change_set, snapshot=snapshot, files=files,
                                                settings=settings, budget=budget, cache=None, environ=environ))
            finally:
                snapshot.close()
            recorded = [r for r in fake.requests if r.usage is not None]
        if len(recorded) != args.turns or result.files[0].state != "reviewed":
            raise SystemExit(f"expected {args.turns} requests and a reviewed file, got {len(recorded)}: {result.files}")

        cached_usages = [r.usage for r in recorded if r.usage is not None]
        stripped = [strip_cache_control(copy.deepcopy(r.body)) for r in recorded]
        plain_usages = replay(stripped)

        with_cache = equivalents(cached_usages)
        without = equivalents(plain_usages)
        cut = 1 - with_cache / without
        reads = sum(u.get("cache_read_input_tokens", 0) for u in cached_usages)
        writes = sum(u.get("cache_creation_input_tokens", 0) for u in cached_usages)
        plain = sum(u.get("input_tokens", 0) for u in cached_usages)
        print(f"{args.turns}-turn review of one file ({len(recorded)} requests, "
              f"{sum(u['input_tokens'] for u in plain_usages):,} prompt tokens in all)")
        print(f"with caching:    {with_cache:12,.0f} billed input-token equivalents "
              f"(input {plain:,} + 1.25 x writes {writes:,} + 0.1 x reads {reads:,})")
        print(f"without caching: {without:12,.0f} billed input-token equivalents (cache_control stripped, replayed)")
        print(f"cut: {cut:.1%} (target >= {TARGET_CUT:.0%})")
        print("per turn (input / write / read with caching):",
              ", ".join(f"{u['input_tokens']}/{u.get('cache_creation_input_tokens', 0)}/"
                        f"{u.get('cache_read_input_tokens', 0)}" for u in cached_usages))
        print("verdict:", "PASS" if cut >= TARGET_CUT else "FAIL")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
