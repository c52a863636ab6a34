"""Publishing on a forge: the adapter protocol, the registry, and which forge a CI run is on.

`ocr-hook publish` reads the report, asks the registry for the forge's adapter, and lets
publishing.publish drive it; the plan (publish.plan) and the texts (publish.render) know no forge,
the adapter only speaks its API through publish.api_client.

How to add an adapter (e.g. Bitbucket Cloud, Azure DevOps)
----------------------------------------------------------
1. Write `ocr_hook/publish/forge_NAME.py` with a function `open_adapter(setup: Setup) -> Adapter`.
   It reads its variables from `setup.environ` and raises `NotApplicable("one line")` when this is not a
   merge/pull request run or there is no token (publishing then says that line and exits 0). It builds
   its client as `ApiClient(root, headers={credentials}, secrets=(token, any encoded form), variable=
   "NAME_API_URL", deadline=setup.deadline)`, so the token is masked, never redirected, never sent off
   the root, and 429s wait within the deadline.
2. The object it returns has the attributes and methods of `Adapter` below. The driver calls, in
   order: identity(), diff(), existing(), then (when the plan has anything new) resolve([posted]) and
   reopen([posted]) one thread at a time, reply(posted, body) for each thread to answer, post_inline(items),
   put_summary(body, previous), report_verdict(report, passed). Any of them may raise ApiRefusal: the run
   stops there with one line, exit 0; a refusal of resolve(), reopen() or reply() ends the published line
   instead and the rest still goes. A resolve or reopen refused with 401/403 (the token may not) is
   answered by one reply in that thread saying so, which later runs find (publishing.py, issue 58.12).
   The review in CI (publish.forge_dismissals.read) calls identity(),
   existing() and author() only, and writes nothing.
   * identity(): the name(s) the forge gives the token's user (GitLab `GET /user` username, Gitea
     `GET /user` login). Markers count only in what `existing()` lists with that author.
   * diff(): the lines the forge accepts inline comments on, per new path (pr_diff.file_lines for
     header-less hunks, pr_diff.unified_diff_lines for a whole diff), with the head's text of them.
   * existing(): every comment/thread/annotation on the request as `plan.Posted` (author, body, the ids
     the adapter needs to update or resolve it). Nothing else: the driver finds the markers. What people
     did with a thread (DESIGN.md 18) goes in the rest of Posted where the forge can tell: `path` (the
     file an inline comment is on: a fixed finding without memory), `replies` (later comments, oldest
     first), `resolved_by`/`resolved_at` and, for a thread someone other than the identity resolved,
     `resolved_by_can_write` (the forge's own word: role, permission, association) and
     `resolved_by_bot`; `state` where threads have more states than resolved (Azure: wontFix, byDesign,
     closed dismiss); 👍/👎 in `thumbs_up`/`thumbs_down` where the thread listing has them (a forge that
     needs a request per comment for them leaves them out, see thumbs()). plan.forge_dismissals decides.
   * thumbs(posted), only on a forge whose listing lacks reactions (GitLab, Gitea): 👍 and 👎 on that comment, one
     request; the review in CI calls it for ocr-hook's own comments until its deadline, never publishing.
   * author(): the request's author, spelt as Posted.author (their own resolve never dismisses).
   * post_inline(items): post each `InlineText` (its `body` is already rendered in the adapter's
     `fix_style`; a forge that shows plain text renders `item.inline.finding` with render.plain instead).
     Return the fingerprints the forge refused one by one (they move to the summary). Raise
     `InlineRefused` when the forge refused them all together (the driver re-plans with every finding
     in the summary and calls post_inline([]) and put_summary once more).
   * put_summary(body, previous): "append" forges post a new one; "replace" forges update `previous`
     (the latest summary this identity wrote) or create one when it is None.
   * resolve(posted): resolve these threads (their finding is fixed: plan.fixed_fingerprints); return how
     many. A forge without threads returns 0. Never called for a thread a person answered:
   * reply(posted, body): one comment in that thread (the finding looks fixed, or is raised again).
   * reopen(posted), where the forge can: unresolve these threads (their finding is raised again after
     ocr-hook resolved them, or once a review saw it fixed); return how many. Optional: without it such a
     finding is listed in the summary only (it always is), and its thread told it stays resolved.
   * report_verdict(report, passed): a status where the forge has one (Azure PR status, Bitbucket
     report result); nothing elsewhere.
   * linked_tickets(refs, limit, clip) -> tickets.model.TicketsRead, optional (issue 60; read-only, for
     the review in CI: publish/tickets_read.py): the forge's own closing references first (GitHub
     `closingIssuesReferences`, GitLab `closes_issues`, Azure the work items linked to the pull request),
     then the given `refs` of its own source (tickets/refs.py found them in the title, body, branch and
     commits), deduplicated (refs.identity), at most `limit`; each body clipped to `clip` characters
     (model.clipped). A pull request (not a ticket) and a ticket the token cannot read are skipped with one
     note each; a refusal of the whole read raises ApiRefusal (the caller's note; the check carries its last
     verdict). With it, the attributes `repository` (this repository's path on the forge, so `owner/repo#3`
     is `#3`) and `web_root` (the forge's web address: only its issue URLs are references).
   * request_text(), optional: the request's title and description read from the forge, where the CI variables
     name neither (Azure DevOps, Bitbucket Cloud); tickets_read.py finds references in it.
3. Add its name to FORGES and its module to ADAPTERS here, and its CI marker to `detect`.
4. A loopback fake in tests/fake_NAME.py from the forge's published API description (like
   tests/fake_gitlab.py), and tests through the CLI (tests/test_publish_gitlab.py shows the pattern).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ocr_hook.cienv.guess import value
from ocr_hook.publish.plan import FixStyle, Inline, Posted, SummaryStyle
from ocr_hook.publish.pr_diff import CommentableLines
from ocr_hook.publish.report_input import Report

FORGES = ("github", "gitlab", "bitbucket", "azure", "gitea")
ADAPTERS: Mapping[str, str] = {
    "github": "ocr_hook.publish.forge_github",
    "gitlab": "ocr_hook.publish.forge_gitlab",
    "gitea": "ocr_hook.publish.forge_gitea",
    "bitbucket": "ocr_hook.publish.forge_bitbucket",
    "azure": "ocr_hook.publish.forge_azure",
}


class NotApplicable(Exception):
    """Nothing to publish on, or no way to (no token): one line, exit 0. `target` names the request
    when it is known (the line then says "on group/project!3")."""

    def __init__(self, reason: str, target: str | None = None) -> None:
        super().__init__(reason)
        self.reason, self.target = reason, target


class InlineRefused(Exception):
    """The forge refused the inline comments as a whole (GitHub's 422, Gitea's 500)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Setup:
    environ: Mapping[str, str]
    deadline: float  # time.monotonic() by which publishing gives up
    checkout: Path | None  # the reviewed working tree, when there is one


@dataclass(frozen=True, slots=True)
class InlineText:
    inline: Inline  # the finding and its new-side lines start..end on the head
    body: str  # the comment, rendered in the adapter's fix_style, starting with the marker
    old_line: int | None  # the old-side number of the start line when it is an unchanged (context) line
    old_path: str | None  # the base side's path of a renamed file


class Adapter(Protocol):
    forge: str  # "GitLab", for messages
    kind: str  # "merge request" / "pull request"
    target: str  # "group/project!3", for messages
    head_sha: str  # the request's head commit
    fix_style: FixStyle
    summary_style: SummaryStyle
    max_body: int  # characters one comment body may have on this forge
    published_as: str  # "a review", "comments", "a report"
    summary_name: str  # "the body", "the note"
    hints: Mapping[int, str]  # HTTP status → what it usually means on this forge (e.g. 403: a read-only token)

    def identity(self) -> str | frozenset[str]: ...
    def diff(self) -> CommentableLines: ...
    def existing(self) -> Sequence[Posted]: ...
    def post_inline(self, items: Sequence[InlineText]) -> frozenset[str]: ...
    def put_summary(self, body: str, previous: Posted | None) -> None: ...
    def resolve(self, posted: Sequence[Posted]) -> int: ...
    # DESIGN.md 18: the pull request's author (Posted.author's spelling; their own resolve never dismisses),
    # and one reply in a thread (a fixed finding's thread that a person answered is replied to, not resolved).
    def author(self) -> str: ...
    def reply(self, posted: Posted, body: str) -> None: ...
    def report_verdict(self, report: Report, passed: bool) -> None: ...
    def close(self) -> None: ...


def open_adapter(forge: str, setup: Setup) -> Adapter:
    try:
        module = importlib.import_module(ADAPTERS[forge])
    except ModuleNotFoundError as exc:
        if exc.name != ADAPTERS[forge]:
            raise
        raise NotApplicable(f"this ocr-hook cannot publish on {forge} yet") from None
    adapter: Adapter = module.open_adapter(setup)
    return adapter


# The markers of each CI system, most specific first: Gitea and Forgejo runners also set GITHUB_ACTIONS.
_MARKERS = (("gitea", ("GITEA_ACTIONS", "FORGEJO_ACTIONS")), ("github", ("GITHUB_ACTIONS",)),
            ("gitlab", ("GITLAB_CI",)), ("bitbucket", ("BITBUCKET_BUILD_NUMBER",)), ("azure", ("TF_BUILD",)))


def detect(environ: Mapping[str, str]) -> str:
    """`--to auto`: the forge of this CI run, from the variables its runner sets."""
    for forge, names in _MARKERS:
        if any(value(environ, n).lower() in ("true", "1") or (n == "BITBUCKET_BUILD_NUMBER" and value(environ, n))
               for n in names):
            return forge
    looked = ", ".join(n for _, names in _MARKERS for n in names)
    raise NotApplicable(f"not a CI run of a known forge (looked for {looked}); pass --to")
