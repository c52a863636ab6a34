"""Bitbucket Pipelines, pull request pipelines (`pipelines: pull-requests:`).

Variables:
  BITBUCKET_PR_DESTINATION_BRANCH   the pull request's destination branch → base origin/BRANCH
Branch pipelines do not set it.
"""

from __future__ import annotations

from collections.abc import Mapping

from ocr_hook.cienv.guess import Guess, branch_refs, value

VARIABLES = ("BITBUCKET_PR_DESTINATION_BRANCH",)
# Set (non-empty) in every job this CI system runs; SHALLOW_FIX: how a job here fetches the whole history,
# in this CI's own words (a shallow clone's fix).
RUNS_HERE = "BITBUCKET_BUILD_NUMBER"
SYSTEM = "Bitbucket Pipelines"
SHALLOW_FIX = "`clone: depth: full` in bitbucket-pipelines.yml"


def detect(environ: Mapping[str, str]) -> Guess | None:
    branch = value(environ, "BITBUCKET_PR_DESTINATION_BRANCH")
    if not branch:
        return None
    return Guess("Bitbucket Pipelines (pull request)", branch_refs(branch),
                 f"BITBUCKET_PR_DESTINATION_BRANCH={branch}")


def head_branch(environ: Mapping[str, str]) -> str | None:
    """The branch being built, a pull request's source branch (review memory's line of work)."""
    return value(environ, "BITBUCKET_BRANCH") or None


def request_number(environ: Mapping[str, str]) -> str | None:
    """The pull request's id, in a pull-request pipeline."""
    return value(environ, "BITBUCKET_PR_ID") or None
