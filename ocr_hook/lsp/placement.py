"""Where a reviewed finding belongs in the text an editor holds now, or that it no longer belongs anywhere.

Pure. A finding is shown only where its lines are still the lines it was raised on: the text as reviewed is
diffed with today's (review memory's interdiff, ocr_hook.findings.memory) and a finding whose lines were
changed, removed or split is held back, never shown on a guessed line. Its fix is offered only on the very
text it was computed on, as `ocr-hook apply` does (the file's digest as review memory records it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from ocr_hook.findings import Finding


class Shown(NamedTuple):
    """A finding at today's lines (1-based, inclusive); `fixable`: the text is the reviewed text and the
    finding has a fix."""

    finding: Finding
    start_line: int
    end_line: int
    fixable: bool


class Placement(NamedTuple):
    shown: list[Shown]
    stale: list[Finding]  # on lines changed since the review: not shown
    unchanged: bool  # the text is the one reviewed


def place(findings: Iterable[Finding], reviewed: str | None, reviewed_digest: str | None, now: str) -> Placement:
    """`reviewed`: the text as the review read it (memory keeps it with secrets masked; a masked line then
    counts as changed, which only ever hides a finding). `reviewed_digest`: memory's source_digest of the exact
    text, when known."""
    from ocr_hook.store.memory import source_digest

    items = list(findings)
    if reviewed_digest is not None and source_digest(now) == reviewed_digest:
        return Placement([Shown(f, *_lines(f), f.fix is not None and f.anchored) for f in items], [], True)
    if reviewed is not None and reviewed == now:  # a report's text read from git: no digest needed
        return Placement([Shown(f, *_lines(f), f.fix is not None and f.anchored) for f in items], [], True)
    shown: list[Shown] = []
    stale: list[Finding] = []
    diff = None
    if reviewed is not None:
        from ocr_hook.findings.memory import Interdiff

        # Editors may hand over a CRLF file with LF line breaks: a line break is not a change of the line.
        diff = Interdiff.between(reviewed.replace("\r\n", "\n"), now.replace("\r\n", "\n"))
    for f in items:
        if not f.anchored or f.start_line < 1:
            shown.append(Shown(f, 1, 1, False))  # about the whole file: no lines to go stale
            continue
        if diff is None or diff.touches_old(f.start_line, f.end_line):
            stale.append(f)
            continue
        start, end = diff.map_old_line(f.start_line), diff.map_old_line(f.end_line)
        if start is None or end is None:
            stale.append(f)
        else:
            shown.append(Shown(f, start, end, False))
    return Placement(shown, stale, False)


def _lines(f: Finding) -> tuple[int, int]:
    return (f.start_line, f.end_line) if f.anchored and f.start_line >= 1 else (1, 1)


class LineEdit(NamedTuple):
    """Lines `start`..`end` (0-based; `end` exclusive) of the text replaced by `text`."""

    start: int
    end: int
    text: str


def fix_edit(finding: Finding, reviewed_text: str) -> LineEdit | str:
    """The fix of `finding` as one whole-line edit of the reviewed text, made exactly as `ocr-hook apply` makes
    it (the patch it applies, ocr_hook.reports.patch, with its refusals); a refusal: the reason, one line."""
    from ocr_hook.findings.fixes import apply_fixes, settle, split_keeping_ends
    from ocr_hook.reports.patch import build_patch

    settled = settle([finding])[0]
    if settled.fix is None:
        return f"finding {finding.fingerprint[:8]} has no suggested fix to apply"
    patch, notes = build_patch([settled], {settled.path: reviewed_text})
    if notes or not patch:
        return notes[0] if notes else "the fix changes nothing"
    fix = settled.fix
    old, new = split_keeping_ends(reviewed_text), split_keeping_ends(apply_fixes(reviewed_text, [fix]))
    tail = len(old) - fix.end_line
    return LineEdit(fix.start_line - 1, fix.end_line, "".join(new[fix.start_line - 1:len(new) - tail]))


def overlapping(shown: Sequence[Shown], first: int, last: int) -> list[Shown]:
    """The shown findings on any of lines `first`..`last` (1-based, inclusive)."""
    return [s for s in shown if s.start_line <= last and first <= s.end_line]
