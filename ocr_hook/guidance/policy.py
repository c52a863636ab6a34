"""`ignore_categories`: drop findings of the silenced categories on a rule's paths, and count them."""

from __future__ import annotations

from ocr_hook.guidance.resolve import GuidancePlan
from ocr_hook.outcome import ReviewResult

DROP_KEY = "ignore_categories"


def apply_ignore_categories(result: ReviewResult, plan: GuidancePlan) -> ReviewResult:
    """Applied after anchoring (findings carry their final paths); never silent: drops are counted."""
    if not plan.ignore or not result.findings:
        return result
    kept = [f for f in result.findings if str(f.category) not in plan.ignore.get(f.path, {})]
    dropped = len(result.findings) - len(kept)
    if dropped:
        result.dropped[DROP_KEY] = result.dropped.get(DROP_KEY, 0) + dropped
        result.findings = kept
    return result
