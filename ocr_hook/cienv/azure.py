"""Azure Pipelines, pull request validation builds (branch policy or `pr:` trigger).

Variables:
  SYSTEM_PULLREQUEST_TARGETBRANCH   the target branch, `refs/heads/main` for Azure Repos (the
                                    prefix is stripped) or `main` for GitHub repositories
                                    → base origin/BRANCH
Only pull request builds set it.
"""

from __future__ import annotations

from collections.abc import Mapping

from ocr_hook.cienv.guess import Guess, branch_refs, value

VARIABLES = ("SYSTEM_PULLREQUEST_TARGETBRANCH",)
# Set (non-empty) in every job this CI system runs; SHALLOW_FIX: how a job here fetches the whole history,
# in this CI's own words (a shallow clone's fix).
RUNS_HERE = "TF_BUILD"
SYSTEM = "Azure Pipelines"
SHALLOW_FIX = "`fetchDepth: 0` on the `- checkout: self` step"
_PREFIX = "refs/heads/"


def detect(environ: Mapping[str, str]) -> Guess | None:
    raw = value(environ, "SYSTEM_PULLREQUEST_TARGETBRANCH")
    branch = raw.removeprefix(_PREFIX)
    if not branch:
        return None
    return Guess("Azure Pipelines (pull request)", branch_refs(branch), f"SYSTEM_PULLREQUEST_TARGETBRANCH={raw}")


def head_branch(environ: Mapping[str, str]) -> str | None:
    """The pull request's source branch (review memory's line of work), without refs/heads/."""
    raw = value(environ, "SYSTEM_PULLREQUEST_SOURCEBRANCH")
    return raw.removeprefix("refs/heads/") or None


def request_number(environ: Mapping[str, str]) -> str | None:
    """The pull request's id (Azure Repos), else its number (a GitHub repository built in Azure Pipelines)."""
    return value(environ, "SYSTEM_PULLREQUEST_PULLREQUESTID") or \
        value(environ, "SYSTEM_PULLREQUEST_PULLREQUESTNUMBER") or None
