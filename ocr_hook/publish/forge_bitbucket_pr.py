"""Bitbucket Cloud pull requests as a conversation: findings as pull request comments whose threads resolve (I/O).

Chosen by forge_bitbucket.open_adapter in a pull-request pipeline (BITBUCKET_PR_ID) when the setting
bitbucket_comments is on (OCR_HOOK_BITBUCKET_COMMENTS) and BITBUCKET_ACCESS_TOKEN is set (Pipelines' own
proxy signs Code Insights requests only). The token needs the `pullrequest:write` scope (comments, replies,
resolving) and `account` (GET /user: who publishes, whose markers count); to tell who may write, `repository:admin` too
(Bitbucket lists a repository's permissions to its administrators only; without it nobody's resolve
dismisses anything). The Code Insights report on the head commit stays the verdict (PASSED/FAILED, the
counts), without annotations: the findings are the comments.

Requests (Bitbucket's OpenAPI, pullrequests group): GET /user; GET the pull request (its author, the
destination commit); GET diff/{head}..{destination} (the three-dot diff, as the pull request shows it);
GET comments (paginated: `next`); POST a comment per inline finding (`inline: {path, to}`, the new-side
line; a 400 moves that finding to the summary), POST or PUT the one summary comment, POST a reply
(`parent: {id}`), POST comments/{id}/resolve for a fixed finding's thread (409: resolved already); GET
/workspaces/{ws}/permissions/repositories/{slug} once, for people who resolved or replied in ours.

What Posted holds: the author's account uuid; the thread is the top-level comment; its replies are the
comments under it (any depth), oldest first; `resolution` gives who resolved it and when; a bot is an
account whose type is not `user`; write access is that listing's `write` or `admin`. Bitbucket's API has no
reactions on comments: 👍/👎 stay 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any
from urllib.parse import quote

from ocr_hook.publish.api_client import ApiClient, ApiRefusal
from ocr_hook.publish.bitbucket_insights import REPORT_ID, report_body
from ocr_hook.publish.forges import InlineText
from ocr_hook.publish.plan import Posted, Reply, comment_fingerprint
from ocr_hook.publish.pr_diff import CommentableLines, unified_diff_lines
from ocr_hook.publish.report_input import Report

MAX_BODY = 32_000  # characters in one comment (Bitbucket documents no limit; long comments render slowly)
WRITERS = ("write", "admin")


class BitbucketPullRequestAdapter:
    forge = "Bitbucket"
    kind = "pull request"
    fix_style = "diff"  # Bitbucket Cloud's comments have no suggestion block
    summary_style = "replace"
    max_body = MAX_BODY
    published_as = "comments"
    summary_name = "the summary comment"
    hints = MappingProxyType({
        401: "the token is not valid (BITBUCKET_ACCESS_TOKEN)",
        403: "the token may not write pull request comments: it needs the pullrequest:write and account scopes",
        404: "no such pull request, or the token cannot see it",
    })

    def __init__(self, api: ApiClient, repo: str, workspace: str, number: int, head_sha: str) -> None:
        self.api, self.number, self.head_sha = api, number, head_sha
        self.target = f"{repo} pull request #{number}"
        self._repo = f"repositories/{repo}"
        self._workspace, self._slug = workspace, repo.split("/", 1)[1]
        self._pr = f"{self._repo}/pullrequests/{number}"
        self._me = ""
        self._pull: dict[str, Any] | None = None
        self._access: dict[str, str] | None = None  # account uuid → permission ({} when Bitbucket will not say)

    def identity(self) -> str:
        me = self.api.get("user")
        uuid = me.get("uuid") if isinstance(me, dict) else None
        if not isinstance(uuid, str) or not uuid:
            raise ApiRefusal(200, "GET /user: the answer names no account")
        self._me = uuid
        return uuid

    def _pull_request(self) -> dict[str, Any]:
        if self._pull is None:
            pull = self.api.get(self._pr)
            self._pull = pull if isinstance(pull, dict) else {}
        return self._pull

    def author(self) -> str:
        return _uuid(self._pull_request().get("author"))

    def diff(self) -> CommentableLines:
        destination = ((self._pull_request().get("destination") or {}).get("commit") or {}).get("hash")
        if not isinstance(destination, str) or not destination.isalnum():
            raise ApiRefusal(200, "GET the pull request: it names no destination commit")
        return unified_diff_lines(self.api.get_text(f"{self._repo}/diff/{self.head_sha}..{destination}"))

    def existing(self) -> list[Posted]:
        comments = [c for c in self.api.get_all(f"{self._pr}/comments", per_page="", items_key="values")
                    if not c.get("deleted")]
        parent = {c.get("id"): (c.get("parent") or {}).get("id") for c in comments}

        def root(cid: Any) -> Any:
            seen = 0
            while parent.get(cid) is not None and seen < len(parent):
                cid, seen = parent[cid], seen + 1
            return cid

        under: dict[Any, list[dict[str, Any]]] = {}
        for c in comments:
            if parent.get(c.get("id")) is not None:
                under.setdefault(root(c.get("id")), []).append(c)
        return [self._posted(c, under.get(c.get("id"), [])) for c in comments if parent.get(c.get("id")) is None]

    def _posted(self, c: dict[str, Any], later: list[dict[str, Any]]) -> Posted:
        body = str((c.get("content") or {}).get("raw") or "")
        ours = _uuid(c.get("user")) == self._me and comment_fingerprint(body) is not None
        resolution = c.get("resolution") if isinstance(c.get("resolution"), dict) else None
        by = _uuid(resolution.get("user")) if resolution else ""
        replies = tuple(Reply(_uuid(d.get("user")), str((d.get("content") or {}).get("raw") or ""),
                              str(d.get("created_on") or ""), bot=_bot(d.get("user")))
                        for d in sorted(later, key=lambda d: d.get("id") or 0))
        inline = c.get("inline") if isinstance(c.get("inline"), dict) else {}
        resolver = resolution.get("user") if resolution else None
        return Posted(_uuid(c.get("user")), body, str(c.get("id", "")), thread=str(c.get("id", "")),
                      resolved=resolution is not None, resolvable=bool(inline),
                      created_at=str(c.get("created_on") or ""), replies=replies, resolved_by=by,
                      resolved_by_bot=_bot(resolver), resolved_by_can_write=bool(by) and ours and self._can_write(by),
                      resolved_at=str(resolution.get("created_on") or "") if resolution else "",
                      path=str(inline.get("path") or ""))

    def _can_write(self, uuid: str) -> bool:
        if not uuid or uuid == self._me:
            return False
        if self._access is None:
            try:
                listed = self.api.get_all(f"workspaces/{quote(self._workspace, safe='')}/permissions/repositories/"
                                          f"{quote(self._slug, safe='')}", per_page="", items_key="values")
            except ApiRefusal as exc:
                if exc.status not in (401, 403):
                    raise
                listed = []  # not a repository administrator's token: Bitbucket tells it nobody's permission
            self._access = {_uuid(p.get("user")): str(p.get("permission") or "") for p in listed}
        return self._access.get(uuid) in WRITERS

    def post_inline(self, items: Sequence[InlineText]) -> frozenset[str]:
        refused: set[str] = set()
        for item in items:
            comment = {"type": "pullrequest_comment", "content": {"raw": item.body},
                       "inline": {"path": item.inline.finding.path, "to": item.inline.start}}
            try:
                self.api.post(f"{self._pr}/comments", comment)
            except ApiRefusal as exc:
                if exc.status != 400:
                    raise
                refused.add(item.inline.finding.fingerprint)  # not on Bitbucket's diff: the summary lists it
        return frozenset(refused)

    def put_summary(self, body: str, previous: Posted | None) -> None:
        comment = {"type": "pullrequest_comment", "content": {"raw": body}}
        if previous is not None and previous.id:
            self.api.put(f"{self._pr}/comments/{quote(previous.id, safe='')}", comment)
        else:
            self.api.post(f"{self._pr}/comments", comment)

    def resolve(self, posted: Sequence[Posted]) -> int:
        done = 0
        for p in posted:
            try:
                self.api.post(f"{self._pr}/comments/{quote(p.thread, safe='')}/resolve", None)
            except ApiRefusal as exc:
                if exc.status != 409:  # resolved meanwhile: nothing to do
                    raise
                continue
            done += 1
        return done

    def reply(self, posted: Posted, body: str) -> None:
        self.api.post(f"{self._pr}/comments", {"type": "pullrequest_comment", "content": {"raw": body},
                                               "parent": {"id": int(posted.thread)}})

    def report_verdict(self, report: Report, passed: bool) -> None:
        """The Code Insights report on the head commit, without annotations (the comments are the findings)."""
        live = [f for f in report.findings if f.suppressed is None]
        body = report_body(report, len(live), len(report.findings) - len(live), 0, link=None)
        reports = f"{self._repo}/commit/{self.head_sha}/reports/{REPORT_ID}"
        try:
            self.api.delete(reports)  # an earlier run's annotations go with it
        except ApiRefusal as exc:
            if exc.status != 404:
                raise
        self.api.put(reports, body)

    def close(self) -> None:
        self.api.__exit__(None, None, None)


def _uuid(account: Any) -> str:
    value = account.get("uuid") if isinstance(account, dict) else None
    return value if isinstance(value, str) else ""


def _bot(account: Any) -> bool:
    """An app or a team rather than a person: Bitbucket's account `type` for a person is `user`."""
    return isinstance(account, dict) and account.get("type") not in (None, "user")
