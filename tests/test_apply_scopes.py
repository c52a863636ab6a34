"""`ocr-hook apply` and the hints around it (issue 58 items 17-20, 22): a fix lands only on the text its review
read, `git commit -a` gets a one-step fix, every scope's hint names a step that works for that scope, the
commands a pre-commit run prints work without ocr-hook on the user's PATH, and pasting a hint as printed never
records its placeholder.

One module fixture runs every scenario once through the real CLI (forked), in real repositories, against one
fake Messages API; the tests assert on what it kept. The blocked commits go through git's own pre-commit hook.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_api import FakeMessagesAPI, Fault, Reply, task_done, tool_use
from gitrepo import commit_all, git, head, make_repo, repo_state, run_cli, write

BEFORE = "def add(a, b):\n    return a + b\n"
BUGGY = "def add(a, b):\n    return a - b\n"
DOUBLE = "\n\ndef double(x):\n    return 2 * x\n"
SUBTRACT = {"content": "add() subtracts.", "existing_code": "return a - b", "suggestion_code": "return a + b",
            "severity": "high", "category": "bug"}
# Item 17: the first text reviewed completely; the second (a function added above) fails after a fix on its
# line 6, where the first text has `return x + 4` in another function.
FIRST = "def one(x):\n    return x + 1\n\n\ndef four(x):\n    return x + 4\n"
SECOND = "def zero(x):\n    return x\n\n\n" + FIRST
PLUS_ONE = {"content": "one() should add two.", "existing_code": "return x + 1", "suggestion_code": "return x + 2",
            "severity": "high", "category": "bug"}
OWN_SCRIPTS = os.path.realpath(os.path.join(sys.prefix, "bin"))


def _user_path() -> str:
    """PATH as a pre-commit user's shell has it: no ocr-hook on it (this installation's scripts left out)."""
    return os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                           if p and os.path.realpath(p) != OWN_SCRIPTS)


def _step(out: str) -> str:
    found = re.search(r"^  - apply the suggested fixes.*?: (.+)$", out, re.M)
    assert found, out
    return found.group(1)


def _shell(repo: Path, command: str, env: dict[str, str], *,
           installed: bool = True) -> subprocess.CompletedProcess[str]:
    """`command` pasted into a shell in `repo`: one where `ocr-hook` is this installation's script, or (not
    `installed`) a pre-commit user's, with no ocr-hook on PATH."""
    path = os.pathsep.join([OWN_SCRIPTS, os.environ["PATH"]]) if installed else _user_path()
    return subprocess.run(command, shell=True, cwd=repo, env={**os.environ, **env, "PATH": path},
                          capture_output=True, text=True, timeout=120)


def _pasted(repo: Path, command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A printed `ocr-hook ARGS` step run as pasted where ocr-hook is installed: a plain command of this CLI is
    run through the forked CLI (cheaper than a shell starting Python); anything else through a shell."""
    words = shlex.split(command)
    if words[0] == "ocr-hook" and not any(w in (";", "&&", "|") or w.endswith(";") for w in words):
        return run_cli(repo, *words[1:], env=env)
    return _shell(repo, command, env)


def _incomplete_fix(base: Path, fake: FakeMessagesAPI, env: dict[str, str], out: dict[str, Any]) -> None:
    """Item 17 and item 22's incomplete review."""
    repo = make_repo(base / "wrong-lines")
    write(repo, "README.md", "calc\n")
    commit_all(repo, "base")
    write(repo, "app.py", FIRST)
    git(repo, "add", "app.py")
    out["17-first"] = run_cli(repo, "review", "-q", "--no-review-filter", env=env)  # complete, clean
    fake.script("def zero(x):", [Reply([tool_use("code_comment", {"comments": [PLUS_ONE]})]), Fault(400, times=9)])
    write(repo, "app.py", SECOND)
    write(repo, "util.py", "VALUE = 1\n")  # reviewed completely beside it: this review is memory's latest
    git(repo, "add", "app.py", "util.py")
    out["17-second"] = run_cli(repo, "review", "-q", "--no-review-filter", env=env)
    write(repo, "app.py", FIRST)
    git(repo, "add", "app.py")
    before = repo_state(repo)
    out["17-apply"] = run_cli(repo, "apply", env=env)
    out["17-untouched"] = repo_state(repo) == before
    write(repo, "app.py", SECOND)  # the text that review read: its fix fits there
    git(repo, "add", "app.py")
    out["22-incomplete"] = run_cli(repo, "apply", env=env)
    out["22-incomplete-text"] = (repo / "app.py").read_text()


def _commit_a(base: Path, fake: FakeMessagesAPI, env: dict[str, str], out: dict[str, Any]) -> None:
    """Item 18: `git commit -a`, with ocr-hook as git's own pre-commit hook."""
    repo = make_repo(base / "commit-a")
    write(repo, "app.py", BEFORE)
    commit_all(repo, "base")
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\nexec '{sys.executable}' -m ocr_hook review --no-review-filter\n")
    hook.chmod(0o755)
    write(repo, "app.py", BUGGY + DOUBLE)  # changed in the work tree only: `commit -a` stages it for this commit
    fake.script("    return a - b", [Reply([tool_use("code_comment", {"comments": [SUBTRACT]})]), task_done()])
    commit = ["git", "commit", "-q", "-a", "-m", "change add"]
    full = {**os.environ, **env}
    out["18-blocked"] = subprocess.run(commit, cwd=repo, env=full, capture_output=True, text=True, timeout=120)
    out["18-head"] = head(repo)
    out["18-apply"] = _pasted(repo, _step(out["18-blocked"].stderr), env)  # (git gives a hook's output to stderr)
    out["18-files"] = ((repo / "app.py").read_text(), git(repo, "show", ":app.py"))
    fake.script("    return a - b", [task_done()])
    out["18-again"] = subprocess.run(commit, cwd=repo, env=full, capture_output=True, text=True, timeout=120)
    out["18-committed"] = git(repo, "show", "HEAD:app.py") if head(repo) != out["18-head"] else None


def _scopes(base: Path, fake: FakeMessagesAPI, env: dict[str, str], out: dict[str, Any]) -> None:
    """Items 19, 20 and 22: one repository through a pre-commit-like run, --no-memory, --commit and a scan."""
    repo = make_repo(base / "scopes")
    write(repo, "app.py", BEFORE)
    write(repo, "other.py", BUGGY)  # the same bug in a file a scan of app.py never reads
    commit_all(repo, "base")
    write(repo, "app.py", BUGGY)
    git(repo, "add", "app.py")
    fake.script("    return a - b", [Reply([tool_use("code_comment", {"comments": [SUBTRACT]})]), task_done()])
    hook_env = {**env, "PRE_COMMIT": "1", "PATH": _user_path()}  # as pre-commit runs its own installation
    out["20-hook"] = run_cli(repo, "review", "--no-review-filter", env=hook_env)
    dismiss = next(line.strip() for line in out["20-hook"].stdout.splitlines() if " dismiss " in line)
    out["20-dismiss"] = _shell(repo, dismiss, env, installed=False)  # pasted as printed, the placeholder too
    out["20-dismissals"] = (repo / ".ocr-hook" / "dismissals.yaml").exists()
    out["22-no-memory"] = run_cli(repo, "review", "-q", "--no-review-filter", "--no-memory", env=env)
    before = repo_state(repo)
    out["22-apply-after-no-memory"] = run_cli(repo, "apply", env=env)
    out["22-untouched"] = repo_state(repo) == before
    run_cli(repo, "review", "-q", "--no-review-filter", env=env)  # remembered again (the result cache answers)
    out["20-apply"] = _shell(repo, _step(out["20-hook"].stdout), env, installed=False)
    out["20-fixed"] = (repo / "app.py").read_text(), git(repo, "show", ":app.py")
    # --commit: the commit holds the bug, the work tree is that commit's.
    write(repo, "app.py", BUGGY)
    git(repo, "add", "app.py")
    git(repo, "commit", "-q", "-m", "bug")
    out["19-commit"] = run_cli(repo, "review", "-q", "--no-review-filter", "--commit", "HEAD", env=env)
    out["19-commit-step"] = _pasted(repo, _step(out["19-commit"].stdout), env)
    out["19-commit-fixed"] = (repo / "app.py").read_text()
    git(repo, "checkout", "-q", "HEAD", "--", "app.py")
    out["19-no-memory"] = run_cli(repo, "review", "-q", "--no-review-filter", "--commit", "HEAD", "--no-memory",
                                  env=env)
    out["19-no-memory-step"] = _shell(repo, _step(out["19-no-memory"].stdout), env)
    out["19-no-memory-fixed"] = (repo / "app.py").read_text()
    git(repo, "checkout", "-q", "HEAD", "--", "app.py")
    # scan PATHS: the step takes this scan's fixes, in the files it scanned, with no request.
    out["19-scan"] = run_cli(repo, "scan", "-q", "--no-review-filter", "app.py", env=env)
    sent = len(fake.requests)
    out["19-scan-step"] = _pasted(repo, _step(out["19-scan"].stdout), env)
    out["19-scan-requests"] = len(fake.requests) - sent
    out["19-scan-files"] = (repo / "app.py").read_text(), (repo / "other.py").read_text()


@pytest.fixture(scope="module")
def trial(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("apply-scopes")
    out: dict[str, Any] = {}
    with FakeMessagesAPI() as fake:
        env = {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "test-key-not-secret", "ANTHROPIC_AUTH_TOKEN": "",
               "HOME": str(base / "home"), "XDG_CACHE_HOME": str(base / "cache"), "NO_COLOR": "1"}
        _incomplete_fix(base, fake, env, out)
        _commit_a(base, fake, env, out)
        _scopes(base, fake, env, out)
    return out


def test_a_fix_never_lands_on_a_text_its_review_did_not_read(trial: dict[str, Any]) -> None:
    """Item 17: the file put back to the text of an earlier, complete review is not the text the later review's
    fix was computed on; `apply` replaced `return x + 4` in another function. Refused, nothing changed."""
    assert trial["17-first"].returncode == 0, trial["17-first"].stdout + trial["17-first"].stderr
    assert "one() should add two." in trial["17-second"].stdout  # posted before the review failed
    proc = trial["17-apply"]
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    assert proc.stderr.startswith("ocr-hook: error: app.py changed since the last review, of staged changes")
    assert "nothing applied" in proc.stderr and proc.stderr.count("\n") == 1
    assert trial["17-untouched"]


def test_an_incomplete_reviews_fix_applies_to_the_text_it_read_and_says_so(trial: dict[str, Any]) -> None:
    """Item 22: after an incomplete review, its own fixes (not an older review's) apply to the text it read."""
    proc = trial["22-incomplete"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("note: app.py: its review did not finish")
    assert trial["22-incomplete-text"] == SECOND.replace("x + 1", "x + 2")


def test_git_commit_a_gets_a_fix_in_one_step(trial: dict[str, Any]) -> None:
    """Item 18: the hook reviewed git's temporary index; the printed step applies to the work tree and stages,
    and the same `git commit -a` then passes."""
    blocked = trial["18-blocked"]
    assert blocked.returncode == 1 and "add() subtracts." in blocked.stderr, blocked.stdout + blocked.stderr
    assert _step(blocked.stderr) == "ocr-hook apply"
    applied = trial["18-apply"]
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert applied.stdout.startswith("applied 1 fix to the work tree and the index (git apply, then git add)")
    assert "commit again with the same command (git commit -a" in applied.stdout
    assert trial["18-files"] == (BEFORE + DOUBLE, BEFORE + DOUBLE)
    again = trial["18-again"]
    assert again.returncode == 0, again.stdout + again.stderr
    assert trial["18-committed"] == BEFORE + DOUBLE


def test_the_fix_step_keeps_the_scope(trial: dict[str, Any]) -> None:
    """Item 19: after --commit the step applies that review's fixes; with memory off it reviews the same
    commit again; after `scan PATH` it patches only what was scanned, with no request."""
    assert trial["19-commit"].returncode == 1
    assert _step(trial["19-commit"].stdout) == "ocr-hook apply"
    assert trial["19-commit-step"].returncode == 0, trial["19-commit-step"].stderr
    assert trial["19-commit-fixed"] == BEFORE
    step = _step(trial["19-no-memory"].stdout)
    assert step == "ocr-hook review --commit HEAD --patch-output ocr-hook-fixes.patch; git apply ocr-hook-fixes.patch"
    assert trial["19-no-memory-step"].returncode == 0, trial["19-no-memory-step"].stderr
    assert trial["19-no-memory-fixed"] == BEFORE
    assert _step(trial["19-scan"].stdout) == "ocr-hook apply"
    assert trial["19-scan-step"].returncode == 0, trial["19-scan-step"].stderr
    assert trial["19-scan-requests"] == 0 and trial["19-scan-files"] == (BEFORE, BUGGY)


def test_the_commands_a_pre_commit_run_prints_work_without_ocr_hook_on_path(trial: dict[str, Any]) -> None:
    """Item 20 (and 22's placeholder): under pre-commit, with no ocr-hook on the user's PATH, each printed
    command names this installation's script; pasted as printed they run (the dismiss line then refuses its
    `...` placeholder as the reason: nothing recorded)."""
    script = os.path.join(sys.prefix, "bin", "ocr-hook")
    out = trial["20-hook"].stdout
    assert trial["20-hook"].returncode == 1
    assert _step(out) == f"{script} apply"
    assert f"      {script} dismiss " in out
    dismissed = trial["20-dismiss"]
    assert dismissed.returncode == 2 and "the hint's placeholder" in dismissed.stderr, dismissed.stderr
    assert not trial["20-dismissals"]
    applied = trial["20-apply"]
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert trial["20-fixed"] == (BEFORE, BEFORE)


def test_apply_after_a_review_with_memory_off_takes_no_older_reviews_fixes(trial: dict[str, Any]) -> None:
    """Item 22: `--no-memory` keeps nothing, so `apply` refuses instead of applying an older review's fixes."""
    assert trial["22-no-memory"].returncode == 1
    proc = trial["22-apply-after-no-memory"]
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    assert "ran with review memory off (--no-memory)" in proc.stderr and proc.stderr.count("\n") == 1
    assert trial["22-untouched"]
