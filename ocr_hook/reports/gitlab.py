"""GitLab Code Quality report: a JSON array of CodeClimate-style issues.

GitLab stops reading at the first invalid entry and pairs issues across pipelines by fingerprint,
so every entry is complete and every fingerprint unique. Severity mapping (GitLab knows info, minor,
major, critical, blocker): critical → critical, high → major, medium → minor, low → info.
Suppressed findings are left out (GitLab has no notion of them), except dismissed ones: an `info` entry
`ocr-hook/dismissed` with the team's reason, so the merge request shows what was waved through and why.
An incomplete review adds one `major` entry per file that was not reviewed, so the merge request never looks clean.

GitLab has no place for run notes, so only the notes about one file appear, as an `info` entry at
that file's line 1 (`ocr-hook/run-note`): a change that edits guidance or modifies `.ocr-hook.yaml`
is named here too. They are informational: the gate and the exit code ignore them. Run-level notes
with no file (budget, filter counts, …) stay in the other reports.

A file name that is not UTF-8 (git's paths are bytes) is written as git shows it by default (core.quotePath:
`"caf\\351.py"`, quotes included), as the JSON and text reports write it: a JSON string holds Unicode text only,
and the other way to carry the bytes, a lone surrogate escape (`\\udce9`), is no Unicode text at all: strict
readers refuse it, and GitLab reads no entry after the first it cannot read (issue 62.10).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ocr_hook import gate
from ocr_hook.changes.names import shown
from ocr_hook.digest import sha256_hex
from ocr_hook.findings import Category, Finding, Severity, shown_suggestion
from ocr_hook.outcome import ReviewResult
from ocr_hook.reports.base import TOOL_NAME, dumps_json, line_range, sorted_findings

if TYPE_CHECKING:
    from ocr_hook.reports.base import ReportContext

SEVERITY = {Severity.CRITICAL: "critical", Severity.HIGH: "major", Severity.MEDIUM: "minor", Severity.LOW: "info"}
CODECLIMATE_CATEGORY = {
    Category.BUG: "Bug Risk",
    Category.SECURITY: "Security",
    Category.PERFORMANCE: "Performance",
    Category.MAINTAINABILITY: "Complexity",
    Category.TEST: "Bug Risk",
    Category.STYLE: "Style",
    Category.DOCUMENTATION: "Clarity",
    Category.OTHER: "Clarity",
}
INCOMPLETE_CHECK = f"{TOOL_NAME}/review-incomplete"
NOTE_CHECK = f"{TOOL_NAME}/run-note"
DISMISSED_CHECK = f"{TOOL_NAME}/dismissed"


def _digest(*parts: str) -> str:
    return sha256_hex("\0".join(parts).encode("utf-8", "surrogateescape"))[:32]


def unique_fingerprint(fingerprint: str, taken: set[str]) -> str:
    """`fingerprint`, or when it is taken a deterministic variant of it that is not."""
    candidate, n = fingerprint, 1
    while candidate in taken:
        n += 1
        candidate = _digest(fingerprint, str(n))
    taken.add(candidate)
    return candidate


def _finding_entry(f: Finding, fingerprint: str) -> dict[str, Any]:
    start, end = line_range(f)
    description = f.message.strip() or "(no message)"
    if not f.anchored:
        description += " (about the whole file: the quoted code was not found)"
    body = description
    suggestion = shown_suggestion(f)
    if suggestion:
        body += "\n\nSuggested code:\n\n```\n" + suggestion + "\n```"
    category = "security" if f.category is Category.SECURITY else f.category.value
    return {
        "type": "issue",
        "check_name": f"{TOOL_NAME}/{category}",
        "description": description,
        "content": {"body": body},
        "categories": [CODECLIMATE_CATEGORY[f.category]],
        "severity": SEVERITY[f.severity],
        "fingerprint": fingerprint,
        "engine_name": TOOL_NAME,
        "location": {"path": shown(f.path), "lines": {"begin": start, "end": end}},
    }


def _dismissed_entry(f: Finding, taken: set[str]) -> dict[str, Any]:
    """A dismissed finding as an `info` entry with its reason. Its own fingerprint: under the finding's, GitLab
    would pair it with the earlier pipeline's blocking entry and show the same issue, merely downgraded."""
    entry = _finding_entry(f, unique_fingerprint(_digest(DISMISSED_CHECK, f.fingerprint), taken))
    from ocr_hook.findings.dismissals import dismissal_words

    reason = dismissal_words(f) or "no reason recorded"
    entry.update(check_name=DISMISSED_CHECK, severity="info",
                 description=f"dismissed ({reason}): {entry['description']}")
    return entry


def entries(result: ReviewResult) -> list[dict[str, Any]]:
    taken: set[str] = set()
    out = []
    for f in sorted_findings(result.findings):
        if f.suppressed is None:
            out.append(_finding_entry(f, unique_fingerprint(f.fingerprint, taken)))
        elif f.suppressed == "dismissed":
            out.append(_dismissed_entry(f, taken))
    for cov in sorted(gate.unreviewed_files(result), key=lambda c: c.path):
        reason = cov.reason or cov.state
        out.append({
            "type": "issue",
            "check_name": INCOMPLETE_CHECK,
            "description": f"ocr-hook did not review this file, so the review is incomplete: {reason}",
            "categories": ["Bug Risk"],
            "severity": "major",
            "fingerprint": unique_fingerprint(_digest(INCOMPLETE_CHECK, cov.path), taken),
            "engine_name": TOOL_NAME,
            "location": {"path": shown(cov.path), "lines": {"begin": 1, "end": 1}},
        })
    for verdict in result.checks:  # DESIGN.md 20: a failed or inconclusive check at each piece of its evidence
        if verdict.verdict not in ("fail", "inconclusive"):
            continue
        places = [(e.path, e.start_line, max(e.start_line, e.end_line)) for e in verdict.evidence if e.anchored]
        overridden = f" (overridden by {verdict.override.by}: {verdict.override.reason})" if verdict.override else ""
        for path, start, end in places or [(verdict.source or ".ocr-hook", 1, 1)]:
            out.append({
                "type": "issue",
                "check_name": f"{TOOL_NAME}/check/{verdict.name}",
                "description": f"check {verdict.name} ({verdict.mode}): {verdict.verdict}{overridden}: "
                               f"{verdict.reason}",
                "categories": ["Bug Risk"],
                "severity": "info" if verdict.override else "major" if verdict.blocks else "minor",
                "fingerprint": unique_fingerprint(_digest(f"{TOOL_NAME}/check/{verdict.name}", f"{path}:{start}"),
                                                  taken),
                "engine_name": TOOL_NAME,
                "location": {"path": shown(path), "lines": {"begin": start, "end": end}},
            })
    for note in sorted(result.file_notes, key=lambda n: (n.path, n.text)):
        out.append({
            "type": "issue",
            "check_name": NOTE_CHECK,
            "description": note.text,
            "categories": ["Clarity"],
            "severity": "info",
            # From the path alone: the text names the trusted revision, which moves with every commit,
            # and GitLab pairs entries across pipelines by fingerprint.
            "fingerprint": unique_fingerprint(_digest(NOTE_CHECK, note.path), taken),
            "engine_name": TOOL_NAME,
            "location": {"path": shown(note.path), "lines": {"begin": 1, "end": 1}},
        })
    return out


def render(result: ReviewResult, ctx: ReportContext) -> str:
    return dumps_json(entries(result))
