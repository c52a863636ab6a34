"""One review as a history entry (ocr_hook.store.history): what it raised, fixed and saw dismissed. Pure.

A finding is its fingerprint with the facts the outcomes are counted by (path, severity, category, effort,
and who dismissed it where). Baselined findings are the team's old debt, not this review's: left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ocr_hook.findings import Finding
    from ocr_hook.outcome import ReviewResult

# Finding.suppressed → where the dismissal was made, as the outcomes name it.
DISMISSED_WHERE = {"dismissed": "dismissals file", "inline": "inline suppression"}


def _where(suppressed: str) -> str:
    return DISMISSED_WHERE.get(suppressed, suppressed)  # e.g. "forge" (a person resolved the thread)


def _finding(f: Finding, effort: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {"fp": f.fingerprint, "path": f.path, "severity": str(f.severity),
                            "category": str(f.category), "effort": effort or ""}
    if f.suppressed and f.suppressed != "baseline":
        extra = f.extra or {}
        # A person's resolve on the forge carries where it was made (findings.dismissals.apply_forge).
        item["dismissed"] = "forge" if extra.get("dismissed_in") else _where(f.suppressed)
        item["by"] = extra.get("dismissed_by", "")
    return item


def entry_of(result: ReviewResult, *, at: float, source: str, change: str | None, request: str | None,
             model: str, feedback: Mapping[str, Mapping[str, int]] | None = None) -> dict[str, Any] | None:
    """The entry for this review, or None when it has nothing to count (a clean commit writes nothing).

    `source`: "commit" (a git hook's review), "ci" or "manual"; `change`: review memory's line of work (a
    finding is fixed when a later complete review of its file in the same change no longer raises it);
    `request`: the pull/merge request's number in CI (cienv.request_number); `feedback`: per fingerprint, the
    reactions and replies people left on its comment (thumbs_up, thumbs_down, replies)."""
    effort = {f.path: f.effort for f in result.files}
    raised = [_finding(f, effort.get(f.path)) for f in result.findings if f.suppressed != "baseline"]
    resolved = [_finding(f, effort.get(f.path)) for f in result.resolved]
    complete = sorted({f.path for f in result.files if f.state in ("reviewed", "cached") and not f.incomplete})
    checks: list[dict[str, Any]] = []
    if result.checks:  # (DESIGN.md 20: outcomes counts checks; a run without checks never loads their tally)
        from ocr_hook.tally.checks import entry_checks

        checks = entry_checks(result.checks)
    if not raised and not resolved and not (source == "ci" and complete) and not feedback and not checks:
        return None
    entry: dict[str, Any] = {"at": at, "source": source, "change": change or "", "request": request or "",
                             "model": model, "findings": raised, "resolved": resolved, "complete": complete}
    if checks:
        entry["checks"] = checks
    if feedback:
        entry["feedback"] = {fp: dict(counts) for fp, counts in feedback.items()}
    return entry
