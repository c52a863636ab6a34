"""A case as a scratch repository: the project at the fix commit, with the fix undone in the index.

HEAD is the fix commit with everything else the fix touched (its tests, changelog, docs) put back as
it was before the fix, in one extra commit: the reviewer must not find the answer in a new test or a
changelog line. The index then holds the fix's parent for the case's source files, so
`ocr-hook review --staged` reviews exactly the change that re-introduces the bug, and nothing else.
The scratch clone borrows the local clone's objects (`git clone --shared`): nothing is copied and
the local clone is never changed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .cases import Case
from .gitcmd import GitError, git, has_commit

CLONE_TIMEOUT_S = 900


class CaseUnavailable(Exception):
    """The case cannot be built here (no clone, no network, commit missing); the run reports and goes on."""


def default_repos_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ocr-hook-bench" / "repos"


def _is_git_dir(path: Path) -> bool:
    return path.is_dir() and subprocess.run(["git", "rev-parse", "--git-dir"], cwd=path,
                                            capture_output=True).returncode == 0


def find_clone(repos: Path, case: Case) -> Path | None:
    """A local clone of the case's project under `repos`, in any of the layouts docs/quality.md names:
    OWNER+NAME/repo (what the mirror tool writes), OWNER+NAME, OWNER+NAME.git, NAME, NAME.git."""
    name = case.slug.split("+", 1)[1]
    for candidate in (repos / case.slug / "repo", repos / case.slug, repos / f"{case.slug}.git",
                      repos / name, repos / f"{name}.git"):
        if _is_git_dir(candidate):
            return candidate
    return None


def ensure_clone(repos: Path, case: Case, allow_clone: bool) -> Path:
    found = find_clone(repos, case)
    if found is not None:
        return found
    if not allow_clone:
        raise CaseUnavailable(f"no clone of {case.repo} under {repos} (and --no-clone)")
    target = repos / case.slug / "repo"
    target.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["git", "clone", "--quiet", "--bare", case.repo, str(target)], capture_output=True,
                          text=True, errors="replace", timeout=CLONE_TIMEOUT_S,
                          env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["git clone failed"])[-1]
        raise CaseUnavailable(f"no clone of {case.repo} under {repos}, and cloning failed: {last}")
    return target


def materialise(case: Case, clone: Path, scratch: Path) -> Path:
    """Build the case in `scratch` (must not exist); returns the work tree."""
    if not has_commit(clone, case.fix_commit):
        raise CaseUnavailable(f"commit {case.fix_commit[:12]} is not in {clone}")
    if not has_commit(clone, f"{case.fix_commit}^"):
        raise CaseUnavailable(f"commit {case.fix_commit[:12]} has no parent in {clone} (shallow clone?)")
    try:
        git(scratch.parent, "clone", "--quiet", "--shared", "--no-checkout", str(clone.resolve()), scratch.name)
        git(scratch, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", case.fix_commit)
        parent = f"{case.fix_commit}^"
        touched = git(scratch, "diff", "--no-renames", "--name-only", "-z", parent, case.fix_commit).split("\0")
        others = [p for p in touched if p and p not in case.files]
        if others:
            _undo(scratch, parent, others)
            git(scratch, "-c", "user.name=ocr-hook bench", "-c", "user.email=bench@invalid", "-c",
                "commit.gpgsign=false", "commit", "--quiet", "--no-verify", "-m",
                "bench: the fix's tests and notes as they were before the fix")
        _undo(scratch, parent, case.files)
    except GitError as exc:
        raise CaseUnavailable(f"could not build the scratch repository: {exc}") from None
    return scratch


def _undo(scratch: Path, parent: str, paths: list[str]) -> None:
    """Stage `paths` as they are in `parent` (removed when the fix added them)."""
    for path in paths:
        if git(scratch, "cat-file", "-t", f"{parent}:{path}", check=False).strip() == "blob":
            git(scratch, "checkout", parent, "--", path)
        else:
            git(scratch, "rm", "--quiet", "--force", "--", path)
