"""Gitea and Forgejo pull requests: one COMMENT review per run, its comments at the findings' lines.

Where: Gitea/Forgejo Actions set the GitHub variables (GITHUB_REPOSITORY, GITHUB_EVENT_PATH with the
`pull_request` payload, GITHUB_API_URL = SERVER/api/v1) plus GITEA_ACTIONS or FORGEJO_ACTIONS. Token:
GITEA_TOKEN (a personal access token with repository read and write; the job's own GITHUB_TOKEN is used
when it is not set), sent as `Authorization: token …`.

The diff is Gitea's own (`GET …/pulls/{n}.diff`); a comment takes `new_position`, the line number in
the new file (Gitea has no ranges: the comment is on the first line of the finding's). Gitea has no
suggestion blocks: a fix shows as a ```diff block of the lines it replaces. Gitea answers 500 for a
whole review when one comment cannot be placed: InlineRefused, and the review goes once more with
every finding in its body. Identity: `GET /user`; the Actions token may not read it, and writes as
`gitea-actions` (Forgejo, where FORGEJO_ACTIONS is set: `forgejo-actions`); only that server's own
name counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from ocr_hook.cienv.guess import value
from ocr_hook.publish.api_client import ApiClient, ApiRefusal, check_token
from ocr_hook.publish.forges import InlineRefused, InlineText, NotApplicable, Setup
from ocr_hook.publish.plan import Posted
from ocr_hook.publish.pr_diff import CommentableLines, unified_diff_lines
from ocr_hook.publish.pr_target import NoPullRequest, PullRequest, pull_request
from ocr_hook.publish.report_input import Report

# The name each server reserves for its Actions bot. Only that server's own counts: on Gitea,
# `forgejo-actions` is a name anyone may register (and the other way round), whose markers would count.
GITEA_ACTIONS_USER, FORGEJO_ACTIONS_USER = "gitea-actions", "forgejo-actions"
MAX_BODY = 60_000  # Gitea keeps bodies in a TEXT column (64 KiB on MySQL)


class GiteaAdapter:
    forge = "Gitea"
    kind = "pull request"
    fix_style = "diff"
    summary_style = "append"
    max_body = MAX_BODY
    published_as = "a review"
    summary_name = "the body"
    hints = MappingProxyType({
        401: "the token is not valid",
        403: "the token may not write reviews: it needs repository write access (a pull request from a fork "
             "gets a read-only Actions token)",
        404: "no such pull request, or the token cannot see the repository",
    })

    def __init__(self, api: ApiClient, pr: PullRequest, *, actions_token: bool,
                 actions_user: str = GITEA_ACTIONS_USER) -> None:
        self.api, self.pr, self.actions_token, self.actions_user = api, pr, actions_token, actions_user
        self.target, self.head_sha = str(pr), pr.head_sha
        self._repo = f"repos/{pr.repository}"
        self._comments: list[dict[str, Any]] = []

    def identity(self) -> str | frozenset[str]:
        return self.api.user_login(self.actions_user, (401, 403, 404) if self.actions_token else ())

    def diff(self) -> CommentableLines:
        return unified_diff_lines(self.api.get_text(f"{self._repo}/pulls/{self.pr.number}.diff"))

    def existing(self) -> list[Posted]:
        found: list[Posted] = []
        for review in self.api.get_all(f"{self._repo}/pulls/{self.pr.number}/reviews", per_page="limit"):
            found.append(Posted(_login(review), str(review.get("body") or ""), str(review.get("id", "")),
                                resolvable=False))
            if review.get("comments_count"):
                # not paginated: Gitea's description gives this list no page or limit, it answers all of it
                comments = self.api.get(f"{self._repo}/pulls/{self.pr.number}/reviews/{review.get('id')}/comments")
                found += [Posted(_login(c), str(c.get("body") or ""), str(c.get("id", "")), resolvable=False)
                          for c in (comments if isinstance(comments, list) else []) if isinstance(c, dict)]
        return found

    def post_inline(self, items: Sequence[InlineText]) -> frozenset[str]:
        self._comments = [{"path": i.inline.finding.path, "body": i.body, "new_position": i.inline.start,
                           "old_position": 0} for i in items]
        return frozenset()

    def put_summary(self, body: str, previous: Posted | None) -> None:
        request = {"commit_id": self.head_sha, "event": "COMMENT", "body": body, "comments": self._comments}
        try:
            self.api.post(f"{self._repo}/pulls/{self.pr.number}/reviews", request)
        except ApiRefusal as exc:
            if exc.status in (422, 500) and self._comments:
                raise InlineRefused(str(exc)) from None
            raise

    def resolve(self, posted: Sequence[Posted]) -> int:
        return 0  # Gitea's API cannot resolve a review conversation

    def report_verdict(self, report: Report, passed: bool) -> None:
        pass  # the workflow's job status is the gate

    def close(self) -> None:
        self.api.__exit__(None, None, None)


def _login(item: dict[str, Any]) -> str:
    user = item.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else ""


def open_adapter(setup: Setup) -> GiteaAdapter:
    env = setup.environ
    try:
        pr = pull_request(env)
    except NoPullRequest as exc:
        raise NotApplicable(str(exc)) from None
    own = value(env, "GITEA_TOKEN")
    token = own or value(env, "GITHUB_TOKEN")
    if not token:
        raise NotApplicable("no GITEA_TOKEN (or GITHUB_TOKEN)", str(pr))
    check_token(token)
    root = value(env, "GITEA_API_URL") or value(env, "GITHUB_API_URL")
    if not root and value(env, "GITHUB_SERVER_URL"):
        root = value(env, "GITHUB_SERVER_URL").rstrip("/") + "/api/v1"
    if not root:
        raise NotApplicable("no GITHUB_API_URL or GITHUB_SERVER_URL names the Gitea server", str(pr))
    api = ApiClient(root, headers={"Authorization": f"token {token}"}, secrets=(token,),
                    variable="GITHUB_API_URL" if not value(env, "GITEA_API_URL") else "GITEA_API_URL",
                    deadline=setup.deadline)
    forgejo = value(env, "FORGEJO_ACTIONS").lower() in ("true", "1")  # (Forgejo sets GITEA_ACTIONS too)
    return GiteaAdapter(api, pr, actions_token=not own,
                        actions_user=FORGEJO_ACTIONS_USER if forgejo else GITEA_ACTIONS_USER)
