"""The interface every review tool reads the reviewed snapshot through.

The implementation (`snapshot.py`) serves the index in staged mode and the target commit
otherwise; tools never touch the working tree.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol


class GrepHit(NamedTuple):
    path: str
    line_no: int  # 1-based
    text: str


class GrepResult(NamedTuple):
    hits: tuple[GrepHit, ...]
    truncated_files: tuple[str, ...]  # files whose hits were cut at the per-file cap
    error: str | None  # git's complaint (bad regexp, bad pathspec), worded for the model
    too_large: tuple[str, ...] = ()  # files not searched: over the cap (git would load each whole)


class Snapshot(Protocol):
    def read_bytes(self, path: str) -> bytes | None:
        """The blob at `path` in the snapshot; None when there is no regular file there."""

    def oversize(self, path: str) -> int | None:
        """The size of the file at `path` when read_bytes refused it for being over the cap; else None."""

    def read_text(self, path: str) -> str | None:
        """`read_bytes` decoded as UTF-8 with surrogateescape; None when absent."""

    def is_symlink(self, path: str) -> bool:
        """True when `path` is a symbolic link in the snapshot (its blob is the link's target text)."""

    def paths(self) -> tuple[str, ...]:
        """Every file path in the snapshot (repo-relative, '/'-separated)."""

    def identity(self) -> str | None:
        """A text naming exactly this snapshot's content (e.g. a commit's object id), or None when it cannot:
        the pack memo is keyed on it, and an implementation without it simply gets no memo."""

    def grep(
        self,
        pattern: str,
        pathspecs: tuple[str, ...] = (),
        ignore_case: bool = True,
        perl_regexp: bool = False,
        max_per_file: int = 100,
        timeout_s: float = 10.0,
    ) -> GrepResult:
        """`git grep` over the snapshot (argument vector, `-e pattern`), respecting ignore rules."""

    def close(self) -> None: ...
