"""The side-by-side table: one column per configuration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .match import summarise

LABEL_WIDTH = 38
COLUMN_WIDTH = 16


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _frac(found: int, cases: int) -> str:
    return "-" if not cases else f"{found / cases:.2f} ({found}/{cases})"


def render(report: Mapping[str, Any]) -> str:
    labels = list(report["configs"])
    summaries = {label: summarise(report["results"][label]) for label in labels}
    judged = bool(report.get("judge_model"))
    rows: list[tuple[str, list[str]]] = [("", labels),
                                         ("cases reviewed", [str(s["cases"]) for s in summaries.values()])]

    def add(name: str, key: str, fmt: Any = _num) -> None:
        rows.append((name, [fmt(s.get(key)) for s in summaries.values()]))

    rows.append(("location only (within 3 lines)", []))
    add("  recall", "recall")
    add("  precision (lower bound)", "precision")
    add("  F1", "f1")
    add("  recall at blocking severity", "recall_blocking")
    rows.append((f"judged ({report['judge_model']})" if judged else "judged (no --judge-model: not run)", []))
    if judged:
        add("  recall", "recall_judged")
        add("  precision (lower bound)", "precision_judged")
        add("  F1", "f1_judged")
    add("findings", "findings", lambda v: str(v))
    add("incomplete reviews", "incomplete", lambda v: str(v))
    add("cost per case (USD)", "cost_per_case", lambda v: _num(v, 4))
    add("tokens per case", "tokens_per_case", lambda v: "-" if v is None else f"{v:,.0f}")
    add("wall time per case (s)", "wall_per_case", lambda v: _num(v, 1))
    categories = sorted({c for s in summaries.values() for c in s["by_category"]})
    rows.append(("recall by category" + (" (location / judged)" if judged else ""), []))
    for category in categories:
        cells = []
        for s in summaries.values():
            entry = s["by_category"].get(category)
            if entry is None:
                cells.append("-")
            elif judged:
                cells.append(f"{entry['found'] / entry['cases']:.2f} / {entry['found_judged'] / entry['cases']:.2f}")
            else:
                cells.append(_frac(entry["found"], entry["cases"]))
        cases = max(s["by_category"].get(category, {}).get("cases", 0) for s in summaries.values())
        rows.append((f"  {category} ({cases} cases)", cells))
    width = max(COLUMN_WIDTH, *(len(c) + 2 for _, cells in rows for c in cells))
    lines = [(f"{name:<{LABEL_WIDTH}}" + "".join(f"{c:>{width}}" for c in cells)).rstrip() for name, cells in rows]
    footer = [f"cost: ${report['spent_usd']:.4f} spent of a ${report['max_cost_usd']:.2f} cap"]
    if report.get("stopped"):
        footer.append(f"STOPPED EARLY: {report['stopped']}; {report['not_run']} review(s) not run")
    for entry in report.get("unavailable", []):
        footer.append(f"not run: {entry['case']}: {entry['reason']}")
    for label in labels:
        for r in report["results"][label]:
            if r.get("error"):
                footer.append(f"failed: {r['case']} [{label}]: {r['error']}")
    return "\n".join([*lines, "", *footer])
