"""GitHub's pull-request review as the forge-free plan (publish.plan) makes it: the request body of
POST /pulls/{n}/reviews, its inline comments (`path`, `line`, `start_line`, `side: RIGHT`) and body.

Pure. The rules (what goes inline, markers, the 50 cap, the identity rule) are plan.py's; the texts
are render.py's. This module only shapes them as GitHub's API takes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ocr_hook.findings import Finding
from ocr_hook.publish.plan import (
    MAX_INLINE,
    OVER_CAP,
    UNANCHORED,
    Earlier,
    Posted,
    comment_body,
    comment_fingerprint,
    moved,
    outside_diff,
    plan_publish,
    refused,
    review_marker,
    summary_body,
)
from ocr_hook.publish.plan import earlier as earlier_of
from ocr_hook.publish.pr_diff import CommentableLines
from ocr_hook.publish.render import code_span, fenced, inert
from ocr_hook.publish.report_input import Report

__all__ = ["MAX_BODY", "MAX_INLINE", "MOVED", "OUTSIDE_DIFF", "OVER_CAP", "REFUSED", "UNANCHORED", "Earlier",
           "InlineComment", "ReviewPlan", "code_span", "comment_body", "comment_fingerprint", "earlier", "fenced",
           "inert", "plan_review", "review_marker"]

MAX_BODY = 60_000  # characters; GitHub refuses a review or comment body over 65,536
OUTSIDE_DIFF = outside_diff("pull request")
MOVED = moved("pull request")
REFUSED = refused("GitHub")
ACTIONS_BOT = "github-actions[bot]"


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


def author(item: Mapping[str, Any]) -> str:
    user = item.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else ""


def posted(comments: Iterable[Mapping[str, Any]], reviews: Iterable[Mapping[str, Any]]) -> list[Posted]:
    """GitHub's review comments and reviews as the plan reads them (oldest first)."""
    found = [Posted(author(c), str(c.get("body") or ""), str(c.get("id", "")), resolvable=False) for c in comments]
    found += [Posted(author(r), str(r.get("body") or ""), str(r.get("id", "")), resolvable=False) for r in reviews]
    return found


def earlier(comments: Iterable[Mapping[str, Any]], reviews: Iterable[Mapping[str, Any]],
            me: str | Iterable[str] = ACTIONS_BOT) -> Earlier:
    """The markers in what `me` (the publishing identity) wrote; anyone else's are ignored."""
    return earlier_of(posted(comments, reviews), me)


def plan_review(report: Report, lines: CommentableLines, before: Earlier, *, inline: bool = True,
                reviewed: Mapping[str, Sequence[str]] | None = None, stale: bool = False) -> ReviewPlan:
    plan = plan_publish(report, lines, before, inline=inline, reviewed=reviewed, stale=stale)
    comments = tuple(InlineComment(i.finding, i.start, i.end, comment_body(i.finding)) for i in plan.inline)
    body, listed = summary_body(plan, max_chars=MAX_BODY)
    return ReviewPlan(comments, plan.listed, body, plan.already, plan.suppressed, plan.post, listed)
