"""A file's lines as `N|text` (the file_read tool's format): all of it when short, else windows around
the hunks. The first main-loop message and re-location both show the model a file this way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

# The file's own text as the first main-loop message shows it (DESIGN.md section 8), and the review filter
# sees it: whole up to this many lines, else windows around each hunk.
OPENING_WHOLE_LINES = 600
OPENING_WINDOW = 40
OPENING_MAX_LINES = 2_000
OPENING_MAX_CHARS = 120_000


class _Hunk(Protocol):
    new_start: int
    new_len: int


def file_lines(text: str) -> list[str]:
    """Only "\\n" ends a line, as for git and the diff's line numbers."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def shown_ranges(total: int, hunks: Sequence[_Hunk], *, whole_up_to: int, window: int) -> list[tuple[int, int]]:
    """The 1-based inclusive line ranges to show: the whole file, or each hunk ± `window`, merged."""
    if total <= whole_up_to:
        return [(1, total)] if total else []
    keep: list[tuple[int, int]] = []
    for hunk in sorted(hunks, key=lambda h: h.new_start):
        first = max(1, hunk.new_start - window)
        last = min(total, hunk.new_start + max(hunk.new_len, 1) - 1 + window)
        if first > last:
            continue
        if keep and first <= keep[-1][1] + 1:
            keep[-1] = (keep[-1][0], max(keep[-1][1], last))
        else:
            keep.append((first, last))
    return keep


def numbered_excerpt(text: str, hunks: Sequence[_Hunk], *, whole_up_to: int, window: int, max_lines: int,
                     max_line_chars: int | None = None, max_chars: int | None = None) -> str:
    """The shown ranges as `N|text` lines, "…" between windows and where the caps cut."""
    lines = file_lines(text)
    out: list[str] = []
    shown = size = 0
    for first, last in shown_ranges(len(lines), hunks, whole_up_to=whole_up_to, window=window):
        if out:
            out.append("…")
        for number in range(first, last + 1):
            line = lines[number - 1]
            if max_line_chars is not None and len(line) > max_line_chars:
                line = f"{line[:max_line_chars]}… [line cut: {len(line) - max_line_chars} more characters]"
            row = f"{number}|{line}"
            if shown >= max_lines or (max_chars is not None and out and size + len(row) + 1 > max_chars):
                out.append("…")
                return "\n".join(out)
            out.append(row)
            shown += 1
            size += len(row) + 1
    return "\n".join(out)


def opening_excerpt(text: str, hunks: Sequence[_Hunk], max_line_chars: int) -> tuple[str, str]:
    """The file as a first message shows it, and how much of it that is (e.g. "all 120 lines")."""
    total = len(file_lines(text))
    shown = numbered_excerpt(text, hunks, whole_up_to=OPENING_WHOLE_LINES, window=OPENING_WINDOW,
                             max_lines=OPENING_MAX_LINES, max_line_chars=max_line_chars, max_chars=OPENING_MAX_CHARS)
    if total <= OPENING_WHOLE_LINES:
        return shown, f"all {total} lines"
    return shown, f"lines within {OPENING_WINDOW} of each change, of {total}; file_read shows the rest"


def repeats_new_file(status: str, shown: str, extent: str) -> bool:
    """Whether a new file's opening (opening_excerpt's answer) shows every line of it, none cut: its diff, all
    added lines, would then only repeat them, and a scan of new files paid for each file twice (issue 62.8).
    An ellipsis in the text itself counts as a cut: the diff is kept where that cannot be told apart."""
    return status == "added" and extent.startswith("all ") and "…" not in shown


def new_and_short(status: str, text: str) -> bool:
    """preview's estimate of repeats_new_file, without building the excerpt: a new file short enough to be
    shown whole."""
    return status == "added" and len(file_lines(text)) <= OPENING_WHOLE_LINES
