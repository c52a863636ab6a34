"""SARIF 2.1.0 for GitHub code scanning and other consumers (DESIGN.md sections 4 and 5).

GitHub rejects a whole upload for one bad result, so every result has a location with a 1-based
region, a numeric-string `security-severity`, and repo-relative URIs. GitHub reads a rule's
`security-severity` (not a result's) to rank security alerts, so security findings get one rule per
severity; every other category has one rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ocr_hook.changes.names import shown
from ocr_hook.findings import Category, Finding, Severity, shown_suggestion
from ocr_hook.findings.line_hash import line_hashes
from ocr_hook.outcome import ReviewResult
from ocr_hook.reports.base import TOOL_NAME, coverage_groups, dumps_json, exit_code_for, line_range, severity_order

if TYPE_CHECKING:
    from ocr_hook.checks.model import CheckVerdict
    from ocr_hook.reports.base import ReportContext

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/ocr-hook/"
SRCROOT = "%SRCROOT%"
# DESIGN.md allows up to 5,000 results, but the multitool's GitHub rule GH1004 (switched on in
# shared/schemas/sarif-multitool-github-rules.xml) rejects runs with more than 1,000 results, as
# GitHub's default display limit. Keep the 1,000 most severe: that satisfies both.
MAX_RESULTS = 1000
OUR_FINGERPRINT = "ocrHookFingerprint/v1"
GITHUB_LINE_HASH = "primaryLocationLineHash"

LEVEL = {Severity.CRITICAL: "error", Severity.HIGH: "error", Severity.MEDIUM: "warning", Severity.LOW: "note"}
SECURITY_SEVERITY = {Severity.CRITICAL: "9.5", Severity.HIGH: "8.0", Severity.MEDIUM: "5.5", Severity.LOW: "3.0"}
SUPPRESSION_KIND = {"baseline": "external", "inline": "inSource", "dismissed": "external"}
_SUPPRESSION_WHY = {
    "baseline": "Fingerprint listed in the ocr-hook baseline file.",
    "inline": "Suppressed by an 'ocr-hook: ignore' marker on or above the line.",
}

# name, short description, full description, default level
_CATEGORY_TEXT: dict[Category, tuple[str, str, str, str]] = {
    Category.BUG: (
        "Bug", "Code that likely behaves incorrectly.",
        "The change contains code that is likely to behave incorrectly at run time: wrong logic, "
        "unhandled cases, misuse of an API, broken error handling or data corruption.", "warning"),
    Category.SECURITY: (
        "Security", "A likely security weakness.",
        "The change introduces or exposes a likely security weakness, such as injection, missing "
        "authorisation, unsafe deserialisation, secrets in code or unsafe handling of untrusted input.",
        "error"),
    Category.PERFORMANCE: (
        "Performance", "Avoidable cost in time or memory.",
        "The change does avoidable work: needless repeated computation or I/O, quadratic loops over "
        "large inputs, unbounded memory growth or blocking calls on a hot path.", "warning"),
    Category.MAINTAINABILITY: (
        "Maintainability", "Code that will be hard to change safely.",
        "The change makes the code harder to understand or change safely: duplication, hidden "
        "coupling, misleading names, dead code or overly complex control flow.", "note"),
    Category.TEST: (
        "Test", "A problem in or a gap of the tests.",
        "The tests touched by the change are wrong, fragile or missing for behaviour the change "
        "introduces.", "note"),
    Category.STYLE: (
        "Style", "Inconsistent or unidiomatic code.",
        "The change departs from the conventions of the surrounding code or of the language in a way "
        "that hinders reading.", "note"),
    Category.DOCUMENTATION: (
        "Documentation", "Missing, wrong or outdated documentation.",
        "Comments, docstrings or documents touched by the change are missing, wrong or no longer "
        "match the code.", "note"),
    Category.OTHER: (
        "Other", "A review comment outside the other categories.",
        "A review comment by ocr-hook that does not fit the other categories.", "warning"),
}


def rule_id(category: Category, severity: Severity | None) -> str:
    """`ocr-hook/<category>`; security rules add the severity: `ocr-hook/security/high`."""
    if category is Category.SECURITY:
        if severity is None:
            raise ValueError("security rules are per severity")
        return f"{TOOL_NAME}/security/{severity.value}"
    return f"{TOOL_NAME}/{category.value}"


def _rule(category: Category, severity: Severity | None) -> dict[str, Any]:
    name, short, full, level = _CATEGORY_TEXT[category]
    help_text = (
        f"{full}\n\nThe finding was written by ocr-hook, an LLM code reviewer, about the lines it "
        "points at; its message says what is wrong and may suggest replacement code. To silence one "
        "finding, put 'ocr-hook: ignore' in a comment on or above the line, dismiss it with the reason "
        "('ocr-hook dismiss ID --reason TEXT': recorded in the repository and taught to later reviews), or add its "
        "fingerprint to a baseline file with 'ocr-hook baseline'."
    )
    properties: dict[str, Any] = {"tags": [category.value], "precision": "medium"}
    if severity is not None:
        name += severity.value.capitalize()
        short = f"{short[:-1]} ({severity.value} severity)."
        level = LEVEL[severity]
        properties["tags"] = ["security"]
        properties["security-severity"] = SECURITY_SEVERITY[severity]
    return {
        "id": rule_id(category, severity),
        "name": name,
        "shortDescription": {"text": short},
        "fullDescription": {"text": full},
        "help": {"text": help_text, "markdown": help_text},
        "defaultConfiguration": {"level": level},
        "properties": properties,
    }


def all_rules() -> list[dict[str, Any]]:
    """Every rule ocr-hook can report, always in the same order."""
    rules = []
    for category in Category:
        if category is Category.SECURITY:
            rules += [_rule(category, severity) for severity in Severity]
        else:
            rules.append(_rule(category, None))
    return rules


def artifact_uri(path: str) -> str:
    """A repo-relative URI reference: percent-encoded UTF-8 bytes, '/' kept."""
    return quote(path.encode("utf-8", "surrogateescape"), safe="/")


def _artifact(path: str) -> dict[str, Any]:
    return {"uri": artifact_uri(path), "uriBaseId": SRCROOT}


def _message(f: Finding) -> str:
    text = f.message.strip() or "(no message)"
    suggestion = shown_suggestion(f)
    if suggestion:
        text += "\n\nSuggested code:\n" + suggestion
    if not f.anchored:
        text += "\n\n(The quoted code was not found in the file; this finding is about the whole file.)"
    return text


def _result(f: Finding, rule_index: Mapping[str, int], hashes: list[str] | None) -> dict[str, Any]:
    start, end = line_range(f)
    rid = rule_id(f.category, f.severity)
    properties: dict[str, Any] = {
        "severity": f.severity.value,
        "category": f.category.value,
        "anchored": f.anchored,
        "tags": ["security"] if f.category is Category.SECURITY else [f.category.value],
    }
    if f.category is Category.SECURITY:
        properties["security-severity"] = SECURITY_SEVERITY[f.severity]
    if f.anchor_note:
        properties["anchorNote"] = f.anchor_note
    properties["reviewStatus"] = f.status  # review memory: new, carried or late
    fingerprints = {OUR_FINGERPRINT: f.fingerprint}
    if hashes is not None and start <= len(hashes):
        fingerprints[GITHUB_LINE_HASH] = hashes[start - 1]
    result: dict[str, Any] = {
        "ruleId": rid,
        "ruleIndex": rule_index[rid],
        "level": LEVEL[f.severity],
        "message": {"text": _message(f)},
        "locations": [{"physicalLocation": {
            "artifactLocation": _artifact(f.path),
            "region": {"startLine": start, "endLine": end},
        }}],
        "partialFingerprints": fingerprints,
        # Against the last review (review memory): carried findings are unchanged; late ones were not
        # reported before, so they are new to whoever reads this log.
        "baselineState": "unchanged" if f.status == "carried" else "new",
        "properties": properties,
    }
    if f.fix is not None:
        result["fixes"] = [_fix(f)]
    if f.suppressed:
        suppression: dict[str, Any] = {
            "kind": SUPPRESSION_KIND.get(f.suppressed, "external"),
            "status": "accepted",
            "justification": f.suppression_reason
            or _SUPPRESSION_WHY.get(f.suppressed, f"Suppressed ({f.suppressed})."),
        }
        if f.extra.get("dismissed_in"):  # a person's resolve on the pull request (DESIGN.md 18)
            from ocr_hook.findings.dismissals import dismissal_words

            suppression["justification"] = "Dismissed by " + dismissal_words(f)
            suppression["properties"] = {"dismissedBy": f.extra.get("dismissed_by", ""),
                                         "dismissedAt": f.extra.get("dismissed_at", ""),
                                         "dismissedIn": f.extra["dismissed_in"]}
        result["suppressions"] = [suppression]
    return result


def check_rule_id(name: str) -> str:
    return f"{TOOL_NAME}/check/{name}"


def _check_rule(verdict: CheckVerdict) -> dict[str, Any]:
    where = f" (defined in {verdict.source})" if verdict.source else ""
    help_text = (verdict.instruction or f"The team's check {verdict.name}.") + \
        f"\n\nA check of the team's{where}, answered by ocr-hook for the whole change: pass, fail, inconclusive " \
        "or not applicable. Override it for one change with 'ocr-hook dismiss --check NAME --reason TEXT'."
    return {
        "id": check_rule_id(verdict.name),
        "name": "Check" + "".join(p.capitalize() for p in re.split(r"[^A-Za-z0-9]+", verdict.name) if p),
        "shortDescription": {"text": f"The team's check '{verdict.name}'."},
        "fullDescription": {"text": help_text},
        "help": {"text": help_text, "markdown": help_text},
        "defaultConfiguration": {"level": "error" if verdict.mode == "block" else "warning"},
        "properties": {"tags": ["check"], "mode": verdict.mode},
    }


def _check_results(verdict: CheckVerdict, rule_index: Mapping[str, int]) -> list[dict[str, Any]]:
    """A failed or inconclusive check: one result at each anchored piece of its evidence, else at its file."""
    if verdict.verdict not in ("fail", "inconclusive"):
        return []
    from ocr_hook.digest import sha256_hex

    level = "error" if verdict.blocks or (verdict.mode == "block" and verdict.override is not None
                                          and verdict.verdict == "fail") else "warning"
    text = f"Check {verdict.name} ({verdict.mode}): {verdict.verdict}. {verdict.reason}"
    if verdict.requirements:  # linked-issues (issue 60): what is not met, and the tickets it comes from
        from ocr_hook.reports.text import REQUIREMENT_WORDS

        open_ones = [f"{r.ticket} {REQUIREMENT_WORDS.get(r.status, r.status)}: {r.requirement}"
                     for r in verdict.requirements if r.status != "met"]
        text += "".join(f"\n- {line}" for line in open_ones)
        text += "".join(f"\nTicket {t.key}: {t.url}" for t in verdict.tickets)
    places = [(e.path, e.start_line, max(e.start_line, e.end_line)) for e in verdict.evidence if e.anchored]
    if not places:
        # Not the repository root: GitHub code scanning refuses a location without a region (its rule GH1003
        # wants region.startLine), and a directory has no lines; the check's own file, line 1, is where the
        # rule the team wrote lives (a built-in check's: the settings file that configures it).
        places = [(verdict.source or ".ocr-hook.yaml", 1, 1)]
    out = []
    for path, start, end in places:
        rid = check_rule_id(verdict.name)
        item: dict[str, Any] = {
            "ruleId": rid, "ruleIndex": rule_index[rid], "level": level, "message": {"text": text},
            "locations": [{"physicalLocation": {"artifactLocation": _artifact(path),
                                                "region": {"startLine": start, "endLine": end}}}],
            "partialFingerprints": {OUR_FINGERPRINT: sha256_hex(
                f"check\0{verdict.name}\0{path}\0{start}".encode("utf-8", "surrogateescape"))[:32]},
            "properties": {"check": verdict.name, "verdict": verdict.verdict, "mode": verdict.mode,
                           "carried": verdict.carried},
        }
        if verdict.override is not None:
            why = f"Overridden by {verdict.override.by}: {verdict.override.reason}"
            item["suppressions"] = [{"kind": "external", "status": "accepted", "justification": why}]
        out.append(item)
    return out


def _fix(f: Finding) -> dict[str, Any]:
    """The suggestion as a SARIF fix: whole lines out (no columns: reviewdog then makes a line-based
    GitHub/GitLab suggestion, which must cover the result's own lines), the replacement in."""
    assert f.fix is not None
    lines = "line" if f.fix.start_line == f.fix.end_line else "lines"
    where = f"{f.fix.start_line}" if lines == "line" else f"{f.fix.start_line}-{f.fix.end_line}"
    return {
        "description": {"text": f"Replace {lines} {where} with the suggested code."},
        "artifactChanges": [{
            "artifactLocation": _artifact(f.path),
            "replacements": [{
                "deletedRegion": {"startLine": f.fix.start_line, "endLine": f.fix.end_line},
                "insertedContent": {"text": f.fix.replacement},
            }],
        }],
    }


def _notification(level: str, text: str, descriptor: str, path: str | None = None) -> dict[str, Any]:
    note: dict[str, Any] = {"level": level, "message": {"text": text}, "descriptor": {"id": descriptor}}
    if path is not None:
        note["locations"] = [{"physicalLocation": {"artifactLocation": _artifact(path)}}]
    return note


def keep_most_severe(findings: list[Finding], limit: int = MAX_RESULTS) -> tuple[list[Finding], int]:
    """At most `limit` findings, unsuppressed and worst first; also how many were left out."""
    ranked = sorted(findings, key=severity_order)
    return ranked[:limit], max(0, len(ranked) - limit)


def cut_notification(dropped: int, limit: int) -> dict[str, Any]:
    return _notification(
        "warning",
        f"{dropped} more findings were left out: SARIF output keeps the {limit} most severe. "
        "Use --format json for all of them.",
        f"{TOOL_NAME}/results-truncated",
    )


def sarif_log(result: ReviewResult, ctx: ReportContext) -> dict[str, Any]:
    """The SARIF document as a dict."""
    rules = all_rules()
    rule_index = {rule["id"]: i for i, rule in enumerate(rules)}
    kept, dropped = keep_most_severe(result.findings)
    hash_cache: dict[str, list[str] | None] = {}

    def hashes_for(path: str) -> list[str] | None:
        if path not in hash_cache:
            text = ctx.file_texts.get(path)
            hash_cache[path] = line_hashes(text) if text is not None else None
        return hash_cache[path]

    ordered = sorted(kept, key=lambda f: (severity_order(f)[0], f.path, line_range(f), -f.severity.rank,
                                          f.fingerprint))
    results = [_result(f, rule_index, hashes_for(f.path)) for f in ordered]
    if result.checks:  # DESIGN.md 20: every check a rule; a failed or inconclusive one a result per evidence
        for verdict in result.checks:
            rule_index[check_rule_id(verdict.name)] = len(rules)
            rules.append(_check_rule(verdict))
            results += _check_results(verdict, rule_index)

    notifications: list[dict[str, Any]] = []
    groups = coverage_groups(result)
    for f in groups["skipped"]:
        level = "warning" if f.incomplete else "note"
        what = "not reviewed (review incomplete)" if f.incomplete else "skipped"
        notifications.append(_notification(level, f"{shown(f.path)}: {what}: {f.reason or 'no reason given'}",
                                           f"{TOOL_NAME}/file-skipped", f.path))
    for f in groups["failed"]:
        notifications.append(_notification("error", f"{shown(f.path)}: review failed: {f.reason or 'unknown error'}",
                                           f"{TOOL_NAME}/file-failed", f.path))
    note_paths = {note.text: note.path for note in result.file_notes}  # a note about one file points at it
    for note in result.notes:
        notifications.append(_notification("note", note, f"{TOOL_NAME}/note", note_paths.get(note)))
    # Resolved findings are not results (code scanning would show them as open alerts): notes instead.
    for f in sorted(result.resolved, key=lambda f: (f.path, f.start_line, f.fingerprint)):
        where = f"{shown(f.path)}:{f.start_line}" if f.anchored and f.start_line >= 1 else shown(f.path)
        notifications.append(_notification(
            "note", f"resolved since the last review: {where} [{f.severity.value} {f.category.value}] {f.message}",
            f"{TOOL_NAME}/resolved", f.path))
    if dropped:
        notifications.append(cut_notification(dropped, MAX_RESULTS))

    driver: dict[str, Any] = {"name": TOOL_NAME, "informationUri": INFORMATION_URI, "rules": rules}
    if ctx.tool_version:
        driver["version"] = ctx.tool_version
        driver["semanticVersion"] = ctx.tool_version
    u = result.usage
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "automationDetails": {"id": f"{ctx.sarif_category}/"},
        "invocations": [{
            "executionSuccessful": result.complete,
            "exitCode": exit_code_for(result, ctx),
            "toolExecutionNotifications": notifications,
            "properties": {
                "status": "complete" if result.complete else "incomplete",
                "filesReviewed": len(groups["reviewed"]),
                "filesSkipped": len(groups["skipped"]),
                "filesFailed": len(groups["failed"]),
                "requests": u.requests,
                "inputTokens": u.input_tokens,
                "outputTokens": u.output_tokens,
                "cacheCreationInputTokens": u.cache_creation_input_tokens,
                "cacheReadInputTokens": u.cache_read_input_tokens,
                "costUsd": round(u.cost_usd, 6),
            },
        }],
        "columnKind": "utf16CodeUnits",
        "results": results,
    }
    if ctx.repo_root:
        root_uri = Path(ctx.repo_root).resolve().as_uri().rstrip("/") + "/"
        run["originalUriBaseIds"] = {SRCROOT: {"uri": root_uri}}
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def dump_sarif(log: Mapping[str, Any]) -> str:
    """Serialise a SARIF document the way every ocr-hook SARIF file is written."""
    return dumps_json(log)


def render(result: ReviewResult, ctx: ReportContext) -> str:
    return dump_sarif(sarif_log(result, ctx))
