"""`git diff --raw -z` plus the patch text → the project's FileChange model (pure; no git here).

Paths come from the NUL-separated raw listing, never from patch headers, so names with spaces,
quotes, tabs, newlines or non-UTF-8 bytes are exact. Each file's patch is parsed by unidiff; the
file-name lines of its header are replaced by placeholders first, because unidiff cannot split some
legal names (a name containing " b/") and we never use the names it would read.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import countOf, itemgetter
from typing import NamedTuple

from unidiff import PatchedFile, PatchSet
from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk as UnidiffHunk

from ocr_hook.changes.model import DiffLine, FileChange, FileStatus, Hunk

SYMLINK_MODE = "120000"
SUBMODULE_MODE = "160000"
_ABSENT_MODE = "000000"
_DEV_NULL = "/dev/null"
_HEADER = "diff --git "

_STATUS = {
    "A": FileStatus.ADDED,
    "M": FileStatus.MODIFIED,
    "D": FileStatus.DELETED,
    "R": FileStatus.RENAMED,
    "C": FileStatus.COPIED,
    "T": FileStatus.TYPE_CHANGED,
}


class DiffParseError(ValueError):
    """The patch text does not match the raw listing or cannot be parsed."""


class RawEntry(NamedTuple):
    status: str  # one letter: A M D R C T (U and X are refused)
    old_mode: str | None
    new_mode: str | None
    old_sha: str | None
    new_sha: str | None
    old_path: str
    new_path: str

    @property
    def patch_count(self) -> int:
        # git splits a change of file type (file <-> symlink <-> submodule) into a deletion and a
        # creation, so such an entry owns two consecutive patches.
        return 2 if self.status == "T" else 1


def parse_raw(text: str) -> list[RawEntry]:
    """Parse `git diff --raw -z --no-abbrev` output (decoded with surrogateescape)."""
    fields = text.split("\0")
    if fields and fields[-1] == "":
        fields.pop()
    entries: list[RawEntry] = []
    i = 0
    while i < len(fields):
        meta = fields[i]
        if not meta.startswith(":"):
            raise DiffParseError(f"unexpected raw diff record {meta[:60]!r}")
        parts = meta[1:].split(" ")
        if len(parts) != 5:
            raise DiffParseError(f"unexpected raw diff record {meta[:60]!r}")
        old_mode, new_mode, old_sha, new_sha, status_field = parts
        status = status_field[:1]
        if status in ("U", "X"):
            raise DiffParseError(f"unmerged or unknown entry in the diff: {fields[i + 1]!r}")
        if status not in _STATUS:
            raise DiffParseError(f"unknown diff status {status_field!r}")
        two_paths = status in ("R", "C")
        if i + 1 + two_paths >= len(fields):
            raise DiffParseError("raw diff listing ends in the middle of a record")
        old_path = fields[i + 1]
        new_path = fields[i + 2] if two_paths else old_path
        if not old_path or not new_path:
            raise DiffParseError(f"raw diff record {meta[:60]!r} has an empty path")
        entries.append(RawEntry(
            status=status,
            old_mode=None if old_mode == _ABSENT_MODE else old_mode,
            new_mode=None if new_mode == _ABSENT_MODE else new_mode,
            old_sha=None if set(old_sha) <= {"0"} else old_sha,
            new_sha=None if set(new_sha) <= {"0"} else new_sha,
            old_path=old_path,
            new_path=new_path,
        ))
        i += 3 if two_paths else 2
    return entries


def split_patches(text: str) -> list[str]:
    """Cut a multi-file patch into per-file patches, each starting with its `diff --git` line.

    A content line always starts with ' ', '+', '-' or '\\', and git quotes names containing a
    newline, so a line starting with "diff --git " is always a file header.
    """
    starts = [0] if text.startswith(_HEADER) else []
    pos = text.find("\n" + _HEADER)
    while pos >= 0:
        starts.append(pos + 1)
        pos = text.find("\n" + _HEADER, pos + 1)
    if not starts:
        if text.strip():
            raise DiffParseError("patch text has no diff --git header")
        return []
    if starts[0] != 0:
        raise DiffParseError("patch text does not start with a diff --git header")
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def group_patches(entries: Sequence[RawEntry], patches: Sequence[str]) -> list[list[str]] | None:
    """The patches belonging to each raw entry, in order; None when the counts do not line up."""
    if sum(e.patch_count for e in entries) != len(patches):
        return None
    groups: list[list[str]] = []
    i = 0
    for entry in entries:
        groups.append(list(patches[i : i + entry.patch_count]))
        i += entry.patch_count
    return groups


_KIND = itemgetter(0)  # DiffLine.kind


def build_change(entry: RawEntry, patches: Sequence[str]) -> FileChange:
    """One FileChange from its raw entry and its patch text(s)."""
    hunks: list[Hunk] = []
    binary = False
    for patch in patches:
        parsed = _parse_one(patch)
        binary = binary or parsed.is_binary_file
        hunks.extend(_hunk(h) for h in parsed)
    added = sum(countOf(map(_KIND, h.lines), "+") for h in hunks)  # counted in C: a scan has ~10^6 lines
    removed = sum(countOf(map(_KIND, h.lines), "-") for h in hunks)
    status = _STATUS[entry.status]
    deleted = status is FileStatus.DELETED
    mode = entry.old_mode if deleted else entry.new_mode
    return FileChange(
        path=entry.old_path if deleted else entry.new_path,
        old_path=entry.old_path if entry.old_path != entry.new_path else None,
        status=status,
        hunks=tuple(hunks),
        added=added,
        removed=removed,
        patch="".join(patches),
        is_binary=binary,
        is_symlink=mode == SYMLINK_MODE,
        is_submodule=mode == SUBMODULE_MODE,
        old_mode=entry.old_mode,
        new_mode=entry.new_mode,
        new_sha=None if deleted else entry.new_sha,
    )


def unread_change(entry: RawEntry, reason: str) -> FileChange:
    """A file whose diff the run had no time left to read (changes.deadline)."""
    status = _STATUS[entry.status]
    deleted = status is FileStatus.DELETED
    return FileChange(path=entry.old_path if deleted else entry.new_path,
                      old_path=entry.old_path if entry.old_path != entry.new_path else None, status=status, hunks=(),
                      added=0, removed=0, patch="", old_mode=entry.old_mode, new_mode=entry.new_mode,
                      new_sha=None if deleted else entry.new_sha, unread=reason)


def oversize_change(entry: RawEntry, size: int, *, is_binary: bool) -> FileChange:
    """A file too big to read (its larger side has `size` bytes): listed, never diffed (issue 55.3)."""
    status = _STATUS[entry.status]
    deleted = status is FileStatus.DELETED
    mode = entry.old_mode if deleted else entry.new_mode
    return FileChange(path=entry.old_path if deleted else entry.new_path,
                      old_path=entry.old_path if entry.old_path != entry.new_path else None, status=status, hunks=(),
                      added=0, removed=0, patch="", is_binary=is_binary, is_symlink=mode == SYMLINK_MODE,
                      is_submodule=mode == SUBMODULE_MODE, old_mode=entry.old_mode, new_mode=entry.new_mode,
                      new_sha=None if deleted else entry.new_sha, oversize=size)


def listed_change(entry: RawEntry, added: int, removed: int, is_binary: bool) -> FileChange:
    """A file whose path selection skips by its name alone (vendored, sensitive, excluded): listed with its counts
    of lines, never diffed here (issue 62.5)."""
    return oversize_change(entry, 0, is_binary=is_binary)._replace(added=added, removed=removed)


def parse_changes(raw_text: str, patch_text: str) -> list[FileChange]:
    """Every FileChange of one diff; DiffParseError when the patch does not match the listing."""
    entries = parse_raw(raw_text)
    groups = group_patches(entries, split_patches(patch_text))
    if groups is None:
        raise DiffParseError("the patch text does not match the list of changed files")
    return [build_change(e, g) for e, g in zip(entries, groups, strict=True)]


# --- one file ---------------------------------------------------------------------------------------


def _parse_one(patch: str) -> PatchedFile:
    try:
        parsed = PatchSet(_lines(_placeholder_names(patch)))
    except (UnidiffParseError, UnicodeError) as exc:
        raise DiffParseError(f"unparsable patch: {exc}") from None
    if len(parsed) != 1:
        raise DiffParseError(f"expected one file in a per-file patch, found {len(parsed)}")
    return parsed[0]


def _placeholder_names(patch: str) -> str:
    """The patch with its name lines (before the first hunk) replaced by fixed, parsable names."""
    head, sep, body = patch.partition("\n@@ ")
    lines = head.split("\n")
    out = ["diff --git a/f b/f"]
    for line in lines[1:]:
        if line.startswith("--- "):
            line = "--- " + (_DEV_NULL if line[4:] == _DEV_NULL else "a/f")
        elif line.startswith("+++ "):
            line = "+++ " + (_DEV_NULL if line[4:] == _DEV_NULL else "b/f")
        elif line.startswith("Binary files ") and line.endswith(" differ"):
            line = "Binary files a/f and b/f differ"
        out.append(line)
    return "\n".join(out) + sep + body


def _lines(text: str) -> list[str]:
    # Split on "\n" only: str.splitlines would also cut at "\r", form feeds and Unicode separators
    # inside source lines and shift every line number after them.
    parts = text.split("\n")
    last = parts.pop()
    lines = [p + "\n" for p in parts]
    if last:
        lines.append(last)
    return lines


def _hunk(h: UnidiffHunk) -> Hunk:
    # The hottest loop of a scan (850,000 lines on Django's tree, issue 62.8): DiffLine built by tuple.__new__,
    # as its NamedTuple constructor does, without that constructor's own frame.
    make = tuple.__new__
    lines = []
    append = lines.append
    for line in h:
        kind = line.line_type
        if kind != "+" and kind != "-" and kind != " ":
            continue  # "\ No newline at end of file" carries no content
        text = line.value
        if text[-1:] == "\n":
            text = text[:-1]
        if text[-1:] == "\r":
            text = text[:-1]
        append(make(DiffLine, (kind, text, None if kind == "+" else line.source_line_no,
                               None if kind == "-" else line.target_line_no)))
    return Hunk(h.source_start, h.source_length, h.target_start, h.target_length, tuple(lines))
