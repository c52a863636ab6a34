"""Which lines of a pull/merge request a forge accepts review comments on, from its own view of the diff.

GitHub resolves a comment's `line` (side RIGHT) against the pull request's diff: only lines inside a
hunk, added or context, can carry one, and a multi-line comment must stay within one hunk. The
patches come from GET /pulls/{n}/files exactly as GitHub computed them (hunks without file headers;
no `patch` at all for binary or very large files: nothing there is commentable).

The hunks also carry those lines' text on the head. ocr-hook in CI reviews the checkout, which for a
pull request is GitHub's merge commit: where the base branch changed the same file, a line number
there is not the same line on the head, and a suggested change would replace the wrong lines. So a
finding is inline only where the reviewed file's lines read as the head's do.

Every forge's adapter builds the same FileLines: from hunks without file headers (GitHub's and
GitLab's `patch`/`diff` fields: `file_lines`) or from a whole unified diff (Gitea's `.diff`, or
`git diff` in the checkout: `unified_diff_lines`). Context lines also keep their old-side number
(GitLab positions an unchanged line by both numbers), and a renamed file its old path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError


@dataclass(frozen=True, slots=True)
class FileLines:
    hunks: tuple[range, ...]  # the new-side lines each hunk spans
    text: Mapping[int, str]  # line number → the head's text of it (added and context lines)
    old: Mapping[int, int] = field(default_factory=dict)  # context line's new number → its old number
    old_path: str | None = None  # a renamed file's path on the base side

    def old_line(self, line: int) -> int | None:
        """The old-side number of a context line; None for an added line."""
        return self.old.get(line)


CommentableLines = Mapping[str, FileLines]


def commentable_lines(files: Iterable[Mapping[str, Any]]) -> dict[str, FileLines]:
    """Per file (the pull request's new path), from GitHub's pulls/files entries."""
    found: dict[str, FileLines] = {}
    for entry in files:
        name, patch = entry.get("filename"), entry.get("patch")
        if isinstance(name, str) and isinstance(patch, str) and patch:
            found[name] = file_lines(patch)
    return found


def file_lines(patch: str, old_path: str | None = None) -> FileLines:
    # Placeholder headers: GitHub's `patch` is the hunks alone, and the real name is in `filename`.
    text = "--- a/file\n+++ b/file\n" + patch + ("" if patch.endswith("\n") else "\n")
    try:
        parsed = PatchSet(text)
    except UnidiffParseError:
        return FileLines((), {})  # a patch we cannot read: no inline comment there rather than a refusal
    if len(parsed) != 1:
        return FileLines((), {})
    return replace(_from_patched(parsed[0]), old_path=old_path)


def unified_diff_lines(diff: str) -> dict[str, FileLines]:
    """Per file (new path) from a whole `git diff`-style text; deleted files have no new lines."""
    try:
        parsed = PatchSet(diff)
    except UnidiffParseError:
        return {}
    found: dict[str, FileLines] = {}
    for patched in parsed:
        if patched.is_removed_file or patched.is_binary_file:
            continue
        name = _strip_prefix(patched.target_file)
        source = _strip_prefix(patched.source_file)
        found[name] = replace(_from_patched(patched), old_path=source if source not in (name, "/dev/null") else None)
    return found


def _strip_prefix(name: str) -> str:
    return name[2:] if name.startswith(("a/", "b/")) else name


def _from_patched(patched: Any) -> FileLines:
    hunks = tuple(range(h.target_start, h.target_start + h.target_length) for h in patched if h.target_length)
    lines = {line.target_line_no: _bare(line.value) for h in patched for line in h
             if line.target_line_no is not None}
    old = {line.target_line_no: line.source_line_no for h in patched for line in h
           if line.target_line_no is not None and line.source_line_no is not None}
    return FileLines(hunks, lines, old)


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
