"""Progress on standard error: one updating status line on a terminal, one line per event otherwise.

Paths and details come from the repository under review, so they are untrusted: every control and
format character is shown escaped, never written raw (no terminal escape sequences, no fake lines), and
no line can act as a GitHub Actions workflow command (ocr_hook.ci_log).
Writing progress must never break a review: a closed or broken stream just ends the output.
"""

from __future__ import annotations

import os
import threading
from typing import TextIO

from ocr_hook.ci_log import neutralize_commands

KINDS = ("reviewing", "done", "cached", "skipped", "failed", "estimate")  # estimate: a run's, no path
_PERMANENT_WHEN_LIVE = ("skipped", "failed")
_PREFIX = "ocr-hook: "
_UNSAFE_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def sanitise(text: str) -> str:
    """Text safe to print on one line of a terminal or a CI log: control, format and unpaired surrogate
    characters escaped, workflow commands made inert."""
    return neutralize_commands(_escaped(text))


def _escaped(text: str) -> str:
    # Imported where used: a quiet run (a hook with -q) prints nothing and need not load it.
    import unicodedata

    out = []
    for char in text:
        if unicodedata.category(char) not in _UNSAFE_CATEGORIES and char != "\\":
            out.append(char)
            continue
        code = ord(char)
        if char == "\\":
            out.append("\\\\")
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    return "".join(out)


def _columns(char: str) -> int:
    import unicodedata

    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def fit(text: str, columns: int) -> str:
    """`text` cut to at most `columns` terminal columns (wide characters count two), with an ellipsis."""
    if sum(map(_columns, text)) <= columns:
        return text
    out, used = [], 0
    for char in text:
        width = _columns(char)
        if used + width > columns - 1:
            break
        out.append(char)
        used += width
    return "".join(out) + "…"


def _terminal_width(stream: TextIO) -> int:
    try:
        return max(20, os.get_terminal_size(stream.fileno()).columns)
    except (AttributeError, OSError, ValueError):
        return 80


class Progress:
    """Per-file progress events for one run. Thread-safe; does nothing when quiet."""

    def __init__(self, stream: TextIO, *, quiet: bool, live: bool, width: int | None = None) -> None:
        self._stream = stream
        self._quiet = quiet
        self._live = live
        self._width = width if width is not None else (_terminal_width(stream) if live else 0)
        self._lock = threading.Lock()
        self._active: dict[str, None] = {}  # files in review, in start order
        self._seen: set[str] = set()
        self._counts = dict.fromkeys(KINDS, 0)
        self._status_len = 0
        self._closed = False

    def event(self, path: str, kind: str, detail: str = "") -> None:
        """One file changed state: reviewing, done (detail e.g. "3 comments"), cached, skipped, failed."""
        if kind not in KINDS:
            raise ValueError(f"unknown progress kind {kind!r}; expected one of {', '.join(KINDS)}")
        if self._quiet:
            return
        from ocr_hook.changes.names import shown

        quoted = shown(path)  # a name that is not UTF-8 as git shows it: printable ASCII already
        shown_path, shown_detail = (sanitise(path) if quoted == path else quoted), sanitise(detail)
        with self._lock:
            if self._closed:
                return
            if kind == "estimate":  # about the run, not a file: one permanent line
                self._write(self._clear() + f"{_PREFIX}{shown_detail}\n")
                self._status_len = 0
                return
            self._seen.add(path)
            if kind == "reviewing":
                self._active[path] = None
            else:
                self._active.pop(path, None)
                self._counts[kind] += 1
            line = f"{_PREFIX}{kind} {shown_path}" + (f" ({shown_detail})" if shown_detail else "")
            if not self._live:
                self._write(line + "\n")
                return
            if kind in _PERMANENT_WHEN_LIVE:
                self._write(self._clear() + line + "\n")
                self._status_len = 0
            self._draw_status()

    @property
    def quiet(self) -> bool:
        """True with -q: nothing is printed, not even the closing lines."""
        return self._quiet

    def finish(self, *lines: str) -> None:
        """Clear the status line and print the closing lines; later events are ignored."""
        if self._quiet:
            return
        with self._lock:
            if self._closed:
                return
            self._write(self._clear() + "".join(sanitise(line) + "\n" for line in lines))
            self._status_len = 0
            self._closed = True

    # --- internals (call with the lock held) -----------------------------------------------------

    def _status(self) -> str:
        finished = sum(self._counts[k] for k in ("done", "cached", "skipped", "failed"))
        parts = [f"{finished}/{len(self._seen)} files"]
        parts += [f"{self._counts[k]} {k}" for k in ("cached", "failed") if self._counts[k]]
        if self._active:
            latest = sanitise(next(reversed(self._active)))
            parts.append(f"reviewing {len(self._active)}: {latest}")
        return _PREFIX + " · ".join(parts)

    def _draw_status(self) -> None:
        status = fit(self._status(), self._width - 1)  # the last column makes some terminals wrap
        shown = sum(map(_columns, status))
        padding = " " * max(0, self._status_len - shown)
        self._write("\r" + status + padding)
        self._status_len = shown

    def _clear(self) -> str:
        return "\r" + " " * self._status_len + "\r" if self._status_len else ""

    def _write(self, text: str) -> None:
        try:
            try:
                self._stream.write(text)
            except UnicodeEncodeError:
                encoding = getattr(self._stream, "encoding", None) or "ascii"
                self._stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
            self._stream.flush()
        except (OSError, ValueError):  # closed pipe or stream: stop writing, keep reviewing
            self._closed = True

