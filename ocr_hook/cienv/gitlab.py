"""GitLab CI merge request pipelines (`rules: - if: $CI_PIPELINE_SOURCE == "merge_request_event"`).

Variables:
  CI_MERGE_REQUEST_DIFF_BASE_SHA        the commit GitLab computes the MR's diff from → base that
                                        commit (the target branch below when the clone lacks it)
  CI_MERGE_REQUEST_TARGET_BRANCH_NAME   the target branch → base origin/BRANCH
Branch pipelines set neither.
"""

from __future__ import annotations

from collections.abc import Mapping

from ocr_hook.cienv.guess import Guess, branch_refs, value

VARIABLES = ("CI_MERGE_REQUEST_DIFF_BASE_SHA", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME")
# Set (non-empty) in every job this CI system runs; SHALLOW_FIX: how a job here fetches the whole history,
# in this CI's own words (a shallow clone's fix).
RUNS_HERE = "GITLAB_CI"
SYSTEM = "GitLab CI"
SHALLOW_FIX = "`GIT_DEPTH: 0` in the job's `variables:`"
NAME = "GitLab CI (merge request)"


def detect(environ: Mapping[str, str]) -> Guess | None:
    sha = value(environ, "CI_MERGE_REQUEST_DIFF_BASE_SHA")
    branch = value(environ, "CI_MERGE_REQUEST_TARGET_BRANCH_NAME")
    fallback = branch_refs(branch) if branch else ()
    if sha:
        return Guess(NAME, (sha, *fallback), f"CI_MERGE_REQUEST_DIFF_BASE_SHA={sha[:12]}")
    if branch:
        return Guess(NAME, fallback, f"CI_MERGE_REQUEST_TARGET_BRANCH_NAME={branch}")
    return None


def head_branch(environ: Mapping[str, str]) -> str | None:
    """The merge request's source branch (review memory's line of work); None outside merge requests."""
    return value(environ, "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME") or None


def request_number(environ: Mapping[str, str]) -> str | None:
    """The merge request's IID (the number its URL shows)."""
    return value(environ, "CI_MERGE_REQUEST_IID") or None


def request_text(environ: Mapping[str, str]) -> str | None:
    """The merge request's title and description (CI_MERGE_REQUEST_TITLE, CI_MERGE_REQUEST_DESCRIPTION)."""
    title = value(environ, "CI_MERGE_REQUEST_TITLE")
    body = environ.get("CI_MERGE_REQUEST_DESCRIPTION", "").strip()
    return "\n\n".join(part for part in (title, body) if part) or None
