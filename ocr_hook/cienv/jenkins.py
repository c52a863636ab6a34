"""Jenkins multibranch pipelines (change requests: pull and merge requests found by a branch source).

Variables:
  CHANGE_TARGET   the branch the change request targets → base origin/BRANCH
Set only for change-request builds (together with CHANGE_ID), not for branch builds.
"""

from __future__ import annotations

from collections.abc import Mapping

from ocr_hook.cienv.guess import Guess, branch_refs, value

VARIABLES = ("CHANGE_TARGET",)
# Set (non-empty) in every job this CI system runs; SHALLOW_FIX: how a job here fetches the whole history,
# in this CI's own words (a shallow clone's fix).
RUNS_HERE = "JENKINS_URL"
SYSTEM = "Jenkins"
SHALLOW_FIX = "`cloneOption(shallow: false)` in the Git checkout's extensions"


def detect(environ: Mapping[str, str]) -> Guess | None:
    branch = value(environ, "CHANGE_TARGET")
    if not branch:
        return None
    return Guess("Jenkins (change request)", branch_refs(branch), f"CHANGE_TARGET={branch}")


def head_branch(environ: Mapping[str, str]) -> str | None:
    """A change request's source branch (CHANGE_BRANCH), else the branch being built (BRANCH_NAME; in a
    change-request build that is the request's name, e.g. PR-12, which is stable across its pushes)."""
    return value(environ, "CHANGE_BRANCH") or value(environ, "BRANCH_NAME") or None


def request_number(environ: Mapping[str, str]) -> str | None:
    """A change request's id (CHANGE_ID, set by multibranch pipelines)."""
    return value(environ, "CHANGE_ID") or None
