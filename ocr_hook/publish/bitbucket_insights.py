"""What ocr-hook puts in a Bitbucket Cloud Code Insights report: the report and its annotations (pure).

Code Insights attaches a report to a commit (`PUT …/commit/{sha}/reports/ocr-hook`) and annotations to
the report (`POST …/annotations`, at most 100 a request, 1,000 a report); Bitbucket shows the annotations
on a pull request's diff where their lines are in it, and all of them in the report. The report's result
is the gate's: PASSED for exit 0, FAILED otherwise. An annotation's `external_id` is the finding's
fingerprint, so Bitbucket itself keeps one annotation per finding; its `summary` (450 characters at most,
else a 400) is the message cut with an ellipsis, its `details` (2,000) the whole message and the fix.

Bitbucket shows these fields as plain text, not Markdown: nothing in them can mention anyone or run a
link, so model text only has its hidden characters made visible (render.visible), as in every forge's text.
Both bodies name their `type` ("report", "report_annotation"): Bitbucket's OpenAPI description makes every
object's `type` required, in a request as in a reply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ocr_hook.checks.model import CheckVerdict
from ocr_hook.findings import Category, Finding, Severity
from ocr_hook.publish.check_threads import anchor, check_key, checks_said, span, wants_thread
from ocr_hook.publish.render import clip, visible
from ocr_hook.publish.report_input import Report

REPORT_ID = "ocr-hook"
MAX_PER_REQUEST = 100
MAX_ANNOTATIONS = 1000
MAX_SUMMARY = 450
MAX_DETAILS = 2000

_SEVERITY = {Severity.CRITICAL: "CRITICAL", Severity.HIGH: "HIGH", Severity.MEDIUM: "MEDIUM", Severity.LOW: "LOW"}
_TYPE = {Category.SECURITY: "VULNERABILITY", Category.BUG: "BUG", Category.PERFORMANCE: "BUG",
         Category.TEST: "BUG"}  # everything else is a CODE_SMELL

# Why an annotation has no line.
UNANCHORED = "about the whole file"
MOVED = "its lines read differently on the commit"
STALE = "the report is of another commit"


@dataclass(frozen=True, slots=True)
class InsightsPlan:
    report: dict[str, Any]  # the PUT body
    annotations: tuple[dict[str, Any], ...]  # most severe first, at most MAX_ANNOTATIONS
    on_lines: int  # annotations with a line
    without_line: int
    left_out: int  # findings beyond MAX_ANNOTATIONS
    suppressed: int

    def batches(self) -> list[list[dict[str, Any]]]:
        items = list(self.annotations)
        return [items[i: i + MAX_PER_REQUEST] for i in range(0, len(items), MAX_PER_REQUEST)]


def _importance(f: Finding) -> tuple[Any, ...]:
    return (-f.severity.rank, f.path, f.start_line, f.end_line, f.fingerprint)


def _lines_of(f: Finding) -> tuple[int, int]:
    if f.fix is not None:
        return f.fix.start_line, max(f.fix.start_line, f.fix.end_line)
    return f.start_line, max(f.start_line, f.end_line)


def reads_the_same(head: Sequence[str] | None, reviewed: Sequence[str] | None, start: int, end: int) -> bool:
    """Whether lines start..end of the reviewed file read as the commit's (line breaks aside). Where either
    side is unknown the lines are taken as they are: the reviewed checkout is that commit."""
    if head is None or reviewed is None:
        return True
    if end > len(head) or end > len(reviewed):
        return False
    return all(head[n - 1].rstrip("\r\n") == reviewed[n - 1].rstrip("\r\n") for n in range(start, end + 1))


def annotation(f: Finding, line: int | None, why: str | None) -> dict[str, Any]:
    message = visible(f.message.strip()) or "(no message)"
    head = f"{f.severity.value} · {f.category.value}: "
    details = message
    replacement = f.fix.replacement if f.fix is not None else f.suggestion
    if replacement:
        details += "\n\nSuggested change:\n" + visible(replacement)
    if why:
        details = f"({why})\n\n" + details
    one: dict[str, Any] = {
        "type": "report_annotation",
        "external_id": f.fingerprint,
        "annotation_type": _TYPE.get(f.category, "CODE_SMELL"),
        "severity": _SEVERITY[f.severity],
        "path": f.path,
        "summary": clip(head + " ".join(message.split()), MAX_SUMMARY),
        "details": clip(details, MAX_DETAILS),
    }
    if line is not None:
        one["line"] = line
    return one


def plan_insights(report: Report, head: Mapping[str, Sequence[str]], reviewed: Mapping[str, Sequence[str]],
                  *, link: str | None = None, stale: bool = False) -> InsightsPlan:
    """`head`: the commit's files (as Bitbucket has them) where known; `reviewed`: the checkout's.
    `stale`: the report is of another commit, so no annotation goes on a line."""
    live = sorted((f for f in report.findings if f.suppressed is None), key=_importance)
    suppressed = len(report.findings) - len(live)
    chosen, left_out = live[:MAX_ANNOTATIONS], max(0, len(live) - MAX_ANNOTATIONS)
    annotations: list[dict[str, Any]] = []
    on_lines = 0
    for f in chosen:
        start, end = _lines_of(f)
        if not f.anchored or start < 1:
            annotations.append(annotation(f, None, UNANCHORED))
        elif stale:
            annotations.append(annotation(f, None, STALE))
        elif not reads_the_same(head.get(f.path), reviewed.get(f.path), start, end):
            annotations.append(annotation(f, None, MOVED))
        else:
            annotations.append(annotation(f, start, None))
            on_lines += 1
    for v in report.checks:  # a failed check: an annotation at its first anchored evidence (none: the report's)
        if len(annotations) >= MAX_ANNOTATIONS or not wants_thread(v):
            continue
        e = anchor(v)
        start, end = span(e) if e is not None else (0, 0)
        line = None if e is None or stale or not reads_the_same(head.get(e.path), reviewed.get(e.path), start, end) \
            else start
        annotations.append(check_annotation(v, e.path if e is not None else "", line))
        on_lines += line is not None
    body = report_body(report, len(live), suppressed, left_out, link=link, stale=stale)
    return InsightsPlan(body, tuple(annotations), on_lines, len(annotations) - on_lines, left_out, suppressed)


def check_annotation(v: CheckVerdict, path: str, line: int | None) -> dict[str, Any]:
    """A failed check as an annotation: its key (check_threads.check_key) as the external id, so a re-run
    replaces it; the reason, and the evidence quoted in the details."""
    evidence = "\n\n".join(f"{e.path}" + (f":{e.start_line}" if e.anchored else " (not found in the change)")
                            + "\n" + visible(e.code) for e in v.evidence)
    one: dict[str, Any] = {
        "type": "report_annotation",
        "external_id": check_key(v.name),
        "annotation_type": "BUG",
        "severity": "HIGH" if v.mode == "block" else "MEDIUM",
        "summary": clip(f"check {visible(v.name)} · {v.verdict} · {v.mode}: " + " ".join(visible(v.reason).split()),
                        MAX_SUMMARY),
        "details": clip(visible(v.reason) + (f"\n\nEvidence:\n{evidence}" if evidence else ""), MAX_DETAILS),
    }
    if path:
        one["path"] = path
    if line is not None:
        one["line"] = line
    return one


def report_body(report: Report, live: int, suppressed: int, left_out: int, *, link: str | None,
                stale: bool = False) -> dict[str, Any]:
    parts = [visible(report.verdict) or ("PASSED" if report.exit_code == 0 else "FAILED")]
    parts.append(f"{live} finding{'s' if live != 1 else ''}" + (f", {suppressed} suppressed" if suppressed else "")
                 + ".")
    if left_out:
        parts.append(f"Only the {MAX_ANNOTATIONS} most severe are annotated (Bitbucket's limit for a report); "
                     f"{left_out} more are in the job's report files.")
    if report.checks:
        parts.append(f"Checks: {checks_said(report.checks)}.")
    if stale:
        parts.append(f"The review was of commit {report.commit}, not this one: no annotation is on a line.")
    if report.status != "complete":
        parts.append(f"The review is incomplete: {report.skipped} file(s) not reviewed, {report.failed} failed; "
                     "this is not a clean pass.")
    body: dict[str, Any] = {
        "type": "report",
        "title": "ocr-hook review",
        "details": clip(" ".join(parts), MAX_DETAILS),
        "report_type": "BUG",
        "reporter": "ocr-hook",
        "result": "PASSED" if report.exit_code == 0 else "FAILED",
        "data": [
            {"title": "Findings", "type": "NUMBER", "value": live},
            {"title": "Review", "type": "TEXT", "value": report.status},
            {"title": "Exit code", "type": "NUMBER", "value": report.exit_code},
        ],
    }
    if report.checks:
        blocking = sum(1 for v in report.checks if v.blocks)
        body["data"] += [{"title": "Checks", "type": "TEXT", "value": clip(checks_said(report.checks), 200)},
                         {"title": "Checks blocking", "type": "NUMBER", "value": blocking}]
    if link:
        body["link"] = link
    return body
