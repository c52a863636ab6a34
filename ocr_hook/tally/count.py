"""What became of the findings: raised, fixed, dismissed, still open, and the addressed rate. Pure.

A finding (its fingerprint) is followed through the history's entries in time order:
* raised: the first entry that reports it, inside the period;
* fixed: a later entry's review memory resolved it, or a later complete review of its file in the same
  change (line of work) no longer raises it (CI without memory);
* dismissed: an entry reports it suppressed by a dismissal (the file, an inline comment, or a person's
  resolve on the forge), with who and where; a later entry of the same pull request (or line of work) that
  raises it without one withdrew the dismissal (a thread unresolved again): open again;
* open: none of those (yet). Raised again after a fix, it is open again.
The addressed rate is (fixed + dismissed) / raised: the share somebody acted on. Fixed alone is given too.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DIMENSIONS = ("severity", "category", "path", "model", "effort")
SEVERITY_ORDER = ("critical", "high", "medium", "low")
MIN_DISMISSED_FOR_RULE = 2  # a candidate rule needs at least this many dismissals …
MIN_DISMISSED_SHARE = 0.5  # … that are at least this share of what was raised there


@dataclass
class Tracked:
    fp: str
    path: str
    severity: str
    category: str
    effort: str
    model: str
    source: str
    change: str  # review memory's line of work
    request: str  # the pull/merge request, in CI
    raised_at: float
    state: str = "open"  # open | fixed | dismissed
    where: str = ""  # for a dismissal: "dismissals file", "inline suppression", "forge"
    by: str = ""
    thumbs_up: int = 0
    thumbs_down: int = 0
    replies: int = 0
    dismissed_in: tuple[str, str] = ("", "")  # _work of the entry that dismissed it


@dataclass
class Counts:
    raised: int = 0
    fixed: int = 0
    dismissed: int = 0
    open: int = 0

    def add(self, state: str) -> None:
        self.raised += 1
        setattr(self, state, getattr(self, state) + 1)

    @property
    def addressed_rate(self) -> float | None:
        return (self.fixed + self.dismissed) / self.raised if self.raised else None

    @property
    def fixed_rate(self) -> float | None:
        return self.fixed / self.raised if self.raised else None

    def as_dict(self) -> dict[str, Any]:
        return {"raised": self.raised, "fixed": self.fixed, "dismissed": self.dismissed, "open": self.open,
                "addressed_rate": _round(self.addressed_rate), "fixed_rate": _round(self.fixed_rate)}


@dataclass(frozen=True)
class Candidate:
    """A place whose findings people keep dismissing: a rule to consider, never applied by itself."""

    paths: str  # a gitignore-style glob, or "" for every path
    category: str
    dismissed: int
    raised: int

    def rule(self) -> str:
        where = f'["{self.paths}"]' if self.paths else '["**"]'
        return f"rules: [{{paths: {where}, ignore_categories: [{self.category}]}}]"


@dataclass
class Tally:
    total: Counts = field(default_factory=Counts)
    by: dict[str, dict[str, Counts]] = field(default_factory=dict)
    dismissed_by: dict[str, int] = field(default_factory=dict)  # "who (where)" → count
    thumbs_up: int = 0
    thumbs_down: int = 0
    replies: int = 0
    candidates: list[Candidate] = field(default_factory=list)
    reviews: int = 0


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def area(path: str) -> str:
    """The directory a finding's file is in, as the outcomes group paths ("." at the top)."""
    return posixpath.dirname(path) or "."


def track(entries: Iterable[Mapping[str, Any]], *, since: float | None = None, until: float | None = None,
          requests: Sequence[str] = (), sources: Sequence[str] = ()) -> tuple[list[Tracked], int]:
    """Every finding first raised in the period, followed to its latest state; and how many reviews were read.

    Linear in the history (20,000 entries at most): a complete review of a file fixes the open findings of that
    file in the same change, found through an index of them, never by a walk of every finding so far."""
    chosen = [e for e in entries if (until is None or _at(e) <= until)
              and (not requests or str(e.get("request", "")) in requests)
              and (not sources or e.get("source") in sources)]
    chosen.sort(key=_at)
    tracked: dict[str, Tracked] = {}
    open_at = _OpenIndex()
    before: set[str] = set()  # raised before the period: not this period's
    reviews = 0
    for entry in chosen:
        at = _at(entry)
        in_period = since is None or at >= since
        reviews += in_period
        raised_now: set[str] = set()
        for item in _items(entry, "findings"):
            fp = item["fp"]
            raised_now.add(fp)
            if fp in before:
                continue
            found = tracked.get(fp)
            if found is None:
                if not in_period:
                    before.add(fp)
                    continue
                found = tracked[fp] = Tracked(
                    fp, str(item.get("path", "")), str(item.get("severity", "")), str(item.get("category", "")),
                    str(item.get("effort", "")), str(entry.get("model", "")), str(entry.get("source", "")),
                    str(entry.get("change", "")), str(entry.get("request", "")), at)
                open_at.add(found)
            if item.get("dismissed"):
                found.state, found.where, found.by = "dismissed", str(item["dismissed"]), str(item.get("by", ""))
                found.dismissed_in = _work(entry)
                open_at.discard(found)
            elif found.state == "fixed" or (found.state == "dismissed" and found.dismissed_in == _work(entry)):
                # Raised again after its fix; or, where it was dismissed, raised again without the dismissal
                # (a thread unresolved, an entry taken out of the file): withdrawn, open again.
                found.state, found.where, found.by = "open", "", ""
                open_at.add(found)
        for item in _items(entry, "resolved"):
            if (found := tracked.get(item["fp"])) is not None and found.state == "open":
                found.state = "fixed"
                open_at.discard(found)
        for path in set(entry.get("complete") or ()):
            for found in open_at.take(entry, path, keep=raised_now):
                found.state = "fixed"
        for fp, counts in (entry.get("feedback") or {}).items():
            if (found := tracked.get(fp)) is not None and isinstance(counts, Mapping):
                found.thumbs_up = _int(counts.get("thumbs_up"))
                found.thumbs_down = _int(counts.get("thumbs_down"))
                found.replies = _int(counts.get("replies"))
    return list(tracked.values()), reviews


def _work(entry: Mapping[str, Any]) -> tuple[str, str]:
    """Where a dismissal was seen: its pull request in CI, else its line of work."""
    request = str(entry.get("request", ""))
    return ("request", request) if request else ("change", str(entry.get("change", "")))


class _OpenIndex:
    """The open findings by (their change, path): what a complete review of a file in a change fixes. Each
    finding is in one bucket, a pull request's by the request, others by the line of work: only a review of
    the same one says a finding is gone from *this* change."""

    def __init__(self) -> None:
        self._buckets: dict[tuple[str, str, str], dict[str, Tracked]] = {}

    @staticmethod
    def _key(found: Tracked) -> tuple[str, str, str]:
        return ("request", found.request, found.path) if found.request else ("change", found.change, found.path)

    def add(self, found: Tracked) -> None:
        self._buckets.setdefault(self._key(found), {})[found.fp] = found

    def discard(self, found: Tracked) -> None:
        self._buckets.get(self._key(found), {}).pop(found.fp, None)

    def take(self, entry: Mapping[str, Any], path: str, *, keep: set[str]) -> list[Tracked]:
        """Remove and return the open findings of `path` in `entry`'s change that it does not raise again.
        What stays was raised by this entry: the work is bounded by the entry's own size."""
        taken: list[Tracked] = []
        for key in (("request", str(entry.get("request", "")), path), ("change", str(entry.get("change", "")), path)):
            if key[1] == "" and key[0] == "request":
                continue
            bucket = self._buckets.get(key)
            if bucket:
                gone = [fp for fp in bucket if fp not in keep]
                taken += [bucket.pop(fp) for fp in gone]
        return taken


def tally(tracked: Sequence[Tracked], reviews: int = 0) -> Tally:
    out = Tally(reviews=reviews)
    out.by = {dim: {} for dim in DIMENSIONS}
    for t in tracked:
        out.total.add(t.state)
        for dim, value in (("severity", t.severity), ("category", t.category), ("path", area(t.path)),
                           ("model", t.model), ("effort", t.effort or "unknown")):
            out.by[dim].setdefault(value, Counts()).add(t.state)
        if t.state == "dismissed":
            who = f"{t.by or 'unknown'} ({t.where})"
            out.dismissed_by[who] = out.dismissed_by.get(who, 0) + 1
        out.thumbs_up += t.thumbs_up
        out.thumbs_down += t.thumbs_down
        out.replies += t.replies
    out.candidates = candidates(tracked)
    return out


def candidates(tracked: Sequence[Tracked]) -> list[Candidate]:
    """Categories, and categories within a directory, whose findings are mostly dismissed."""
    groups: dict[tuple[str, str], list[Tracked]] = {}
    for t in tracked:
        groups.setdefault(("", t.category), []).append(t)
        groups.setdefault((area(t.path), t.category), []).append(t)
    found = []
    for (where, category), items in groups.items():
        dismissed = sum(t.state == "dismissed" for t in items)
        if dismissed >= MIN_DISMISSED_FOR_RULE and dismissed / len(items) >= MIN_DISMISSED_SHARE:
            glob = "" if not where else ("*" if where == "." else f"{where}/**")
            found.append(Candidate(glob, category, dismissed, len(items)))
    # A directory's candidate that says no more than the category-wide one is left out.
    wide = {c.category: c for c in found if not c.paths}
    found = [c for c in found if not c.paths or c.category not in wide or c.dismissed < wide[c.category].dismissed]
    found.sort(key=lambda c: (-c.dismissed, c.paths, c.category))
    return found


def _items(entry: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    return [i for i in entry.get(key) or () if isinstance(i, Mapping) and isinstance(i.get("fp"), str)]


def _at(entry: Mapping[str, Any]) -> float:
    value = entry.get("at")
    return float(value) if isinstance(value, int | float) else 0.0


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
