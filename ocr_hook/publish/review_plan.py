"""What one pull-request review says: which findings become inline comments, the body, the markers.

Pure: from the report, the lines GitHub accepts comments on and what earlier runs already posted, it
builds the request body of POST /pulls/{n}/reviews. A finding is an inline comment when it is
anchored and GitHub would accept its lines (the most severe 50 of those); every other finding is
listed in the review's body with the reason. Each comment starts with a hidden marker carrying the
finding's fingerprint, and the body with one listing the fingerprints it holds, so a re-run can tell
what is already on the pull request. Only a leading marker counts: text quoted further down (a
model's message, a suggestion) can never pose as one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ocr_hook.findings import Finding
from ocr_hook.publish.pr_diff import CommentableLines, accepts, same_text
from ocr_hook.publish.report_input import Report

MAX_INLINE = 50
MAX_BODY = 60_000  # characters; GitHub refuses a review or comment body over 65,536
MAX_MESSAGE_INLINE = 8_000
MAX_MESSAGE_BODY = 2_000

_COMMENT_MARKER = re.compile(r"\A<!-- ocr-hook fingerprint=([0-9a-f]{8,64}) -->")
_REVIEW_MARKER = re.compile(r"\A<!-- ocr-hook review exit=(\d+) status=([a-z]+) fingerprints=([0-9a-f,]*) -->")

# Why a finding is in the body rather than on its lines.
UNANCHORED = "about the whole file"
OUTSIDE_DIFF = "outside the pull request's diff"
MOVED = "these lines read differently on the pull request's head"
OVER_CAP = f"beyond the {MAX_INLINE} inline comments"
REFUSED = "GitHub refused the inline comments"


@dataclass(frozen=True, slots=True)
class Earlier:
    """What earlier ocr-hook runs left on the pull request."""

    fingerprints: frozenset[str] = frozenset()
    last_review: tuple[int, str] | None = None  # (exit code, status) of the latest ocr-hook review


@dataclass(frozen=True, slots=True)
class InlineComment:
    finding: Finding
    start: int
    end: int
    body: str

    def as_api(self) -> dict[str, Any]:
        comment: dict[str, Any] = {"path": self.finding.path, "line": self.end, "side": "RIGHT", "body": self.body}
        if self.start < self.end:
            comment.update(start_line=self.start, start_side="RIGHT")
        return comment


@dataclass(frozen=True, slots=True)
class ReviewPlan:
    comments: tuple[InlineComment, ...]
    in_body: tuple[tuple[Finding, str], ...]  # (finding, why it is not inline)
    body: str
    already: int  # findings an earlier run posted, not repeated
    suppressed: int
    post: bool  # False: nothing new since the latest ocr-hook review
    listed: tuple[str, ...] = field(default=())  # fingerprints the body carries

    def request(self, commit_id: str) -> dict[str, Any]:
        return {"commit_id": commit_id, "event": "COMMENT", "body": self.body,
                "comments": [c.as_api() for c in self.comments]}


# --- what is already there ---------------------------------------------------------------------------


def comment_fingerprint(body: str) -> str | None:
    match = _COMMENT_MARKER.match(body or "")
    return match.group(1) if match else None


def review_marker(body: str) -> tuple[int, str, list[str]] | None:
    match = _REVIEW_MARKER.match(body or "")
    if not match:
        return None
    return int(match.group(1)), match.group(2), [f for f in match.group(3).split(",") if f]


def earlier(comments: Iterable[Mapping[str, Any]], reviews: Iterable[Mapping[str, Any]]) -> Earlier:
    """Fingerprints from the review comments and review bodies GitHub lists (oldest first)."""
    seen: set[str] = set()
    for c in comments:
        if fp := comment_fingerprint(str(c.get("body") or "")):
            seen.add(fp)
    last: tuple[int, str] | None = None
    for r in reviews:
        marker = review_marker(str(r.get("body") or ""))
        if marker:
            last = marker[0], marker[1]
            seen.update(marker[2])
    return Earlier(frozenset(seen), last)


# --- the plan -------------------------------------------------------------------------------------------


def plan_review(report: Report, lines: CommentableLines, before: Earlier, *, inline: bool = True,
                reviewed: Mapping[str, Sequence[str]] | None = None) -> ReviewPlan:
    """`inline=False` lists every finding in the body (GitHub refused a comment's lines). `reviewed`:
    the reviewed files' lines where they can be read; a finding whose lines differ from the head's
    (a merge commit was reviewed) goes in the body. A file not in it is not checked."""
    reviewed = reviewed or {}
    live = sorted((f for f in report.findings if f.suppressed is None), key=_importance)
    suppressed = len(report.findings) - len(live)
    new = [f for f in live if f.fingerprint not in before.fingerprints]
    comments: list[InlineComment] = []
    in_body: list[tuple[Finding, str]] = []
    for f in new:
        start, end = _lines_of(f)
        if not f.anchored or start < 1:
            in_body.append((f, UNANCHORED))
        elif not accepts(lines, f.path, start, end):
            in_body.append((f, OUTSIDE_DIFF))
        elif f.path in reviewed and not same_text(lines, f.path, start, end, reviewed[f.path]):
            in_body.append((f, MOVED))
        elif not inline:
            in_body.append((f, REFUSED))
        elif len(comments) >= MAX_INLINE:
            in_body.append((f, OVER_CAP))
        else:
            comments.append(InlineComment(f, start, end, comment_body(f)))
    already = len(live) - len(new)
    unchanged = before.last_review == (report.exit_code, report.status)
    post = bool(new) or not unchanged
    body, listed = review_body(report, comments, in_body, already=already, suppressed=suppressed)
    return ReviewPlan(tuple(comments), tuple(in_body), body, already, suppressed, post, listed)


def _importance(f: Finding) -> tuple[Any, ...]:
    return (-f.severity.rank, f.path, f.start_line, f.end_line, f.fingerprint)


def _lines_of(f: Finding) -> tuple[int, int]:
    # A suggestion block replaces exactly the commented lines: with a fix, those are the fix's lines.
    if f.fix is not None:
        return f.fix.start_line, max(f.fix.start_line, f.fix.end_line)
    return f.start_line, max(f.start_line, f.end_line)


# --- texts ------------------------------------------------------------------------------------------------

_MENTION = re.compile(r"(?<![\w`])@(?=[A-Za-z0-9])")


def inert(text: str) -> str:
    """Model text made harmless in Markdown: no @mention that notifies someone (a Python decorator in
    a message would), no HTML comment that hides what follows or poses as a marker."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("<!--", "&lt;!--").replace("-->", "--&gt;")
    return _MENTION.sub("@\u200b", text)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fenced(code: str, info: str = "") -> str:
    """A fenced block that the code cannot close early: one backtick more than its longest run."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{code}\n{fence}" if code else f"{fence}{info}\n{fence}"


def code_span(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


_STATUS_NOTE = {"carried": " · carried from the last review",
                "late": " · late: on lines unchanged since the last review"}


def _heading(f: Finding) -> str:
    return f"**ocr-hook** · {f.severity.value} · {f.category.value}{_STATUS_NOTE.get(f.status, '')}"


def comment_body(f: Finding) -> str:
    parts = [f"<!-- ocr-hook fingerprint={f.fingerprint} -->", _heading(f), "",
             inert(_clip(f.message.strip() or "(no message)", MAX_MESSAGE_INLINE))]
    if f.fix is not None:
        # GitHub shows this as a suggested change: its text replaces the commented lines as it stands.
        parts += ["", fenced(f.fix.replacement, "suggestion")]
    elif f.suggestion:
        parts += ["", "Suggested code (not an exact edit of these lines):", "", fenced(f.suggestion)]
    return "\n".join(parts)


def _where(f: Finding) -> str:
    if not f.anchored or f.start_line < 1:
        return code_span(f.path)
    start, end = _lines_of(f)
    return code_span(f"{f.path}:{start}" + (f"-{end}" if end > start else ""))


def _body_entry(f: Finding, why: str) -> str:
    message = inert(_clip(f.message.strip() or "(no message)", MAX_MESSAGE_BODY))
    lines = [f"- {_where(f)} · {f.severity.value} · {f.category.value}{_STATUS_NOTE.get(f.status, '')} ({why})", ""]
    lines += [f"  {line}" if line else "" for line in message.split("\n")]
    suggestion = f.fix.replacement if f.fix is not None else f.suggestion
    if suggestion:
        block = fenced(_clip(suggestion, MAX_MESSAGE_BODY))
        lines += ["", *(f"  {line}" if line else "" for line in block.split("\n"))]
    return "\n".join(lines)


def _counts(findings: Sequence[Finding]) -> str:
    by: dict[str, int] = {}
    for f in findings:
        by[f.severity.value] = by.get(f.severity.value, 0) + 1
    n = len(findings)
    detail = ", ".join(f"{count} {sev}" for sev, count in by.items())
    return f"{n} finding{'s' if n != 1 else ''}" + (f" ({detail})" if detail else "")


def review_body(report: Report, comments: Sequence[InlineComment], in_body: Sequence[tuple[Finding, str]],
                *, already: int, suppressed: int) -> tuple[str, tuple[str, ...]]:
    live = [f for f in report.findings if f.suppressed is None]
    summary = [f"{_counts(sorted(live, key=_importance))}: {len(comments)} as inline comments"
               f", {len(in_body)} listed below"]
    if already:
        summary.append(f"{already} already posted by an earlier run (not repeated)")
    if suppressed:
        summary.append(f"{suppressed} suppressed (not posted)")
    head = ["### ocr-hook review", "", f"**{inert(report.verdict)}**" if report.verdict else "", "",
            "; ".join(summary) + "."]
    if report.status != "complete":
        head += ["", f"The review is **incomplete**: {report.skipped} file(s) not reviewed, {report.failed} "
                     "failed. The job log says why; this is not a clean pass."]
    entries: list[str] = []
    listed: list[str] = []
    budget = MAX_BODY - sum(len(h) + 1 for h in head) - 200
    if in_body:
        head += ["", "#### Findings not on a diff line"]
    for f, why in in_body:
        entry = _body_entry(f, why)
        cost = len(entry) + len(f.fingerprint) + 4
        if cost > budget:
            entries.append(f"- … and {len(in_body) - len(listed)} more: see the job summary or the SARIF results.")
            break
        budget -= cost
        entries.append(entry)
        listed.append(f.fingerprint)
    marker = (f"<!-- ocr-hook review exit={report.exit_code} status={_word(report.status)} "
              f"fingerprints={','.join(listed)} -->")
    return "\n".join([marker, *head, "", "\n\n".join(entries)]).rstrip() + "\n", tuple(listed)


def _word(status: str) -> str:
    return status if re.fullmatch(r"[a-z]+", status) else "unknown"
