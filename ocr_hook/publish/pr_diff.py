"""Which lines of a pull request GitHub accepts review comments on, from its own view of the diff.

GitHub resolves a comment's `line` (side RIGHT) against the pull request's diff: only lines inside a
hunk, added or context, can carry one, and a multi-line comment must stay within one hunk. The
patches come from GET /pulls/{n}/files exactly as GitHub computed them (hunks without file headers;
no `patch` at all for binary or very large files: nothing there is commentable).

The hunks also carry those lines' text on the head. ocr-hook in CI reviews the checkout, which for a
pull request is GitHub's merge commit: where the base branch changed the same file, a line number
there is not the same line on the head, and a suggested change would replace the wrong lines. So a
finding is inline only where the reviewed file's lines read as the head's do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError


@dataclass(frozen=True, slots=True)
class FileLines:
    hunks: tuple[range, ...]  # the new-side lines each hunk spans
    text: Mapping[int, str]  # line number → the head's text of it (added and context lines)


CommentableLines = Mapping[str, FileLines]


def commentable_lines(files: Iterable[Mapping[str, Any]]) -> dict[str, FileLines]:
    """Per file (the pull request's new path), from GitHub's pulls/files entries."""
    found: dict[str, FileLines] = {}
    for entry in files:
        name, patch = entry.get("filename"), entry.get("patch")
        if isinstance(name, str) and isinstance(patch, str) and patch:
            found[name] = file_lines(patch)
    return found


def file_lines(patch: str) -> FileLines:
    # Placeholder headers: GitHub's `patch` is the hunks alone, and the real name is in `filename`.
    text = "--- a/file\n+++ b/file\n" + patch + ("" if patch.endswith("\n") else "\n")
    try:
        parsed = PatchSet(text)
    except UnidiffParseError:
        return FileLines((), {})  # a patch we cannot read: no inline comment there rather than a refusal
    if len(parsed) != 1:
        return FileLines((), {})
    hunks = tuple(range(h.target_start, h.target_start + h.target_length) for h in parsed[0] if h.target_length)
    lines = {line.target_line_no: _bare(line.value) for h in parsed[0] for line in h
             if line.target_line_no is not None}
    return FileLines(hunks, lines)


def hunk_ranges(patch: str) -> tuple[range, ...]:
    return file_lines(patch).hunks


def accepts(lines: CommentableLines, path: str, start: int, end: int) -> bool:
    """Whether GitHub takes a comment on new-side lines start..end of path (both in one hunk)."""
    entry = lines.get(path)
    return entry is not None and any(start in hunk and end in hunk for hunk in entry.hunks)


def same_text(lines: CommentableLines, path: str, start: int, end: int, reviewed: Sequence[str]) -> bool:
    """Whether lines start..end of the reviewed file read as those of the head (line breaks aside)."""
    entry = lines.get(path)
    if entry is None or end > len(reviewed):
        return False
    return all(entry.text.get(n) == _bare(reviewed[n - 1]) for n in range(start, end + 1))


def _bare(line: str) -> str:
    return line.rstrip("\r\n")
