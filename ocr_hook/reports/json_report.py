"""Machine-readable report (`--format json`): one object with a fixed key order and a schema version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ocr_hook import gate
from ocr_hook.outcome import ReviewResult
from ocr_hook.reports.base import TOOL_NAME, coverage_groups, dumps_json, exit_code_for, sorted_findings

if TYPE_CHECKING:
    from ocr_hook.findings import Finding
    from ocr_hook.reports.base import ReportContext

SCHEMA_VERSION = 1


def finding_dict(f: Finding) -> dict[str, Any]:
    return {
        "path": f.path,
        "start_line": f.start_line if f.anchored else 0,
        "end_line": f.end_line if f.anchored else 0,
        "severity": f.severity.value,
        "category": f.category.value,
        "message": f.message,
        "suggestion": f.suggestion,
        "anchored": f.anchored,
        "fingerprint": f.fingerprint,
        "suppressed": f.suppressed,
        "suppression_reason": f.suppression_reason,  # a dismissal's reason (ocr-hook dismiss)
        "anchor_note": f.anchor_note,
        # The suggestion as an edit: whole lines start..end become `replacement` (no final line break).
        "fix": None if f.fix is None else f.fix.as_dict(),
        # Review memory: new, carried (from the last review) or late (raised now on unchanged lines).
        "status": f.status,
    }


def resolved_dict(f: Finding) -> dict[str, Any]:
    """An earlier finding this review found fixed, with its lines as they were at the earlier review."""
    return {
        "path": f.path,
        "fingerprint": f.fingerprint,
        "severity": f.severity.value,
        "category": f.category.value,
        "message": f.message,
        "start_line": f.start_line if f.anchored else 0,
        "end_line": f.end_line if f.anchored else 0,
    }


def report_dict(result: ReviewResult, ctx: ReportContext) -> dict[str, Any]:
    groups = coverage_groups(result)
    u = result.usage
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": TOOL_NAME, "version": ctx.tool_version},
        "status": "complete" if result.complete else "incomplete",
        "exit_code": exit_code_for(result, ctx),
        "verdict": gate.verdict_line(result, ctx.fail_on, ctx.on_error),
        "fail_on": ctx.fail_on,
        "scope": result.scope,
        "findings": [finding_dict(f) for f in sorted_findings(result.findings)],
        "resolved": [resolved_dict(f) for f in sorted_findings(result.resolved)],
        "coverage": {
            "reviewed": [f.path for f in groups["reviewed"]],
            "cached": [f.path for f in groups["reviewed"] if f.state == "cached"],
            "skipped": [{"path": f.path, "reason": f.reason, "incomplete": f.incomplete}
                        for f in groups["skipped"]],
            "failed": [{"path": f.path, "reason": f.reason} for f in groups["failed"]],
            # The effort profile each reviewed (or failed) file got: quick | standard | deep.
            "effort": {f.path: f.effort for f in result.files if f.effort is not None},
            # The context pack each file's first request carried (DESIGN.md 12): entries, and entries cut
            # for context_tokens; files without a pack are not listed.
            "context": {f.path: {"entries": f.context_entries, "cut": f.context_cut}
                        for f in result.files if f.context_entries is not None},
        },
        "usage": {
            "requests": u.requests,
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cache_creation_input_tokens": u.cache_creation_input_tokens,
            "cache_read_input_tokens": u.cache_read_input_tokens,
            "cost_usd": round(u.cost_usd, 6),
        },
        "dropped": dict(sorted(result.dropped.items())),
        "notes": list(result.notes),
        "elapsed_s": round(result.elapsed_s, 3),
    }


def render(result: ReviewResult, ctx: ReportContext) -> str:
    return dumps_json(report_dict(result, ctx))
