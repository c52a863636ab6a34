"""Helpers shared by the issue-7 end-to-end matrices (faults, misbehaviour, integrity, secrets, hostile
content): a small scratch repository with a staged change, one CLI run that writes every output file,
and the checks every run must pass whatever went wrong (no traceback, parsable outputs).

Every run goes through the real CLI in a subprocess (`python -m ocr_hook review`), the real SDK and
the scripted fake Messages API over HTTP.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_api import Reply, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write
from hermetic import terminal_signals
from validators import schema_errors, validate_gitlab

CALC_PATH = "calc.py"
CALC_BEFORE = "def add(a, b):\n    return a + b\n\n\ndef scale(x):\n    return x * 2\n"
CALC_AFTER = "def add(a, b):\n    return a - b\n\n\ndef scale(x):\n    return x * 3\n"
CALC_QUOTE = "return a - b"
CALC_LINE = 2  # where CALC_QUOTE is in CALC_AFTER
EARLY_MESSAGE = "Subtraction in add() looks wrong: made before the fault."


def calc_repo(root: Path, extra_after: Mapping[str, str] | None = None) -> Path:
    """A repository with calc.py committed and a change to it staged (plus `extra_after`, staged)."""
    make_repo(root)
    write(root, CALC_PATH, CALC_BEFORE)
    commit_all(root, "base")
    write(root, CALC_PATH, CALC_AFTER)
    git(root, "add", CALC_PATH)
    for path, content in (extra_after or {}).items():
        write(root, path, content)
        git(root, "add", "--", path)
    return root


def comment(content: str = EARLY_MESSAGE, code: str = CALC_QUOTE, severity: str = "medium",
            category: str = "bug", suggestion: str | None = "    return a + b") -> dict[str, Any]:
    entry: dict[str, Any] = {"content": content, "existing_code": code, "severity": severity,
                             "category": category}
    if suggestion is not None:
        entry["suggestion_code"] = suggestion
    return entry


def comment_turn(*entries: dict[str, Any]) -> Reply:
    return Reply([tool_use("code_comment", {"comments": list(entries or [comment()])})])


@dataclass
class Run:
    """One finished CLI run: the process, its wall time, and every output file it wrote."""

    proc: subprocess.CompletedProcess[str]
    elapsed: float
    report: dict[str, Any]  # --json-output
    sarif: dict[str, Any]  # --sarif-output
    gitlab: list[dict[str, Any]]  # --gitlab-output
    out_dir: Path

    @property
    def code(self) -> int:
        return self.proc.returncode

    def coverage_state(self, path: str) -> tuple[str, str]:
        """(reviewed | cached | skipped | failed, reason) of one file in the JSON report."""
        cov = self.report["coverage"]
        if path in cov["reviewed"]:
            return ("cached" if path in cov["cached"] else "reviewed"), ""
        for state in ("skipped", "failed"):
            for entry in cov[state]:
                if entry["path"] == path:
                    return state, entry["reason"]
        raise AssertionError(f"{path} is not in the coverage: {cov}")

    def messages(self) -> dict[str, list[str]]:
        """Finding messages per output file (the text report is `proc.stdout`)."""
        sarif_results = [r for run in self.sarif["runs"] for r in run["results"]]
        return {
            "json": [f["message"] for f in self.report["findings"]],
            "sarif": [r["message"]["text"] for r in sarif_results],
            "gitlab": [e["description"] for e in self.gitlab],
        }


def run_review(repo: Path, env: Mapping[str, str], out_dir: Path, *args: str, timeout: float = 90) -> Run:
    """`ocr-hook review --no-cache --format text ARGS` with JSON, SARIF and GitLab files in `out_dir`.

    Asserts what every run must do whatever went wrong: no traceback, and every output file present
    and parsable (SARIF against the schema; the GitLab entries against theirs)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {name: out_dir / name for name in ("report.json", "report.sarif", "gitlab.json")}
    for path in paths.values():
        path.unlink(missing_ok=True)
    started = time.monotonic()
    proc = run_cli(repo, "review", "--no-cache", "--format", "text",
                   "--json-output", str(paths["report.json"]), "--sarif-output", str(paths["report.sarif"]),
                   "--gitlab-output", str(paths["gitlab.json"]), *args,
                   env={"NO_COLOR": "1", **env}, timeout=timeout)
    elapsed = time.monotonic() - started
    assert_clean_stderr(proc)
    assert proc.returncode in (0, 1, 3), (proc.returncode, proc.stderr)
    report = json.loads(paths["report.json"].read_text(encoding="utf-8"))
    sarif = json.loads(paths["report.sarif"].read_text(encoding="utf-8"))
    errors = schema_errors(sarif)
    assert not errors, errors
    gitlab = json.loads(paths["gitlab.json"].read_text(encoding="utf-8"))
    validate_gitlab(gitlab)
    assert report["exit_code"] == proc.returncode
    return Run(proc, elapsed, report, sarif, gitlab, out_dir)


def assert_clean_stderr(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stdout, proc.stdout


def assert_incomplete_everywhere(run: Run) -> None:
    """An incomplete review reads as incomplete in every output, never as a clean pass."""
    assert run.report["status"] == "incomplete"
    assert run.sarif["runs"][0]["invocations"][0]["executionSuccessful"] is False
    assert "REVIEW INCOMPLETE" in run.proc.stdout
    assert "PASSED" not in run.proc.stdout


# Paths the machine chooses that a message may quote: the interpreter's directory (a fix names the command to
# run), the checkout, and anything under the temporary directory (pytest's basetemp holds the run's number and the
# xdist worker's name). They do not count toward a line's length: the same message must pass from a newcomer's
# longer checkout path or the hundredth run as from here.
_MACHINE_DIRS = sorted({str(Path(sys.executable).parent), str(Path(__file__).resolve().parents[1])}, key=len,
                       reverse=True)
_MACHINE_PATHS = re.compile("|".join([*map(re.escape, _MACHINE_DIRS),
                                      re.escape(tempfile.gettempdir().rstrip("/")) + r"/[^\s'\"`]*"]))


def assert_one_line(reason: str) -> None:
    """One line of at most 300 characters of the product's own words (the machine's paths counted as one each)."""
    assert reason and "\n" not in reason and "\r" not in reason, reason
    assert len(_MACHINE_PATHS.sub("…", reason)) <= 300, reason


def popen_review(repo: Path, env: Mapping[str, str], *args: str) -> subprocess.Popen[str]:
    """The CLI started in the background (for signals); stdout and stderr are pipes. It gets the signal
    dispositions a terminal gives a foreground command even when the suite was started with SIGINT ignored
    (a background job, nohup in a script): a test that sends Ctrl-C must reach a review that can hear it."""
    with terminal_signals():
        return subprocess.Popen([sys.executable, "-m", "ocr_hook", "review", *args], cwd=repo,
                                env={**os.environ, "NO_COLOR": "1", **env}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors="replace")


def all_files(root: Path) -> dict[str, int]:
    """Every file under `root` (inside .git too) with its size: catches temporary files anywhere."""
    found: dict[str, int] = {}
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if rel.startswith(os.path.join(".git", "objects")) or rel == os.path.join(".git", "index"):
                continue  # git may repack or refresh these on its own; repo_state covers the index
            found[rel] = os.lstat(full).st_size
    return found


def porcelain(repo: Path) -> str:
    return git(repo, "--no-optional-locks", "status", "--porcelain=v1", "--ignored", "--untracked-files=all", "-z")


def isolate_sdk_env(mp: pytest.MonkeyPatch, base_url: str, cache_dir: Path) -> dict[str, str]:
    """conftest's sdk_env for a wider scope (a module-scoped fixture with its own MonkeyPatch): os.environ
    without any ANTHROPIC_* variable of the machine, pointed at the fake, a dummy key, a private cache."""
    for name in list(os.environ):
        if name.startswith("ANTHROPIC_"):
            mp.delenv(name)
    mp.setenv("ANTHROPIC_BASE_URL", base_url)
    mp.setenv("ANTHROPIC_API_KEY", "test-key-not-secret")
    mp.setenv("XDG_CACHE_HOME", str(cache_dir))
    for name in ("NO_PROXY", "no_proxy"):
        current = os.environ.get(name, "")
        mp.setenv(name, ",".join(x for x in (current, "127.0.0.1", "localhost") if x))
    return dict(os.environ)
