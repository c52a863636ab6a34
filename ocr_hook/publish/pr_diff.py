"""Which lines of a pull request GitHub accepts review comments on, from its own view of the diff.

GitHub resolves a comment's `line` (side RIGHT) against the pull request's diff: only lines inside a
hunk, added or context, can carry one, and a multi-line comment must stay within one hunk. The
patches come from GET /pulls/{n}/files exactly as GitHub computed them (hunks without file headers;
no `patch` at all for binary or very large files: nothing there is commentable).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

# Right-side line ranges of each hunk, per file (the pull request's new path).
CommentableLines = Mapping[str, tuple[range, ...]]


def commentable_lines(files: Iterable[Mapping[str, Any]]) -> dict[str, tuple[range, ...]]:
    found: dict[str, tuple[range, ...]] = {}
    for entry in files:
        name, patch = entry.get("filename"), entry.get("patch")
        if isinstance(name, str) and isinstance(patch, str) and patch:
            found[name] = hunk_ranges(patch)
    return found


def hunk_ranges(patch: str) -> tuple[range, ...]:
    """The new-side lines each hunk of one file's patch spans (empty for a hunk that only deletes)."""
    # Placeholder headers: GitHub's `patch` is the hunks alone, and the real name is in `filename`.
    text = "--- a/file\n+++ b/file\n" + patch + ("" if patch.endswith("\n") else "\n")
    try:
        parsed = PatchSet(text)
    except UnidiffParseError:
        return ()  # a patch we cannot read: no inline comment there rather than a refused review
    if len(parsed) != 1:
        return ()
    return tuple(range(h.target_start, h.target_start + h.target_length) for h in parsed[0] if h.target_length)


def accepts(lines: CommentableLines, path: str, start: int, end: int) -> bool:
    """Whether GitHub takes a comment on new-side lines start..end of path (both in one hunk)."""
    return any(start in hunk and end in hunk for hunk in lines.get(path, ()))
