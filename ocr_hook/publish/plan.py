"""The publishing plan: what one run puts on a merge or pull request, on any forge. Pure.

From the report, the lines the forge takes inline comments on (pr_diff.FileLines, with the head's
text of them) and what earlier runs of the same publishing identity left there, it decides:

* which findings go inline: anchored, their lines inside one hunk of the forge's diff, reading the
  same in the reviewed checkout as on the head, not posted before; the most severe MAX_INLINE of
  them;
* the rest, each with the reason, for the summary (with the verdict and the counts);
* which findings stay out of the diff however well they anchor (routing: below a severity, or of chosen
  categories; they go to the summary, never dropped);
* which earlier threads to resolve: those whose finding is fixed (`fixed`: review memory resolved it, or a
  complete review of its file no longer raises it), whose first comment is ours, and that no person
  answered; a fixed finding's thread that a person answered gets one short reply instead (`replies`), and
  so does one a person resolved already, which marks its resolve as spent (a resolve counts only while its
  finding is raised, issue 58.10); `if_refused`: the reply for each thread to resolve, should the forge
  refuse (it is the refusal's memory, issue 58.12);
* whether anything is new at all (a re-run with the same findings and verdict posts nothing).

And what people did with our threads (DESIGN.md 18): `forge_dismissals` gives the findings a person with
write access (not a bot, not the request's author) dismissed by resolving its thread, or on Azure by
setting it to won't fix, by design or closed.

Markers make the re-run possible: every inline comment starts with
`<!-- ocr-hook fingerprint=FP -->`, the summary with `<!-- ocr-hook review exit=N status=S
fingerprints=FP,… -->`. Only a marker at the very start of a body counts, and only in a comment the
publishing identity wrote (anyone can type a marker into a comment of their own: it silences
nothing). Model text in the texts built here goes through publish.render, so it cannot pose as one.

Two summary styles: "append" forges (GitHub and Gitea reviews) get a new summary each run that lists
only what is new; "replace" forges (a GitLab note, an Azure thread, a Bitbucket report) keep one
summary that each run rewrites with everything not inline.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ocr_hook.checks.model import CheckVerdict, Override
from ocr_hook.findings import Finding
from ocr_hook.findings.dismissals import ForgeDismissal
from ocr_hook.findings.model import Severity, all_fingerprints
from ocr_hook.publish import check_threads
from ocr_hook.publish.pr_diff import CommentableLines, accepts, same_text
from ocr_hook.publish.render import clip, code_span, fenced, inert, verbatim_ok, visible
from ocr_hook.publish.report_input import Report

MAX_INLINE = 50
MAX_MESSAGE_INLINE = 8_000
MAX_MESSAGE_BODY = 2_000

# (A check's thread, publish.check_threads, opens with `check=KEY`: ours too, wherever an adapter asks.)
_COMMENT_MARKER = re.compile(r"\A<!-- ocr-hook (?:fingerprint|check)=([0-9a-f]{8,64}) -->")
# A reply saying a finding looks fixed, in a thread a person answered: a later run finds it and says it once.
_FIXED_MARKER = re.compile(r"\A<!-- ocr-hook fixed fingerprint=([0-9a-f]{8,64}) -->")
# A reply saying a finding whose thread was resolved is raised again (the thread is reopened where the forge can);
# ` kept=resolved`: the forge would not reopen it, so the resolve it still shows is from before (issue 58.10, 58.12).
_RAISED_MARKER = re.compile(r"\A<!-- ocr-hook raised fingerprint=([0-9a-f]{8,64})( kept=resolved)? -->")
_SUMMARY_MARKER = re.compile(
    r"\A<!-- ocr-hook review exit=(\d{1,3}) status=([a-z]{1,20}) fingerprints=([0-9a-f,]*)"
    r"(?: checks=([0-9a-f]{12}))? -->")

FixStyle = Literal["suggestion", "gitlab", "diff", "none"]
SummaryStyle = Literal["append", "replace"]


# --- why a finding is not inline --------------------------------------------------------------------------

UNANCHORED = "about the whole file"
OVER_CAP = f"beyond the {MAX_INLINE} inline comments"


def outside_diff(kind: str) -> str:
    return f"outside the {kind}'s diff"


def moved(kind: str) -> str:
    return f"these lines read differently on the {kind}'s head"


def refused(forge: str) -> str:
    return f"{forge} refused the inline comments"


def stale_commit(kind: str) -> str:
    return f"the report is of another commit than the {kind}'s head"


RAISED_AGAIN = "raised again, and its thread is resolved"


def routed_below(severity: str) -> str:
    return f"below {severity}: kept out of the diff (setting summary_below)"


def routed_category(category: str) -> str:
    return f"a {category} finding: kept out of the diff (setting summary_categories)"


@dataclass(frozen=True, slots=True)
class Routing:
    """Which findings go to the summary however well they anchor (settings summary_below, summary_categories)."""

    below: Severity | None = None  # findings of a lower severity than this
    categories: frozenset[str] = frozenset()  # findings of these categories, whatever their severity

    def why(self, f: Finding) -> str | None:
        if self.below is not None and f.severity.rank < self.below.rank:
            return routed_below(self.below.value)
        if f.category.value in self.categories:
            return routed_category(f.category.value)
        return None


# --- what earlier runs left ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reply:
    """A later comment in a thread (not the one that opened it), as the forge lists it."""

    author: str  # the same spelling as Posted.author
    body: str
    at: str = ""  # when, ISO 8601 as the forge gives it
    bot: bool = False  # the forge says the author is a bot or app


@dataclass(frozen=True, slots=True)
class Posted:
    """One comment (or thread, annotation, review body) on the merge/pull request, as an adapter lists it.

    The fields after `resolvable` are what the forge says people did with the thread (DESIGN.md 18); an
    adapter fills what its forge can tell and leaves the defaults elsewhere."""

    author: str  # the forge's name for who wrote it (login, username, unique id)
    body: str
    id: str = ""  # the forge's id of the comment/note, for an update
    thread: str = ""  # the discussion/thread it opens, for resolving
    resolved: bool = False
    resolvable: bool = True
    created_at: str = ""  # ISO 8601 as the forge gives it
    replies: tuple[Reply, ...] = ()  # the thread's later comments, oldest first
    state: str = ""  # the forge's own word for the thread's state when it has more than resolved (Azure: wontFix)
    resolved_by: str = ""  # who resolved it (or set its state), when the forge says
    resolved_by_bot: bool = False
    resolved_by_can_write: bool = False  # the forge says that person has write access
    resolved_at: str = ""
    thumbs_up: int = 0  # 👍 reactions from people on the comment that opened the thread
    thumbs_down: int = 0  # 👎
    path: str = ""  # the file an inline comment is on, when the forge says (a fixed finding without memory)


@dataclass(frozen=True, slots=True)
class Earlier:
    """What earlier ocr-hook runs (of this identity) left."""

    fingerprints: frozenset[str] = frozenset()  # every finding already posted (inline or listed)
    last_review: tuple[int, str] | None = None  # (exit code, status) of the latest summary
    inline: frozenset[str] = frozenset()  # the findings with a comment of their own
    summary: Posted | None = None  # the latest summary (a replace-style forge updates it)
    threads: Mapping[str, Posted] = field(default_factory=dict)  # fingerprint → its comment
    names: frozenset[str] = frozenset()  # the publishing identity's names
    checks: Mapping[str, Posted] = field(default_factory=dict)  # check key → its thread (publish.check_threads)
    last_checks: str = ""  # what the latest summary said of the checks (check_threads.digest)


def comment_fingerprint(body: str) -> str | None:
    match = _COMMENT_MARKER.match(body or "")
    return match.group(1) if match else None


def review_marker(body: str) -> tuple[int, str, list[str]] | None:
    match = _SUMMARY_MARKER.match(body or "")
    if not match:
        return None
    return int(match.group(1)), match.group(2), [f for f in match.group(3).split(",") if f]


def _checks_said(body: str) -> str:
    match = _SUMMARY_MARKER.match(body or "")
    return (match.group(4) or "") if match else ""


def identity_names(me: str | Iterable[str]) -> frozenset[str]:
    """The publishing identity's names: one, or the several it goes by (an adapter's identity())."""
    names = {me} if isinstance(me, str) else set(me)
    names.discard("")
    return frozenset(names)


def earlier(posted: Iterable[Posted], me: str | Iterable[str]) -> Earlier:
    """The markers in comments `me` wrote (oldest first); every other author's are ignored.
    `me`: the publishing identity's name, or the names it goes by."""
    names = identity_names(me)
    seen: set[str] = set()
    inline: set[str] = set()
    threads: dict[str, Posted] = {}
    last: tuple[int, str] | None = None
    summary: Posted | None = None
    checks: dict[str, Posted] = {}
    for p in posted:
        if p.author not in names:
            continue
        if key := check_threads.marker_key(p.body):
            checks.setdefault(key, p)
        elif fp := comment_fingerprint(p.body):
            seen.add(fp)
            inline.add(fp)
            threads.setdefault(fp, p)
        elif marker := review_marker(p.body):
            last, summary = (marker[0], marker[1]), p
            seen.update(marker[2])
    return Earlier(frozenset(seen), last, frozenset(inline), summary, threads, names, checks,
                   _checks_said(summary.body) if summary is not None else "")


def by_current_names(before: Earlier, findings: Iterable[Finding]) -> tuple[Earlier, dict[str, str]]:
    """`before` with every marker that names one of a finding's aliases (its file's path before a `git mv`, an
    earlier fingerprint form) read as that finding's own fingerprint, and the renaming: the finding's earlier
    thread is its thread (posted already; resolved or dismissed as it is), never a reason to post it again
    (issue 58.15). A fingerprint with markers of its own keeps them."""
    renamed: dict[str, str] = {}
    for f in findings:
        if f.fingerprint in before.fingerprints:
            continue
        for alias in all_fingerprints(f)[1:]:
            if alias in before.fingerprints and alias not in renamed:
                renamed[alias] = f.fingerprint
                break
    if not renamed:
        return before, renamed
    threads: dict[str, Posted] = {}
    for fp, p in before.threads.items():
        threads.setdefault(renamed.get(fp, fp), p)
    return replace(before, fingerprints=frozenset(renamed.get(fp, fp) for fp in before.fingerprints),
                   inline=frozenset(renamed.get(fp, fp) for fp in before.inline), threads=threads), renamed


# --- what people did with our threads ---------------------------------------------------------------------

# Azure DevOps thread states that say "not going to change this" (the others: active, pending, fixed).
DISMISSING_STATES = frozenset({"wontfix", "bydesign", "closed"})
MAX_REASON = 500
# Where a forge does not say who set a thread's state (Azure DevOps), a person's reply starting with this, after
# the state was set, is the dismissal; the rest of the reply is the reason (docs/recipes/publish.md).
DISMISS_PHRASE = "/ocr-hook dismiss"


def said_dismiss(body: str) -> bool:
    """The reply starts with the documented phrase (any case, then a blank, a colon or nothing)."""
    text = (body or "").lstrip()
    return text[:len(DISMISS_PHRASE)].lower() == DISMISS_PHRASE and text[len(DISMISS_PHRASE):][:1] in ("", " ",
                                                                                                        ":", "\n")


def person_replied(p: Posted, me: frozenset[str]) -> bool:
    """Someone other than the publishing identity (and not a bot) answered in the thread."""
    return any(r.author not in me and not r.bot for r in p.replies)


def last_word(p: Posted, me: frozenset[str]) -> str:
    """What ocr-hook last said in the thread about its finding: "fixed", "raised" (again, the thread reopened),
    "kept" (raised again, the thread left resolved: the forge would not reopen it), or "" (nothing)."""
    word = ""
    for r in p.replies:
        if r.author not in me:
            continue
        if _FIXED_MARKER.match(r.body or ""):
            word = "fixed"
        elif raised := _RAISED_MARKER.match(r.body or ""):
            word = "kept" if raised.group(2) else "raised"
    return word


def spent(p: Posted, me: frozenset[str]) -> bool:
    """The thread's resolve is from before what ocr-hook last said in it: that the finding looks fixed (a resolve
    then is agreement), or that it is raised again in a thread the forge would not reopen. A resolve counts only
    while its finding is raised (issue 58.10): once a review saw the finding fixed, an earlier resolve is spent."""
    return last_word(p, me) in ("fixed", "kept")


def replied_fixed(p: Posted, me: frozenset[str]) -> bool:
    """An earlier run already said in this thread that the finding looks fixed (and it was not raised since)."""
    return last_word(p, me) == "fixed"


def resolved_not_by_person(p: Posted, me: frozenset[str]) -> bool:
    """The thread is resolved, and not as a person's word on a raised finding: ocr-hook (or another bot, or
    nobody the forge names) resolved it, or its resolve is `spent`."""
    if not p.resolved:
        return False
    return not p.resolved_by or p.resolved_by in me or p.resolved_by_bot or spent(p, me)


def dismissed_by_person(p: Posted, me: frozenset[str], author: str) -> bool:
    """The thread was closed by a person the forge says may write to the repository: resolved (a forge whose
    threads have no states of their own) or set to a dismissing state (Azure); never by a bot, by the
    publishing identity, or by the request's own author (nobody dismisses findings on their own change)."""
    if not p.resolved_by or p.resolved_by_bot or not p.resolved_by_can_write:
        return False
    if p.resolved_by in me or (author and p.resolved_by == author):
        return False
    if spent(p, me):  # resolved before the finding was seen fixed, or after: agreeing, not dismissing (issue 58.10)
        return False
    return p.state.lower() in DISMISSING_STATES if p.state else p.resolved


def _reason(reply: str) -> str:
    """A person's reply as the reason for their dismissal or override: the documented phrase (Azure) left out."""
    words = (reply or "").lstrip()
    words = words[len(DISMISS_PHRASE):].lstrip(" :") if said_dismiss(words) else words
    return clip(" ".join(visible(words).split()), MAX_REASON)


def forge_dismissals(posted: Iterable[Posted], me: str | Iterable[str], author: str,
                     where: str) -> dict[str, ForgeDismissal]:
    """Fingerprint → the dismissal a person made on the forge (`where`: "GitLab merge request group/app!3"),
    for our threads (first comment ours: marker and identity) that `dismissed_by_person`. The reason is
    that person's last reply in the thread, when they wrote one."""
    before = earlier(posted, me)
    found: dict[str, ForgeDismissal] = {}
    for fp, p in before.threads.items():
        if not dismissed_by_person(p, before.names, author):
            continue
        said = [r for r in p.replies if r.author == p.resolved_by and (r.body or "").strip()]
        reason = _reason(said[-1].body if said else "")
        severity, text = _said(p.body)
        found[fp] = ForgeDismissal(fp, p.resolved_by, p.resolved_at or (said[-1].at if said else ""), reason, where,
                                   severity, text)
    return found


def check_overrides(posted: Iterable[Posted], me: str | Iterable[str], author: str,
                    where: str) -> dict[str, Override]:
    """Check key → the override a person made by resolving that check's thread of ours (DESIGN.md 20): the same
    rule as `forge_dismissals` (write access, not a bot, not the request's author); the reason is their last
    reply in the thread, or that they resolved it. `where`: the forge ("github", "gitlab", …)."""
    before = earlier(posted, me)
    found: dict[str, Override] = {}
    for key, p in before.checks.items():
        if not dismissed_by_person(p, before.names, author):
            continue
        said = [r for r in p.replies if r.author == p.resolved_by and (r.body or "").strip()]
        found[key] = Override(p.resolved_by, _reason(said[-1].body) if said else "resolved the check's thread", where)
    return found


def _said(body: str) -> tuple[str, str]:
    """The severity and the text (message, then any fix) of one of ocr-hook's inline comments, as comment_body
    wrote them: what a dismissal was about, when two findings share its fingerprint (issue 58.16)."""
    lines = (body or "").split("\n")
    heading_parts = lines[1].split(" · ") if len(lines) > 1 else []
    severity = heading_parts[1].strip() if len(heading_parts) > 2 and heading_parts[0] == "**ocr-hook**" else ""
    return severity, clip("\n".join(lines[3:]), MAX_MESSAGE_INLINE)


def fixed_fingerprints(report: Report, threads: Mapping[str, Posted]) -> frozenset[str]:
    """The findings of earlier threads that are fixed: review memory resolved them, or (where no memory is
    kept) a complete review of the thread's file in this report no longer raises them. A thread whose
    file the adapter could not name is fixed only by memory's word."""
    raised = {f.fingerprint for f in report.findings}
    reviewed = set(report.reviewed)
    gone = {fp for fp, p in threads.items() if p.path and p.path in reviewed and fp not in raised}
    return frozenset(set(report.resolved) | gone)


def raised_reply_body(fingerprint: str, kept: bool = False) -> str:
    """The one reply in a finding's thread that was resolved and whose finding the latest review raises again;
    `kept`: the forge refused to reopen the thread (or cannot), and the reply says what its resolve still means."""
    if kept:
        return (f"<!-- ocr-hook raised fingerprint={fingerprint} kept=resolved -->\n**ocr-hook**: the latest review "
                "raises this finding again. This thread could not be reopened and stays resolved; that resolve is "
                "from before, so it dismisses nothing: the finding counts until it is fixed or dismissed in the "
                "repository's dismissals file (`ocr-hook dismiss`).")
    return (f"<!-- ocr-hook raised fingerprint={fingerprint} -->\n**ocr-hook**: the latest review raises this "
            "finding again; the thread is reopened where the forge allows it.")


FIXED_ANSWERED = "The thread stays open because it has replies; resolve it when the conversation is done."
FIXED_NO_API = "This forge's API cannot resolve the thread; resolve it when you agree."
FIXED_REFUSED = "The token ocr-hook publishes with may not resolve threads here; resolve it when you agree."
FIXED_RESOLVED = ("Its thread was resolved before; should the finding come back, that resolve no longer "
                  "dismisses it: it counts again and the thread is reopened.")


def fixed_reply_body(fingerprint: str, answered: bool = True, why: str = "") -> str:
    """The one reply in a fixed finding's thread that a person answered (resolving it would hide their words),
    or (`answered` False) in one the forge's API cannot resolve (Gitea's); `why` says another reason: the forge
    refused the resolve (FIXED_REFUSED), or a person resolved the thread already (FIXED_RESOLVED). Either way
    the reply marks the thread: a resolve that stands after it is agreement, never a dismissal (`spent`)."""
    why = why or (FIXED_ANSWERED if answered else FIXED_NO_API)
    return (f"<!-- ocr-hook fixed fingerprint={fingerprint} -->\n**ocr-hook**: this finding looks fixed: the "
            f"latest review of this file no longer raises it. {why}")


def refused_reply(p: Posted) -> str:
    """What to say, once, in a thread of ours whose resolve the forge refused (the token may not resolve): the
    reply remembers the refusal on the forge, where the next CI run reads it (no cache needed), so no later run
    asks again or says more (issue 58.12)."""
    if key := check_threads.marker_key(p.body):
        return check_threads.passed_reply_body(key, FIXED_REFUSED)
    return fixed_reply_body(comment_fingerprint(p.body) or "", why=FIXED_REFUSED)


# --- the plan ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Inline:
    finding: Finding
    start: int  # new-side lines of the head, inside one hunk
    end: int


@dataclass(frozen=True, slots=True)
class Plan:
    report: Report
    inline: tuple[Inline, ...]
    listed: tuple[tuple[Finding, str], ...]  # (finding, why it is not inline), most severe first
    already: int  # findings an earlier run posted, not repeated
    suppressed: int
    post: bool  # False: nothing new since the latest summary
    resolve: tuple[Posted, ...] = ()  # our earlier threads whose finding is fixed, still open, no person's reply
    note: str = ""  # a sentence for the summary (e.g. the report is of another commit)
    replies: tuple[tuple[Posted, str], ...] = ()  # (thread, body): a fixed finding's thread a person answered
    forge_dismissed: int = 0  # findings a person dismissed on the forge (their thread resolved), see forge_dismissals
    kind: str = "pull request"
    # Checks (publish.check_threads): the threads to open (as Inline, the check's key as the fingerprint), the
    # failed checks listed in the summary instead (with why), and the names of the checks that have a thread.
    check_inline: tuple[tuple[Inline, CheckVerdict], ...] = ()
    check_listed: tuple[tuple[CheckVerdict, str], ...] = ()
    threaded: frozenset[str] = frozenset()
    reopen: tuple[Posted, ...] = ()  # resolved threads (by ocr-hook, or after it said fixed) of findings raised again
    summary_due: bool = True  # a new summary is due whatever happens to the threads (new findings, another verdict)
    if_refused: tuple[str, ...] = ()  # for each of `resolve`, the one reply to make should the forge refuse it


def plan_publish(report: Report, lines: CommentableLines, before: Earlier, *, kind: str = "pull request",
                 forge: str = "GitHub", inline: bool = True, refused_fps: frozenset[str] = frozenset(),
                 reviewed: Mapping[str, Sequence[str]] | None = None, summary: SummaryStyle = "append",
                 stale: bool = False, routing: Routing | None = None) -> Plan:
    """`kind` names the request in reasons ("merge request"). `inline=False` or a fingerprint in
    `refused_fps`: the forge refused those comments, list them. `reviewed`: the reviewed files' lines
    where they can be read; a finding whose lines differ from the head's goes in the summary (a file not
    in it is not checked). `stale`: the report is of another commit, nothing inline. `routing`: findings
    that go to the summary whatever their lines."""
    reviewed = reviewed or {}
    routing = routing or Routing()
    before, renamed = by_current_names(before, report.findings)
    live = sorted((f for f in report.findings if f.suppressed is None), key=importance)
    suppressed = len(report.findings) - len(live)
    # A replace-style summary is rewritten whole: only findings with their own comment are "posted".
    posted = before.fingerprints if summary == "append" else before.inline
    # A raised finding whose only thread is resolved would be shown nowhere (issue 58.11, 58.16): the summary
    # lists it, and a thread resolved not as a person's word on it is reopened, with one reply saying why.
    folded = {f.fingerprint: before.threads[f.fingerprint] for f in live
              if f.fingerprint in before.threads and before.threads[f.fingerprint].resolved}
    new = [f for f in live if f.fingerprint not in posted or f.fingerprint in folded]
    comments: list[Inline] = []
    listed: list[tuple[Finding, str]] = []
    for f in new:
        start, end = lines_of(f)
        routed = routing.why(f)
        if f.fingerprint in folded:
            listed.append((f, RAISED_AGAIN))
        elif routed is not None:
            listed.append((f, routed))
        elif not f.anchored or start < 1:
            listed.append((f, UNANCHORED))
        elif stale:
            listed.append((f, stale_commit(kind)))
        elif not accepts(lines, f.path, start, end):
            listed.append((f, outside_diff(kind)))
        elif f.path in reviewed and not same_text(lines, f.path, start, end, reviewed[f.path]):
            listed.append((f, moved(kind)))
        elif not inline or f.fingerprint in refused_fps:
            listed.append((f, refused(forge)))
        elif len(comments) >= MAX_INLINE:
            listed.append((f, OVER_CAP))
        else:
            comments.append(Inline(f, start, end))
    check_inline, check_listed, threaded = _plan_checks(report, lines, before, inline, refused_fps, reviewed,
                                                        stale, kind, forge)
    fixed = fixed_fingerprints(report, before.threads)
    open_fixed = [(fp, p) for fp, p in sorted(before.threads.items()) if fp in fixed and not p.resolved and p.thread]
    resolve: list[Posted] = []
    replies: list[tuple[Posted, str]] = []
    for fp, p in open_fixed:
        if replied_fixed(p, before.names):  # said once: the thread was answered, or may not be resolved
            continue
        answered = person_replied(p, before.names)
        if p.resolvable and not answered:
            resolve.append(p)
        else:  # answered, or a forge that cannot resolve (Gitea): one reply
            replies.append((p, fixed_reply_body(fp, answered)))
    # A fixed finding whose thread a person resolved already: one reply marks the thread, so that resolve (made
    # before the fix, or after it) dismisses nothing should the finding come back (issue 58.10).
    replies += [(p, fixed_reply_body(fp, why=FIXED_RESOLVED)) for fp, p in sorted(before.threads.items())
                if fp in fixed and p.resolved and p.thread and p.resolved_by_can_write
                and not resolved_not_by_person(p, before.names)]
    _resolve_passed_checks(report, before, resolve, replies)
    reopen: list[Posted] = []
    for fp, p in sorted(folded.items()):
        word = last_word(p, before.names)
        # "kept": the forge refused to reopen it before; the summary lists the finding, nothing is asked again
        if resolved_not_by_person(p, before.names) and p.thread and word != "kept":
            reopen.append(p)
            if word != "raised":
                replies.append((p, raised_reply_body(fp)))
    unchanged = before.last_review == (report.exit_code, report.status) and \
        before.last_checks == check_threads.digest(report.checks)
    # a folded finding the latest summary lists already is nothing new: a run that may not reopen its thread
    # would otherwise post the same summary again on every run
    shown = {renamed.get(fp, fp) for fp in review_marker(before.summary.body)[2]} \
        if before.summary and review_marker(before.summary.body) else set()
    fresh = [f for f in new if f.fingerprint not in folded or f.fingerprint not in shown]
    summary_due = bool(fresh) or not unchanged or bool(check_inline)
    post = summary_due or bool(resolve) or bool(replies) or bool(reopen)
    note = f"Nothing is commented inline: {stale_commit(kind)}." if stale else ""
    on_forge = sum(1 for f in report.findings if f.suppressed == "dismissed" and f.extra.get("dismissed_in"))
    if_refused = tuple(refused_reply(p) for p in resolve)
    return Plan(report, tuple(comments), tuple(listed), len(live) - len(new), suppressed, post, tuple(resolve), note,
                tuple(replies), on_forge, kind, check_inline, check_listed, threaded, tuple(reopen), summary_due,
                if_refused)


def _plan_checks(report: Report, lines: CommentableLines, before: Earlier, inline: bool,
                 refused_fps: frozenset[str], reviewed: Mapping[str, Sequence[str]], stale: bool, kind: str,
                 forge: str) -> tuple[tuple[tuple[Inline, CheckVerdict], ...], tuple[tuple[CheckVerdict, str], ...],
                                      frozenset[str]]:
    """A thread for each failed check that has none yet, at its first anchored evidence when that is on the
    forge's diff and reads the same on the head; else the check goes in the summary with its evidence."""
    threads: list[tuple[Inline, CheckVerdict]] = []
    listed: list[tuple[CheckVerdict, str]] = []
    threaded: set[str] = set()
    for v in report.checks:
        if not check_threads.wants_thread(v):
            continue
        key = check_threads.check_key(v.name)
        if key in before.checks:  # an earlier run opened its thread: found again by its marker, never repeated
            threaded.add(v.name)
            continue
        e = check_threads.anchor(v)
        start, end = check_threads.span(e) if e is not None else (0, 0)
        if e is None:
            listed.append((v, "no evidence on a line of the change"))
        elif stale:
            listed.append((v, stale_commit(kind)))
        elif not accepts(lines, e.path, start, end):
            listed.append((v, outside_diff(kind)))
        elif e.path in reviewed and not same_text(lines, e.path, start, end, reviewed[e.path]):
            listed.append((v, moved(kind)))
        elif not inline or key in refused_fps:
            listed.append((v, refused(forge)))
        else:
            threads.append((Inline(check_threads.thread_finding(v, e), start, end), v))
            threaded.add(v.name)
    return tuple(threads), tuple(listed), frozenset(threaded)


def _resolve_passed_checks(report: Report, before: Earlier, resolve: list[Posted],
                           replies: list[tuple[Posted, str]]) -> None:
    """A check's open thread whose check passes now (or no longer applies) is resolved, or, where a person
    answered, told so once; a check the report does not name (a file deleted after merge) is left as it is."""
    now = {check_threads.check_key(v.name): v for v in report.checks}
    for key, p in sorted(before.checks.items()):
        v = now.get(key)
        if v is None or v.verdict not in ("pass", "not_applicable") or p.resolved or not p.thread:
            continue
        if check_threads.replied_passed(p.replies, before.names):  # said once (answered, or may not resolve)
            continue
        if p.resolvable and not person_replied(p, before.names):
            resolve.append(p)
        else:
            replies.append((p, check_threads.passed_reply_body(key)))


def importance(f: Finding) -> tuple[Any, ...]:
    return (-f.severity.rank, f.path, f.start_line, f.end_line, f.fingerprint)


def lines_of(f: Finding) -> tuple[int, int]:
    """The lines a comment on f covers: with a fix, exactly the lines its suggestion replaces."""
    if f.fix is not None:
        return f.fix.start_line, max(f.fix.start_line, f.fix.end_line)
    return f.start_line, max(f.start_line, f.end_line)


# --- texts --------------------------------------------------------------------------------------------------

_STATUS_NOTE = {"carried": " · carried from the last review",
                "late": " · late: on lines unchanged since the last review"}


def heading(f: Finding) -> str:
    return f"**ocr-hook** · {f.severity.value} · {f.category.value}{_STATUS_NOTE.get(f.status, '')}"


def comment_body(f: Finding, fix: FixStyle = "suggestion", head_text: Sequence[str] = ()) -> str:
    """An inline comment: the marker, the heading, the message (inert), and the fix in the forge's own
    form: "suggestion" (GitHub, Azure), "gitlab" (```suggestion:-0+N```), "diff" (a diff block of
    `head_text`, the commented lines as the head has them: Gitea has no suggestions), "none"."""
    parts = [f"<!-- ocr-hook fingerprint={f.fingerprint} -->", heading(f), "",
             inert(clip(f.message.strip() or "(no message)", MAX_MESSAGE_INLINE))]
    if f.fix is not None and fix != "none" and verbatim_ok(f.fix.replacement):
        parts += ["", fix_block(f, fix, head_text)]
    elif f.fix is not None or f.suggestion:
        code = f.fix.replacement if f.fix is not None else f.suggestion or ""
        parts += ["", "Suggested code (not an exact edit of these lines):", "", fenced(code)]
    return "\n".join(parts)


def fix_block(f: Finding, style: FixStyle, head_text: Sequence[str]) -> str:
    assert f.fix is not None
    start, end = lines_of(f)
    if style == "gitlab":
        # GitLab counts the lines the suggestion replaces from the commented (first) line down.
        return fenced(f.fix.replacement, f"suggestion:-0+{end - start}")
    if style == "diff":
        old = [f"-{line}" for line in head_text]
        new = [f"+{line}" for line in f.fix.replacement.split("\n")] if f.fix.replacement else []
        return fenced("\n".join(old + new), "diff")
    # GitHub shows this as a suggested change: its text replaces the commented lines as it stands.
    return fenced(f.fix.replacement, "suggestion")


def where(f: Finding) -> str:
    if not f.anchored or f.start_line < 1:
        return code_span(f.path)
    start, end = lines_of(f)
    return code_span(f"{f.path}:{start}" + (f"-{end}" if end > start else ""))


def summary_entry(f: Finding, why: str) -> str:
    message = inert(clip(f.message.strip() or "(no message)", MAX_MESSAGE_BODY))
    lines = [f"- {where(f)} · {f.severity.value} · {f.category.value}{_STATUS_NOTE.get(f.status, '')} ({why})", ""]
    lines += [f"  {line}" if line else "" for line in message.split("\n")]
    suggestion = f.fix.replacement if f.fix is not None else f.suggestion
    if suggestion:
        block = fenced(clip(suggestion, MAX_MESSAGE_BODY))
        lines += ["", *(f"  {line}" if line else "" for line in block.split("\n"))]
    return "\n".join(lines)


def counts(findings: Sequence[Finding]) -> str:
    by: dict[str, int] = {}
    for f in findings:
        by[f.severity.value] = by.get(f.severity.value, 0) + 1
    n = len(findings)
    detail = ", ".join(f"{count} {sev}" for sev, count in by.items())
    return f"{n} finding{'s' if n != 1 else ''}" + (f" ({detail})" if detail else "")


def summary_body(plan: Plan, *, max_chars: int, inline_count: int | None = None,
                 summary: SummaryStyle = "append", resolved: int | None = None) -> tuple[str, tuple[str, ...]]:
    """The summary's Markdown and the fingerprints it lists (its marker carries them). Stays under
    `max_chars` (the forge's limit for one body): what does not fit is counted, not listed."""
    report = plan.report
    live = sorted((f for f in report.findings if f.suppressed is None), key=importance)
    n_inline = len(plan.inline) if inline_count is None else inline_count
    if summary == "replace":  # the one summary describes everything, whichever run commented it
        n_inline += plan.already
    parts = [f"{counts(live)}: {n_inline} as inline comments, {len(plan.listed)} listed below"]
    if plan.already and summary == "append":
        parts.append(f"{plan.already} already posted by an earlier run (not repeated)")
    if plan.suppressed:
        parts.append(f"{plan.suppressed} suppressed (not posted)")
    n_resolved = len(plan.resolve) if resolved is None else resolved  # what was done, once it is (issue 58.12)
    if n_resolved:
        parts.append(f"{n_resolved} resolved since (threads resolved)")
    head = ["### ocr-hook review", "", f"**{inert(report.verdict)}**" if report.verdict else "", "",
            "; ".join(parts) + "."]
    if plan.forge_dismissed:
        n = plan.forge_dismissed
        head += ["", f"{n} finding{'s' if n != 1 else ''} dismissed on this {plan.kind} by a maintainer "
                     f"resolving {'their threads' if n != 1 else 'its thread'} (not counted by the gate for this "
                     f"change). To keep {'them' if n != 1 else 'it'} for later changes, with the reasons given, "
                     f"run `{KEEP_COMMAND}` and commit the dismissals file it writes."]
    if plan.note:
        head += ["", plan.note]
    if report.status != "complete":
        head += ["", f"The review is **incomplete**: {report.skipped} file(s) not reviewed, {report.failed} "
                     "failed. The job log says why; this is not a clean pass."]
    rows = check_threads.table(report.checks, plan.threaded, plan.kind)
    if rows:
        head += ["", *rows]
    said = check_threads.listed(plan.check_listed)
    if said:
        head += ["", *said]
    if plan.listed:
        head += ["", "#### Findings not on a diff line"]
    entries: list[str] = []
    listed: list[str] = []
    budget = max_chars - sum(len(h) + 1 for h in head) - 200
    for f, why in plan.listed:
        entry = summary_entry(f, why)
        cost = len(entry) + 2 + len(f.fingerprint) + 1  # the entry, and its fingerprint in the marker
        if cost > budget:
            entries.append(f"- … and {len(plan.listed) - len(listed)} more: see the job summary or the SARIF "
                           "results.")
            break
        budget -= cost
        entries.append(entry)
        listed.append(f.fingerprint)
    checks = f" checks={check_threads.digest(report.checks)}" if report.checks else ""
    marker = (f"<!-- ocr-hook review exit={report.exit_code} status={_word(report.status)} "
              f"fingerprints={','.join(listed)}{checks} -->")
    return "\n".join([marker, *head, "", "\n\n".join(entries)]).rstrip() + "\n", tuple(listed)


KEEP_COMMAND = "ocr-hook dismiss --from-forge"


def _word(status: str) -> str:
    return status if re.fullmatch(r"[a-z]{1,20}", status) else "unknown"


def one_line(text: str, limit: int = 300) -> str:
    """A forge's or a report's text for the job log's single line."""
    return clip(" ".join(visible(text).split()), limit)
