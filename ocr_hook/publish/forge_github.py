"""GitHub pull requests: one review per run (POST /pulls/{n}/reviews, `event: COMMENT`), its inline
comments with ```suggestion``` blocks, the rest in its body (DESIGN.md section 6).

Identity: `GET /user` names a personal or app user token's login. The Actions GITHUB_TOKEN (an
installation token) may not read /user (403 "Resource not accessible by integration"): what it writes
is by `github-actions[bot]`. GitHub refuses a whole review (422) when one comment's line is not in its
diff, without saying which: InlineRefused, and the driver posts it once more with every finding in the body.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from ocr_hook.publish.api_client import ApiRefusal
from ocr_hook.publish.forges import InlineRefused, InlineText, NotApplicable, Setup
from ocr_hook.publish.github_api import GitHubApi
from ocr_hook.publish.plan import Posted
from ocr_hook.publish.pr_diff import CommentableLines, commentable_lines
from ocr_hook.publish.pr_target import NoPullRequest, PullRequest, pull_request
from ocr_hook.publish.report_input import Report
from ocr_hook.publish.review_plan import ACTIONS_BOT, MAX_BODY, InlineComment, posted


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

    def identity(self) -> str | frozenset[str]:
        return self.api.user_login(ACTIONS_BOT, (403,))  # 403: an installation token (the Actions GITHUB_TOKEN)

    def diff(self) -> CommentableLines:
        return commentable_lines(self.api.get_all(f"{self._prefix}/files"))

    def existing(self) -> list[Posted]:
        return posted(self.api.get_all(f"{self._prefix}/comments"), self.api.get_all(f"{self._prefix}/reviews"))

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
        return 0  # review threads resolve through GraphQL only; the summary counts them

    def report_verdict(self, report: Report, passed: bool) -> None:
        pass  # the Action's check is the gate

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
    return GitHubAdapter(GitHubApi(env.get("GITHUB_API_URL", ""), token, deadline=setup.deadline), pr)


