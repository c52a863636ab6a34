"""Real repositories as a CI job sees them: a bare `origin` whose base branch moved on after the
feature branch forked, and a clone of it checked out on the feature branch (so origin/main exists).

Also the environment a CI-detection test runs with: the test process's own, minus every variable a
CI system sets (the suite itself may run inside one of them).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from gitrepo import commit_all, git, make_repo, write

# Prefixes and names of every variable ocr_hook.cienv reads, plus the CI markers near them.
_CI_PREFIXES = ("GITHUB_", "GITEA_", "FORGEJO_", "RUNNER_", "CI_", "GITLAB_", "BITBUCKET_", "SYSTEM_", "BUILD_",
                "CHANGE_", "BUILDKITE", "JENKINS_")
_CI_NAMES = ("CI", "GITLAB_CI", "TF_BUILD", "BUILDKITE", "JENKINS_URL")

FEATURE_FILES = ["feature/api.py", "feature/util.py"]  # what the feature branch adds, in commit order
MAIN_ONLY = "main_only.py"  # what the base branch gained after the fork


@dataclass
class Forked:
    origin: Path  # the bare repository
    work: Path  # where the history was made (has the same branches)
    fork_point: str  # the commit feature forked from
    feature_first: str  # the feature's first commit (adds FEATURE_FILES[0])
    feature_tip: str  # the feature's last commit (adds FEATURE_FILES[1])
    main_tip: str  # main after it moved on


def without_ci(env: dict[str, str]) -> dict[str, str]:
    """`env` without any CI system's variables."""
    return {k: v for k, v in env.items() if not (k.startswith(_CI_PREFIXES) or k in _CI_NAMES)}


def ci_free_env(**extra: str) -> dict[str, str]:
    """os.environ without any CI system's variables, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not (k.startswith(_CI_PREFIXES) or k in _CI_NAMES)}
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def forked_history(root: Path) -> Forked:
    """main: base commit → (fork) → main moves on; feature: two commits on the fork point. Pushed to a
    bare `origin`."""
    work = make_repo(root / "work")
    write(work, "app.py", "def run():\n    return 1\n")
    fork_point = commit_all(work, "base")
    git(work, "checkout", "-q", "-b", "feature")
    write(work, FEATURE_FILES[0], "def api():\n    return 'api'\n")
    feature_first = commit_all(work, "feature: api")
    write(work, FEATURE_FILES[1], "def util():\n    return 'util'\n")
    feature_tip = commit_all(work, "feature: util")
    git(work, "checkout", "-q", "main")
    write(work, MAIN_ONLY, "X = 1\n")
    write(work, "app.py", "def run():\n    return 2\n")
    main_tip = commit_all(work, "main moves on")
    origin = root / "origin.git"
    git(root, "init", "-q", "--bare", str(origin))
    git(work, "push", "-q", str(origin), "main", "feature")
    git(origin, "symbolic-ref", "HEAD", "refs/heads/main")
    return Forked(origin, work, fork_point, feature_first, feature_tip, main_tip)


def ci_clone(forked: Forked, dest: Path, *, depth: int | None = None, single_branch: bool = False) -> Path:
    """A CI checkout of the feature branch from `origin`: origin/* refs, no local main."""
    args = ["clone", "-q", "--branch", "feature", "--single-branch" if single_branch else "--no-single-branch"]
    if depth is not None:
        args += ["--depth", str(depth)]
    # file:// so that --depth is honoured (a plain path clones locally and ignores it).
    git(dest.parent, *args, forked.origin.as_uri(), str(dest))
    return dest


def preview_json(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ocr_hook", "preview", "--base", "auto", "--format", "json", *args],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=60)
