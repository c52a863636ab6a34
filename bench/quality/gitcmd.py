"""git as a subprocess for the quality bench: one place that fixes the options every call needs."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

# User configuration (colour, prefixes, external diff tools, hooks) must not change what we parse, and a
# benchmark must never block on a credential prompt.
_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
_DIFF = ("-c", "core.quotePath=false", "-c", "diff.noprefix=false", "-c", "color.ui=never")


class GitError(Exception):
    """A git command failed; the message is git's own last line."""


def git(repo: Path | str, *args: str, env: Mapping[str, str] | None = None, check: bool = True) -> str:
    proc = subprocess.run(["git", *_DIFF, *args], cwd=repo, capture_output=True,
                          env={**os.environ, **_ENV, **(env or {})})
    if check and proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines() or [f"exit {proc.returncode}"]
        raise GitError(f"git {' '.join(args[:3])}: {lines[-1]}")
    return proc.stdout.decode("utf-8", "surrogateescape")


def has_commit(repo: Path | str, sha: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", f"{sha}^{{commit}}"], cwd=repo, capture_output=True,
                          env={**os.environ, **_ENV}).returncode == 0


def reversed_diff(repo: Path | str, fix: str, paths: list[str], context: int = 0) -> str:
    """The fix undone, as a unified diff: the fix commit on the old side, its parent on the new side."""
    return git(repo, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/",
               "--dst-prefix=b/", f"-U{context}", fix, f"{fix}^", "--", *paths)
