"""Buildkite pull request builds.

Variables:
  BUILDKITE_PULL_REQUEST_BASE_BRANCH   the pull request's base branch → base origin/BRANCH
  BUILDKITE_PULL_REQUEST               the pull request number, or "false" when the build is not for
                                       one; Buildkite then leaves the base branch empty (or "false"
                                       in some agents), which is never taken for a branch name
"""

from __future__ import annotations

from collections.abc import Mapping

from ocr_hook.cienv.guess import Guess, branch_refs, value

VARIABLES = ("BUILDKITE_PULL_REQUEST_BASE_BRANCH",)
# Set (non-empty) in every job this CI system runs; SHALLOW_FIX: how a job here fetches the whole history,
# in this CI's own words (a shallow clone's fix).
RUNS_HERE = "BUILDKITE"
SYSTEM = "Buildkite"
SHALLOW_FIX = "no `--depth` in BUILDKITE_GIT_CLONE_FLAGS and BUILDKITE_GIT_FETCH_FLAGS"


def detect(environ: Mapping[str, str]) -> Guess | None:
    branch = value(environ, "BUILDKITE_PULL_REQUEST_BASE_BRANCH")
    if not branch or branch == "false" or value(environ, "BUILDKITE_PULL_REQUEST") == "false":
        return None
    return Guess("Buildkite (pull request)", branch_refs(branch), f"BUILDKITE_PULL_REQUEST_BASE_BRANCH={branch}")


def head_branch(environ: Mapping[str, str]) -> str | None:
    """The branch being built, a pull request's source branch (review memory's line of work)."""
    return value(environ, "BUILDKITE_BRANCH") or None


def request_number(environ: Mapping[str, str]) -> str | None:
    """The pull request's number; Buildkite sets "false" outside pull requests."""
    found = value(environ, "BUILDKITE_PULL_REQUEST")
    return found if found and found != "false" else None
