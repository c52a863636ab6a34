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

What people did with the comments (DESIGN.md 18). Gitea keeps a conversation as the review comments on one
line of one file (the web UI groups them so; a reply is one more comment there): a comment's replies are
the later comments at its path and line that are not ocr-hook's own findings. `resolver` on a review
comment names who resolved its conversation (Gitea gives no time for it). Whether that person may write
is `GET …/collaborators/{login}/permission` (write, admin or owner), which Gitea answers only to a token of
a repository administrator (403 otherwise: then nobody's resolve counts, and the recipe says so). 👍/👎 are
the comment's reactions (`GET …/issues/comments/{id}/reactions`: review comments are issue comments), one
request per comment: not in existing() (publishing never needs them), read by thumbs() for ocr-hook's own
comments when the review in CI reads the forge (publish.forge_dismissals). A bot is a user Gitea gives a
negative id (its Actions user, the ghost).
The author of the pull request: `GET …/pulls/{n}` (user.login). Gitea's API description (the vendored
commit) has no operation to resolve a conversation: ocr-hook's comments are not resolvable there, and a
reply is a COMMENT review with one comment at the same path and line.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any
from urllib.parse import quote

from ocr_hook.cienv.guess import value
from ocr_hook.publish.api_client import ApiClient, ApiRefusal, check_token
from ocr_hook.publish.forges import InlineRefused, InlineText, NotApplicable, Setup
from ocr_hook.publish.plan import Posted, Reply, comment_fingerprint
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
        self._me: frozenset[str] = frozenset()
        self._access: dict[str, str] = {}  # login → Gitea's permission word ("": it would not say)
        self._where: dict[str, tuple[str, int, int]] = {}  # comment id → (path, new line, old line), for a reply

    def diff(self) -> CommentableLines:
        return unified_diff_lines(self.api.get_text(f"{self._repo}/pulls/{self.pr.number}.diff"))

    def identity(self) -> str | frozenset[str]:
        me = self.api.user_login(self.actions_user, (401, 403, 404) if self.actions_token else ())
        self._me = frozenset({me} if isinstance(me, str) else me)
        return me

    def existing(self) -> list[Posted]:
        found: list[Posted] = []
        comments: list[dict[str, Any]] = []
        for review in self.api.get_all(f"{self._repo}/pulls/{self.pr.number}/reviews", per_page="limit"):
            found.append(Posted(_login(review), str(review.get("body") or ""), str(review.get("id", "")),
                                resolvable=False, created_at=str(review.get("submitted_at") or "")))
            if review.get("comments_count"):
                # not paginated: Gitea's description gives this list no page or limit, it answers all of it
                got = self.api.get(f"{self._repo}/pulls/{self.pr.number}/reviews/{review.get('id')}/comments")
                comments += [c for c in (got if isinstance(got, list) else []) if isinstance(c, dict)]
        comments.sort(key=lambda c: c.get("id") if isinstance(c.get("id"), int) else 0)
        for n, c in enumerate(comments):
            found.append(self._posted(c, [d for d in comments[n + 1:] if _line(d) == _line(c)
                                          and not (comment_fingerprint(str(d.get("body") or ""))
                                                   and _login(d) in self._me)]))
        return found

    def _posted(self, c: dict[str, Any], later: list[dict[str, Any]]) -> Posted:
        ours = _login(c) in self._me and comment_fingerprint(str(c.get("body") or "")) is not None
        resolver = c.get("resolver") if isinstance(c.get("resolver"), dict) else None
        by = _login({"user": resolver}) if resolver else ""
        replies = tuple(Reply(_login(d), str(d.get("body") or ""), str(d.get("created_at") or ""),
                              bot=_bot(d.get("user")))
                        for d in later)
        self._where[str(c.get("id", ""))] = (str(c.get("path") or ""), _int(c.get("position")),
                                             _int(c.get("original_position")))
        return Posted(_login(c), str(c.get("body") or ""), str(c.get("id", "")), thread=str(c.get("id", "")),
                      path=str(c.get("path") or ""),
                      resolved=resolver is not None, resolvable=False, created_at=str(c.get("created_at") or ""),
                      replies=replies, resolved_by=by, resolved_by_bot=_bot(resolver),
                      resolved_by_can_write=bool(by) and ours and self._can_write(by))

    def _can_write(self, login: str) -> bool:
        """Gitea's word on whether `login` may write to the repository; False when it will not say."""
        if not login or login in self._me:
            return False
        if login not in self._access:
            if self._access.get("", "") == "refused":
                return False
            try:
                answer = self.api.get(f"{self._repo}/collaborators/{quote(login, safe='')}/permission")
            except ApiRefusal as exc:
                if exc.status not in (403, 404):
                    raise
                if exc.status == 403:  # not a repository administrator's token: it can ask about nobody
                    self._access[""] = "refused"
                answer = None
            self._access[login] = str(answer.get("permission") or "") if isinstance(answer, dict) else ""
        return self._access[login] in ("write", "admin", "owner")

    def thumbs(self, posted: Posted) -> tuple[int, int]:
        """👍 and 👎 from people (not bots) on a review comment, one request."""
        if not posted.id.isdigit():
            return 0, 0
        got = self.api.get(f"{self._repo}/issues/comments/{posted.id}/reactions")
        people = [r for r in (got if isinstance(got, list) else []) if isinstance(r, dict) and not _bot(r.get("user"))]
        return (sum(1 for r in people if r.get("content") == "+1"), sum(1 for r in people if r.get("content") == "-1"))

    def author(self) -> str:
        return _login(self.api.get(f"{self._repo}/pulls/{self.pr.number}"))

    def reply(self, posted: Posted, body: str) -> None:
        path, new, old = self._where.get(posted.thread, ("", 0, 0))
        if not path:
            raise ApiRefusal(None, f"comment {posted.thread}: not one this run listed, no line to reply on")
        comment = {"path": path, "body": body, "new_position": new, "old_position": old}
        self.api.post(f"{self._repo}/pulls/{self.pr.number}/reviews",
                      {"commit_id": self.head_sha, "event": "COMMENT", "body": "", "comments": [comment]})

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
        return 0  # Gitea's API description (the vendored commit) has no operation to resolve a conversation

    def report_verdict(self, report: Report, passed: bool) -> None:
        pass  # the workflow's job status is the gate

    def close(self) -> None:
        self.api.__exit__(None, None, None)


def _login(item: Any) -> str:
    user = item.get("user") if isinstance(item, dict) else None
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else ""


def _bot(user: Any) -> bool:
    """Gitea's own users have negative ids: -1 the ghost of a deleted account, -2 its Actions bot."""
    uid = user.get("id") if isinstance(user, dict) else None
    return isinstance(uid, int) and uid < 0


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _line(c: dict[str, Any]) -> tuple[str, int, int]:
    """A conversation's place: Gitea groups review comments by file and (signed) line."""
    return str(c.get("path") or ""), _int(c.get("position")), _int(c.get("original_position"))


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
