"""Anchoring: map a comment's quoted `existing_code` to lines of the reviewed (new) file.

Stages (DESIGN.md section 3): the hunks' new side, the hunks' old side (quoted deleted code, shown
where it was), then the whole new file. Matching is exact after whitespace removal; what differs
between attempts is only how the snippet is read (literal, without `N|` prefixes, without diff
markers, `...` as skipped lines, first/last line cut short), most literal first. When the snippet
occurs several times the occurrence touching added lines wins, then one inside a hunk, then the
one nearest a change. A snippet made only of trivial lines (braces, `end`, `pass`) anchors only when
it is unambiguous. The model-side re-location and the unanchored fallback live in the agent.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from ocr_hook.changes.model import Hunk, shown_lines
from ocr_hook.findings.normalise import (
    Form,
    Pattern,
    Segment,
    exact_pattern,
    forms,
    gap_patterns,
    is_trivial,
    loose_patterns,
    norm_line,
    pattern_is_sound,
    pattern_is_trivial,
)

Stage = Literal["hunk_new", "hunk_old", "file"]
Side = Literal["new", "old"]

MAX_GAP = 200  # lines one `...` may stand for


class Anchor(NamedTuple):
    start_line: int  # 1-based line of the new file
    end_line: int
    stage: Stage
    side: Side  # "old": the quoted code was deleted; the range shows where it was


@dataclass(frozen=True, slots=True)
class _Space:
    """Non-blank lines of one searchable text, normalised, with where each one sits."""

    keys: tuple[str, ...]
    where: dict[str, list[int]]  # key -> indexes, ascending
    joined: str  # "\n" + "\n".join(keys) + "\n", for the rare scan by substring
    starts: tuple[int, ...]  # offset of each key inside `joined`
    group: tuple[int, ...]  # hunk number (old side, diff rows); 0 for the new file
    pos: tuple[int, ...]  # line number on its own side, for measuring `...` gaps
    new_line: tuple[int, ...]  # the new-file line this entry is shown at
    kind: tuple[str, ...]  # diff row kind ("+", "-", " "); " " for every line of the new file


@dataclass(frozen=True, slots=True)
class FileIndex:
    """Everything about one file that anchoring needs, computed once per file."""

    line_count: int
    new: _Space
    old: _Space  # context + removed lines of every hunk
    diff: _Space  # every hunk row in diff order, for snippets quoting removed and added lines
    added: tuple[int, ...]  # sorted new-file numbers of added lines
    hunk_ranges: tuple[tuple[int, int], ...]  # sorted new-side (first, last) of each hunk
    changes: tuple[int, ...]  # sorted lines where something changed (added or deletion point)


def _space(entries: Sequence[tuple[str, int, int, int, str]]) -> _Space:
    keys: list[str] = []
    where: dict[str, list[int]] = {}
    starts: list[int] = []
    group: list[int] = []
    pos: list[int] = []
    new_line: list[int] = []
    kind: list[str] = []
    offset = 1
    for text, grp, own, shown, row_kind in entries:
        key = norm_line(text)
        if not key:
            continue
        where.setdefault(key, []).append(len(keys))
        keys.append(key)
        starts.append(offset)
        offset += len(key) + 1
        group.append(grp)
        pos.append(own)
        new_line.append(shown)
        kind.append(row_kind)
    joined = "\n" + "\n".join(keys) + "\n" if keys else "\n"
    return _Space(tuple(keys), where, joined, tuple(starts), tuple(group), tuple(pos), tuple(new_line), tuple(kind))


def prepare(new_text: str, hunks: Sequence[Hunk]) -> FileIndex:
    """Index one reviewed file and its hunks; reuse the result for every comment on the file."""
    lines = new_text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    count = len(lines)

    def clamp(line: int) -> int:
        return min(max(line, 1), max(count, 1))

    old_rows: list[tuple[str, int, int, int, str]] = []
    diff_rows: list[tuple[str, int, int, int, str]] = []
    added: list[int] = []
    changes: list[int] = []
    ranges: list[tuple[int, int]] = []
    for number, hunk in enumerate(hunks, start=1):
        if hunk.new_len > 0:
            ranges.append((hunk.new_start, hunk.new_start + hunk.new_len - 1))
        for row, (line, shown) in enumerate(zip(hunk.lines, shown_lines(hunk), strict=True)):
            shown = clamp(shown)
            if line.kind == "+" and line.new_no is not None:
                added.append(line.new_no)
                changes.append(line.new_no)
            elif line.kind == "-":
                changes.append(shown)
            if line.kind != "+":
                old_rows.append((line.text, number, line.old_no or 0, shown, line.kind))
            diff_rows.append((line.text, number, row, shown, line.kind))
    return FileIndex(
        line_count=count,
        new=_space([(text, 0, i, i, " ") for i, text in enumerate(lines, start=1)]),
        old=_space(old_rows),
        diff=_space(diff_rows),
        added=tuple(sorted(set(added))),
        hunk_ranges=tuple(sorted(ranges)),
        changes=tuple(sorted(set(changes))),
    )


# --- finding occurrences ------------------------------------------------------------------


def _line_fits(have: str, want: str, head: bool, tail: bool) -> bool:
    if head and tail:  # a one-line segment written as `...fragment...`: the model said so itself
        return want in have
    if head:
        return have.endswith(want)
    if tail:
        return have.startswith(want)
    return have == want


def _fits(space: _Space, seg: Segment, start: int) -> bool:
    m = len(seg.keys)
    if start < 0 or start + m > len(space.keys) or space.group[start] != space.group[start + m - 1]:
        return False
    return all(
        _line_fits(space.keys[start + j], key, j == 0 and seg.cut_first, j == m - 1 and seg.cut_last)
        for j, key in enumerate(seg.keys)
    )


def _find_all(text: str, needle: str) -> list[int]:
    hits: list[int] = []
    at = text.find(needle)
    while at >= 0:
        hits.append(at)
        at = text.find(needle, at + 1)
    return hits


def _scan(space: _Space, seg: Segment) -> list[int]:
    """Candidate starts for a segment with no whole line to look up (one or two cut lines)."""
    line_of = space.starts
    if len(seg.keys) == 2:
        needle = seg.keys[0] + "\n" + seg.keys[1]
        return [bisect_right(line_of, at) - 1 for at in _find_all(space.joined, needle)]
    key = seg.keys[0]
    if not seg.cut_first:  # the key is a line's head
        return [bisect_right(line_of, at + 1) - 1 for at in _find_all(space.joined, "\n" + key)]
    if not seg.cut_last:  # the key is a line's tail
        return [bisect_right(line_of, at) - 1 for at in _find_all(space.joined, key + "\n")]
    return sorted({bisect_right(line_of, at) - 1 for at in _find_all(space.joined, key)})


def _segment_starts(space: _Space, seg: Segment) -> list[int]:
    m = len(seg.keys)
    whole = [j for j in range(m) if not ((j == 0 and seg.cut_first) or (j == m - 1 and seg.cut_last))]
    if whole:
        pivot = min(whole, key=lambda j: len(space.where.get(seg.keys[j], ())))
        candidates = [at - pivot for at in space.where.get(seg.keys[pivot], ())]
    else:
        candidates = _scan(space, seg)
    return [start for start in candidates if _fits(space, seg, start)]


def _occurrences(space: _Space, pattern: Pattern) -> list[tuple[int, int]]:
    """(first, last) indexes of every match. Across a `...` gap the nearest fitting segment is
    taken, and of several starts reaching the same end the nearest one: `...` reads as a window.
    When the segment that could be another copy is made of trivial lines only (`}`, `)`, `else:`),
    the nearest copy is a guess rather than a reading, and the whole reading is refused."""
    per_segment = []
    for seg in pattern:
        starts = _segment_starts(space, seg)
        if not starts:
            return []
        per_segment.append(starts)
    found: dict[int, int] = {}
    for first in per_segment[0]:
        last = first + len(pattern[0].keys) - 1
        for seg, starts in zip(pattern[1:], per_segment[1:], strict=True):
            fits = _following(space, starts, last)
            if not fits:
                break
            if len(fits) > 1 and _segment_is_trivial(seg):
                raise _Refused
            last = fits[0] + len(seg.keys) - 1
        else:
            if last in found and _segment_is_trivial(pattern[0]):
                raise _Refused
            found[last] = first  # starts ascend: a later start makes the shorter window
    return sorted((first, last) for last, first in found.items())


def _segment_is_trivial(seg: Segment) -> bool:
    return all(is_trivial(key) for key in seg.keys)


def _following(space: _Space, starts: list[int], last: int) -> list[int]:
    """Starts of a segment that may come after index `last` across one `...` (at most two)."""
    out = []
    for start in starts[bisect_right(starts, last) :]:
        if space.group[start] != space.group[last] or space.pos[start] - space.pos[last] - 1 > MAX_GAP:
            break
        out.append(start)
        if len(out) == 2:
            break
    return out


# --- choosing among occurrences -----------------------------------------------------------


class _Candidate(NamedTuple):
    rank: tuple[int, float, int]
    start: int
    end: int
    text: str


def _count_in(sorted_lines: tuple[int, ...], start: int, end: int) -> int:
    return bisect_right(sorted_lines, end) - bisect_left(sorted_lines, start)


def _distance(index: FileIndex, start: int, end: int) -> int:
    changes = index.changes
    if not changes:
        return 0
    i = bisect_left(changes, start)
    if i < len(changes) and changes[i] <= end:
        return 0
    best = changes[i] - end if i < len(changes) else 1 << 30
    return min(best, start - changes[i - 1]) if i > 0 else best


def _in_hunk(index: FileIndex, start: int, end: int) -> bool:
    ranges = index.hunk_ranges
    i = bisect_right(ranges, (end, 1 << 30)) - 1
    return i >= 0 and ranges[i][1] >= start


def _new_candidates(index: FileIndex, occ: list[tuple[int, int]], hint: int | None) -> list[_Candidate]:
    space = index.new
    out = []
    for first, last in occ:
        start, end = space.new_line[first], space.new_line[last]
        added = _count_in(index.added, start, end)
        if hint is not None and start == hint:
            rank = (-1, 0.0, start)
        elif added:
            rank = (0, -added / (end - start + 1), start)
        else:
            rank = (1 if _in_hunk(index, start, end) else 2, float(_distance(index, start, end)), start)
        out.append(_Candidate(rank, start, end, "\n".join(space.keys[first : last + 1])))
    return sorted(out)


def _side_candidates(space: _Space, occ: list[tuple[int, int]], needs: str) -> list[_Candidate]:
    """Candidates on the old side or among diff rows; a match there must contain a row of each kind
    in `needs` (otherwise it is a new-file match seen again: context lines are on both sides)."""
    out = []
    for first, last in occ:
        kinds = set(space.kind[first : last + 1])
        if not all(k in kinds for k in needs):
            continue
        start = space.new_line[first]
        end = max(start, space.new_line[last])
        out.append(_Candidate((0, 0.0, first), start, end, "\n".join(space.keys[first : last + 1])))
    return sorted(out)


class _Refused(Exception):
    """Occurrences exist but none can be chosen safely: stop, do not try looser readings."""


def _check_loose(candidates: list[_Candidate]) -> None:
    """A loose reading (cut line, `...` gap) that fits different code at different places proves
    nothing: which one the model meant is a guess, and a wrong anchor is worse than none."""
    if len({c.text for c in candidates}) > 1 and len({(c.start, c.end) for c in candidates}) > 1:
        raise _Refused


def _at_hint(index: FileIndex, best: _Candidate) -> Anchor:
    return Anchor(best.start, best.end, "hunk_new" if _in_hunk(index, best.start, best.end) else "file", "new")


def _trivial_choice(index: FileIndex, new: list[_Candidate], old: list[_Candidate]) -> Anchor:
    if new and new[0].rank[0] < 0:  # `N|` numbers say which copy
        return _at_hint(index, new[0])
    if len(new) + len(old) == 1:
        if new:
            stage: Stage = "hunk_new" if new[0].rank[0] <= 1 else "file"
            return Anchor(new[0].start, new[0].end, stage, "new")
        return Anchor(old[0].start, old[0].end, "hunk_old", "old")
    inside = [c for c in new if _count_in(index.added, c.start, c.end) == c.end - c.start + 1]
    if len(inside) == 1:
        return Anchor(inside[0].start, inside[0].end, "hunk_new", "new")
    raise _Refused


def _resolve(index: FileIndex, patterns: Sequence[Pattern], form: Form, strict: bool) -> Anchor | None:
    """Choose among every place where any of `patterns` (readings of one form) fits."""
    side = form.side
    new: list[_Candidate] = []
    old: list[_Candidate] = []
    rows: list[_Candidate] = []
    for pattern in patterns:
        new_occ = _occurrences(index.new, pattern) if side in ("any", "new") else []
        old_occ = _occurrences(index.old, pattern) if side in ("any", "old") else []
        new_here = _new_candidates(index, new_occ, form.start_hint)
        old_here = _side_candidates(index.old, old_occ, "-")
        if pattern_is_trivial(pattern):
            return _trivial_choice(index, new_here, old_here) if new_here or old_here else None
        if side == "diff" or (side == "any" and (not strict or not (new_here or old_here))):
            rows += _side_candidates(index.diff, _occurrences(index.diff, pattern), "+-")
        new += new_here
        old += old_here
    new.sort()
    old.sort()
    rows.sort()
    if new and new[0].rank[0] < 0:  # the `N|` numbers the model copied point right at it
        return _at_hint(index, new[0])
    if not strict:
        _check_loose(new + old + rows)
    if new and new[0].rank[0] <= 1:
        return Anchor(new[0].start, new[0].end, "hunk_new", "new")
    if old:
        return Anchor(old[0].start, old[0].end, "hunk_old", "old")
    if new:
        return Anchor(new[0].start, new[0].end, "file", "new")
    if rows:
        return Anchor(rows[0].start, rows[0].end, "hunk_new", "new")
    return None


def _readings(form: Form) -> list[tuple[int, list[Pattern]]]:
    """(tier, patterns tried together): 0 the literal lines; 1 `...` read as skipped lines (each
    reading on its own, most literal first); 2 the first/last line cut short, every way at once,
    so that a fragment fitting a line's head here and another line's tail there is seen as such."""
    exact = exact_pattern(form)
    gapped = gap_patterns(form)
    loose = [p for p in loose_patterns(gapped[-1] if gapped else exact) if pattern_is_sound(p)]
    out: list[tuple[int, list[Pattern]]] = [(0, [exact]), *((1, [p]) for p in gapped)]
    return [*out, (2, loose)] if loose else out


def anchor_prepared(snippet: str, index: FileIndex) -> Anchor | None:
    """Anchor `snippet` in a file indexed by `prepare`; None when no exact reading matches."""
    readings = [
        (tier, order, form, patterns) for order, form in enumerate(forms(snippet)) for tier, patterns in _readings(form)
    ]
    readings.sort(key=lambda r: (r[0], r[1]))
    try:
        for tier, _, form, patterns in readings:
            patterns = [p for p in patterns if pattern_is_sound(p)]
            found = _resolve(index, patterns, form, strict=tier == 0) if patterns else None
            if found is not None:
                return found
    except _Refused:
        return None
    return None


def anchor(snippet: str, hunks: Sequence[Hunk], new_text: str) -> Anchor | None:
    """Map quoted code to new-file lines: hunks' new side, hunks' old side, whole file, or None."""
    return anchor_prepared(snippet, prepare(new_text, hunks))
