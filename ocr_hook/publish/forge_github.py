"""GitHub pull requests: one review per run (POST /pulls/{n}/reviews, `event: COMMENT`), its inline
comments with ```suggestion``` blocks, the rest in its body (DESIGN.md section 6).

Identity: `GET /user` names a personal or app user token's login. The Actions GITHUB_TOKEN (an
installation token) may not read /user (403 "Resource not accessible by integration"): what it writes
is by `github-actions[bot]`. GitHub refuses a whole review (422) when one comment's line is not in its
diff, without saying which: InlineRefused, and the driver posts it once more with every finding in the body.

Threads (DESIGN.md 18) come from GraphQL (publish.github_threads): whether each is resolved and by whom,
its replies, the 👍/👎 on its first comment; the write access of whoever resolved one of ours is REST's
collaborator permission. Resolving is GraphQL's `resolveReviewThread`, which GitHub allows a GitHub App or
Actions token only with `contents: write` (`pull-requests: write` is not enough); without it GitHub answers
FORBIDDEN and nothing is resolved. A reply in a thread is REST's (`pull-requests: write`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any
from urllib.parse import quote

from ocr_hook.publish.api_client import ApiRefusal
from ocr_hook.publish.forges import InlineRefused, InlineText, NotApplicable, Setup
from ocr_hook.publish.github_api import GitHubApi
from ocr_hook.publish.github_threads import (
    AUTHOR,
    MAX_PAGES,
    MORE_COMMENTS,
    RESOLVE,
    THREADS,
    UNRESOLVE,
    VIEWER,
    WRITE_PERMISSIONS,
    Actor,
    ShapeError,
    Thread,
    actor,
    comments_page,
    pull_of,
    resolvers,
    thread_posted,
    threads_page,
)
from ocr_hook.publish.plan import Posted, comment_fingerprint, one_line
from ocr_hook.publish.pr_diff import CommentableLines, commentable_lines
from ocr_hook.publish.pr_target import NoPullRequest, PullRequest, pull_request
from ocr_hook.publish.report_input import Report
from ocr_hook.publish.review_plan import ACTIONS_BOT, MAX_BODY, InlineComment, posted
from ocr_hook.tickets.model import Reference, TicketsRead

RESOLVE_NEEDS = ("resolving a review thread needs `permissions: contents: write` for the Actions token "
                 "(`pull-requests: write` is not enough); the threads stay open")
REOPEN_NEEDS = ("reopening a review thread needs `permissions: contents: write` for the Actions token; the "
                "threads stay resolved")


class GitHubAdapter:
    forge = "GitHub"
    kind = "pull request"
    fix_style = "suggestion"
    summary_style = "append"
    max_body = MAX_BODY
    published_as = "a review"
    summary_name = "the body"
    hints = MappingProxyType({
        401: "the token is not valid",
        403: "the token may not write reviews: a pull request from a fork gets a read-only token, and the job "
             "needs `permissions: pull-requests: write`",
        404: "no such pull request, or the token cannot see the repository",
        422: "GitHub did not accept the review",
    })

    def __init__(self, api: GitHubApi, pr: PullRequest) -> None:
        self.api, self.pr = api, pr
        self.target, self.head_sha = str(pr), pr.head_sha
        self._prefix = f"repos/{pr.repository}/pulls/{pr.number}"
        self._comments: list[dict[str, Any]] = []
        self._author: str | None = None
        self.note: str | None = None  # what could not be read, for the published line and the review's notes
        self.repository, self.web_root = pr.repository, "https://github.com"  # (linked tickets: tickets/refs.py)

    def identity(self) -> str | frozenset[str]:
        """GitHub's own word (GraphQL `viewer`): a person's or an App's login (`<app>[bot]`, the Actions token's
        `github-actions[bot]`). Where GraphQL cannot say, REST's `GET /user`, which refuses an installation
        token (403): that is taken for the Actions token, the one a workflow is given."""
        try:
            viewer = actor(self.api.graphql(VIEWER, {}).get("viewer"))
        except ApiRefusal:
            viewer = Actor("", False)
        if viewer.login:
            return viewer.login
        return self.api.user_login(ACTIONS_BOT, (403,))

    def diff(self) -> CommentableLines:
        return commentable_lines(self.api.get_all(f"{self._prefix}/files"))

    def existing(self) -> list[Posted]:
        """The review threads (GraphQL) and the reviews, whose bodies hold the summaries (REST). Where GraphQL
        fails (an outage, a proxy without it), REST's review comments stand in: their markers keep a re-run from
        posting anything twice, but they say nothing of threads (none is resolved, reopened or a dismissal), and
        `note` says so (issue 58.14)."""
        reviews = posted([], self.api.get_all(f"{self._prefix}/reviews"))
        try:
            threads = self._threads()
        except (ApiRefusal, ShapeError) as exc:
            self.note = (f"review threads not read ({one_line(str(exc), 200)}): no thread resolved or reopened, "
                         "no dismissal on the pull request counted")
            return posted(self.api.get_all(f"{self._prefix}/comments"), []) + reviews
        may_write = {login: self._can_write(login) for login in resolvers(threads, comment_fingerprint)}
        found = [thread_posted(t, may_write.get(t.resolver.login, False)) for t in threads]
        return [p for p in found if p is not None] + reviews

    def _where(self) -> dict[str, str | int]:
        owner, name = self.pr.repository.split("/", 1)
        return {"owner": owner, "name": name, "number": self.pr.number}

    def _threads(self) -> list[Thread]:
        threads: list[Thread] = []
        after: str | None = None
        for _ in range(MAX_PAGES):
            author, page, after = threads_page(self.api.graphql(THREADS, {**self._where(), "after": after}))
            self._author = author.login
            threads += [self._all_comments(t) for t in page]
            if after is None:
                return threads
        raise ApiRefusal(None, f"more than {MAX_PAGES} pages of review threads")

    def _all_comments(self, thread: Thread) -> Thread:
        comments, after = list(thread.comments), thread.more
        for _ in range(MAX_PAGES):
            if after is None:
                return replace(thread, comments=tuple(comments), more=None)
            more, after = comments_page(self.api.graphql(MORE_COMMENTS, {"thread": thread.id, "after": after}))
            comments += more
        raise ApiRefusal(None, f"more than {MAX_PAGES} pages of comments in one review thread")

    def _can_write(self, login: str) -> bool:
        """REST's word on a person's access: admin, maintain and write may (a 404: not a collaborator)."""
        try:
            answer = self.api.get(f"repos/{self.pr.repository}/collaborators/{quote(login, safe='')}/permission")
        except ApiRefusal as exc:
            if exc.status == 404:
                return False
            raise
        return isinstance(answer, dict) and answer.get("permission") in WRITE_PERMISSIONS

    def author(self) -> str:
        if self._author is None:
            self._author = actor(pull_of(self.api.graphql(AUTHOR, self._where())).get("author")).login
        return self._author

    def post_inline(self, items: Sequence[InlineText]) -> frozenset[str]:
        # One request holds the review and its comments: they go with the body (put_summary).
        self._comments = [InlineComment(i.inline.finding, i.inline.start, i.inline.end, i.body).as_api()
                          for i in items]
        return frozenset()

    def put_summary(self, body: str, previous: Posted | None) -> None:
        request = {"commit_id": self.head_sha, "event": "COMMENT", "body": body, "comments": self._comments}
        try:
            self.api.post(f"{self._prefix}/reviews", request)
        except ApiRefusal as exc:
            if exc.status == 422 and self._comments:
                raise InlineRefused(str(exc)) from None
            raise

    def resolve(self, posted: Sequence[Posted]) -> int:
        return self._each_thread(RESOLVE, RESOLVE_NEEDS, posted)

    def reopen(self, posted: Sequence[Posted]) -> int:
        """Unresolve these threads (their finding is raised again); the same permission as resolving."""
        return self._each_thread(UNRESOLVE, REOPEN_NEEDS, posted)

    def _each_thread(self, mutation: str, needs: str, posted: Sequence[Posted]) -> int:
        """The mutation on each thread, in order: how many were done; a 403 names the permission it needs."""
        done = 0
        for p in posted:
            try:
                self.api.graphql(mutation, {"thread": p.thread})
            except ApiRefusal as exc:
                if exc.status == 403:
                    raise ApiRefusal(403, f"{exc.message} ({needs})") from None
                raise
            done += 1
        return done

    def reply(self, posted: Posted, body: str) -> None:
        """One reply in the thread `posted` opens (REST: its first comment's id)."""
        if not posted.id.isdigit():
            raise ApiRefusal(None, "a review thread whose first comment has no REST id; not replied to")
        self.api.post(f"{self._prefix}/comments/{posted.id}/replies", {"body": body})

    def report_verdict(self, report: Report, passed: bool) -> None:
        pass  # the Action's check is the gate

    def linked_tickets(self, refs: Sequence[Reference], limit: int, clip: int) -> TicketsRead:
        """The pull request's closing references and the issues `refs` name (issue 60: publish.github_tickets)."""
        from ocr_hook.publish.github_tickets import linked_tickets

        return linked_tickets(self.api, self.pr.repository, self.pr.number, refs, limit, clip)

    def close(self) -> None:
        self.api.__exit__(None, None, None)


def open_adapter(setup: Setup) -> GitHubAdapter:
    env = setup.environ
    try:
        pr = pull_request(env)
    except NoPullRequest as exc:
        raise NotApplicable(str(exc)) from None
    token = env.get("GITHUB_TOKEN", "").strip()
    if not token:
        raise NotApplicable("no GITHUB_TOKEN", str(pr))
    adapter = GitHubAdapter(GitHubApi(env.get("GITHUB_API_URL", ""), token, deadline=setup.deadline,
                                      graphql_url=env.get("GITHUB_GRAPHQL_URL")), pr)
    adapter.web_root = env.get("GITHUB_SERVER_URL", "").strip().rstrip("/") or adapter.web_root
    return adapter


