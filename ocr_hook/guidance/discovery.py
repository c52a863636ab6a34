"""Guidance files for a reviewed path, read from the trusted revision's snapshot.

For `a/b/c.py` the candidates are, in this order, `REVIEW.md`, `AGENTS.md`, `CLAUDE.md` (as the
settings name them) in the root, then in `a/`, then in `a/b/`: root first, nearest last. A file is
never read when its path is sensitive (the file selection's rules apply to guidance too) or when it
is a symbolic link; binary or undecodable content is refused after reading and never sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ocr_hook.changes.selection import is_sensitive
from ocr_hook.changes.snapshot_api import Snapshot
from ocr_hook.settings import Settings

FILE_CAP_BYTES = 16 * 1024  # one guidance file
PER_REVIEWED_FILE_CAP_BYTES = 48 * 1024  # all guidance of one reviewed file


class GuidanceText(NamedTuple):
    source: str  # the guidance file's path, or a rule's label
    kind: str  # "review" | "context" | "rule"
    revision: str | None  # the commit it was read at; None for inline rule text (from the settings)
    text: str  # as it is sent (possibly cut)
    size: int  # bytes before any cut

    @property
    def cut(self) -> bool:
        return len(self.text.encode("utf-8")) < self.size


def ancestor_dirs(path: str) -> list[str]:
    """'' (the root), then each directory above `path`, nearest last."""
    parts = path.split("/")[:-1]
    return [""] + ["/".join(parts[: i + 1]) for i in range(len(parts))]


def cut_to(text: str, limit: int) -> str:
    """At most `limit` UTF-8 bytes of `text`, ending at a line break when one is near the end."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    head = data[:limit].decode("utf-8", "ignore")
    newline = head.rfind("\n")
    return head[: newline + 1] if newline >= len(head) // 2 else head


class GuidanceReader:
    """Reads each guidance path of the trusted snapshot at most once; collects notes on refusals and cuts."""

    def __init__(self, snapshot: Snapshot | None, revision: str | None, settings: Settings) -> None:
        self.snapshot = snapshot
        self.revision = revision
        self.settings = settings
        self._present = frozenset(snapshot.paths()) if snapshot is not None else frozenset()
        self._read: dict[str, GuidanceText | None] = {}
        self.notes: list[str] = []
        self.refused: dict[str, str] = {}  # path → why it was not read

    def exists(self, path: str) -> bool:
        return path in self._present

    def read(self, path: str, kind: str) -> GuidanceText | None:
        """The file's guidance text (cut to FILE_CAP_BYTES), or None when absent or refused."""
        if path not in self._read:
            self._read[path] = self._load(path, kind)
        item = self._read[path]
        # One file may serve as REVIEW.md for some paths and as a rule's instructions_file for others:
        # each use keeps its own kind (how it is labelled and what the cap keeps first).
        return item if item is None or item.kind == kind else item._replace(kind=kind)

    def _load(self, path: str, kind: str) -> GuidanceText | None:
        if self.snapshot is None or path not in self._present:
            return None
        at = f"at {self.revision[:12]}" if self.revision else ""
        if is_sensitive(path, self.settings):
            return self._refuse(path, f"guidance file {path} {at} not read: its path is sensitive, so it never "
                                      "leaves the machine")
        if self.snapshot.is_symlink(path):
            return self._refuse(path, f"guidance file {path} {at} not read: it is a symbolic link")
        data = self.snapshot.read_bytes(path)
        if data is None:
            return None
        if b"\0" in data:
            return self._refuse(path, f"guidance file {path} {at} not used: binary content")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return self._refuse(path, f"guidance file {path} {at} not used: not UTF-8 text")
        if not text.strip():
            return None
        sent = cut_to(text, FILE_CAP_BYTES)
        if sent != text:
            self.notes.append(f"guidance file {path} {at} is {len(data):,} bytes: cut to its first "
                              f"{len(sent.encode('utf-8')):,} (16 KiB per guidance file)")
        return GuidanceText(path, kind, self.revision, sent, len(data))

    def _refuse(self, path: str, note: str) -> None:
        self.refused[path] = note
        self.notes.append(note)
        return None

    def files_for(self, path: str, review_files: Sequence[str], context_files: Sequence[str]) -> list[GuidanceText]:
        """The guidance files that apply to `path`: root first, nearest last; per directory the review
        files, then the context files."""
        found: list[GuidanceText] = []
        for directory in ancestor_dirs(path):
            prefix = f"{directory}/" if directory else ""
            for names, kind in ((review_files, "review"), (context_files, "context")):
                for name in names:
                    item = self.read(prefix + name, kind)
                    if item is not None:
                        found.append(item)
        return found
