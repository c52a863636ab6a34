"""What the checks said, per check (DESIGN.md 20): passed, failed, overridden, inconclusive, and the rates. Pure.

A check is counted once per change it judged (the pull request in CI, else review memory's line of work): its
latest verdict there in the period. Overridden is a failure a person overrode (`dismiss --check`, or a
maintainer's resolve of its thread on the forge); the override rate is the share of its failures people
overrode, and the check a team overrides most is the one to rewrite. Not-applicable verdicts cost nothing and
are not recorded (tally.entry).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

OUTCOMES = ("pass", "fail", "overridden", "inconclusive")
MIN_OVERRIDDEN_TO_REWRITE = 2  # a check is named as one to rewrite from this many overrides …
MIN_OVERRIDE_SHARE = 0.5  # … that are at least this share of its failures


class CheckCounts(NamedTuple):
    name: str
    changes: int
    passed: int
    failed: int  # failed and not overridden
    overridden: int
    inconclusive: int

    @property
    def failures(self) -> int:
        return self.failed + self.overridden

    def rate(self, part: int, whole: int) -> float | None:
        return round(part / whole, 4) if whole else None

    def as_dict(self) -> dict[str, Any]:
        return {"changes": self.changes, "pass": self.passed, "fail": self.failed, "overridden": self.overridden,
                "inconclusive": self.inconclusive, "pass_rate": self.rate(self.passed, self.changes),
                "fail_rate": self.rate(self.failures, self.changes),
                "override_rate": self.rate(self.overridden, self.failures)}


def entry_checks(checks: Iterable[Any]) -> list[dict[str, str]]:
    """A review's verdicts as its history entry keeps them (tally.entry): name, verdict, mode, who overrode."""
    out = []
    for v in checks:
        if v.verdict == "not_applicable":
            continue
        item = {"name": v.name, "verdict": v.verdict, "mode": v.mode}
        if v.override is not None:
            item["overridden"] = f"{v.override.by} ({v.override.where})"
        out.append(item)
    return out


def count_checks(entries: Iterable[Mapping[str, Any]], *, since: float | None = None, until: float | None = None,
                 requests: Sequence[str] = (), sources: Sequence[str] = ()) -> list[CheckCounts]:
    """Per check, its latest outcome in each change it judged in the period; most overridden first."""
    latest: dict[tuple[str, str], tuple[float, str]] = {}
    for e in entries:
        at = e.get("at")
        at = float(at) if isinstance(at, int | float) else 0.0
        if (since is not None and at < since) or (until is not None and at > until):
            continue
        if (requests and str(e.get("request", "")) not in requests) or (sources and e.get("source") not in sources):
            continue
        change = f"request {e.get('request')}" if e.get("request") else f"line {e.get('change', '')}"
        for item in e.get("checks") or ():
            if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
                continue
            outcome = "overridden" if item.get("overridden") else str(item.get("verdict", ""))
            if outcome not in OUTCOMES:
                continue
            key = (item["name"], change)
            if key not in latest or latest[key][0] <= at:
                latest[key] = (at, outcome)
    per: dict[str, list[str]] = {}
    for (name, _change), (_at, outcome) in latest.items():
        per.setdefault(name, []).append(outcome)
    counted = [CheckCounts(name, len(o), o.count("pass"), o.count("fail"), o.count("overridden"),
                           o.count("inconclusive")) for name, o in per.items()]
    counted.sort(key=lambda c: (-c.overridden, -(c.rate(c.overridden, c.failures) or 0.0), -c.failures, c.name))
    return counted


def to_rewrite(counted: Sequence[CheckCounts]) -> list[CheckCounts]:
    """The checks people override most: candidates to rewrite (a check that is mostly overridden asks the wrong
    question, or one the change cannot answer)."""
    return [c for c in counted if c.overridden >= MIN_OVERRIDDEN_TO_REWRITE
            and c.overridden / c.failures >= MIN_OVERRIDE_SHARE]


def checks_text(counted: Sequence[CheckCounts], *, max_rows: int = 10) -> str:
    if not counted:
        return ""
    width = max(len("check"), *(len(c.name) for c in counted[:max_rows]))
    lines = ["", f"{'check':<{width}}  changes  pass  fail  overridden  inconclusive  override rate"]
    for c in counted[:max_rows]:
        rate = c.rate(c.overridden, c.failures)
        lines.append(f"{c.name:<{width}}  {c.changes:>7}  {c.passed:>4}  {c.failed:>4}  {c.overridden:>10}  "
                     f"{c.inconclusive:>12}  {'-' if rate is None else f'{rate * 100:.0f}%':>13}")
    if len(counted) > max_rows:
        lines.append(f"(+{len(counted) - max_rows} more; --format json lists all)")
    rewrite = to_rewrite(counted)
    if rewrite:
        lines += ["", "Most overridden: checks to rewrite (one question, observable in the change):"]
        lines += [f"  {c.name}   # {c.overridden} of {c.failures} failures overridden" for c in rewrite[:5]]
    return "\n".join(lines) + "\n"


def checks_dict(counted: Sequence[CheckCounts]) -> dict[str, Any]:
    return {"by_check": {c.name: c.as_dict() for c in counted},
            "to_rewrite": [c.name for c in to_rewrite(counted)]}
