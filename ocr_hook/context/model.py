"""What the context pack's parts share (DESIGN.md section 12): the lookups a language module asks for (Want,
Follow), what it finds (Span), what it reads of a changed file (Analysis), the Language protocol, and the
Reader through which every builder sees the reviewed snapshot. Its own module, so the language modules and
pack.py import it rather than each other.
"""

from __future__ import annotations

import posixpath
import re
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ocr_hook.changes.snapshot_api import GrepResult, Snapshot
    from ocr_hook.settings import Settings

DEFINITION_LINES = 8  # signature plus docstring and first statements
CLASS_LINES = 12  # a class's entry may run this far to reach the end of its constructor's signature
MAX_SOURCE_BYTES = 400_000  # larger files are skipped as sources (generated, data, bundles)
MAX_AVERAGE_LINE = 300  # characters: minified or generated code
GREP_TIMEOUT_S = 3.0
PACK_SHARE = 0.2  # of --timeout: the most the run's packs may take together, so a review is left its time
MAX_PACK_S = 15.0
_TEST_PATH = re.compile(r"(^|/)(tests?|__tests__|spec|testdata|test_helpers)/|(^|/)test_[^/]*$|"
                        r"_test\.[^/]+$|\.(test|spec)\.[^/]+$|(^|/)conftest\.py$|Tests?\.[^/.]+$")


@dataclass(frozen=True, slots=True)
class Want:
    """A name used on added lines, to look for as `symbol` in the first of `paths` that defines it."""

    name: str
    symbol: str
    paths: tuple[str, ...]
    uses: int = 1


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Follow:
    """The file names the symbol without defining it (a re-export): look there instead."""

    symbol: str
    paths: tuple[str, ...]


@dataclass(slots=True)
class Analysis:
    wants: list[Want] = field(default_factory=list)
    signatures: list[str] = field(default_factory=list)  # functions whose signature line was added


class Language(Protocol):
    name: str
    extensions: tuple[str, ...]  # the files its callers and definitions live in (for grep pathspecs)

    def analyse(self, path: str, text: str, added: frozenset[int], reader: Reader) -> Analysis | None: ...

    def find(self, path: str, text: str, symbol: str, reader: Reader) -> Span | Follow | None: ...


class Reader:
    """The reviewed snapshot as the pack may see it: sensitive files never, huge or generated ones not."""

    def __init__(self, snapshot: Snapshot, settings: Settings) -> None:
        from ocr_hook import config_files

        self.snapshot = snapshot
        self.settings = settings
        selection = config_files.read_yaml("selection.yaml")
        self._markers = tuple(selection["generated_markers"])
        # Vendored, built, minified and generated paths by name (selection's default skips, lock files
        # aside; a user's `!dist/` in exclude re-includes as it does for review).
        from ocr_hook.changes.globs import GitIgnoreGlobs

        skip = [p for label, patterns in selection["default_skip"].items() if label != "lock file" for p in patterns]
        # The user's exclude patterns in full: a file kept out of the review is kept out of every pack too.
        self._skip = GitIgnoreGlobs([*skip, *settings.exclude])
        self._marker_lines = int(selection["marker_lines"])
        self._paths: tuple[str, ...] | None = None
        self._path_set: frozenset[str] | None = None
        self._texts: dict[str, str | None] = {}
        self.memo: dict[object, object] = {}  # per-language parse results, keyed by the language's own keys
        # The run's packs share one deadline, inside the review's own: past it, no more is looked up.
        self.deadline = time.monotonic() + min(MAX_PACK_S, settings.timeout * PACK_SHARE)

    def expired(self) -> bool:
        """Whether the packs' time is up; a pack cut short by it is degraded (not memoised)."""
        if time.monotonic() < self.deadline:
            return False
        self.memo["degraded"] = True
        return True

    def paths(self) -> tuple[str, ...]:
        if self._paths is None:
            self._paths = self.snapshot.paths()
        return self._paths

    def exists(self, path: str) -> bool:
        if self._path_set is None:
            self._path_set = frozenset(self.paths())
        return path in self._path_set

    def hidden(self, path: str) -> bool:
        from ocr_hook.changes.selection import is_sensitive

        return is_sensitive(path, self.settings)

    def text(self, path: str) -> str | None:
        """The file's text, or None when it is absent, sensitive, binary, huge or generated."""
        if path in self._texts:
            return self._texts[path]
        found: str | None = None
        if self.exists(path) and not self.hidden(path) and not self._skip.check_file(path).include \
                and not self.snapshot.is_symlink(path):
            data = self.snapshot.read_bytes(path)
            if data is not None and len(data) <= MAX_SOURCE_BYTES and b"\0" not in data[:8192]:
                text = data.decode("utf-8", "surrogateescape")
                if not self._generated(text):
                    found = text
        self._texts[path] = found
        return found

    def grep(self, pattern: str, specs: tuple[str, ...], max_per_file: int) -> GrepResult:
        """A bounded Perl-regexp `git grep` over the snapshot. One that fails (timed out, git failed) marks the
        run's packs as degraded: another run may find what this one missed, so they are not memoised."""
        from ocr_hook.changes.snapshot_api import GrepResult

        left = self.deadline - time.monotonic()
        if left <= 0.05:
            self.memo["degraded"] = True
            return GrepResult((), (), "the context pack's time was up")
        result = self.snapshot.grep(pattern, specs, ignore_case=False, perl_regexp=True, max_per_file=max_per_file,
                                    timeout_s=min(GREP_TIMEOUT_S, left))
        if result.error is not None:
            self.memo["degraded"] = True
        return result

    def _generated(self, text: str) -> bool:
        head = text.split("\n", self._marker_lines)[: self._marker_lines]
        if any(marker in line for line in head for marker in self._markers):
            return True
        lines = text.count("\n") + 1
        return len(text) > 20_000 and len(text) / lines > MAX_AVERAGE_LINE


_READERS: weakref.WeakKeyDictionary[Any, Reader] = weakref.WeakKeyDictionary()
_READERS_LOCK = threading.Lock()


def reader_for(snapshot: Snapshot, settings: Settings) -> Reader:
    """One Reader per snapshot (and settings) for the whole run: the files of a change set share their
    imports' parses, the listing and its indexes."""
    with _READERS_LOCK:
        reader = _READERS.get(snapshot)
        if reader is None or reader.settings is not settings:
            reader = Reader(snapshot, settings)
            try:
                _READERS[snapshot] = reader
            except TypeError:  # a snapshot that cannot be weakly referenced: a reader per file
                pass
        return reader


def degraded(snapshot: Snapshot, settings: Settings) -> bool:
    """Whether a search for the packs of this snapshot failed (see pack._settled_calls): such packs are not memoised."""
    return bool(reader_for(snapshot, settings).memo.get("degraded"))


def file_lines(text: str) -> list[str]:
    """Only "\\n" ends a line, as for git and the diff's line numbers (the same rule as file_read)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def distance(own: str, other: str) -> int:
    """Directory steps between two files: the nearest entries come first."""
    a, b = posixpath.dirname(own).split("/"), posixpath.dirname(other).split("/")
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    return (len(a) - common) + (len(b) - common)
