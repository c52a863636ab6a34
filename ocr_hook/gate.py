"""The gate: findings, checks and coverage in, one verdict out (DESIGN.md sections 4 and 20). Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from ocr_hook.outcome import FileCoverage, ReviewResult

if TYPE_CHECKING:
    from ocr_hook.checks.model import CheckVerdict
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


class Verdict(NamedTuple):
    """The gate's one decision for a review: every report reads it, none decides again (DESIGN.md 20)."""

    exit_code: int
    line: str  # the verdict line
    blocking: tuple[Finding, ...]  # findings that fail the gate
    blocking_checks: tuple[CheckVerdict, ...]  # a failed `block` check (or inconclusive with inconclusive: block)
    warning_checks: tuple[CheckVerdict, ...]  # failed or inconclusive, not blocking, not overridden


def decide(result: ReviewResult, fail_on: str, on_error: str) -> Verdict:
    """0 clean · 1 blocking findings or checks · 3 incomplete (0 with on_error="warn"). Blocking wins over 3.

    A failed `block` check blocks; an inconclusive one only with `inconclusive: block`; `warn` checks never
    block; an override clears its check."""
    _check(fail_on, on_error)
    blocking = tuple(blocking_findings(result.findings, fail_on, result.late_findings))
    checks = result.checks
    blocking_checks = tuple(c for c in checks if c.blocks)
    warning_checks = tuple(c for c in checks if c.warns)
    exempted = any(e.blocking for e in result.exemptions)  # change_exemptions: block (issue 58)
    if blocking or blocking_checks or exempted:
        code = EXIT_BLOCKING
    elif not result.complete and on_error != "warn":
        code = EXIT_INCOMPLETE
    else:
        code = EXIT_CLEAN
    return Verdict(code, _line(result, fail_on, code, blocking, blocking_checks, warning_checks), blocking,
                   blocking_checks, warning_checks)


def exit_code(result: ReviewResult, fail_on: str, on_error: str) -> int:
    """decide()'s exit code."""
    return decide(result, fail_on, on_error).exit_code


def _severity_counts(findings: Iterable[Finding]) -> str:
    from ocr_hook.findings import Severity

    counts = Counter(f.severity for f in findings)
    return ", ".join(f"{counts[s]} {s.value}" for s in Severity if counts[s])


def incomplete_line(result: ReviewResult) -> str | None:
    """'REVIEW INCOMPLETE — N files not reviewed: a (why), …', or None for a complete review."""
    missing = unreviewed_files(result)
    if result.complete:
        return None
    cut = [c for c in result.checks if c.incomplete]
    if cut and not missing:
        return f"REVIEW INCOMPLETE — {len(cut)} check(s) not evaluated: {cut[0].reason}"
    from ocr_hook.changes.names import shown

    named = [f"{shown(f.path)} ({f.reason or f.state})" for f in missing[:_SHOWN_FILES]]
    if len(missing) > _SHOWN_FILES:
        named.append(f"and {len(missing) - _SHOWN_FILES} more")
    noun = "file" if len(missing) == 1 else "files"
    return f"REVIEW INCOMPLETE — {len(missing)} {noun} not reviewed: " + ", ".join(named)


def verdict_line(result: ReviewResult, fail_on: str, on_error: str) -> str:
    """decide()'s verdict line: one line that can never make an incomplete review look like a clean pass."""
    return decide(result, fail_on, on_error).line


def _line(result: ReviewResult, fail_on: str, code: int, blocking: tuple[Finding, ...],
          blocking_checks: tuple[CheckVerdict, ...], warning_checks: tuple[CheckVerdict, ...]) -> str:
    parts: list[str] = []
    if blocking:
        parts.append(
            f"FAILED — {len(blocking)} blocking finding{'s' if len(blocking) != 1 else ''} at or above "
            f"'{fail_on}' ({_severity_counts(blocking)})"
        )
    if blocking_checks:
        names = ", ".join(f"{c.name} ({c.verdict})" for c in blocking_checks[:_SHOWN_FILES])
        more = f" and {len(blocking_checks) - _SHOWN_FILES} more" if len(blocking_checks) > _SHOWN_FILES else ""
        parts.append(f"FAILED — {len(blocking_checks)} blocking check{'s' if len(blocking_checks) != 1 else ''}: "
                     f"{names}{more}")
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
    if warning_checks:
        inconclusive = sum(1 for c in warning_checks if c.verdict == "inconclusive")
        failed = len(warning_checks) - inconclusive
        said = [f"{failed} failed (warn)" if failed else "", f"{inconclusive} inconclusive" if inconclusive else ""]
        parts.append("checks to look at: " + ", ".join(p for p in said if p))
    overridden = sum(1 for c in result.checks if c.override is not None)
    if overridden:
        parts.append(f"{overridden} check(s) overridden")
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
