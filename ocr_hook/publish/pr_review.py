"""Publish a report as one pull-request review: read what GitHub has, plan, post (I/O)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

from ocr_hook.publish.github_api import ApiRefusal, GitHubApi
from ocr_hook.publish.pr_diff import commentable_lines
from ocr_hook.publish.pr_target import PullRequest
from ocr_hook.publish.report_input import Report
from ocr_hook.publish.review_plan import ReviewPlan, earlier, plan_review


def publish_review(api: GitHubApi, pr: PullRequest, report: Report, checkout: Path | None) -> str:
    """Post the review; returns the line that says what was published. Raises ApiRefusal.
    `checkout`: the reviewed working tree (the current directory's repository), when there is one."""
    prefix = f"repos/{pr.repository}/pulls/{pr.number}"
    lines = commentable_lines(api.get_all(f"{prefix}/files"))
    before = earlier(api.get_all(f"{prefix}/comments"), api.get_all(f"{prefix}/reviews"))
    reviewed = reviewed_lines(checkout, {f.path for f in report.findings if f.anchored}) if checkout else {}
    plan = plan_review(report, lines, before, reviewed=reviewed)
    if not plan.post:
        return f"nothing new to publish on {pr}: {plan.already} finding(s) already posted, same verdict"
    try:
        api.post(f"{prefix}/reviews", plan.request(pr.head_sha))
    except ApiRefusal as exc:
        # GitHub refuses the whole review when one comment's line is not in its diff, without saying
        # which one: once more with every finding in the body, which it cannot refuse for that.
        if exc.status != 422 or not plan.comments:
            raise
        plan = plan_review(report, lines, before, inline=False, reviewed=reviewed)
        api.post(f"{prefix}/reviews", plan.request(pr.head_sha))
        return f"{_published(pr, plan)} (GitHub refused the inline comments: {exc}; all listed in the body)"
    return _published(pr, plan)


def _published(pr: PullRequest, plan: ReviewPlan) -> str:
    parts = [f"{len(plan.comments)} inline comment(s)", f"{len(plan.in_body)} finding(s) in the body"]
    if plan.already:
        parts.append(f"{plan.already} already posted earlier")
    if plan.suppressed:
        parts.append(f"{plan.suppressed} suppressed, not posted")
    return f"published a review on {pr}: " + ", ".join(parts)


def checkout_root(cwd: Path) -> Path | None:
    """The top of the git working tree at cwd (the reviewed checkout in CI), or None outside one."""
    try:
        proc = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    top = proc.stdout.strip()
    return Path(top) if proc.returncode == 0 and top else None


def reviewed_lines(root: Path, paths: Iterable[str]) -> dict[str, list[str]]:
    """The lines of each file as the checkout has it; files it does not have (or outside it) are left out."""
    found: dict[str, list[str]] = {}
    top = root.resolve()
    for path in paths:
        target = (top / path).resolve()
        if not target.is_relative_to(top) or not target.is_file():
            continue
        try:
            data = target.read_bytes()
        except OSError:
            continue
        found[path] = data.decode("utf-8", errors="replace").split("\n")
    return found
