"""The project's own small diff model: what changed, per file, with line numbers.

Its records are NamedTuples, not frozen dataclasses: every run, even one with nothing staged, loads this
module, and Python builds a dataclass's methods from source when the class is created (about a millisecond
each); a NamedTuple is as immutable and is built about eight times faster. Change one with `_replace`.
Annotations here are evaluated, not postponed: NamedTuple compiles each one left as text into a ForwardRef."""

from enum import StrEnum
from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    from ocr_hook.changes.ci_base import AutoBase


class FileStatus(StrEnum):
    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"
    RENAMED = "renamed"
    COPIED = "copied"
    TYPE_CHANGED = "type_changed"


class DiffLine(NamedTuple):
    """One line of a hunk: added, removed or context."""

    kind: Literal["+", "-", " "]
    text: str  # without the marker and without the line ending
    old_no: int | None  # 1-based line in the old file (None for added lines)
    new_no: int | None  # 1-based line in the new file (None for removed lines)


class Hunk(NamedTuple):
    """One hunk of a file's diff, its line ranges on both sides."""

    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: tuple[DiffLine, ...]


class FileChange(NamedTuple):
    """One changed file of the change set, with its hunks."""

    path: str  # the new path; for a deletion, the old path
    old_path: str | None  # differs from path for renames and copies
    status: FileStatus
    hunks: tuple[Hunk, ...]
    added: int
    removed: int
    patch: str  # this file's unified diff text, as shown to the model
    is_binary: bool = False
    is_symlink: bool = False
    is_submodule: bool = False
    old_mode: str | None = None
    new_mode: str | None = None
    # The reviewed side's object id (in staged mode the index's blob): the snapshot reads the file by it
    # without listing the index again. None for a deletion.
    new_sha: str | None = None
    # A file bigger than max_file_bytes on either side: its size in bytes; it was neither read nor diffed.
    oversize: int = 0
    # Not read: the run's time ran out before its diff was (changes.deadline); the reason, e.g. "time limit of 2 s
    # reached".
    unread: str = ""

    @property
    def changed_lines(self) -> int:
        return self.added + self.removed


class ChangeSet(NamedTuple):
    """Every file changed between two snapshots, and how to name the reviewed one."""

    repo_root: str
    description: str  # human wording of the scope, e.g. "staged changes" or "abc123..def456"
    base: str  # tree-ish of the old side (a commit sha or the empty tree)
    target: str | None  # commit sha of the reviewed side; None means the index
    files: tuple[FileChange, ...]
    base_ref: str | None = None  # `--base`: the ref the base came from (after `--base auto` detection)
    auto_base: "AutoBase | None" = None  # what `--base auto` detected (the one place it is detected)
    # A scan (DESIGN.md 16): every file at the target as if added (base is the empty tree), and guidance read
    # from the scanned commit itself (HEAD for the index), since there is no side before the change to trust.
    scan: bool = False
    guidance_rev: str | None = None

    def by_path(self) -> dict[str, FileChange]:
        return {f.path: f for f in self.files}


def shown_lines(hunk: Hunk) -> list[int]:
    """The new-file line each row of a hunk is shown at (not clamped to the file); anchoring and filter mode
    both place removed rows by it (here, so filter mode need not load the anchoring code).

    Added and context rows: their own line. A removed row: the line that replaced it, i.e. the i-th
    row of a run of removed rows pairs with the i-th row of the run of added rows right after it
    (the last one when more was removed than added); a removal with no added run after it is shown
    at the line that now follows the deletion.
    """
    rows = hunk.lines
    out = [0] * len(rows)
    following = hunk.new_start if hunk.new_len > 0 else hunk.new_start + 1
    i = 0
    while i < len(rows):
        number = rows[i].new_no
        if rows[i].kind != "-" and number is not None:
            out[i] = number
            following = number + 1
            i += 1
            continue
        j = i
        while j < len(rows) and rows[j].kind == "-":
            j += 1
        replacing = []
        for row in rows[j:]:
            if row.kind != "+" or row.new_no is None:
                break
            replacing.append(row.new_no)
        for n in range(i, max(j, i + 1)):
            out[n] = replacing[min(n - i, len(replacing) - 1)] if replacing else following
        i = max(j, i + 1)
    return out
