"""`--base auto`: the base of the pull or merge request, read from the CI system's environment.

One small module per CI system (as reviewdog's `cienv` does it), each a pure function of the
environment mapping (GitHub push events also read the event payload file the environment names)
returning a Guess or None. Nothing here runs git: which candidate ref exists in the clone is decided
at the edge (ocr_hook.changes.ci_base), so detection stays testable with a plain dict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType

from ocr_hook.cienv import azure, bitbucket, buildkite, github, gitlab, jenkins
from ocr_hook.cienv.guess import Guess, value
from ocr_hook.errors import FatalError

__all__ = ["DETECTORS", "Guess", "detect", "head_branch", "looked_for", "request_text", "running", "shallow_advice"]


# First match wins. GitHub comes first because Gitea and Forgejo runners set GITHUB_* as well.
DETECTORS: tuple[tuple[Callable[[Mapping[str, str]], Guess | None], tuple[str, ...]], ...] = (
    (github.detect, github.VARIABLES),
    (gitlab.detect, gitlab.VARIABLES),
    (bitbucket.detect, bitbucket.VARIABLES),
    (azure.detect, azure.VARIABLES),
    (jenkins.detect, jenkins.VARIABLES),
    (buildkite.detect, buildkite.VARIABLES),
)


def looked_for() -> str:
    return ", ".join(name for _detect, names in DETECTORS for name in names)


def detect(environ: Mapping[str, str]) -> Guess:
    """The first CI system whose variables name a base; FatalError (exit 2) when none does."""
    for fn, _names in DETECTORS:
        found = fn(environ)
        if found is not None:
            return found
    raise FatalError(f"--base auto: no pull/merge request base in the environment (looked for {looked_for()}); "
                     "pass --base REF")


# The same systems, for the branch under review (review memory's line of work, DESIGN.md section 7).
HEAD_BRANCHES: tuple[Callable[[Mapping[str, str]], str | None], ...] = (
    github.head_branch, gitlab.head_branch, bitbucket.head_branch, azure.head_branch, jenkins.head_branch,
    buildkite.head_branch,
)


def head_branch(environ: Mapping[str, str]) -> str | None:
    """The head branch the CI system names (first system that names one), or None outside CI."""
    for fn in HEAD_BRANCHES:
        found = fn(environ)
        if found:
            return found
    return None


# The same systems, for the number of the pull or merge request (the review history, DESIGN.md section 18).
REQUEST_NUMBERS: tuple[Callable[[Mapping[str, str]], str | None], ...] = tuple(
    system.request_number for system in (github, gitlab, bitbucket, azure, jenkins, buildkite))


def request_number(environ: Mapping[str, str]) -> str | None:
    """The pull or merge request this job reviews (first system that names one), or None."""
    return next((found for fn in REQUEST_NUMBERS if (found := fn(environ))), None)


# The same systems, for what the pull or merge request says it is for (DESIGN.md section 12). Azure
# Pipelines, Bitbucket Pipelines, Jenkins and Buildkite name no title or description in their variables.
REQUEST_TEXTS: tuple[Callable[[Mapping[str, str]], str | None], ...] = (github.request_text, gitlab.request_text)


def request_text(environ: Mapping[str, str]) -> str | None:
    """The request's title and description (first system that gives them), or None."""
    for fn in REQUEST_TEXTS:
        found = fn(environ)
        if found:
            return found
    return None


# Which CI system runs this job (for hints in its own words), by the variable each sets in every job.
SYSTEMS = (github, gitlab, bitbucket, azure, jenkins, buildkite)


def _system(environ: Mapping[str, str]) -> ModuleType | None:
    """The module of the CI system this job runs in, by the variable each sets in every job."""
    return next((system for system in SYSTEMS if value(environ, system.RUNS_HERE) not in ("", "false")), None)


def running(environ: Mapping[str, str]) -> str | None:
    """The CI system this job runs in, "CI" for another that sets CI=true (as most do), None outside CI."""
    system = _system(environ)
    if system is not None:
        return str(system.SYSTEM)
    return "CI" if value(environ, "CI").lower() not in ("", "0", "false") else None


def shallow_advice(environ: Mapping[str, str]) -> str:
    """How to fetch the whole history where this runs: the CI system's own setting, else git's own command."""
    system = _system(environ)
    if system is not None:
        return f"fetch the full history: {system.SHALLOW_FIX}"
    if running(environ) is not None:
        return "fetch the full history: turn off shallow cloning in the job's checkout, or `git fetch --unshallow`"
    return "fetch the full history: `git fetch --unshallow` (or `git fetch --deepen=N`)"
