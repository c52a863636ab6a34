"""Review memory (DESIGN.md section 7): a re-review after a fix is a review of what changed since.

Pure: given what was remembered of a file's last review (its content as reviewed and its findings) and
the file's content now, `plan_memory` computes the interdiff (difflib's line diff from the remembered
content to today's), carries the findings on untouched lines to today's line numbers without a
request, and names the findings on touched lines that the model must re-check. After the review,
`classify` gives each of the review's findings its status:

* re-reported earlier finding (same fingerprint, or overlapping lines and the same category) → carried
  (an earlier late finding stays late);
* earlier finding to re-check that was not re-reported → resolved;
* new comment on lines the interdiff touched (or unanchored) → new;
* new comment on untouched lines, matching no earlier finding → late (advisory unless
  `late_findings: block`).

Line numbers are 1-based and inclusive, like Finding's; lines are split on "\n" as git counts them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ocr_hook.digest import sha256_hex
from ocr_hook.findings.model import Finding, all_fingerprints

Opcode = tuple[str, int, int, int, int]


def content_hash(text: str) -> str:
    return sha256_hex(text.encode("utf-8", "surrogateescape"))


def split_lines(text: str) -> list[str]:
    """The file's lines as git numbers them (a final line break ends the last line, it adds none)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class Remembered(NamedTuple):
    """One file as its last complete review saw it."""

    path: str
    content: str  # the text as sent to the model (secrets masked)
    context: Mapping[str, str]  # the result-cache key's parts other than the file (models, prompts, ...)
    findings: tuple[Finding, ...]
    at: float = 0.0  # when it was recorded (seconds since the epoch)

    @property
    def sha(self) -> str:
        return content_hash(self.content)


class Interdiff(NamedTuple):
    """The line diff from the remembered content (old) to today's (new), as difflib opcodes."""

    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    opcodes: tuple[Opcode, ...]

    @classmethod
    def between(cls, old: str, new: str) -> Interdiff:
        a, b = split_lines(old), split_lines(new)
        # autojunk off: in a long file, frequent lines (blank, "}") must still match as themselves.
        import difflib  # here: a run whose files all come from the result cache plans no re-review

        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        return cls(tuple(a), tuple(b), tuple(matcher.get_opcodes()))

    @property
    def changed(self) -> bool:
        return any(tag != "equal" for tag, *_ in self.opcodes)

    def _edits(self) -> list[Opcode]:
        return [op for op in self.opcodes if op[0] != "equal"]

    def touches_old(self, start: int, end: int) -> bool:
        """Whether old lines start..end were changed, removed, or had lines inserted between them."""
        for _tag, i1, i2, _j1, _j2 in self._edits():
            if i1 == i2:  # an insertion before old line i1 + 1
                if start < i1 + 1 <= end:
                    return True
            elif i1 + 1 <= end and start <= i2:
                return True
        return False

    def map_old_line(self, line: int) -> int | None:
        """Today's number of an unchanged old line; None when it was changed or removed."""
        for tag, i1, i2, j1, _j2 in self.opcodes:
            if tag == "equal" and i1 < line <= i2:
                return j1 + (line - i1)
        return None

    def new_ranges(self) -> list[tuple[int, int]]:
        """Today's lines the interdiff touched: replaced and inserted lines, and for a removal the
        lines on either side of it (a comment about removed code anchors next to where it was)."""
        out = []
        for _tag, _i1, _i2, j1, j2 in self._edits():
            if j2 > j1:
                out.append((j1 + 1, j2))
            else:
                out.append((max(1, j1), max(1, j1 + 1)))
        return out

    def touches_new(self, start: int, end: int) -> bool:
        return any(s <= end and start <= e for s, e in self.new_ranges())

    def region_now(self, start: int, end: int) -> tuple[int, int]:
        """Where old lines start..end are today: the span of the new lines they became (their
        unchanged lines mapped, their changed lines' replacements, the neighbours of a removal)."""
        lows, highs = [], []
        for tag, i1, i2, j1, j2 in self.opcodes:
            if tag == "equal":
                lo, hi = max(start, i1 + 1), min(end, i2)
                if lo <= hi:
                    lows.append(j1 + (lo - i1))
                    highs.append(j1 + (hi - i1))
            elif (i1 == i2 and start < i1 + 1 <= end) or (i1 < i2 and i1 + 1 <= end and start <= i2):
                if j2 > j1:
                    lows.append(j1 + 1)
                    highs.append(j2)
                else:
                    lows.append(max(1, j1))
                    highs.append(max(1, j1 + 1))
        if not lows:
            return start, end
        return min(lows), max(highs)

    def unified(self, path: str, context: int = 3) -> str:
        """The interdiff as a unified diff, for the model."""
        import difflib

        lines = difflib.unified_diff(self.old_lines, self.new_lines, f"a/{path} (at the last review)",
                                     f"b/{path} (now)", n=context, lineterm="")
        return "\n".join(lines)


class MemoryPlan(NamedTuple):
    """What the re-review of one file starts from."""

    path: str
    interdiff: Interdiff
    carried: tuple[Finding, ...]  # on untouched lines: today's line numbers, status carried or late
    recheck: tuple[Finding, ...]  # on touched or removed lines, or unanchored: as remembered
    carried_ranges: tuple[tuple[int, int], ...] = ()  # today's lines of each carried one


def _carried_status(earlier: Finding) -> str:
    return "late" if earlier.status == "late" else "carried"


def plan_memory(remembered: Remembered, content: str) -> MemoryPlan:
    """Split the remembered findings into carried (mapped to today's lines) and to-be-re-checked."""
    diff = Interdiff.between(remembered.content, content)
    carried: list[Finding] = []
    ranges: list[tuple[int, int]] = []
    recheck: list[Finding] = []
    for f in remembered.findings:
        if not f.anchored or f.start_line < 1 or diff.touches_old(f.start_line, f.end_line):
            recheck.append(f)
            continue
        start, end = diff.map_old_line(f.start_line), diff.map_old_line(f.end_line)
        if start is None or end is None:  # cannot happen for untouched lines; be safe anyway
            recheck.append(f)
            continue
        carried.append(_moved(f, start, end))
        ranges.append((start, end))
    return MemoryPlan(remembered.path, diff, tuple(carried), tuple(recheck), tuple(ranges))


def _moved(f: Finding, start: int, end: int) -> Finding:
    shift = start - f.start_line
    fix = f.fix
    if fix is not None:
        fix = fix._replace(start_line=fix.start_line + shift, end_line=fix.end_line + shift)
    # Suppressions are decided again on today's text (an inline marker may have been added or removed).
    return f._replace(start_line=start, end_line=end, fix=fix, status=_carried_status(f), suppressed=None)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _matches(f: Finding, earlier: Finding, earlier_now: tuple[int, int] | None) -> bool:
    if earlier.fingerprint in all_fingerprints(f):
        return True
    return (earlier_now is not None and f.anchored and f.category == earlier.category
            and _overlap((f.start_line, f.end_line), earlier_now))


class Classified(NamedTuple):
    findings: list[Finding]  # this review's findings with their status, the carried ones included
    resolved: list[Finding]  # earlier findings not re-reported, as they were at the earlier review


def classify(plan: MemoryPlan, findings: Sequence[Finding], *, complete: bool = True) -> Classified:
    """Statuses for this review's findings against the plan; see the module docstring.

    `complete`: the file's review finished. When it did not, an earlier finding that was not re-reported
    may simply not have been reached: it is kept (as carried, at its region today), never resolved."""
    diff = plan.interdiff
    out: list[Finding] = list(plan.carried)
    recheck_now = [diff.region_now(r.start_line, r.end_line) if r.anchored and r.start_line >= 1 else None
                   for r in plan.recheck]
    confirmed = [False] * len(plan.recheck)
    for f in findings:
        if any(_matches(f, c, span) for c, span in zip(plan.carried, plan.carried_ranges, strict=True)):
            continue  # the model repeated a carried finding: the earlier one stands
        hit = next((i for i, r in enumerate(plan.recheck)
                    if not confirmed[i] and _matches(f, r, recheck_now[i])), None)
        if hit is not None:
            confirmed[hit] = True
            out.append(f._replace(status=_carried_status(plan.recheck[hit])))
        elif not f.anchored or diff.touches_new(f.start_line, f.end_line):
            out.append(f._replace(status="new"))
        else:
            out.append(f._replace(status="late"))
    resolved: list[Finding] = []
    for i, earlier in enumerate(plan.recheck):
        if confirmed[i]:
            continue
        if complete:
            resolved.append(earlier)
        elif recheck_now[i] is not None:
            start, end = recheck_now[i]  # type: ignore[misc]
            out.append(earlier._replace(start_line=start, end_line=end, fix=None, status=_carried_status(earlier),
                                        suppressed=None,
                                        anchor_note="lines changed since the last review; not re-checked"))
    return Classified(out, resolved)


def changed_context(remembered: Mapping[str, str], today: Mapping[str, str]) -> list[str]:
    """The names of the key parts (models, prompts, settings, guidance, …) that differ."""
    return sorted(name for name in set(remembered) | set(today) if remembered.get(name) != today.get(name))
