"""Benchmark: a five-round fix loop, with review memory and without (issue 19).

Run:  python bench/bench_memory.py [--seed N] [--offline] [--download-dir DIR]

First, at the quick and the standard profile: the first review of the change, then the re-review after
a one-line fix of one of its three findings, with each one's requests, input tokens and billed USD and
the ratios (targets, issue 28: billed at most 35 % of the first review, input tokens at most 55 %).
`--download-dir` keeps the downloaded releases for the next run.

The change: a real package's release diff (click 8.1.3 → 8.1.7 from PyPI, the anchoring corpus's first
package; with --offline or PyPI unreachable, a file of this repository's own history). Its most changed
file is committed at the old version in a scratch repository and the new version is staged. Then five
rounds of `ocr-hook review --format json` (the real CLI, the real SDK, the fake Messages API):

* the fake model knows three high problems on added lines; on every review it re-reports every problem
  it raised before that is still unfixed, and adds one new high comment at a random line of the file
  (seeded; never on the line just fixed, so on code that did not change since the last review: the
  "each fix brings new nitpicks" behaviour the issue describes). The first review thus has four
  blocking findings;
* after each round one of those four is fixed (its line edited) and staged; round 5 reviews the fix
  of the last one.

Printed per round and mode: the verdict (exit code), blocking findings, requests and input tokens
(input + cache writes + cache reads, all billed input). With memory the commit passes in round 5,
the round that fixes the last blocking finding; without, each round's new comment blocks again.
`--filter-mode file` keeps comments anywhere in the file (the random line may lie outside the diff).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))
sys.path.insert(0, str(REPO_ROOT / "bench"))
sys.path.insert(0, str(REPO_ROOT))

from agent_support import is_filter  # noqa: E402
from fake_api import FakeMessagesAPI, Reply, task_done, text, tool_use  # noqa: E402

ROUNDS = 5
BLOCKING = ROUNDS - 1  # one fixed per round after the first; round 5 reviews the last fix
MAX_FILE_LINES = 3000
MIN_FILE_LINES = 500


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def package_change(work: Path, offline: bool, downloads: Path | None = None) -> tuple[str, str, str, str]:
    """(label, path, old text, new text) of the most changed file of the release diff (of 500 lines or more:
    click 8.1.7's decorators.py, 561 lines)."""
    if not offline:
        try:
            from bench_anchoring import package_sources

            sources = package_sources("pypi", "click", "8.1.3", "8.1.7", work, downloads or work / "downloads")
            sources = [s for s in sources if s.path.endswith(".py")
                       and MIN_FILE_LINES <= len(s.new_lines) <= MAX_FILE_LINES]
            if sources:
                best = max(sources, key=lambda s: sum(h.new_len for h in s.hunks))
                old = (work / "pypi-click" / "old" / best.path).read_text(encoding="utf-8")
                return best.label, best.path, old, best.new_text
        except OSError as exc:
            print(f"PyPI unreachable ({exc}); using this repository's history", file=sys.stderr)
    path = "ocr_hook/agent/loop.py"
    old = subprocess.run(["git", "show", f"HEAD~30:{path}"], cwd=REPO_ROOT, capture_output=True, text=True)
    new = (REPO_ROOT / path).read_text(encoding="utf-8")
    return "ocr-hook history HEAD~30..worktree", path, old.stdout, new


def _unique_lines(text_: str) -> list[int]:
    lines = text_.split("\n")
    counts: dict[str, int] = {}
    for line in lines:
        counts[line.strip()] = counts.get(line.strip(), 0) + 1
    return [i for i, line in enumerate(lines, 1) if len(line.strip()) >= 20 and counts[line.strip()] == 1
            and not line.strip().startswith(("#", '"', "'"))]


def _added_lines(repo: Path, path: str) -> list[int]:
    """New-side numbers of the staged diff's added lines."""
    from ocr_hook.changes.collect import diff_files
    from ocr_hook.changes.git import head_commit

    (change,) = diff_files(str(repo), head_commit(str(repo)) or "", None, [path])
    return [ln.new_no for h in change.hunks for ln in h.lines if ln.kind == "+" and ln.new_no is not None]


class Model:
    """The fake model's answer to a file's first main-loop request: every problem it reported before
    and that is still unfixed, and one new comment at a random line that did not change."""

    def __init__(self, path: str, rng: random.Random) -> None:
        self.path = path
        self.rng = rng
        self.text = ""
        self.reported: list[str] = []  # the quoted line of every problem raised so far, in order
        self.fixed: set[str] = set()
        self.last_fixed_line: str | None = None

    def comments(self) -> list[dict[str, Any]]:
        lines = self.text.split("\n")
        candidates = [n for n in _unique_lines(self.text)
                      if lines[n - 1] != self.last_fixed_line and lines[n - 1] not in self.reported]
        self.reported.append(lines[self.rng.choice(candidates) - 1])
        return [{"content": f"Problem #{i + 1} on this line.", "existing_code": code.strip(),
                 "severity": "high", "category": "bug"}
                for i, code in enumerate(self.reported) if code not in self.fixed]

    def respond(self, body: dict[str, Any]) -> Reply:
        turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        opening = body["messages"][0]["content"]
        first = opening[0]["text"] if isinstance(opening, list) else str(opening)
        if turn == 0 and first.startswith(f"Review the change to `{self.path}`"):
            return Reply([tool_use("code_comment", {"comments": self.comments()})])
        return task_done()


def run_mode(path: str, old: str, new: str, memory: bool, seed: int, work: Path) -> list[dict[str, Any]]:
    repo = work / f"repo-{'memory' if memory else 'nomemory'}"
    cache = work / f"cache-{'memory' if memory else 'nomemory'}"
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(old, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "old")
    target.write_text(new, encoding="utf-8")
    _git(repo, "add", "-A")
    rng = random.Random(seed)
    model = Model(path, rng)
    added = sorted(set(_added_lines(repo, path)) & set(_unique_lines(new)))
    lines = new.split("\n")
    # The first review's blocking findings: problems on added lines, and that review's random comment.
    step = max(1, len(added) // (BLOCKING - 1))
    model.reported = [lines[added[i * step] - 1] for i in range(BLOCKING - 1)]
    rows = []
    with FakeMessagesAPI() as fake:
        fake.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
        fake.default(model.respond)
        env = {**os.environ, "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "bench-not-secret",
               "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        env.pop("ANTHROPIC_AUTH_TOKEN", None)
        for round_no in range(1, ROUNDS + 1):
            if round_no > 1:  # fix blocking problem #round_no-1: edit its line, stage it
                # the first review's blocking findings, in the order it reported them
                quoted = model.reported[round_no - 2]
                current = target.read_text(encoding="utf-8").split("\n")
                at = current.index(quoted)
                current[at] = current[at] + "  # fixed"
                model.fixed.add(quoted)
                model.last_fixed_line = current[at]
                target.write_text("\n".join(current), encoding="utf-8")
                _git(repo, "add", "-A")
            model.text = target.read_text(encoding="utf-8")
            args = [sys.executable, "-m", "ocr_hook", "review", "--format", "json", "--filter-mode", "file",
                    "--cache-dir", str(cache), "--max-cost", "50", *([] if memory else ["--no-memory"])]
            proc = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
            if proc.returncode not in (0, 1):
                raise SystemExit(f"round {round_no}: exit {proc.returncode}: {proc.stderr.strip()[-400:]}")
            doc = json.loads(proc.stdout)
            u = doc["usage"]
            rows.append({
                "round": round_no, "exit": proc.returncode,
                "blocking": sum(1 for f in doc["findings"] if f["severity"] == "high" and f["status"] != "late"),
                "late": sum(1 for f in doc["findings"] if f["status"] == "late"),
                "resolved": len(doc.get("resolved", [])),
                "requests": u["requests"],
                "input": u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"],
            })
    return rows


class FixModel:
    """For the cost table: the first review reports three high problems on added lines; a re-review
    re-reports those still unfixed. Every other turn (plan, later rounds) ends with task_done."""

    def __init__(self, path: str, quoted: list[str]) -> None:
        self.path, self.quoted, self.fixed = path, quoted, set()

    def respond(self, body: dict[str, Any]) -> Reply:
        turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        opening = body["messages"][0]["content"]
        first = opening[0]["text"] if isinstance(opening, list) else str(opening)
        if turn == 0 and first.startswith(f"Review the change to `{self.path}`"):
            return Reply([tool_use("code_comment", {"comments": [
                {"content": f"Problem #{i + 1} on this line.", "existing_code": code.strip(), "severity": "high",
                 "category": "bug"} for i, code in enumerate(self.quoted) if code not in self.fixed]})])
        return task_done()


def rereview_cost(path: str, old: str, new: str, profile: str, work: Path) -> dict[str, Any]:
    """The first review of the change at `profile`, then the re-review after a one-line fix: billed USD and
    input tokens (input + cache writes + cache reads) of each."""
    repo = work / f"repo-{profile}"
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(old, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "old")
    target.write_text(new, encoding="utf-8")
    _git(repo, "add", "-A")
    lines = new.split("\n")
    added = sorted(set(_added_lines(repo, path)) & set(_unique_lines(new)))
    step = max(1, len(added) // 3)
    model = FixModel(path, [lines[added[i * step] - 1] for i in range(3)])
    runs = []
    with FakeMessagesAPI() as fake:
        fake.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
        fake.default(model.respond)
        env = {**os.environ, "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "bench-not-secret",
               "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        env.pop("ANTHROPIC_AUTH_TOKEN", None)
        env.pop("PRE_COMMIT", None)
        for review in ("first", "re-review"):
            if review == "re-review":  # the one-line fix of the first problem, staged
                current = target.read_text(encoding="utf-8").split("\n")
                at = current.index(model.quoted[0])
                current[at] += "  # fixed"
                model.fixed.add(model.quoted[0])
                target.write_text("\n".join(current), encoding="utf-8")
                _git(repo, "add", "-A")
            args = [sys.executable, "-m", "ocr_hook", "review", "--format", "json", "--effort", profile,
                    "--cache-dir", str(work / f"cache-{profile}"), "--max-cost", "50"]
            proc = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
            if proc.returncode not in (0, 1):
                raise SystemExit(f"{profile} {review}: exit {proc.returncode}: {proc.stderr.strip()[-400:]}")
            u = json.loads(proc.stdout)["usage"]
            runs.append({"requests": u["requests"], "cost": u["cost_usd"],
                         "input": u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"],
                         "resolved": len(json.loads(proc.stdout).get("resolved", []))})
    return {"profile": profile, "first": runs[0], "again": runs[1]}


def print_costs(rows: list[dict[str, Any]]) -> bool:
    print("\nre-review after a one-line fix, against the first review at the same profile "
          "(targets: billed <= 35 %, input tokens <= 55 %):")
    print("profile   review     requests  input tokens   billed USD  resolved")
    ok = True
    for row in rows:
        for name, r in (("first", row["first"]), ("re-review", row["again"])):
            print(f"{row['profile']:<9} {name:<10} {r['requests']:>8}  {r['input']:>12,}  {r['cost']:>11.4f}  "
                  f"{r['resolved']:>8}")
        billed = row["again"]["cost"] / row["first"]["cost"]
        sent = row["again"]["input"] / row["first"]["input"]
        met = billed <= 0.35 and sent <= 0.55 and row["again"]["resolved"] == 1
        ok = ok and met
        print(f"{row['profile']:<9} ratio: billed {billed:.0%}, input tokens {sent:.0%}: {'OK' if met else 'NOT MET'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--offline", action="store_true", help="use this repository's history, not PyPI")
    parser.add_argument("--download-dir", type=Path, default=None,
                        help="keep the downloaded releases here and reuse them on the next run")
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ocr-hook-bench-memory-"))
    try:
        label, path, old, new = package_change(work, opts.offline, opts.download_dir)
        print(f"change: {label}: {path} ({len(new.splitlines())} lines); seed {opts.seed}")
        costs_ok = print_costs([rereview_cost(path, old, new, profile, work) for profile in ("quick", "standard")])
        print(f"{BLOCKING} blocking findings, one fixed per round; one new high comment per review at a random "
              "unchanged line")
        passed = {}
        for memory in (True, False):
            rows = run_mode(path, old, new, memory, opts.seed, work)
            name = "with memory" if memory else "without memory"
            print(f"\n{name}:")
            print("round  verdict  blocking  late  resolved  requests  input tokens")
            for r in rows:
                verdict = "PASS" if r["exit"] == 0 else "FAIL"
                print(f"{r['round']:>5}  {verdict:>7}  {r['blocking']:>8}  {r['late']:>4}  {r['resolved']:>8}  "
                      f"{r['requests']:>8}  {r['input']:>12,}")
            first = next((r["round"] for r in rows if r["exit"] == 0), None)
            passed[name] = first
            print(f"first passing round: {first if first is not None else 'none within ' + str(ROUNDS)}")
        ok = passed["with memory"] == ROUNDS
        print(f"\nwith memory the commit passes in round {passed['with memory']} (the round fixing the last "
              f"blocking finding: {ROUNDS}): {'OK' if ok else 'NOT MET'}")
        return 0 if ok and costs_ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
