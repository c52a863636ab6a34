"""Benchmark: a one-file commit-time review through Claude Code against the API provider (issue 42).

Run: python bench/bench_claude_code.py [--repeat N]

Both sides are the real CLI in a subprocess (`python -m ocr_hook review --no-cache` under PRE_COMMIT=1,
so quick effort: one turn) on the same scratch repository with one staged file, against the same instant fake
Messages API (no modelled latency: what the machine and the provider's own machinery cost). The API side
uses the anthropic SDK; the Claude Code side starts the bundled Claude Code CLI (the `claude-code` extra) with
a fresh HOME and only CLAUDE_CODE_OAUTH_TOKEN. The sides alternate; the fastest and the median of each count.

Target (issue 42): the Claude Code side at most 1.5 s slower.
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
sys.path.insert(0, str(REPO_ROOT / "tests"))

from fake_api import FakeMessagesAPI, Reply, tool_use  # noqa: E402
from gitrepo import commit_all, git, make_repo, write  # noqa: E402  (also isolates git config)

TARGET_S = 1.5
MARKER = "BENCH-CC-1f4"


def _review(repo: Path, env: dict[str, str]) -> float:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ocr_hook", "review", "--no-cache", "-q"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"review exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, FakeMessagesAPI() as fake:
        base = Path(scratch)
        repo = make_repo(base / "repo")
        write(repo, "app.py", "VALUE = 1\n")
        commit_all(repo, "base")
        write(repo, "app.py", f"# {MARKER}\nVALUE = 2\n")
        git(repo, "add", "app.py")
        fake.script(MARKER, [Reply([tool_use("task_done", {"state": "DONE"})])])
        common = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_"))}
        common.update({"ANTHROPIC_BASE_URL": fake.url, "PRE_COMMIT": "1", "NO_COLOR": "1", "OCR_HOOK_WARM": "off",
                       "XDG_CACHE_HOME": str(base / "cache")})
        sides = {"api": {**common, "ANTHROPIC_API_KEY": "bench-key"},
                 "claude-code": {**common, "OCR_HOOK_PROVIDER": "claude-code", "HOME": str(base / "home"),
                                 "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-bench"}}
        (base / "home").mkdir()
        times: dict[str, list[float]] = {name: [] for name in sides}
        for env in sides.values():
            _review(repo, env)  # warm the file system cache once per side
        for _ in range(args.repeat):
            for name, env in sides.items():
                seen = len(fake.requests)
                times[name].append(_review(repo, env))
                sent = fake.requests[seen:]
                # each side really went its own way: one request, streamed with an OAuth bearer by Claude Code
                by_claude_code = [r.headers.get("authorization", "").startswith("Bearer sk-ant-oat01") for r in sent]
                if by_claude_code != [name == "claude-code"]:
                    raise SystemExit(f"{name}: unexpected requests {by_claude_code}")
    for name, values in times.items():
        print(f"{name:12s} fastest {min(values):.2f} s  median {statistics.median(values):.2f} s  "
              f"({', '.join(f'{v:.2f}' for v in values)})")
    diff = min(times["claude-code"]) - min(times["api"])
    median_diff = statistics.median(times["claude-code"]) - statistics.median(times["api"])
    verdict = "within" if diff <= TARGET_S else "over"
    print(f"difference: fastest {diff:+.2f} s, median {median_diff:+.2f} s ({verdict} the {TARGET_S} s target)")


if __name__ == "__main__":
    main()
