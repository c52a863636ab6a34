"""Checks on the pull request (DESIGN.md 20), on any forge: the summary's checks table, a thread per failed
check, and a maintainer's resolve of that thread as the check's override. Pure; publish.plan calls these.

A failed check (or an inconclusive one that blocks) gets one thread at its first anchored piece of evidence,
opened by `<!-- ocr-hook check=KEY -->` (KEY: `check_key(name)`, hex, so no check name ever reaches a marker).
The next run finds it again by that marker and posts no second one; a check that passes again has its thread
resolved (or, where a person answered, one reply). A check with no anchored evidence, or whose evidence is not
on the forge's diff, is listed in the summary with its evidence instead.

Rides the findings' machinery: a check's thread goes to the adapters as an `Inline` whose finding carries the
evidence's path and lines and the check's key as its fingerprint (the adapters need no more, and know no
checks), and `comment_fingerprint` reads both markers, so every adapter counts the thread as ocr-hook's.

The override (DESIGN.md 18's rule, as for findings): a thread of ours resolved by a person with write access,
not a bot and not the request's author, while its check still fails, is `Override(by, reason, where)`: the
reason is that person's last reply in the thread. Per check, never for all at once.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence

from ocr_hook.checks.model import CheckVerdict, Evidence, Override
from ocr_hook.findings.model import Category, Finding, Severity
from ocr_hook.publish.render import clip, code_span, fenced, inert, plain

CHECK_MARKER = re.compile(r"\A<!-- ocr-hook check=([0-9a-f]{16}) -->")
# A reply saying a check passes now, in its thread a person answered: said once.
PASSED_MARKER = re.compile(r"\A<!-- ocr-hook check-passed=([0-9a-f]{16}) -->")
MAX_REASON = 1_000
MAX_EVIDENCE = 5  # pieces of evidence shown per check (the SARIF and JSON reports have them all)
MAX_CODE = 1_500

_ICON = {"pass": "✅ pass", "fail": "❌ fail", "inconclusive": "❔ inconclusive", "not_applicable": "➖ not applicable"}


def check_key(name: str) -> str:
    """The check's key in markers: a digest of its name (a file stem may hold anything)."""
    return hashlib.sha256(b"ocr-hook check\0" + name.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def marker_key(body: str) -> str | None:
    match = CHECK_MARKER.match(body or "")
    return match.group(1) if match else None


def wants_thread(v: CheckVerdict) -> bool:
    """A check whose verdict a person should see where the code is: failed, or inconclusive and blocking;
    not one already overridden by `dismiss --check` (a forge override keeps its resolved thread)."""
    return v.override is None and (v.verdict == "fail" or v.blocks)


def anchor(v: CheckVerdict) -> Evidence | None:
    """The evidence the check's thread goes on: its first anchored piece."""
    return next((e for e in v.evidence if e.anchored and int(e.start_line) >= 1), None)


def span(e: Evidence) -> tuple[int, int]:
    start = int(e.start_line)
    return start, max(start, int(e.end_line))


def thread_finding(v: CheckVerdict, e: Evidence) -> Finding:
    """What the adapters read of a check's thread: the evidence's path and lines, the check's key."""
    start, end = span(e)
    severity = Severity.HIGH if v.mode == "block" else Severity.MEDIUM
    return Finding(e.path, start, end, severity, Category.OTHER, v.reason, None, True, check_key(v.name))


def heading(v: CheckVerdict) -> str:
    return f"**ocr-hook check** {code_span(v.name)} · {_ICON.get(v.verdict, v.verdict)} · {v.mode}"


def _evidence_lines(v: CheckVerdict) -> list[str]:
    lines: list[str] = []
    for e in v.evidence[:MAX_EVIDENCE]:
        where = f"{e.path}:{span(e)[0]}" + (f"-{span(e)[1]}" if span(e)[1] > span(e)[0] else "") \
            if e.anchored and int(e.start_line) >= 1 else e.path
        note = "" if e.anchored else f" (not found in the change{': ' + inert(e.note) if e.note else ''})"
        lines += ["", f"- {code_span(where)}{note}", "", *(f"  {x}" if x else "" for x in
                                                          fenced(clip(e.code, MAX_CODE)).split("\n"))]
    if len(v.evidence) > MAX_EVIDENCE:
        lines += ["", f"- … and {len(v.evidence) - MAX_EVIDENCE} more in the review's JSON and SARIF reports"]
    return lines


def thread_body(v: CheckVerdict, kind: str) -> str:
    """The check's thread: marker, heading, the reason (inert), the evidence, and how to override it."""
    parts = [f"<!-- ocr-hook check={check_key(v.name)} -->", heading(v), "",
             inert(clip(v.reason.strip() or "(no reason given)", MAX_REASON))]
    if v.evidence:
        parts += ["", "Evidence:", *_evidence_lines(v)]
    parts += requirements_table(v)
    parts += ["", f"A maintainer who resolves this thread overrides this check for this {kind} (their last "
                  f"reply here is the reason); the {kind}'s author cannot. The check's file: "
                  f"{code_span(v.source or '(built in)')}."]
    return "\n".join(parts)


def passed_reply_body(key: str) -> str:
    return (f"<!-- ocr-hook check-passed={key} -->\n**ocr-hook**: this check passes on the latest review. The "
            "thread stays open because it has replies; resolve it when the conversation is done.")


def replied_passed(replies: Iterable[object], me: frozenset[str]) -> bool:
    return any(getattr(r, "author", "") in me and PASSED_MARKER.match(getattr(r, "body", "") or "") for r in replies)


# --- the summary --------------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    """Text for one table cell: one line, no pipe that ends the cell early."""
    return " ".join(inert(text).split()).replace("|", "\\|")


def _note(v: CheckVerdict, threaded: bool, kind: str) -> str:
    said = []
    if v.override is not None:
        o = v.override
        said.append(f"overridden by {inert(o.by)} ({inert(o.where)})" + (f": {inert(clip(o.reason, 300))}"
                                                                          if o.reason else ""))
    if v.carried:
        said.append("carried from the last review (its inputs did not change)")
    if v.changed_in_change:
        said.append(f"its file changes with this {kind}; takes effect after merge")
    if threaded:
        said.append("see its thread")
    return "; ".join(said)


def table(checks: Sequence[CheckVerdict], threaded: frozenset[str], kind: str) -> list[str]:
    """The summary's checks table: verdict, mode, name, reason (and who overrode it, why)."""
    if not checks:
        return []
    rows = ["#### Checks", "", "| Verdict | Mode | Check | Reason |", "| --- | --- | --- | --- |"]
    for v in checks:
        verdict = _ICON.get(v.verdict, v.verdict) + (" (overridden)" if v.override is not None else "")
        reason = clip(" ".join(v.reason.split()), 400)
        note = _note(v, v.name in threaded, kind)
        rows.append(f"| {_cell(verdict)} | {_cell(v.mode)} | {code_span(v.name).replace('|', chr(92) + '|')} | "
                    f"{_cell(reason)}{' (' + note.replace('|', chr(92) + '|') + ')' if note else ''} |")
    for v in checks:
        rows += requirements_table(v)
    return rows


_STATUS = {"met": "✅ met", "not_met": "❌ not met", "needs_person": "❓ needs a person"}
_SAFE_URL = re.compile(r"\Ahttps://[^\s()<>\[\]`]+\Z")


def ticket_link(key: str, title: str, url: str) -> str:
    """A ticket as Markdown: its key and title made inert (anyone who can open an issue wrote the title), linked
    only to an https address with nothing in it that could end the link early."""
    said = _cell(f"{key} {clip(' '.join(title.split()), 120)}")
    return f"[{said}]({url})" if _SAFE_URL.match(url) else f"{said} ({code_span(url)})"


def requirements_table(v: CheckVerdict) -> list[str]:
    """linked-issues (issue 60): the tickets read, with their links, and each requirement's status and evidence."""
    if not v.tickets and not v.requirements:
        return []
    out = ["", f"#### Linked tickets ({code_span(v.name)})", ""]
    out += [f"- {ticket_link(t.key, t.title, t.url)}" + (" (clipped)" if t.clipped else "") for t in v.tickets]
    if v.requirements:
        out += ["", "| Ticket | Requirement | Status | Evidence |", "| --- | --- | --- | --- |"]
        for r in v.requirements:
            where = ", ".join(code_span(f"{e.path}:{e.start_line}") for e in r.evidence if e.anchored)
            out.append(f"| {_cell(r.ticket)} | {_cell(r.requirement)} | {_STATUS.get(r.status, _cell(r.status))} | "
                       f"{where.replace('|', chr(92) + '|') or _cell(r.reason)} |")
    return out


def listed(checks: Sequence[tuple[CheckVerdict, str]]) -> list[str]:
    """Failed checks without a thread of their own: the reason and the evidence, in the summary."""
    if not checks:
        return []
    out = ["#### Failed checks not on a diff line"]
    for v, why in checks:
        out += ["", f"- {heading(v)} ({why})", "", f"  {inert(clip(' '.join(v.reason.split()), MAX_REASON))}"]
        out += [f"  {x}" if x else "" for x in _evidence_lines(v)]
    return out


def digest(checks: Sequence[CheckVerdict]) -> str:
    """What the summary says of the checks, for the marker: a re-run whose checks say the same posts nothing."""
    said = "\n".join(f"{v.name}\0{v.verdict}\0{v.mode}\0{v.override}\0{[(r.ticket, r.status) for r in v.requirements]}"
                     for v in checks)
    return hashlib.sha256(said.encode("utf-8", "surrogatepass")).hexdigest()[:12] if checks else ""


def checks_said(checks: Sequence[CheckVerdict]) -> str:
    """The checks in one plain line: how many of each verdict, and the names of those that fail or block."""
    counted: dict[str, int] = {}
    for v in checks:
        counted[v.verdict] = counted.get(v.verdict, 0) + 1
    failing = [plain(v.name) + (" (overridden)" if v.override is not None else "") for v in checks
               if v.verdict == "fail" or v.blocks or v.override is not None]
    said = ", ".join(f"{n} {verdict.replace('_', ' ')}" for verdict, n in counted.items())
    return said + (f"; failed: {', '.join(failing)}" if failing else "")


# --- overrides ---------------------------------------------------------------------------------------------


def apply_overrides(checks: Sequence[CheckVerdict], found: Mapping[str, Override]) -> list[CheckVerdict]:
    """The verdicts with the forge's overrides on the checks they name: only a check that fails (or is
    inconclusive) and carries no override already (a dismissals-file entry stays the one reported)."""
    out = []
    for v in checks:
        o = found.get(check_key(v.name))
        if o is not None and v.override is None and v.verdict in ("fail", "inconclusive"):
            v = v._replace(override=o)
        out.append(v)
    return out

