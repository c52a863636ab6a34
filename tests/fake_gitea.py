"""A fake of the Gitea (and Forgejo) API v1 parts `ocr-hook publish --to gitea` uses, on 127.0.0.1.

From Gitea's swagger (`/api/swagger`: repoGetPullRequest, repoDownloadPullDiffOrPatch, repoListPullReviews,
repoGetPullReviewComments, repoCreatePullReview, userGetCurrent) and its error shape {"message", "url"}:
* `Authorization: token T`; an unknown token is 401 {"message": "user does not exist …"}.
* GET /user → {id, login}. The Actions job token may not read it (403, the scope error Gitea sends).
* GET /repos/{o}/{r}/pulls/{n}.diff → the pull request's diff as text (`git diff` of base...head).
* GET …/pulls/{n}/reviews → [PullReview {id, user, body, state, commit_id, comments_count}], pages by
  `page`/`limit` with a Link header; GET …/reviews/{id}/comments → every [PullReviewComment] at once
  (the swagger gives it no page or limit: Gitea does not page it).
* POST …/pulls/{n}/reviews {body, commit_id, event, comments: [{path, body, new_position,
  old_position}]} → 200 PullReview. A comment Gitea cannot place (a path not in the diff, a
  new_position outside every hunk) fails the whole review with 500 and an empty message, as Gitea's
  CreateCodeComment does; COMMENT with no body and no comments is 422.
* A read-only token: 403 on every write.
And what people do with the comments (DESIGN.md 18), from the operations in gitea.extra.json:
* GET …/pulls/{n} → the pull request with its `user` (the author).
* GET …/collaborators/{login}/permission → {permission, role_name, user}; 403 with Gitea's message unless
  the token's user is a repository administrator (an "admin" token here); 404 for an unknown user.
* GET …/issues/comments/{id}/reactions → [{user, content, created_at}] (review comments are issue comments).
* GET /repos/{o}/{r}/issues/{index} → Issue {id, number, title, body, state, html_url, user, pull_request}
  (issueGetIssue; issue 60's linked tickets): a pull request's number answers too, with `pull_request` set;
  404 for an unknown one or one of a repository in `private`.
* `person_comment` (a person's comment or reply on a line, in a review of its own), `resolve` (a person
  resolves the conversation: `resolver` on its first comment, as Gitea's MarkConversation sets it) and `react`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fake_forge import Answer, FakeForge, Recorded, new_hunks

ACTIONS_SCOPE = "token does not have at least one of required scope(s): [read:user]"
WRITE_SCOPE = "token does not have at least one of required scope(s): [write:repository]"


@dataclass
class GiteaPull:
    number: int
    head_sha: str
    diff: str
    author: dict[str, Any] = field(default_factory=lambda: {"id": 21, "login": "author"})
    reviews: list[dict[str, Any]] = field(default_factory=list)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # review id → its comments


class FakeGitea(FakeForge):
    name = "gitea"
    contract = "gitea"  # its traffic is checked against Gitea's swagger (tests/api_contract.py)

    def __init__(self, repository: str = "octo/app", **kw: Any) -> None:
        super().__init__(**kw)
        self.repository = repository
        self.logins: dict[str, str] = {}  # token → login; "actions" tokens write as gitea-actions
        self.pulls: dict[int, GiteaPull] = {}
        self.permissions: dict[str, str] = {}  # login → "read", "write", "admin" (others: 404)
        self.reactions: dict[int, list[dict[str, Any]]] = {}  # comment id → its reactions
        self.issues: dict[tuple[str, int], dict[str, Any]] = {}  # (owner/name, index) → issue (issue 60)
        self.private: set[str] = set()  # repositories whose issues the token may not read (404, as Gitea hides them)

    @property
    def api(self) -> str:
        return self.url + "/api/v1"

    def add_pull(self, number: int, head: str, diff: str) -> GiteaPull:
        pull = GiteaPull(number, head, diff)
        with self.lock:
            self.pulls[number] = pull
        return pull

    def add_review(self, number: int, body: str, login: str = "someone",
                   comments: list[dict[str, Any]] | None = None) -> None:
        with self.lock:
            self._review(self.pulls[number], body, {"id": 9, "login": login}, comments or [])

    def person_comment(self, number: int, path: str, line: int, body: str, login: str, uid: int = 31
                       ) -> dict[str, Any]:
        """A person comments on a line (a reply, where a conversation is there already)."""
        with self.lock:
            review = self._review(self.pulls[number], "", {"id": uid, "login": login},
                                  [{"path": path, "body": body, "new_position": line, "old_position": 0}])
            return self.pulls[number].comments[review["id"]][0]

    def resolve(self, comment: dict[str, Any], login: str, uid: int = 32) -> None:
        with self.lock:
            comment["resolver"] = {"id": uid, "login": login}

    def react(self, comment: dict[str, Any], content: str, login: str, uid: int = 33) -> None:
        with self.lock:
            self.reactions.setdefault(comment["id"], []).append(
                {"user": {"id": uid, "login": login}, "content": content, "created_at": "2026-12-06T05:00:00Z"})

    def comment_at(self, number: int, fingerprint: str) -> dict[str, Any]:
        return next(c for cs in self.pulls[number].comments.values() for c in cs
                    if c["body"].startswith((f"<!-- ocr-hook fingerprint={fingerprint} -->",
                                             f"<!-- ocr-hook check={fingerprint} -->")))  # a finding's, a check's

    def add_issue(self, number: int, title: str, body: str, *, repository: str | None = None,
                  pull: bool = False) -> dict[str, Any]:
        """An issue (or, `pull`, a pull request: Gitea's issue read answers for both) in `repository`."""
        repo = repository or self.repository
        issue = {"id": 9000 + number, "number": number, "title": title, "body": body, "state": "open",
                 "html_url": f"{self.url}/{repo}/{'pulls' if pull else 'issues'}/{number}",
                 "url": f"{self.url}/api/v1/repos/{repo}/issues/{number}", "user": {"id": 21, "login": "author"},
                 "pull_request": {"merged": False, "html_url": f"{self.url}/{repo}/pulls/{number}"} if pull else None}
        with self.lock:
            self.issues[(repo, number)] = issue
        return issue

    def _error(self, status: int, message: str) -> Answer:
        return status, {"message": message, "url": f"{self.url}/api/swagger"}, {}

    def route(self, rec: Recorded, token: str) -> Answer:
        if token not in self.tokens:
            return self._error(401, "user does not exist [uid: 0, name: ]")
        path = rec.path.removeprefix("/api/v1")
        kind = self.tokens[token]
        user = ({"id": -2, "login": "gitea-actions"} if kind == "actions"
                else {"id": 5, "login": self.logins.get(token, "ocr-bot")})
        if path == "/user" and rec.method == "GET":
            return self._error(403, ACTIONS_SCOPE) if kind == "actions" else (200, user, {})
        if (i := re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)", path)) and rec.method == "GET":
            issue = self.issues.get((i.group(1), int(i.group(2))))
            if issue is None or i.group(1) in self.private:
                return self._error(404, "The target couldn't be found.")
            return 200, issue, {}
        repo = f"/repos/{re.escape(self.repository)}"
        if (p := re.fullmatch(rf"{repo}/collaborators/([^/]+)/permission", path)) and rec.method == "GET":
            if kind != "admin":
                return self._error(403, "Only admins can query all permissions, repo admins can query all repo "
                                        "permissions, collaborators can query only their own")
            if p.group(1) not in self.permissions:
                return self._error(404, f"user does not exist [uid: 0, name: {p.group(1)}]")
            level = self.permissions[p.group(1)]
            return 200, {"permission": level, "role_name": level, "user": {"id": 40, "login": p.group(1)}}, {}
        if (r := re.fullmatch(rf"{repo}/issues/comments/(\d+)/reactions", path)) and rec.method == "GET":
            if not any(c["id"] == int(r.group(1)) for pull in self.pulls.values() for cs in pull.comments.values()
                       for c in cs):
                return self._error(404, "The target couldn't be found.")
            return 200, self.reactions.get(int(r.group(1)), []), {}
        m = re.fullmatch(rf"{repo}/pulls/(\d+)(\.diff|/.*)?", path)
        if not m:
            return self._error(404, "The target couldn't be found.")
        pull = self.pulls.get(int(m.group(1)))
        if pull is None:
            return self._error(404, "The target couldn't be found.")
        rest = m.group(2) or ""
        if rec.method == "GET":
            if rest == ".diff":
                return 200, pull.diff, {}
            if rest == "/reviews":
                return self.page(rec, pull.reviews, size_param="limit")
            if c := re.fullmatch(r"/reviews/(\d+)/comments", rest):
                return 200, pull.comments.get(int(c.group(1)), []), {}  # the whole list: Gitea does not page it
            if rest == "":
                return 200, {"number": pull.number, "head": {"sha": pull.head_sha}, "state": "open",
                             "user": dict(pull.author)}, {}
        if rec.method == "POST" and rest == "/reviews":
            if kind == "read":
                return self._error(403, WRITE_SCOPE)
            return self._create(pull, rec.body, user)
        return self._error(404, "The target couldn't be found.")

    def _review(self, pull: GiteaPull, body: str, user: dict[str, Any], comments: list[dict[str, Any]]
                ) -> dict[str, Any]:
        review = {"id": next(self.ids), "user": user, "body": body, "state": "COMMENT", "commit_id": pull.head_sha,
                  "stale": False, "official": False, "comments_count": len(comments)}
        pull.reviews.append(review)
        pull.comments[review["id"]] = [{"id": next(self.ids), "user": user, "pull_request_review_id": review["id"],
                                        "body": c["body"], "path": c["path"], "position": c.get("new_position", 0),
                                        "original_position": c.get("old_position", 0),
                                        "created_at": "2026-12-06T05:00:00Z",
                                        "commit_id": pull.head_sha} for c in comments]
        return review

    def _create(self, pull: GiteaPull, body: Any, user: dict[str, Any]) -> Answer:
        if not isinstance(body, dict):
            return self._error(422, "[]: json: cannot unmarshal")
        event = body.get("event", "")
        if event not in ("APPROVED", "REQUEST_CHANGES", "COMMENT", "PENDING", ""):
            return self._error(422, f"unknown review event: {event}")
        comments = body.get("comments") or []
        if event == "COMMENT" and not (body.get("body") or "").strip() and not comments:
            return self._error(422, "review event COMMENT requires a body or a comment")
        hunks = new_hunks(pull.diff)
        for c in comments:
            line = c.get("new_position") if isinstance(c, dict) else None
            if not isinstance(line, int) or not any(line in h for h in hunks.get(c.get("path"), [])):
                return self._error(500, "")  # CreateCodeComment failed; Gitea hides why
        return 200, self._review(pull, str(body.get("body") or ""), user, comments), {}
