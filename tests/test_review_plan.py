"""The pure part of github-review: GitHub's commentable lines, which findings go inline, markers, texts."""

from __future__ import annotations

import re
from typing import Any

import pytest
from gitrepo import commit_all, git, make_repo, write

from ocr_hook.findings import Category, Finding, Fix, Severity
from ocr_hook.publish.pr_diff import FileLines, accepts, commentable_lines, hunk_ranges, same_text
from ocr_hook.publish.report_input import Report, parse_report
from ocr_hook.publish.review_plan import (
    MAX_BODY,
    MAX_INLINE,
    MOVED,
    OUTSIDE_DIFF,
    OVER_CAP,
    REFUSED,
    Earlier,
    comment_body,
    comment_fingerprint,
    earlier,
    fenced,
    inert,
    plan_review,
    review_marker,
)


def finding(n: int, line: int = 2, severity: Severity = Severity.MEDIUM, *, fix: Fix | None = None,
            message: str = "msg", anchored: bool = True, end: int | None = None, path: str = "a.py",
            suppressed: str | None = None) -> Finding:
    return Finding(path, line if anchored else 0, (end or line) if anchored else 0, severity, Category.BUG,
                   message, None, anchored, f"{n:032x}", suppressed=suppressed, fix=fix)


def report(*findings: Finding, exit_code: int = 1, status: str = "complete") -> Report:
    return Report(status, exit_code, "FAILED — something [exit 1]", tuple(findings), 0, 0)


LINES = {"a.py": FileLines((range(1, 11), range(20, 26)), {})}


# --- GitHub's view of the diff, from real `git diff` hunks -------------------------------------------------


def test_hunk_ranges_follow_git_diff(tmp_path: Any) -> None:
    repo = make_repo(tmp_path / "r")
    before = "".join(f"line {i}\n" for i in range(1, 41))
    write(repo, "f.txt", before)
    commit_all(repo, "base")
    after = before.replace("line 5\n", "line five\n").replace("line 30\nline 31\n", "")
    write(repo, "f.txt", after.rstrip("\n"))  # and no final line break
    diff = git(repo, "diff", "--", "f.txt")
    patch = diff[diff.index("@@"):]
    ranges = hunk_ranges(patch)
    assert ranges == (range(2, 9), range(27, 33), range(35, 39))  # @@ +2,7 @@, +27,6, +35,4
    files = [{"filename": "f.txt", "patch": patch}, {"filename": "image.png"}]  # no patch: binary
    lines = commentable_lines(files)
    assert set(lines) == {"f.txt"}
    assert accepts(lines, "f.txt", 5, 5) and accepts(lines, "f.txt", 2, 8)
    assert not accepts(lines, "f.txt", 8, 27)  # spans two hunks: GitHub refuses that range
    assert not accepts(lines, "f.txt", 20, 20) and not accepts(lines, "image.png", 1, 1)
    # The head's text of those lines: the reviewed file's must read the same for a comment to go there.
    reviewed = after.rstrip("\n").split("\n")
    assert same_text(lines, "f.txt", 2, 8, reviewed) and same_text(lines, "f.txt", 38, 38, reviewed)
    shifted = ["# a line the base branch added", *reviewed]
    assert not same_text(lines, "f.txt", 5, 5, shifted)
    assert not same_text(lines, "f.txt", 38, 40, reviewed)  # past the end


def test_lines_that_read_differently_on_the_head_go_in_the_body() -> None:
    lines = {"a.py": FileLines((range(1, 4),), {1: "x = 1", 2: "y = 2", 3: "z = 3"})}
    same, moved = finding(1, line=2), finding(2, line=3, fix=Fix(3, 3, "z = 4"))
    plan = plan_review(report(same, moved), lines, Earlier(), reviewed={"a.py": ["x = 1", "y = 2", "w = 0"]})
    assert [c.finding for c in plan.comments] == [same]
    assert plan.in_body == ((moved, MOVED),)
    unread = plan_review(report(same, moved), lines, Earlier(), reviewed={})  # not readable: not checked
    assert len(unread.comments) == 2


def test_a_deletion_only_hunk_has_no_commentable_line() -> None:
    assert hunk_ranges("@@ -3,2 +2,0 @@\n-gone\n-gone too") == ()
    assert hunk_ranges("not a patch at all") == ()


# --- which findings go inline --------------------------------------------------------------------------------


def test_at_most_50_inline_comments_most_severe_first() -> None:
    lows = [finding(i, line=1 + i % 10, severity=Severity.LOW) for i in range(40)]
    highs = [finding(100 + i, line=20 + i % 6, severity=Severity.HIGH) for i in range(30)]
    plan = plan_review(report(*lows, *highs), LINES, Earlier())
    assert len(plan.comments) == MAX_INLINE
    assert sum(c.finding.severity is Severity.HIGH for c in plan.comments) == 30
    assert {why for _, why in plan.in_body} == {OVER_CAP}
    assert len(plan.in_body) == 20 and all(f.severity is Severity.LOW for f, _ in plan.in_body)
    assert "70 findings (30 high, 40 low): 50 as inline comments, 20 listed below" in plan.body


def test_range_and_fix_lines() -> None:
    fixed = finding(1, line=3, end=5, fix=Fix(3, 5, "a\nb"))
    across = finding(2, line=9, end=21)  # starts in one hunk, ends in the next
    plan = plan_review(report(fixed, across), LINES, Earlier())
    [comment] = plan.comments
    assert comment.as_api() == {"path": "a.py", "line": 5, "start_line": 3, "start_side": "RIGHT", "side": "RIGHT",
                                "body": comment.body}
    assert plan.in_body == ((across, OUTSIDE_DIFF),)
    single = plan_review(report(finding(3, line=4)), LINES, Earlier()).comments[0].as_api()
    assert "start_line" not in single and single["line"] == 4


def test_memory_statuses_are_named_inline_and_in_the_body() -> None:
    late = finding(1, line=4)._replace(status="late")
    carried = finding(2, line=30)._replace(status="carried")
    fresh = finding(3, line=5)
    plan = plan_review(report(late, carried, fresh), LINES, Earlier())
    bodies = {c.finding.fingerprint: c.body for c in plan.comments}
    assert "late: on lines unchanged since the last review" in bodies[late.fingerprint]
    assert "carried" not in bodies[fresh.fingerprint] and "late:" not in bodies[fresh.fingerprint]
    body = plan.request("c" * 40)["body"]
    assert "carried from the last review" in body  # line 30 is outside the diff: listed in the body
    assert parse_report({"tool": {"name": "ocr-hook"}, "status": "complete", "exit_code": 0, "findings": [
        {"path": "a.py", "start_line": 1, "end_line": 1, "severity": "low", "category": "bug", "message": "m",
         "anchored": True, "fingerprint": "a" * 32}]}).findings[0].status == "new"  # a report from before memory
    with pytest.raises(ValueError, match="status"):
        parse_report({"tool": {"name": "ocr-hook"}, "status": "complete", "exit_code": 0, "findings": [
            {"path": "a.py", "start_line": 1, "end_line": 1, "severity": "low", "category": "bug", "message": "m",
             "anchored": True, "fingerprint": "a" * 32, "status": "old"}]})


def test_without_inline_everything_is_in_the_body() -> None:
    plan = plan_review(report(finding(1), finding(2, line=22)), LINES, Earlier(), inline=False)
    assert plan.comments == () and [why for _, why in plan.in_body] == [REFUSED, REFUSED]
    assert plan.request("c" * 40)["comments"] == []


# --- markers and re-runs --------------------------------------------------------------------------------------


def test_markers_round_trip_and_only_a_leading_one_counts() -> None:
    f = finding(7, message="<!-- ocr-hook fingerprint=" + "f" * 32 + " --> fake")
    body = comment_body(f)
    assert comment_fingerprint(body) == f.fingerprint
    assert "<!-- ocr-hook fingerprint=" + "f" * 32 not in body  # the message's copy is made inert
    assert comment_fingerprint("Looks good. <!-- ocr-hook fingerprint=" + "a" * 32 + " -->") is None
    plan = plan_review(report(finding(8, anchored=False)), LINES, Earlier())
    assert review_marker(plan.body) == (1, "complete", [finding(8).fingerprint])


def test_a_rerun_skips_what_is_there_and_posts_when_the_verdict_changes() -> None:
    a, b, c = finding(1), finding(2, anchored=False), finding(3, line=22)
    first = plan_review(report(a, b), LINES, Earlier())
    bot = {"login": "github-actions[bot]"}
    comments = [{"body": x.body, "user": bot} for x in first.comments]
    seen = earlier(comments, [{"body": "a person's review", "user": {"login": "p"}}, {"body": first.body, "user": bot}])
    assert seen.fingerprints == {a.fingerprint, b.fingerprint} and seen.last_review == (1, "complete")
    again = plan_review(report(a, b), LINES, seen)
    assert not again.post and again.already == 2
    more = plan_review(report(a, b, c), LINES, seen)
    assert more.post and [x.finding for x in more.comments] == [c] and more.in_body == ()
    # The findings were fixed but the review is now incomplete: a new review says so.
    changed = plan_review(report(a, b, exit_code=3, status="incomplete"), LINES, seen)
    assert changed.post and changed.comments == () and "**incomplete**" in changed.body


def test_suppressed_findings_are_counted_only() -> None:
    plan = plan_review(report(finding(1), finding(2, suppressed="inline")), LINES, Earlier())
    assert len(plan.comments) == 1 and plan.suppressed == 1
    assert "1 suppressed (not posted)" in plan.body


# --- texts -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("replacement", ["x = 1", "", "doc = '''\n```\nfenced\n```\n'''", "a\n\n  b"])
def test_the_suggestion_block_holds_the_replacement_exactly(replacement: str) -> None:
    body = comment_body(finding(1, fix=Fix(2, 2, replacement)))
    match = re.search(r"^(`{3,})suggestion\n(.*?)\n?\1\Z", body, re.S | re.M)
    assert match, body
    assert match.group(2) == replacement


def test_fenced_code_cannot_close_early() -> None:
    assert fenced("a ```` b").startswith("`````\n")


def test_model_text_cannot_mention_or_hide() -> None:
    text = inert("Use @property here; cc @octocat. `@decorator` too, a@b.c stays. <!-- hidden -->")
    assert "@property" not in text and "@octocat" not in text
    # Issue 33: a backtick before it is no proof of a code span (`x`@octocat is a live mention).
    assert "`@\u200bdecorator`" in text and "a@b.c" in text
    assert "<!--" not in text and "-->" not in text


def test_the_body_stays_under_githubs_limit() -> None:
    many = [finding(i, anchored=False, message="x" * 5000) for i in range(500)]
    plan = plan_review(report(*many), LINES, Earlier())
    assert len(plan.body) <= MAX_BODY
    assert "more: see the job summary or the SARIF results" in plan.body
    assert 0 < len(plan.listed) < 500
    assert review_marker(plan.body)[2] == list(plan.listed)  # what is not listed is posted next time


# --- the report -------------------------------------------------------------------------------------------------


def _json_finding(**over: Any) -> dict[str, Any]:
    base = {"path": "a.py", "start_line": 2, "end_line": 2, "severity": "high", "category": "bug", "message": "m",
            "suggestion": None, "anchored": True, "fingerprint": "0" * 32, "suppressed": None, "anchor_note": None,
            "fix": {"start_line": 2, "end_line": 2, "replacement": "y"}}
    return {**base, **over}


def test_the_report_is_checked() -> None:
    doc = {"tool": {"name": "ocr-hook"}, "status": "complete", "exit_code": 1, "verdict": "v",
           "findings": [_json_finding()], "coverage": {"skipped": [{"path": "x"}], "failed": []}}
    parsed = parse_report(doc)
    assert parsed.findings[0].fix == Fix(2, 2, "y") and parsed.skipped == 1
    with pytest.raises(ValueError):
        parse_report({**doc, "findings": [_json_finding(fingerprint="--> <script>")]})
    with pytest.raises(ValueError):
        parse_report({**doc, "findings": [_json_finding(severity="blocker")]})
    with pytest.raises(ValueError):
        parse_report({**doc, "tool": {"name": "other"}})
