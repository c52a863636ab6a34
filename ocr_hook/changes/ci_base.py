"""`--base auto` at the edge: the CI module's candidate refs checked against the clone.

Detection (ocr_hook.cienv) only reads the environment; here git decides which candidate names a
commit (`origin/main` in a CI clone, `main` where only a local branch exists).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from ocr_hook.changes import git
from ocr_hook.errors import GitError

if TYPE_CHECKING:
    from ocr_hook.cienv import Guess


class AutoBase(NamedTuple):
    ci: str  # which CI system (and event) was detected
    ref: str  # the candidate that names a commit here
    source: str  # the variable it came from

    def describe(self) -> str:
        return f"{self.ci}: {self.ref} from {self.source}"


def resolve_auto_base(repo: str, environ: Mapping[str, str]) -> AutoBase:
    """The detected base, as a ref that exists in `repo`; FatalError (exit 2) when none is found."""
    from ocr_hook.cienv import detect

    guess = detect(environ)
    for ref in guess.refs:
        if _names_commit(repo, ref):
            return AutoBase(guess.ci, ref, guess.source)
    tried = " nor ".join(repr(r) for r in guess.refs) if len(guess.refs) > 1 else repr(guess.refs[0])
    advice = git.shallow_advice() if git.is_shallow(repo) else f"fetch it first (git fetch origin {_fetchable(guess)})"
    raise GitError(f"--base auto: {guess.ci} names {guess.source}, but {'neither ' if len(guess.refs) > 1 else ''}"
                   f"{tried} is in this clone; {advice}")


def _names_commit(repo: str, ref: str) -> bool:
    if not ref or ref.startswith("-") or any(c in ref for c in "\0\n"):
        return False
    proc = git.run_git(repo, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], ok_codes=(0, 1, 128))
    return proc.returncode == 0 and bool(proc.stdout.strip())


def _fetchable(guess: Guess) -> str:
    """What to name in `git fetch origin ...`: the branch behind origin/BRANCH, else the first candidate."""
    return next((r.removeprefix("origin/") for r in guess.refs if r.startswith("origin/")), guess.refs[0])
