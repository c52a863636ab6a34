"""`--filter-mode`: which anchored findings are reported, with reviewdog's meanings.

  added         the finding's lines overlap an added line
  diff_context  they overlap a hunk's new side (added or context lines), or the spot where lines
                were deleted (a finding about deleted code is shown there)
  file          anything in a changed file
  nofilter      everything

Unanchored findings (start line 0) are kept in every mode: the review found a real issue in a
changed file but could not say where, and dropping it would hide it. The caller reports how many
findings a mode dropped; nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ocr_hook.changes.model import FileChange, shown_lines
from ocr_hook.findings import Finding

FILTER_MODES = ("added", "diff_context", "file", "nofilter")


def _overlaps(start: int, end: int, lines: Iterable[int]) -> bool:
    return any(start <= n <= end for n in lines)


def _added_lines(change: FileChange) -> list[int]:
    return [ln.new_no for h in change.hunks for ln in h.lines if ln.kind == "+" and ln.new_no is not None]


def _deletion_points(change: FileChange) -> list[int]:
    """New-file lines at which deleted lines are shown (see changes.model.shown_lines)."""
    return [
        shown
        for hunk in change.hunks
        for line, shown in zip(hunk.lines, shown_lines(hunk), strict=True)
        if line.kind == "-"
    ]


def _in_hunks(change: FileChange, start: int, end: int) -> bool:
    for hunk in change.hunks:
        if hunk.new_len > 0 and start <= hunk.new_start + hunk.new_len - 1 and end >= hunk.new_start:
            return True
    return _overlaps(start, end, _deletion_points(change))


def keep_finding(finding_start: int, finding_end: int, anchored: bool, change: FileChange, mode: str) -> bool:
    """True when a finding on `change` at lines finding_start..finding_end survives `mode`."""
    if mode not in FILTER_MODES:
        raise ValueError(f"unknown filter mode {mode!r}; expected one of {', '.join(FILTER_MODES)}")
    if mode in ("file", "nofilter") or not anchored or finding_start <= 0:
        return True
    end = max(finding_start, finding_end)
    if mode == "added":
        return _overlaps(finding_start, end, _added_lines(change))
    return _in_hunks(change, finding_start, end)


def apply(
    findings: Iterable[Finding], changes_by_path: Mapping[str, FileChange], mode: str
) -> tuple[list[Finding], int]:
    """(kept findings in their order, how many were dropped). A finding on a file that is not in
    the change set is kept only by `nofilter`."""
    kept: list[Finding] = []
    dropped = 0
    for finding in findings:
        change = changes_by_path.get(finding.path)
        if change is None:
            keep = mode == "nofilter"
            if mode not in FILTER_MODES:
                raise ValueError(f"unknown filter mode {mode!r}; expected one of {', '.join(FILTER_MODES)}")
        else:
            keep = keep_finding(finding.start_line, finding.end_line, finding.anchored, change, mode)
        if keep:
            kept.append(finding)
        else:
            dropped += 1
    return kept, dropped
