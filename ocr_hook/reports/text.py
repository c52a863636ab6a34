"""Human-readable report: findings grouped by file, a summary line and the gate's verdict."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ocr_hook import gate
from ocr_hook.changes.names import shown as shown_name
from ocr_hook.outcome import ReviewResult, RoutineNote
from ocr_hook.reports.base import coverage_groups, decision, safe_for_log, sorted_findings

if TYPE_CHECKING:
    from ocr_hook.checks.model import CheckVerdict
    from ocr_hook.findings import Finding
    from ocr_hook.reports.base import ReportContext

_RESET = "\x1b[0m"
_BADGE_STYLE = {  # by Severity value (a StrEnum member looks up its value): no findings' types at import
    "critical": "\x1b[1;37;41m",
    "high": "\x1b[1;31m",
    "medium": "\x1b[33m",
    "low": "\x1b[36m",
}
_STYLE = {"path": "\x1b[1m", "add": "\x1b[32m", "del": "\x1b[31m", "hunk": "\x1b[36m", "dim": "\x1b[2m",
          "bad": "\x1b[1;31m", "good": "\x1b[1;32m", "warn": "\x1b[1;33m"}
_INDENT = "    "


def _status_label(status: str, late_findings: str) -> str:
    """Review memory's status as a finding's header shows it ("new" needs no label)."""
    if status == "carried":
        return "(carried from the last review)"
    if status == "late":
        effect = "blocking: late_findings is block" if late_findings == "block" else "advisory"
        return f"(late: on lines unchanged since the last review; {effect})"
    return ""


def _paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{_RESET}" if color and text else text


def _indent(text: str, prefix: str = _INDENT) -> list[str]:
    return [prefix + line if line else prefix.rstrip() for line in text.split("\n")]


def _existing_lines(finding: Finding, file_text: str | None) -> list[str]:
    """The code the suggestion replaces: the anchored lines of the file, else the quoted code.

    Secrets in those lines are masked as they were for the model: a report ends up in CI logs."""
    # Loaded only for a suggestion to show: other formats use this module for summary_line alone.
    from ocr_hook.secrets_mask import mask_secrets

    code = finding.existing_code
    if file_text is not None and finding.anchored and finding.start_line >= 1:
        lines = file_text.splitlines()
        chosen = lines[finding.start_line - 1 : max(finding.start_line, finding.end_line)]
        if chosen:
            code = "\n".join(chosen)
    return mask_secrets(code)[0].splitlines()


def suggestion_diff(finding: Finding, file_text: str | None) -> list[str]:
    """A small unified diff from the existing code to the suggestion (no ---/+++ header)."""
    from ocr_hook.findings import shown_suggestion

    suggestion = shown_suggestion(finding)  # with a fix: re-indented, exactly what it would write
    if suggestion is None:
        return []
    import difflib

    old = _existing_lines(finding, file_text)
    new = suggestion.splitlines()
    lines = list(difflib.unified_diff(old, new, lineterm="", n=2))[2:]
    # The finding header already says where; hunk headers would count from the snippet, not the
    # file, so they become a plain gap marker (and the first one goes).
    lines = ["…" if line.startswith("@@") else line for line in lines]
    return lines[1:] if lines[:1] == ["…"] else lines


def _diff_line(line: str, color: bool) -> str:
    style = {"+": _STYLE["add"], "-": _STYLE["del"], "@": _STYLE["hunk"]}.get(line[:1], "")
    return _paint(line, style, color) if style else line


def _finding_block(finding: Finding, ctx: ReportContext, late_findings: str = "advisory") -> list[str]:
    path = safe_for_log(shown_name(finding.path))
    if finding.anchored and finding.start_line >= 1:
        where = f"{path}:{finding.start_line}"
        if finding.end_line > finding.start_line:
            where += f"-{finding.end_line}"
    else:
        where = f"{path} (whole file: the quoted code was not found)"
    badge = _paint(f"[{finding.severity.value.upper()}]", _BADGE_STYLE[finding.severity], ctx.color)
    short_id = _paint(short_id_of(finding), _STYLE["dim"], ctx.color)  # what `ocr-hook dismiss` takes
    label = _status_label(finding.status, late_findings)
    out = [f"{_paint(where, _STYLE['path'], ctx.color)}  {badge} {finding.category.value}  {short_id}"
           + (_paint("  " + label, _STYLE["dim"], ctx.color) if label else "")]
    out += _indent(safe_for_log(finding.message.strip() or "(no message)"))
    if finding.anchor_note:
        out += _indent(_paint(safe_for_log(f"note: {finding.anchor_note}"), _STYLE["dim"], ctx.color))
    diff = suggestion_diff(finding, ctx.file_texts.get(finding.path))
    if diff:
        out.append(_INDENT + ("suggested fix:" if finding.fix is not None else "suggestion:"))
        out += [_INDENT + "  " + _diff_line(safe_for_log(line), ctx.color) for line in diff]
    return out


def short_id_of(finding: Finding) -> str:
    from ocr_hook.findings.dismissals import SHORT_ID  # here: a run with no finding need not load it

    return finding.fingerprint[:SHORT_ID]


def _where(finding: Finding) -> str:
    if finding.anchored and finding.start_line >= 1:
        end = f"-{finding.end_line}" if finding.end_line > finding.start_line else ""
        return f"{shown_name(finding.path)}:{finding.start_line}{end}"
    return f"{shown_name(finding.path)} (whole file)"


def one_line(finding: Finding, late_findings: str = "advisory") -> str:
    """`path:line [SEVERITY] category id: the message's first line` (a dismissed one: its reason instead)."""
    head = f"{_where(finding)} [{finding.severity.value.upper()}] {finding.category.value} {short_id_of(finding)}"
    if finding.suppressed == "dismissed":  # whatever its memory status: dismissed is what counts
        reason = finding.suppression_reason or ""
        if finding.extra.get("dismissed_in"):  # by a person on the pull request: who, where, when
            from ocr_hook.findings.dismissals import dismissal_words

            reason = "by " + dismissal_words(finding)
        return safe_for_log(f"{head}: dismissed: {reason}".rstrip())[:300]
    first = (finding.message.strip().splitlines() or ["(no message)"])[0]
    label = _status_label(finding.status, late_findings)
    return safe_for_log(f"{head}{' ' + label if label else ''}: {first}")[:300]


def _resolved_line(finding: Finding, gap: str = " ") -> str:
    """A finding review memory resolved, as the earlier review placed it: `path:line [SEVERITY] category: message`."""
    line = f":{finding.start_line}" if finding.anchored and finding.start_line >= 1 else ""
    where = shown_name(finding.path) + line
    return safe_for_log(f"{where}{gap}[{finding.severity.value.upper()}] {finding.category.value}: "
                        f"{' '.join(finding.message.split())}")


def _brief(result: ReviewResult, ctx: ReportContext) -> str:
    """A passing run under pre-commit: a line per finding (and note), then one line with verdict and summary."""
    shown = [f for f in sorted_findings(result.findings) if f.suppressed in (None, "dismissed")]
    lines = [one_line(f, result.late_findings) for f in shown]
    # Review memory: what the fix resolved is named too, not only counted in the summary (DESIGN 7).
    lines += [f"resolved since the last review: {_resolved_line(f)}"[:300] for f in sorted_findings(result.resolved)]
    lines += [line.strip() for line in check_lines(result)[2:]]
    lines += [safe_for_log(f"note: {n}") for n in result.notes if not isinstance(n, RoutineNote)]
    verdict = decision(result, ctx).line
    lines.append(safe_for_log(f"ocr-hook: {verdict} · {summary_line(result)}"))
    return "\n".join(lines) + "\n"


_VERDICT_WORDS = {"pass": "PASS", "fail": "FAIL", "inconclusive": "INCONCLUSIVE", "not_applicable": "N/A"}


def check_lines(result: ReviewResult) -> list[str]:
    """After the findings: one line per check (verdict, mode, name, reason), its evidence and any override."""
    if not result.checks:
        return []
    lines = ["", "Checks:"]
    for v in result.checks:
        verdict = "OVERRIDDEN" if v.override is not None else _VERDICT_WORDS.get(v.verdict, v.verdict.upper())
        more = " (carried: same inputs as an earlier run)" if v.carried else ""
        if v.changed_in_change:
            more += " (its file changes with this pull request; takes effect after merge)"
        lines.append(safe_for_log(f"  {verdict} [{v.mode}] {v.name}: {' '.join(v.reason.split())}{more}")[:400])
        if v.override is not None:
            lines.append(safe_for_log(f"    overridden by {v.override.by} ({v.override.where}): was {v.verdict}; "
                                      f"{' '.join(v.override.reason.split())}")[:400])
        for e in v.evidence:
            where = f"{shown_name(e.path)}:{e.start_line}" if e.anchored else f"{shown_name(e.path)} ({e.note})"
            first = (e.code.strip().splitlines() or [""])[0]
            lines.append(safe_for_log(f"    at {where}: {first}")[:300])
        lines += [safe_for_log(line)[:400] for line in requirement_lines(v)]
    return lines


REQUIREMENT_WORDS = {"met": "met", "not_met": "not met", "needs_person": "needs a person"}


def requirement_lines(v: CheckVerdict) -> list[str]:
    """linked-issues (issue 60): each ticket with its link, then each requirement's status, text and why."""
    lines = []
    for t in v.tickets:
        clipped = " (clipped)" if t.clipped else ""
        lines.append(f"    ticket {t.key} {' '.join(t.title.split())[:120]}: {t.url}{clipped}")
    for r in v.requirements:
        where = ", ".join(f"{shown_name(e.path)}:{e.start_line}" for e in r.evidence if e.anchored)
        why = f" ({where})" if where else f": {r.reason}" if r.reason else ""
        lines.append(f"    {r.ticket} {REQUIREMENT_WORDS.get(r.status, r.status)}: {r.requirement}{why}")
    return lines


def summary_line(result: ReviewResult) -> str:
    """Files, findings by severity, requests, tokens and cache share, cost and time, on one line.

    The text report ends with it; for other formats the CLI prints it on standard error."""
    groups = coverage_groups(result)
    cached = sum(1 for f in groups["reviewed"] if f.state == "cached")
    files = f"{len(groups['reviewed'])} file{'s' if len(groups['reviewed']) != 1 else ''} reviewed"
    if cached:
        files += f" ({cached} from cache)"
    files += f", {len(groups['skipped'])} skipped, {len(groups['failed'])} failed"
    efforts = Counter(f.effort for f in result.files if f.effort is not None)
    if efforts:
        files += " (" + ", ".join(f"{efforts[name]} {name}" for name in ("quick", "standard", "deep")
                                  if efforts[name]) + ")"
    packs = [f for f in result.files if f.context_entries is not None]
    if packs:  # DESIGN.md 12: how much context the files' first requests carried
        entries = sum(f.context_entries or 0 for f in packs)
        cut = sum(1 for f in packs if f.context_cut)
        was_cut = f", {cut} pack{'s' if cut != 1 else ''} cut" if cut else ""
        files += (f" (context: {entries} entr{'y' if entries == 1 else 'ies'} for {len(packs)} "
                  f"file{'s' if len(packs) != 1 else ''}{was_cut})")
    active = [f for f in result.findings if f.suppressed is None]
    counts = Counter(f.severity for f in active)
    if active:
        from ocr_hook.findings import Severity

        findings = f"{len(active)} finding{'s' if len(active) != 1 else ''} (" + ", ".join(
            f"{counts[s]} {s.value}" for s in Severity if counts[s]) + ")"
    else:
        findings = "no findings"
    remembered = Counter(f.status for f in active if f.status != "new")
    if remembered:  # review memory: how much of it the last review already knew
        findings = findings[:-1] + "; " + ", ".join(f"{remembered[s]} {s}" for s in ("carried", "late")
                                                    if remembered[s]) + ")"
    suppressed = len(result.findings) - len(active)
    if suppressed:
        findings += f", {suppressed} suppressed"
    if result.resolved:
        findings += f", {len(result.resolved)} resolved since the last review"
    u = result.usage
    tokens = f"{u.input_tokens:,} in / {u.output_tokens:,} out tokens"
    if u.cache_read_input_tokens or u.cache_creation_input_tokens:
        prompt = u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens
        tokens += (f" (cache: {u.cache_read_input_tokens:,} read, {u.cache_creation_input_tokens:,} written, "
                   f"{u.cache_read_input_tokens / prompt:.0%} of input from cache)")
    return " · ".join([
        files, findings, f"{u.requests} request{'s' if u.requests != 1 else ''}", tokens,
        f"${u.cost_usd:.4f}", f"{result.elapsed_s:.1f}s",
    ])


_EFFORT_LISTED_FILES = 20


def _effort_lines(result: ReviewResult) -> list[str]:
    """Each file's effort profile, when the files did not all get the same one (then the summary line's
    count says it all)."""
    by_profile: dict[str, list[str]] = {}
    for f in result.files:
        if f.effort is not None:
            by_profile.setdefault(f.effort, []).append(shown_name(f.path))
    if len(by_profile) < 2:
        return []
    lines = ["", "Effort:"]
    for name in ("quick", "standard", "deep"):
        paths = by_profile.get(name, [])
        if paths:
            shown = ", ".join(safe_for_log(p) for p in paths[:_EFFORT_LISTED_FILES])
            more = f" and {len(paths) - _EFFORT_LISTED_FILES} more" if len(paths) > _EFFORT_LISTED_FILES else ""
            lines.append(f"  {name}: {shown}{more}")
    return lines


# What each kind of drop means, in words (the JSON report's `dropped` keeps the keys).
_FILTER_MODE_WORDS = {"added": "on lines this change did not add",
                      "diff_context": "on lines outside this change's hunks",
                      "file": "in files this change did not touch"}
_DROP_WORDS = {"review_filter": "that the review filter found wrong (listed below)",
               "duplicates": "that repeated another comment", "ignore_categories": "in categories the project ignores"}


def _dropped_words(key: str, count: int, filter_mode: str) -> str:
    if key == "filter_mode":
        where = _FILTER_MODE_WORDS.get(filter_mode, "outside what the filter mode keeps")
        return f"{count} {where} (filter_mode {filter_mode})"
    return f"{count} {_DROP_WORDS.get(key, f'by {safe_for_log(key)}')}"


def render(result: ReviewResult, ctx: ReportContext) -> str:
    blocked = decision(result, ctx).exit_code == gate.EXIT_BLOCKING
    if ctx.brief and result.complete and not blocked:
        return _brief(result, ctx)
    color = ctx.color
    lines: list[str] = []
    shown = [f for f in sorted_findings(result.findings) if f.suppressed is None]
    current: str | None = None
    for finding in shown:
        if finding.path != current:
            if current is not None:
                lines.append("")
            current = finding.path
            lines.append(_paint(f"── {safe_for_log(shown_name(finding.path))}", _STYLE["path"], color))
        lines += _finding_block(finding, ctx, result.late_findings)
    dismissed = [f for f in sorted_findings(result.findings) if f.suppressed == "dismissed"]
    if dismissed:
        lines += ["", f"Dismissed (never blocking; see `{ctx.program} dismissed`):"]
        lines += [f"  {one_line(f)}" for f in dismissed]
        on_forge = sum(1 for f in dismissed if f.extra.get("dismissed_in"))
        if on_forge:  # for this pull request only, until recorded in the dismissals file
            lines.append(f"  ({on_forge} dismissed on the pull request, for this change only; keep them with "
                         f"`{ctx.program} dismiss --from-forge`)")
    lines += check_lines(result)
    groups = coverage_groups(result)
    for title, entries in (("Skipped", groups["skipped"]), ("Not reviewed (failed)", groups["failed"])):
        if entries:
            lines += ["", f"{title}:"]
            for f in entries:
                mark = " [review incomplete]" if f.incomplete or f.state == "failed" else ""
                lines.append(f"  {safe_for_log(shown_name(f.path))} — {safe_for_log(f.reason or f.state)}{mark}")
    if result.resolved:
        lines += ["", f"Resolved since the last review: {len(result.resolved)}"]
        lines += [f"  {_resolved_line(f, gap='  ')}" for f in sorted_findings(result.resolved)]
    lines += _effort_lines(result)
    if result.dropped:
        dropped = "; ".join(_dropped_words(k, v, ctx.filter_mode) for k, v in sorted(result.dropped.items()))
        lines += ["", f"Comments dropped: {dropped}"]
        lines += [f"  {safe_for_log(shown_name(d.path))}:{d.start_line} [{d.severity.upper()}] "
                  f"{safe_for_log(d.message)} — "
                  f"dropped by the {d.by.replace('_', ' ')}: {safe_for_log(d.reason)}" for d in result.dropped_comments]
    if result.notes:
        lines += ["", "Notes:"] + [f"  - {safe_for_log(n)}" for n in result.notes]
    lines += ["", summary_line(result)]
    decided = decision(result, ctx)
    verdict = safe_for_log(decided.line)
    if decided.exit_code != gate.EXIT_CLEAN:
        style = _STYLE["bad"]
    else:
        style = _STYLE["good"] if result.complete else _STYLE["warn"]
    lines.append(_paint(verdict, style, color))
    if blocked and ctx.next_steps:
        lines += ["", *(safe_for_log(step) for step in ctx.next_steps)]
    return "\n".join(lines).lstrip("\n") + "\n"
