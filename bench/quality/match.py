"""Matching findings to golden ranges, and the figures computed from the matches."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .cases import Golden

WIDEN = 3  # lines either side of a golden range that still count as the same place
SEVERITY_RANK = {"low": 1, "medium": 2, "high": 3, "critical": 4}


def hits(finding: Mapping[str, Any], golden: Iterable[Golden]) -> bool:
    """Anchored in the same file and overlapping a golden range widened by WIDEN lines."""
    if not finding.get("anchored") or not finding.get("start_line"):
        return False
    start, end = int(finding["start_line"]), int(finding.get("end_line") or finding["start_line"])
    return any(finding.get("path") == g.path and start <= g.end + WIDEN and end >= g.start - WIDEN
               for g in golden)


def blocking(finding: Mapping[str, Any], fail_on: str) -> bool:
    """At or above the configuration's --fail-on (what would stop a commit)."""
    threshold = SEVERITY_RANK.get(fail_on)
    return threshold is not None and SEVERITY_RANK.get(str(finding.get("severity")), 0) >= threshold


def ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator else None


def f1(precision: float | None, recall: float | None) -> float | None:
    if precision is None or recall is None or precision + recall == 0:
        return None if precision is None or recall is None else 0.0
    return 2 * precision * recall / (precision + recall)


def summarise(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Figures over the reviewed results of one configuration (results that could not run excluded).

    One golden bug per case: a case is found when any finding hits it. Precision counts findings:
    those that hit / all findings, a lower bound since real problems nobody labelled count as misses."""
    done = [r for r in results if r.get("reviewed")]
    findings = sum(len(r["findings"]) for r in done)
    hit_findings = sum(sum(1 for f in r["findings"] if f["hit"]) for r in done)
    found = sum(1 for r in done if r["found"])
    recall = ratio(found, len(done))
    precision = ratio(hit_findings, findings)
    judged = [r for r in done if r.get("judged")]
    out: dict[str, Any] = {
        "cases": len(done),
        "findings": findings,
        "found": found,
        "recall": recall,
        "precision": precision,
        "f1": f1(precision, recall),
        "recall_blocking": ratio(sum(1 for r in done if r["found_blocking"]), len(done)),
        "incomplete": sum(1 for r in done if r.get("status") != "complete"),
        "cost_per_case": ratio(sum(r["usage"].get("cost_usd", 0.0) for r in done), len(done)),
        "tokens_per_case": ratio(sum(total_tokens(r["usage"]) for r in done), len(done)),
        "wall_per_case": ratio(sum(r["wall_s"] for r in done), len(done)),
        "judged_cases": len(judged),
    }
    if judged:
        j_findings = sum(len(r["findings"]) for r in judged)
        j_true = sum(sum(1 for f in r["findings"] if f.get("judged_hit")) for r in judged)
        j_recall = ratio(sum(1 for r in judged if r["found_judged"]), len(judged))
        j_precision = ratio(j_true, j_findings)
        out.update(recall_judged=j_recall, precision_judged=j_precision, f1_judged=f1(j_precision, j_recall))
    by_category: dict[str, dict[str, int]] = {}
    for r in done:
        entry = by_category.setdefault(r["category"], {"cases": 0, "found": 0, "found_judged": 0})
        entry["cases"] += 1
        entry["found"] += int(r["found"])
        entry["found_judged"] += int(bool(r.get("found_judged")))
    out["by_category"] = dict(sorted(by_category.items()))
    return out


def total_tokens(usage: Mapping[str, Any]) -> int:
    return sum(int(usage.get(k, 0) or 0) for k in ("input_tokens", "output_tokens",
                                                   "cache_creation_input_tokens", "cache_read_input_tokens"))
