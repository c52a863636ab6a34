""".gitignore-style pattern lists matched by pathspec, compiled only for the paths that need them.

Importing pathspec and compiling the ~80 shipped selection globs costs more than the rest of a fully
cached review run. Yet a changed path can only match a glob if it contains each literal piece of it
(the text between wildcards and slashes: "*.min.js" needs ".min.js" in the path). So a path is checked
against pathspec with just the globs whose pieces it contains, usually none, in which case neither the
import nor a compile happens. pathspec still decides every match: a glob left out cannot match the path,
and a glob that does not match never changes .gitignore's "last matching pattern wins" answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ocr_hook.changes import git

if TYPE_CHECKING:
    import pathspec

# Where a literal piece ends: wildcards and the path separator. A glob with a character class or an
# escape is always checked in full (its literal text is not simply a substring of the paths it matches).
_PIECE_BREAK = re.compile(r"[*?/]")
_ALWAYS_CHECKED = ("[", "\\")


class GlobMatch(NamedTuple):
    """pathspec's check_file answer: include True/False (a "!" glob), None for no match; the glob's index."""

    include: bool | None
    index: int | None


def literal_pieces(pattern: str) -> tuple[str, ...] | None:
    """Substrings every path the glob matches must contain; None when the glob must always be checked."""
    if any(c in pattern for c in _ALWAYS_CHECKED) or pattern.lstrip().startswith("#"):
        return None
    body = pattern[1:] if pattern.startswith("!") else pattern
    # Stripping spaces only weakens the test (.gitignore trims trailing spaces), never wrongly skips a glob.
    pieces = tuple(p for p in (raw.strip() for raw in _PIECE_BREAK.split(body)) if p)
    return pieces or None


class GitIgnoreGlobs:
    """A list of .gitignore-syntax globs with pathspec.GitIgnoreSpec's check_file semantics.

    Thread-safe for lookups: at worst two threads compile the same small subset once each."""

    def __init__(self, patterns: Sequence[str], *, ignore_case: bool | None = None) -> None:
        """`ignore_case`: True or False to decide it here; None follows the run's repository (git.folds_case)."""
        self.patterns = tuple(patterns)
        self._pieces = tuple(literal_pieces(p) for p in self.patterns)
        # The globs grouped by how many pieces they need, for _check's loop (tens of thousands of paths in a
        # scan, each against every glob of every list: one comprehension a group, no generator a glob).
        self._always = [i for i, pieces in enumerate(self._pieces) if pieces is None]
        self._one = [(i, pieces[0]) for i, pieces in enumerate(self._pieces) if pieces is not None and len(pieces) == 1]
        self._more = [(i, pieces) for i, pieces in enumerate(self._pieces) if pieces is not None and len(pieces) > 1]
        self._specs: dict[tuple[int, ...], pathspec.GitIgnoreSpec] = {}
        self._ignore_case = ignore_case
        self._folded: GitIgnoreGlobs | None = None
        self._lower = all(p == p.lower() for p in self.patterns)

    def check_file(self, path: str) -> GlobMatch:
        """The same answer GitIgnoreSpec.from_lines(patterns).check_file(path) gives; where the repository
        ignores case, the answer for the path and the globs both in lower case when that one matches."""
        exact = self._check(path)
        if exact.include is not None or self._ignore_case is False or (self._lower and path == path.lower()):
            return exact  # matched, or folding could not change the answer
        if self._folded is None:
            self._folded = GitIgnoreGlobs([p.lower() for p in self.patterns], ignore_case=False)
        folded = self._folded.check_file(path.lower())
        if folded.include is None:
            return exact
        return folded if (self._ignore_case or (self._ignore_case is None and git.folds_case())) else exact

    def _check(self, path: str) -> GlobMatch:
        found = [i for i, piece in self._one if piece in path]
        found += [i for i, pieces in self._more if all([piece in path for piece in pieces])]
        if self._always:
            found += self._always
        candidates = tuple(sorted(found))  # in the globs' order: the last match wins
        if not candidates:
            return GlobMatch(None, None)
        spec = self._specs.get(candidates)
        if spec is None:
            import pathspec

            spec = pathspec.GitIgnoreSpec.from_lines([self.patterns[i] for i in candidates])
            self._specs[candidates] = spec
        result = spec.check_file(path)
        return GlobMatch(result.include, None if result.index is None else candidates[result.index])


def check_patterns(patterns: Sequence[str]) -> str | None:
    """pathspec's complaint about the first invalid glob (e.g. a lone "!"), or None when all are valid.

    Globs are compiled lazily, so user-supplied ones are checked up front to fail before any work."""
    if not patterns:
        return None
    import pathspec

    try:
        pathspec.GitIgnoreSpec.from_lines(patterns)
    except ValueError as exc:
        return str(exc)
    return None
