"""The gate: findings and coverage in, exit code and verdict out (DESIGN.md section 4). Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ocr_hook.outcome import FileCoverage, ReviewResult

if TYPE_CHECKING:
    from ocr_hook.findings import Finding

EXIT_CLEAN = 0
EXIT_BLOCKING = 1
EXIT_INCOMPLETE = 3

FAIL_ON_CHOICES = ("critical", "high", "medium", "low", "never")
ON_ERROR_CHOICES = ("fail", "warn")
_SHOWN_FILES = 5  # files named in the verdict before "and N more"


def _check(fail_on: str, on_error: str) -> None:
    if fail_on not in FAIL_ON_CHOICES:
        raise ValueError(f"fail_on must be one of {', '.join(FAIL_ON_CHOICES)}, got {fail_on!r}")
    if on_error not in ON_ERROR_CHOICES:
        raise ValueError(f"on_error must be one of {', '.join(ON_ERROR_CHOICES)}, got {on_error!r}")


def blocking_findings(findings: Iterable[Finding], fail_on: str, late_findings: str = "advisory") -> list[Finding]:
    """Findings that fail the gate: not suppressed and at or above `fail_on` ("never": none). New and
    carried findings block; late ones (raised now on lines unchanged since the last review) only with
    late_findings "block", so a fix can only make the verdict better."""
    active = [] if fail_on == "never" else [f for f in findings if f.suppressed is None]
    if not active:  # e.g. nothing staged: the findings' types need not be loaded
        return []
    from ocr_hook.findings import Severity

    threshold = Severity(fail_on).rank
    late_blocks = late_findings == "block"
    return [f for f in active if f.severity.rank >= threshold and (f.status != "late" or late_blocks)]


def unreviewed_files(result: ReviewResult) -> list[FileCoverage]:
    """Files that should have been reviewed and were not: these make a review incomplete."""
    return [f for f in result.files if f.incomplete or f.state == "failed"]


def exit_code(result: ReviewResult, fail_on: str, on_error: str) -> int:
    """0 clean · 1 blocking findings · 3 incomplete (0 with on_error="warn"). Blocking wins over 3."""
    _check(fail_on, on_error)
    if blocking_findings(result.findings, fail_on, result.late_findings) or any(
            e.blocking for e in result.exemptions):  # change_exemptions: block (issue 58)
        return EXIT_BLOCKING
    if not result.complete and on_error != "warn":
        return EXIT_INCOMPLETE
    return EXIT_CLEAN


def _severity_counts(findings: Iterable[Finding]) -> str:
    from ocr_hook.findings import Severity

    counts = Counter(f.severity for f in findings)
    return ", ".join(f"{counts[s]} {s.value}" for s in Severity if counts[s])


def incomplete_line(result: ReviewResult) -> str | None:
    """'REVIEW INCOMPLETE — N files not reviewed: a (why), …', or None for a complete review."""
    missing = unreviewed_files(result)
    if result.complete:
        return None
    from ocr_hook.changes.names import shown

    named = [f"{shown(f.path)} ({f.reason or f.state})" for f in missing[:_SHOWN_FILES]]
    if len(missing) > _SHOWN_FILES:
        named.append(f"and {len(missing) - _SHOWN_FILES} more")
    noun = "file" if len(missing) == 1 else "files"
    return f"REVIEW INCOMPLETE — {len(missing)} {noun} not reviewed: " + ", ".join(named)


def verdict_line(result: ReviewResult, fail_on: str, on_error: str) -> str:
    """One line that can never make an incomplete review look like a clean pass."""
    code = exit_code(result, fail_on, on_error)
    blocking = blocking_findings(result.findings, fail_on, result.late_findings)
    parts: list[str] = []
    if blocking:
        parts.append(
            f"FAILED — {len(blocking)} blocking finding{'s' if len(blocking) != 1 else ''} at or above "
            f"'{fail_on}' ({_severity_counts(blocking)})"
        )
    exempted = None
    if result.exemptions:
        from ocr_hook.findings.exemptions import verdict_part

        exempted = verdict_part(result.exemptions)
        if any(e.blocking for e in result.exemptions):
            parts.append(exempted or "")
            exempted = None
    incomplete = incomplete_line(result)
    if incomplete:
        if code == EXIT_CLEAN:
            incomplete += " (exit 0 only because on_error is 'warn': this is NOT a clean pass)"
        parts.append(incomplete)
    if not parts:
        if fail_on == "never":
            parts.append("PASSED — review complete; the gate is off (fail_on: never)")
        else:
            parts.append(f"PASSED — review complete, no finding at or above '{fail_on}'")
    if exempted:
        parts.append(exempted)
    return " · ".join(parts) + f" [exit {code}]"


def worst_exit(codes: Iterable[int]) -> int:
    """One exit code for several reviews in one run (a push of several refs): a blocking finding in any of
    them blocks, even beside an incomplete one (as within one review); else any incomplete one is the run's."""
    seen = set(codes)
    for code in (EXIT_BLOCKING, EXIT_INCOMPLETE):
        if code in seen:
            return code
    return max(seen, default=EXIT_CLEAN)
