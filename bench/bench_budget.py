"""Benchmark: the cost and token caps hold over many randomized runs of the real CLI, and a
`retry-after: 60` storm is cut off by `--timeout`.

Run: python bench/bench_budget.py [--runs N] [--seed S] [--skip-timeout]

Each run builds a scratch repository with a random number of staged files (some large enough for
a plan phase), scripts random conversations (context tools, comments, plan answers) whose reported
output usage is a random share of each request's max_tokens, picks a random cost cap, token cap and
concurrency, and runs `ocr-hook review --format json` against the fake Messages API. It checks:
  * the fake server's billed cost <= --max-cost and billed tokens <= --max-tokens, every run;
  * a run that left a file unreviewed reports "incomplete" and exits 3; a finished one, "complete" and 0;
  * the cost the report shows equals what the fake billed.
Then `--timeout 10` against a server answering every request with 429 and retry-after: 60 must end
within 12 s, incomplete (exit 3).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))

from fake_api import FakeMessagesAPI, Fault, Reply, first_user_text, text, tool_use  # noqa: E402
from gitrepo import commit_all, git, make_repo, write  # noqa: E402  (also isolates git config)

from ocr_hook.settings import load  # noqa: E402

TIMEOUT_LIMIT_S = 12.0
_OPENING = re.compile(r"(?:Review the change to|Planning step for the review of) `([^`]+)`")


def ocr_hook_command() -> list[str]:
    script = Path(sys.executable).with_name("ocr-hook")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ocr_hook"]


def fake_env(url: str, cache_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OCR_HOOK_", "PRE_COMMIT_"))}
    env.update({"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "bench-key-not-secret",
                "XDG_CACHE_HOME": str(cache_home), "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost"})
    return env


# --- one randomized run -------------------------------------------------------------------------------


def build_repo(root: Path, rng: random.Random) -> dict[str, int]:
    """A repo with a random staged change; returns path -> number of the added function's first line."""
    repo = make_repo(root)
    count = rng.randint(1, 10)
    base_lines = {}
    for n in range(count):
        path = f"src/m{n:02}.py"
        functions = rng.randint(5, 60)
        write(repo, path, "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(functions)))
        base_lines[path] = functions * 4
    commit_all(repo, "base")
    added: dict[str, int] = {}
    for path, lines in base_lines.items():
        # 2..80 added lines: files at or over the plan threshold (50) get a plan phase.
        extra = rng.randint(1, 40)
        new = "".join(f"def g{i}(items):\n    return sum(items) / len(items)\n" for i in range(extra))
        write(repo, path, (repo / path).read_text() + new)
        git(repo, "add", "--", path)
        added[path] = lines + 2
    return added


class RandomModel:
    """Answers every request of a run from a seeded generator: the same request gets the same answer
    (SDK retries stay deterministic), turns differ by file and by position in the conversation."""

    def __init__(self, seed: int, added: Mapping[str, int]) -> None:
        self.seed = seed
        self.added = dict(added)

    def __call__(self, body: dict[str, Any]) -> Reply:
        system = json.dumps(body.get("system"))
        max_tokens = int(body["max_tokens"])
        turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        opening = first_user_text(body)
        rng = random.Random(f"{self.seed}|{opening[:200]}|{turn}|{system[:100]}")
        out = {"output_tokens": max(1, int(max_tokens * rng.random() ** 3))}
        if "You check code review comments" in system:
            return Reply([text('{"wrong": []}')], usage=out)
        if "You help place code review comments" in system:
            return Reply([text("{}")], usage=out)
        match = _OPENING.search(opening)
        path = match.group(1) if match else "src/m00.py"
        planning = opening.startswith("Planning") or "Planning step" in opening[:200]
        roll = rng.random()
        if planning:
            if turn >= 2 or roll < 0.4:
                return Reply([text("- check the new functions for empty input")], usage=out)
            return Reply([tool_use("code_search", {"search_text": "def g"})], usage=out)
        if turn >= rng.randint(1, 8) or roll < 0.1:
            return Reply([tool_use("task_done", {"state": "DONE"})], usage=out)
        if roll < 0.35:
            return Reply([tool_use("code_comment", {"comments": [{
                "content": "Division by zero when items is empty.",
                "existing_code": "    return sum(items) / len(items)",
                "severity": "low", "category": "bug"}]})], usage=out)
        if roll < 0.6:
            start = 1 + rng.randint(0, max(0, self.added.get(path, 10) - 5))
            return Reply([tool_use("file_read", {"file_path": path, "start_line": start,
                                                 "end_line": start + rng.randint(5, 200)})], usage=out)
        if roll < 0.8:
            return Reply([tool_use("code_search", {"search_text": f"f{rng.randint(0, 9)}"})], usage=out)
        return Reply([tool_use("file_read_diff", {"path_array": [path]})], usage=out)


def billed_tokens(fake: FakeMessagesAPI) -> int:
    billed = fake.billed()
    return sum(billed[k] for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                                   "cache_read_input_tokens"))


def one_run(index: int, seed: int, scratch: Path, prices: Mapping[str, Any]) -> dict[str, Any]:
    rng = random.Random(seed)
    root = scratch / f"run{index:03}"
    added = build_repo(root, rng)
    max_cost = round(10 ** rng.uniform(-1.3, 0.2), 5)  # $0.05 .. $1.58: from one request to a whole run
    max_tokens = rng.choice([3_000_000, rng.randint(5_000, 400_000)])
    concurrency = rng.randint(1, 8)
    model = RandomModel(seed, added)
    with FakeMessagesAPI() as fake:
        fake.default(model)
        env = fake_env(fake.url, scratch / "cache-home")
        cmd = [*ocr_hook_command(), "review", "-q", "--format", "json", "--no-cache", "--fail-on", "high",
               "--max-cost", str(max_cost), "--max-tokens", str(max_tokens), "--concurrency", str(concurrency)]
        start = time.monotonic()
        proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True)
        wall = time.monotonic() - start
        billed_cost = fake.billed_cost(prices)
        tokens = billed_tokens(fake)
        requests = fake.billed()["requests"]
        # The server's own view: a file's loop finished when a task_done answer was delivered for it.
        finished = {_OPENING.search(r.first_user_text).group(1)  # type: ignore[union-attr]
                    for r in fake.requests
                    if r.usage is not None and r.first_user_text.startswith("Review the change to")
                    and _OPENING.search(r.first_user_text)
                    and any(b.get("name") == "task_done" for b in model(r.body).blocks)}
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        stderr = proc.stderr.decode(errors="replace")
        raise SystemExit(f"run {index}: no JSON (exit {proc.returncode}):\n{stderr}") from None
    return {"index": index, "seed": seed, "files": len(added), "max_cost": max_cost, "max_tokens": max_tokens,
            "concurrency": concurrency, "billed_cost": billed_cost, "billed_tokens": tokens, "requests": requests,
            "exit": proc.returncode, "status": report["status"], "reported_cost": report["usage"]["cost_usd"],
            "report": report, "unfinished": sorted(set(added) - finished), "wall": wall,
            "stderr": proc.stderr.decode(errors="replace")}


def incomplete_in_report(report: Mapping[str, Any]) -> bool:
    """True when the report's coverage lists a file that was not fully reviewed."""
    coverage = report["coverage"]
    return bool(coverage["failed"]) or any(entry.get("incomplete") for entry in coverage["skipped"])


# --- the retry-after storm ------------------------------------------------------------------------------


def timeout_run(scratch: Path) -> tuple[float, int, str, int]:
    root = scratch / "timeout"
    repo = make_repo(root)
    write(repo, "a.py", "def f(x):\n    return x\n")
    commit_all(repo, "base")
    write(repo, "a.py", "def f(x):\n    return x / 0\n")
    git(repo, "add", "--", "a.py")
    with FakeMessagesAPI() as fake:
        fake.fail_all(Fault(429, headers={"retry-after": "60"}))
        env = fake_env(fake.url, scratch / "cache-home")
        start = time.monotonic()
        proc = subprocess.run([*ocr_hook_command(), "review", "-q", "--format", "json", "--no-cache",
                               "--timeout", "10"], cwd=repo, env=env, capture_output=True, timeout=120)
        wall = time.monotonic() - start
        attempts = len(fake.requests)
    status = json.loads(proc.stdout)["status"] if proc.stdout.strip() else "(no JSON)"
    return wall, proc.returncode, status, attempts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--skip-timeout", action="store_true")
    args = parser.parse_args()

    prices = load(None, None, {}, environ={}).pricing
    master = random.Random(args.seed)
    scratch = Path(tempfile.mkdtemp(prefix="ocr-hook-bench-budget-"))
    failures: list[str] = []
    try:
        results = []
        budget_notes = 0
        for index in range(args.runs):
            result = one_run(index, master.randrange(2**32), scratch, prices)
            results.append(result)
            early = bool(result["unfinished"])
            ratio = result["billed_cost"] / result["max_cost"]
            unfinished = f" ({len(result['unfinished'])} of {result['files']} unfinished)" if early else ""
            print(f"run {index:3}: {result['files']:2} files, conc {result['concurrency']}, "
                  f"cap ${result['max_cost']:.4f} / {result['max_tokens']:>9,} tok -> "
                  f"billed ${result['billed_cost']:.4f} ({ratio:6.1%}), {result['billed_tokens']:>8,} tok, "
                  f"{result['requests']:3} req, exit {result['exit']}, {result['status']}{unfinished}, "
                  f"{result['wall']:.1f} s")
            if result["billed_cost"] > result["max_cost"] * (1 + 1e-9):
                failures.append(f"run {index}: billed ${result['billed_cost']:.6f} > cap ${result['max_cost']}")
            if result["billed_tokens"] > result["max_tokens"]:
                failures.append(f"run {index}: billed {result['billed_tokens']} tokens > cap {result['max_tokens']}")
            if early and (result["status"] != "incomplete" or result["exit"] != 3):
                failures.append(f"run {index}: files {result['unfinished']} never finished but status "
                                f"{result['status']}, exit {result['exit']}")
            if (result["status"] == "incomplete") != incomplete_in_report(result["report"]):
                failures.append(f"run {index}: status {result['status']} disagrees with the coverage it lists")
            if result["status"] == "complete" and result["exit"] != 0:
                failures.append(f"run {index}: complete but exit {result['exit']}: {result['stderr'][-400:]}")
            if not early and result["status"] == "incomplete":
                budget_notes += 1  # every loop finished, but e.g. the review filter did not fit the budget
            if not math.isclose(result["reported_cost"], result["billed_cost"], rel_tol=1e-4, abs_tol=1e-6):
                failures.append(f"run {index}: report says ${result['reported_cost']}, fake billed "
                                f"${result['billed_cost']:.6f}")
        ratios = [r["billed_cost"] / r["max_cost"] for r in results]
        token_ratios = [r["billed_tokens"] / r["max_tokens"] for r in results]
        early_runs = sum(1 for r in results if r["unfinished"])
        print(f"\n{len(results)} runs: max spend/cap {max(ratios):.1%} (mean {sum(ratios) / len(ratios):.1%}), "
              f"max tokens/cap {max(token_ratios):.1%}; {early_runs} stopped early (all said incomplete, exit 3 "
              f"unless listed below), {budget_notes} finished every loop but still reported incomplete, "
              f"{sum(1 for r in results if r['status'] == 'complete')} complete")

        if not args.skip_timeout:
            wall, code, status, attempts = timeout_run(scratch)
            print(f"--timeout 10 vs 429 retry-after 60: ended after {wall:.1f} s (limit {TIMEOUT_LIMIT_S:.0f} s), "
                  f"exit {code}, {status}, {attempts} request(s) received")
            if wall > TIMEOUT_LIMIT_S or code != 3 or status != "incomplete":
                failures.append(f"timeout run: {wall:.1f} s, exit {code}, {status}")
        for failure in failures:
            print("FAIL:", failure)
        print("verdict:", "PASS" if not failures else "FAIL")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
