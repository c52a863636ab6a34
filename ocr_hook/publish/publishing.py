"""Drive one adapter: read what the forge has, plan, write; returns the line that says what was done (I/O).

The same steps on every forge (forges.py documents the adapter's side): who publishes, the forge's
diff, what this identity left before → the plan → the inline comments (those the forge refuses one
by one move to the summary; a refusal of them all re-plans with everything in the summary) → the
summary → fixed findings' threads resolved (or, where a person answered, replied to once) → the verdict
where the forge has a status.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from ocr_hook.publish.api_client import ApiRefusal
from ocr_hook.publish.check_threads import thread_body
from ocr_hook.publish.forges import Adapter, InlineRefused, InlineText, NotApplicable
from ocr_hook.publish.plan import (
    Plan,
    Posted,
    Routing,
    comment_body,
    comment_fingerprint,
    earlier,
    plan_publish,
    raised_reply_body,
    summary_body,
)
from ocr_hook.publish.pr_diff import CommentableLines
from ocr_hook.publish.report_input import Report

FIXED_REPLY = "<!-- ocr-hook fixed "  # how plan.fixed_reply_body starts
RAISED_REPLY = "<!-- ocr-hook raised "  # how plan.raised_reply_body starts
PASSED_REPLY = "<!-- ocr-hook check-passed="  # how check_threads.passed_reply_body starts (the rest: raised again)
MAX_READ = 8 * 1024 * 1024


NO_ROUTING = Routing()


def publish(adapter: Adapter, report: Report, checkout: Path | None, routing: Routing = NO_ROUTING) -> str:
    line = _publish(adapter, report, checkout, routing)
    note = getattr(adapter, "note", None)  # what the adapter could not read (GitHub: the threads, issue 58.14)
    return line + (f" ({note})" if note else "")


def _publish(adapter: Adapter, report: Report, checkout: Path | None, routing: Routing) -> str:
    own = getattr(adapter, "publish_report", None)
    if own is not None:  # a report forge (Bitbucket Code Insights: ≤ 1,000 annotations, no comments or summary)
        check_bound(report, adapter, checkout)
        reviewed = reviewed_lines(checkout, _anchored_paths(report)) if checkout else {}
        return str(own(report, reviewed))
    me = adapter.identity()
    lines = adapter.diff()
    check_bound(report, adapter, checkout)  # (the head is known once the forge's diff is)
    before = earlier(adapter.existing(), me)
    reviewed = reviewed_lines(checkout, _anchored_paths(report)) if checkout else {}
    options = dict(kind=adapter.kind, forge=adapter.forge, reviewed=reviewed, summary=adapter.summary_style,
                   routing=routing)
    plan = plan_publish(report, lines, before, **options)  # type: ignore[arg-type]
    if not plan.post:
        # The status still goes on every run: a push makes a new iteration (Azure), whose status policy
        # may have reset the last one, even when the findings are the same.
        adapter.report_verdict(report, report.exit_code == 0)
        return (f"nothing new to publish on {adapter.target}: {plan.already} finding(s) already posted, "
                "same verdict")
    # The threads first, so that the summary says what was done, not what was meant (issue 58.12).
    closed = _close_threads(adapter, plan)
    if not plan.summary_due and not closed.resolved:
        adapter.report_verdict(report, report.exit_code == 0)
        return f"nothing new to publish on {adapter.target}: {plan.already} finding(s) already posted, same " \
               f"verdict{closed.said(plan)}{closed.left}"
    refusal = ""
    try:
        refused = adapter.post_inline(_texts(plan, lines, adapter))
    except InlineRefused as exc:
        refused, refusal = frozenset(), exc.reason
        plan = plan_publish(report, lines, before, inline=False, **options)  # type: ignore[arg-type]
    else:
        if refused:
            plan = plan_publish(report, lines, before, refused_fps=refused, **options)  # type: ignore[arg-type]
            refusal = f"{len(refused)} inline comment(s) refused"
    posted_inline = len(plan.inline) + len(plan.check_inline)
    body, _listed = summary_body(plan, max_chars=adapter.max_body, summary=adapter.summary_style,
                                 resolved=closed.resolved)
    if not posted_inline and not closed.resolved and not refusal and before.summary is not None \
            and before.summary.body == body:
        adapter.report_verdict(report, report.exit_code == 0)
        return f"nothing new to publish on {adapter.target}: {adapter.summary_name} already says this" + \
            closed.said(plan) + closed.left
    try:
        _put_summary(adapter, before.summary, body)
    except InlineRefused as exc:  # one-request forges: the review with its comments was refused
        refusal = exc.reason
        plan = plan_publish(report, lines, before, inline=False, **options)  # type: ignore[arg-type]
        adapter.post_inline([])
        body, _listed = summary_body(plan, max_chars=adapter.max_body, summary=adapter.summary_style,
                                     resolved=closed.resolved)
        _put_summary(adapter, before.summary, body)
        posted_inline = 0
    posted_checks = len(plan.check_inline) if posted_inline else 0
    adapter.report_verdict(report, report.exit_code == 0)
    line = _published(adapter, plan, posted_inline - posted_checks, closed, posted_checks)
    return line + (f" ({adapter.forge} refused the inline comments: {refusal}; listed in {adapter.summary_name})"
                   if refusal and posted_inline == 0 else f" ({refusal}; listed in {adapter.summary_name})"
                   if refusal else "") + closed.left


def _anchored_paths(report: Report) -> set[str]:
    """The files whose reviewed lines the plan compares with the head's: anchored findings' and checks' evidence."""
    return {f.path for f in report.findings if f.anchored} | {e.path for v in report.checks for e in v.evidence
                                                              if e.anchored}


class Closed(NamedTuple):
    """What was done to earlier threads: resolved, reopened, the replies said, and what the forge refused (a
    clause)."""

    resolved: int = 0
    reopened: int = 0
    told: tuple[str, ...] = ()  # the bodies of the replies posted
    left: str = ""

    def said(self, plan: Plan) -> str:
        return "".join(f"; {p}" for p in self.parts(plan))

    def parts(self, plan: Plan) -> list[str]:
        fixed = sum(1 for text in self.told if text.startswith(FIXED_REPLY))
        passed = sum(1 for text in self.told if text.startswith(PASSED_REPLY))
        raised = len(self.told) - fixed - passed
        return [part for part in (
            f"{self.resolved} thread(s) resolved" if self.resolved else "",
            f"{self.reopened} thread(s) reopened" if self.reopened else "",
            f"{fixed} answered thread(s) told the finding looks fixed" if fixed else "",
            f"{passed} answered check thread(s) told the check passes" if passed else "",
            f"{raised} thread(s) told the finding is raised again" if raised else "") if part]


# The forge's word for "this token may not": the thread is left as it is and the reply says so, once.
MAY_NOT = (401, 403)


def _close_threads(adapter: Adapter, plan: Plan) -> Closed:
    """Resolve the fixed findings' threads, reopen those of findings raised again, and reply where a person
    answered (or a finding is raised again). One thread at a time and each step on its own: a refused resolve
    (GitHub's Actions token without `contents: write`) stops neither the reopening nor the replies
    (`pull-requests: write` is enough for those), and what was refused is said once on the published line,
    never as a review that was not published (issue 58.12). A thread the token may not resolve, or reopen, gets
    one reply saying so instead: the reply is the memory of the refusal, on the forge where every later CI run
    reads it (a CI cache may be gone), so no later run asks again or posts anything for it."""
    refusals: list[str] = []
    replies = list(plan.replies)
    resolved = 0
    for i, p in enumerate(plan.resolve):
        try:
            resolved += adapter.resolve([p])
        except ApiRefusal as exc:
            refusals.append(f"{adapter.forge} refused to resolve the fixed findings' threads: {exc}")
            if exc.status in MAY_NOT:
                replies += list(zip(plan.resolve[i:], plan.if_refused[i:], strict=True))
            break
    reopened, stays, untried = _reopen(adapter, plan, refusals)
    if stays or untried:  # no "reopened" said of these: a thread left resolved is told so, one retried told nothing
        replies = [(p, text) for p, text in replies
                   if not (text.startswith(RAISED_REPLY) and any(p is q for q in (*stays, *untried)))]
        replies += [(p, raised_reply_body(fp, kept=True)) for p in stays if (fp := comment_fingerprint(p.body))]
    told: list[str] = []
    for thread, text in replies:
        try:
            adapter.reply(thread, text)
        except ApiRefusal as exc:
            refusals.append(f"{adapter.forge} refused to answer in a thread: {exc}")
            break
        told.append(text)
    return Closed(resolved, reopened, tuple(told), "".join(f" ({r})" for r in refusals))


def _reopen(adapter: Adapter, plan: Plan, refusals: list[str]) -> tuple[int, list[Posted], list[Posted]]:
    """Reopen the plan's threads one by one: how many were, those that stay resolved because the forge may not
    (or cannot) reopen them, and those a failure of another kind left for the next run to try again."""
    reopen = getattr(adapter, "reopen", None)
    if not plan.reopen:
        return 0, [], []
    if reopen is None:  # a forge without an unresolve
        return 0, list(plan.reopen), []
    done = 0
    for i, p in enumerate(plan.reopen):
        try:
            done += reopen([p])
        except ApiRefusal as exc:
            refusals.append(f"{adapter.forge} refused to reopen the threads of findings raised again (listed in "
                            f"{adapter.summary_name}): {exc}")
            rest = list(plan.reopen[i:])
            return (done, rest, []) if exc.status in MAY_NOT else (done, [], rest)
    return done, [], []


def _put_summary(adapter: Adapter, previous: Posted | None, body: str) -> None:
    if adapter.summary_style == "replace" and previous is not None and previous.body == body:
        return  # the note already says exactly this
    adapter.put_summary(body, previous)


def _texts(plan: Plan, lines: CommentableLines, adapter: Adapter) -> list[InlineText]:
    texts = []
    for item in plan.inline:
        entry = lines.get(item.finding.path)
        head = [entry.text.get(n, "") for n in range(item.start, item.end + 1)] if entry else []
        body = comment_body(item.finding, adapter.fix_style, head)
        texts.append(InlineText(item, body, entry.old_line(item.start) if entry else None,
                                entry.old_path if entry else None))
    for item, verdict in plan.check_inline:  # a failed check's thread (publish.check_threads), after the findings'
        entry = lines.get(item.finding.path)
        texts.append(InlineText(item, thread_body(verdict, plan.kind), entry.old_line(item.start) if entry else None,
                                entry.old_path if entry else None))
    return texts


def _published(adapter: Adapter, plan: Plan, inline: int, closed: Closed, checks: int = 0) -> str:
    parts = [f"{inline} inline comment(s)", f"{len(plan.listed)} finding(s) in {adapter.summary_name}"]
    if plan.report.checks:
        parts.append(f"{len(plan.report.checks)} check(s) in {adapter.summary_name}")
    if checks:
        parts.append(f"{checks} failed check thread(s)")
    if plan.already:
        parts.append(f"{plan.already} already posted earlier")
    if plan.suppressed:
        parts.append(f"{plan.suppressed} suppressed, not posted")
    parts += closed.parts(plan)
    return f"published {adapter.published_as} on {adapter.target}: " + ", ".join(parts)


def check_bound(report: Report, adapter: Adapter, checkout: Path | None) -> None:
    """NotApplicable unless the report names the commit it reviewed and that commit is the request's head
    (or the checkout's HEAD, the forge's merge commit in CI): a report of anything else, an old run's or one
    the change committed itself, is not this request's verdict and publishes nothing, status included."""
    if not report.commit:
        raise NotApplicable("the report names no reviewed commit (a review of the staged change, or not "
                            "ocr-hook's own); publish the report of `review --base` on this request's head",
                            adapter.target)
    if is_stale(report, adapter.head_sha, checkout):
        raise NotApplicable(f"the report is of commit {report.commit[:12]}, not of the head "
                            f"{adapter.head_sha[:12] or '(unknown)'}; nothing of it is this request's verdict",
                            adapter.target)


def tracked(root: Path, path: str) -> bool:
    """Whether git tracks the file at `path` in the checkout at `root` (a report the change committed);
    True when git cannot say, so a doubtful report is refused rather than trusted."""
    full = Path(os.path.abspath(path))
    full = full.parent.resolve() / full.name
    top = root.resolve()
    if not full.is_relative_to(top):
        return False
    try:
        proc = subprocess.run(["git", "--literal-pathspecs", "ls-files", "-z", "--", str(full.relative_to(top))],
                              cwd=top, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return True
    return proc.returncode != 0 or bool(proc.stdout)


def is_stale(report: Report, head_sha: str, checkout: Path | None) -> bool:
    """The report names a reviewed commit that is neither the request's head nor the checkout's HEAD
    (in CI the checkout may be the forge's merge commit, whose lines the same-text check covers)."""
    if not report.commit:
        return False
    here = checkout_head(checkout) if checkout else ""
    return not any(sha.startswith(report.commit) for sha in (head_sha, here) if sha)


def checkout_head(root: Path) -> str:
    try:
        proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


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
        if not target.is_relative_to(top) or not target.is_file() or target.stat().st_size > MAX_READ:
            continue  # outside the checkout (a link), not a regular file, or too big to be reviewed code
        try:
            data = target.read_bytes()
        except OSError:
            continue
        found[path] = data.decode("utf-8", errors="replace").split("\n")
    return found
