"""Machine-readable report (`--format json`): one object with a fixed key order and a schema version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ocr_hook.changes.names import shown
from ocr_hook.outcome import ReviewResult
from ocr_hook.reports.base import TOOL_NAME, coverage_groups, decision, dumps_json, exit_code_for, sorted_findings

if TYPE_CHECKING:
    from ocr_hook.findings import Finding
    from ocr_hook.reports.base import ReportContext

SCHEMA_VERSION = 1


def resolved_dict(f: Finding) -> dict[str, Any]:
    """An earlier finding this review found fixed, with its lines as they were at the earlier review."""
    return {
        "path": shown(f.path),
        "fingerprint": f.fingerprint,
        "severity": f.severity.value,
        "category": f.category.value,
        "message": f.message,
        "start_line": f.start_line if f.anchored else 0,
        "end_line": f.end_line if f.anchored else 0,
    }


def _findings(findings: list[Finding]) -> list[dict[str, Any]]:
    if not findings:  # a run with no finding (nothing staged) never loads the findings' code
        return []
    from ocr_hook.findings.serial import finding_to_report  # the report's form of one finding

    return [{**d, "path": shown(d["path"])} for d in map(finding_to_report, sorted_findings(findings))]


def _checks(result: ReviewResult) -> list[dict[str, Any]]:
    """One entry per check (DESIGN.md 20), in verdict_as_dict's form: what publish, MCP and delegate read back."""
    if not result.checks:
        return []
    from ocr_hook.checks.model import verdict_as_dict

    return [verdict_as_dict(v) for v in result.checks]


def dropped_dict(result: ReviewResult) -> dict[str, Any]:
    """How many comments each stage dropped; under `comments`, those a model step dropped, with its reason."""
    out: dict[str, Any] = dict(sorted(result.dropped.items()))
    if result.dropped_comments:
        out["comments"] = [{"path": shown(d.path), "start_line": d.start_line, "end_line": d.end_line,
                            "severity": d.severity, "category": d.category, "message": d.message,
                            "reason": d.reason, "by": d.by} for d in result.dropped_comments]
    return out


def report_dict(result: ReviewResult, ctx: ReportContext) -> dict[str, Any]:
    groups = coverage_groups(result)
    u = result.usage
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": TOOL_NAME, "version": ctx.tool_version},
        "status": "complete" if result.complete else "incomplete",
        "exit_code": exit_code_for(result, ctx),
        "verdict": decision(result, ctx).line,
        "fail_on": ctx.fail_on,
        "scope": result.scope,
        "findings": _findings(result.findings),
        "resolved": [resolved_dict(f) for f in sorted_findings(result.resolved)],
        "coverage": {
            "reviewed": [shown(f.path) for f in groups["reviewed"]],
            "cached": [shown(f.path) for f in groups["reviewed"] if f.state == "cached"],
            "skipped": [{"path": shown(f.path), "reason": f.reason, "incomplete": f.incomplete}
                        for f in groups["skipped"]],
            "failed": [{"path": shown(f.path), "reason": f.reason} for f in groups["failed"]],
            # The effort profile each reviewed (or failed) file got: quick | standard | deep.
            "effort": {shown(f.path): f.effort for f in result.files if f.effort is not None},
            # The context pack each file's first request carried (DESIGN.md 12): entries, and entries cut
            # for context_tokens; files without a pack are not listed.
            "context": {shown(f.path): {"entries": f.context_entries, "cut": f.context_cut}
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
        "dropped": dropped_dict(result),
        "checks": _checks(result),
        "notes": list(result.notes),
        "elapsed_s": round(result.elapsed_s, 3),
    }


def render(result: ReviewResult, ctx: ReportContext) -> str:
    return dumps_json(report_dict(result, ctx))
