"""A fake of the GitLab REST API (v4) parts `ocr-hook publish --to gitlab` uses, over HTTP on 127.0.0.1.

Built from GitLab's published API description (the OpenAPI document and the REST reference for
merge requests, discussions, notes and draft notes) and the error bodies GitLab really sends:
* GET /user → {id, username}; a token is sent as `PRIVATE-TOKEN` (or `Authorization: Bearer`); a
  missing or unknown one is 401 {"message": "401 Unauthorized"}.
* GET /projects/:id/merge_requests/:iid → the MR with `sha` and `diff_refs` {base_sha, head_sha,
  start_sha}; an unknown one 404 {"message": "404 Not found"}. `:id` is the numeric id or the
  URL-encoded path.
* GET …/diffs → [{old_path, new_path, diff, new_file, renamed_file, deleted_file}] (the hunks without
  file headers), Link-header pages (`page`, `per_page`).
* GET …/discussions → [{id, individual_note, notes: [{id, body, author: {username}, resolvable,
  resolved, position}]}], paged.
* POST …/draft_notes {note, position} → 201. The position is checked as GitLab checks a diff note's:
  position_type text, the three SHAs of diff_refs, new_path in the diff, new_line inside a hunk, and
  for an unchanged line old_line its number on the base side (for an added line no old_line). A
  position off the diff is GitLab's 400 {"message": "400 Bad request - Note {:line_code=>[\"can't be
  blank\", \"must be a valid line code\"]}"} (GitLab validates a draft's position when it publishes;
  the fake refuses at creation, which is where the adapter can still move that finding to the note).
* GET …/draft_notes → the token user's pending drafts, in one reply (GitLab does not paginate that list; a
  draft with no position has a `position` object of nulls); DELETE …/draft_notes/:id → 204.
* POST …/draft_notes/bulk_publish → 204; the drafts become discussions by their author.
* PUT …/draft_notes/:id/publish → 204; that one draft becomes a discussion.
* POST …/notes {body} → 201; PUT …/notes/:note_id {body} → 200 (only its author: else 403).
* PUT …/discussions/:discussion_id?resolved=true → 200; the first note's resolved_by is the token's user,
  resolved_at now (false clears both). Resolving and unresolving need the Developer role or being the MR's
  author: a Reporter's token (which may still comment) is 403 {"message": "403 Forbidden"}.
* POST …/discussions/:discussion_id/notes {body} → 201: a reply in the thread, by the token's user.
* GET …/notes/:note_id/award_emoji → [{id, name, user: {id, username}}] (thumbsup, thumbsdown, …), paged.
* GET /projects/:id/members/all/:user_id → the member with access_level (Developer 30, Maintainer 40, Owner
  50; Reporter 20 and Guest 10 cannot push), inherited and invited members included; 404 {"message": "404
  Not found"} for someone who is not one.
* GET …/closes_issues → the issues the MR closes on merge (those the token may read), paged; GET
  /projects/:id/issues/:iid → an issue (id, iid, project_id, title, description, web_url, references), 404 for
  an unknown one or one of a project in `private` (issue 60's linked tickets).
* GET /users/:id → {id, username, bot, …}: `bot` is true for project, group and service-account bots.
* Notes carry created_at, and resolved_by (the user object, or null) and resolved_at; the MR its author.
* A `read_api` token (or GitLab CI's CI_JOB_TOKEN, which may not write notes) is 403 {"error":
  "insufficient_scope", …} on every write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fake_forge import Answer, FakeForge, Recorded
from unidiff import PatchSet

LINE_CODE = "400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}"
NO_POSITION = {"base_sha": None, "start_sha": None, "head_sha": None, "old_path": None, "new_path": None,
               "position_type": "text", "old_line": None, "new_line": None, "line_range": None}
INSUFFICIENT = {"error": "insufficient_scope",
                "error_description": "The request requires higher privileges than provided by the access token.",
                "scope": "api"}


@dataclass
class MergeRequest:
    iid: int
    head_sha: str
    base_sha: str
    start_sha: str
    diffs: list[dict[str, Any]]  # GitLab's diffs entries
    discussions: list[dict[str, Any]] = field(default_factory=list)
    drafts: list[dict[str, Any]] = field(default_factory=list)
    author: str = "dev"  # who opened it
    awards: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # note id → its emoji reactions
    closes: list[tuple[str, int]] = field(default_factory=list)  # (project path, iid) of the issues it closes


class FakeGitLab(FakeForge):
    name = "gitlab"
    contract = "gitlab"  # gitlab.json (GitLab's openapi_v2.yaml) and gitlab.extra.json (the REST documentation)

    def __init__(self, project_path: str = "group/app", project_id: int = 42, **kw: Any) -> None:
        super().__init__(**kw)
        self.project_path, self.project_id = project_path, project_id
        self.users: dict[str, str] = {}  # token → username
        self.mrs: dict[int, MergeRequest] = {}
        self.people: dict[str, dict[str, Any]] = {}  # username → {id, bot, access (the project's, or None)}
        self.clock = 0  # each note and resolve a second later than the last
        self.issues: dict[tuple[str, int], dict[str, Any]] = {}  # (project path, iid) → issue (issue 60)
        self.private: set[str] = set()  # projects whose issues the token may not read (404, as GitLab hides them)

    @property
    def api(self) -> str:
        return self.url + "/api/v4"

    def fresh(self, token: str, username: str = "ocr-bot") -> FakeGitLab:
        """Ready for the next test: no requests, faults or merge requests, one write token for `username`."""
        self.reset()
        self.tokens.clear()
        self.tokens[token] = "write"
        self.users[token] = username
        self.mrs.clear()
        self.people.clear()
        self.person(username, access=40, bot=True)  # a project access token's user is a bot
        return self

    def person(self, username: str, *, access: int | None = 30, bot: bool = False) -> dict[str, Any]:
        """A user of this GitLab: `access` is their access level in the project (None: not a member)."""
        with self.lock:
            known = self._known(username)
            known.update(bot=bot, access=access)
            return known

    def _known(self, username: str) -> dict[str, Any]:  # (the caller holds the lock)
        known = self.people.get(username)
        if known is None:
            known = self.people[username] = {"id": 1000 + len(self.people), "username": username, "bot": False,
                                             "access": None}
        return known

    def user_of(self, username: str) -> dict[str, Any]:
        """A user object as GitLab's replies give it (the caller holds the lock)."""
        known = self._known(username)
        return {"id": known["id"], "username": username, "name": username.title(), "state": "active",
                "avatar_url": f"{self.url}/uploads/{username}.png", "web_url": f"{self.url}/{username}"}

    def _now(self) -> str:
        self.clock += 1
        return f"2026-12-05T10:{self.clock // 60:02d}:{self.clock % 60:02d}.000Z"

    def thread(self, iid: int, fingerprint: str) -> dict[str, Any]:
        """The discussion whose first note carries `fingerprint`'s marker (a finding's, or a check's key)."""
        return next(d for d in self.mrs[iid].discussions if d["notes"][0]["body"].startswith(
            (f"<!-- ocr-hook fingerprint={fingerprint} -->", f"<!-- ocr-hook check={fingerprint} -->")))

    def reply_as(self, iid: int, fingerprint: str, username: str, body: str) -> None:
        """`username` answers in the thread of `fingerprint` (as GitLab's web page would post it)."""
        with self.lock:
            self._note(self.thread(iid, fingerprint), body, username)

    def resolve_as(self, iid: int, fingerprint: str, username: str) -> None:
        """`username` resolves the thread of `fingerprint` in GitLab's web page."""
        with self.lock:
            self._resolve(self.thread(iid, fingerprint)["notes"][0], username, True)

    def award(self, iid: int, fingerprint: str, name: str, username: str) -> None:
        with self.lock:
            note = self.thread(iid, fingerprint)["notes"][0]
            self.mrs[iid].awards.setdefault(note["id"], []).append(
                {"id": next(self.ids), "name": name, "user": self.user_of(username), "created_at": self._now(),
                 "awardable_id": note["id"], "awardable_type": "Note"})

    def add_mr(self, iid: int, head: str, base: str, diffs: list[dict[str, Any]]) -> MergeRequest:
        mr = MergeRequest(iid, head, base, base, diffs)
        with self.lock:
            self.mrs[iid] = mr
        return mr

    def add_issue(self, iid: int, title: str, description: str | None, *, project: str | None = None,
                  project_id: int | None = None) -> dict[str, Any]:
        """An issue of this project (or of `project`, another one, with its `project_id`)."""
        path = project or self.project_path
        pid = project_id if project_id is not None else self.project_id
        issue = {"id": 5000 + iid, "iid": iid, "project_id": pid, "title": title, "description": description,
                 "state": "opened", "labels": [], "confidential": False, "issue_type": "issue",
                 "web_url": f"{self.url}/{path}/-/issues/{iid}",
                 "references": {"short": f"#{iid}", "relative": f"#{iid}", "full": f"{path}#{iid}"},
                 "author": {"id": 7, "username": "reporter", "name": "Reporter", "state": "active"}}
        with self.lock:
            self.issues[(path, iid)] = issue
        return issue

    def add_note(self, iid: int, body: str, username: str = "someone", *, position: dict | None = None) -> None:
        """A note somebody else wrote (a person, or someone posing as ocr-hook)."""
        with self.lock:
            self._discussion(self.mrs[iid], body, username, position)

    def add_draft(self, iid: int, body: str, username: str) -> None:
        """A pending draft of `username`'s own (a person reviewing with the token's account)."""
        with self.lock:
            self.mrs[iid].drafts.append({"id": next(self.ids), "author_id": 7, "author": username,
                                         "merge_request_id": iid, "note": body, "position": None,
                                         "line_code": None, "discussion_id": None})

    def notes(self, iid: int) -> list[dict[str, Any]]:
        return [d["notes"][0] for d in self.mrs[iid].discussions]

    # -- answering ---------------------------------------------------------------------------------------------

    def auth(self, headers: dict[str, str]) -> str:
        if headers.get("private-token"):
            return headers["private-token"]
        return super().auth(headers)

    def route(self, rec: Recorded, token: str) -> Answer:
        if token not in self.tokens:
            return 401, {"message": "401 Unauthorized"}, {}
        path = rec.path.removeprefix("/api/v4")
        if path == "/user" and rec.method == "GET":
            username = self.users.get(token, "ocr-bot")
            return 200, {"id": self.user_of(username)["id"], "username": username, "state": "active"}, {}
        if (u := re.fullmatch(r"/users/(\d+)", path)) and rec.method == "GET":
            person = next((p for p in self.people.values() if p["id"] == int(u.group(1))), None)
            if person is None:
                return 404, {"message": "404 User Not Found"}, {}
            return 200, {**self.user_of(person["username"]), "bot": person["bot"]}, {}
        project = rf"/projects/(?:{self.project_id}|{re.escape(self.project_path)})"
        if (mem := re.fullmatch(project + r"/members/all/(\d+)", path)) and rec.method == "GET":
            person = next((p for p in self.people.values() if p["id"] == int(mem.group(1))), None)
            if person is None or person["access"] is None:
                return 404, {"message": "404 Not found"}, {}
            return 200, {**self.user_of(person["username"]), "access_level": person["access"],
                         "membership_state": "active", "expires_at": None}, {}
        if (i := re.fullmatch(r"/projects/(.+)/issues/(\d+)", path)) and rec.method == "GET":
            key = self.project_path if i.group(1) == str(self.project_id) else i.group(1)
            issue = self.issues.get((key, int(i.group(2))))
            if issue is None or key in self.private:
                return 404, {"message": "404 Not found"}, {}
            return 200, issue, {}
        m = re.fullmatch(project + r"/merge_requests/(\d+)(/.*)?", path)
        if not m:
            return 404, {"message": "404 Project Not Found"}, {}
        mr = self.mrs.get(int(m.group(1)))
        if mr is None:
            return 404, {"message": "404 Not found"}, {}
        rest = m.group(2) or ""
        if rec.method != "GET" and self.tokens[token] != "write":
            return 403, INSUFFICIENT, {}
        username = self.users.get(token, "ocr-bot")
        if rec.method == "GET":
            if rest == "":
                return 200, {"iid": mr.iid, "sha": mr.head_sha, "state": "opened", "author": self.user_of(mr.author),
                             "diff_refs": {"base_sha": mr.base_sha, "head_sha": mr.head_sha,
                                           "start_sha": mr.start_sha}}, {}
            if aw := re.fullmatch(r"/notes/(\d+)/award_emoji", rest):
                return self.page(rec, mr.awards.get(int(aw.group(1)), []))
            if rest == "/diffs":
                return self.page(rec, mr.diffs)
            if rest == "/closes_issues":  # those the token may read
                return self.page(rec, [self.issues[c] for c in mr.closes if c[0] not in self.private])
            if rest == "/discussions":
                return self.page(rec, mr.discussions)
            if rest == "/draft_notes":  # the token user's own drafts only, all in one unpaginated reply
                return 200, [_draft_reply(d) for d in mr.drafts if d["author"] == username], {}
        if rec.method == "POST" and rest == "/draft_notes":
            return self._draft(mr, rec.body, username)
        if (dn := re.fullmatch(r"/draft_notes/(\d+)", rest)) and rec.method == "DELETE":
            draft = next((x for x in mr.drafts if x["id"] == int(dn.group(1)) and x["author"] == username), None)
            if draft is None:
                return 404, {"message": "404 Not found"}, {}
            mr.drafts.remove(draft)
            return 204, None, {}
        if (dn := re.fullmatch(r"/draft_notes/(\d+)/publish", rest)) and rec.method == "PUT":
            draft = next((x for x in mr.drafts if x["id"] == int(dn.group(1)) and x["author"] == username), None)
            if draft is None:
                return 404, {"message": "404 Not found"}, {}
            self._discussion(mr, draft["note"], username, draft["position"])
            mr.drafts.remove(draft)
            return 204, None, {}
        if rec.method == "POST" and rest == "/draft_notes/bulk_publish":
            for draft in [d for d in mr.drafts if d["author"] == username]:
                self._discussion(mr, draft["note"], username, draft["position"])
                mr.drafts.remove(draft)
            return 204, None, {}
        if rec.method == "POST" and rest == "/notes":
            body = (rec.body or {}).get("body") if isinstance(rec.body, dict) else None
            if not isinstance(body, str) or not body:
                return 400, {"message": "400 Bad request - Note {:note=>[\"can't be blank\"]}"}, {}
            return 201, self._discussion(mr, body, username, None)["notes"][0], {}
        if n := re.fullmatch(r"/notes/(\d+)", rest):
            note = next((d["notes"][0] for d in mr.discussions if d["notes"][0]["id"] == int(n.group(1))), None)
            if note is None:
                return 404, {"message": "404 Not found"}, {}
            if rec.method == "PUT":
                if note["author"]["username"] != username:
                    return 403, {"message": "403 Forbidden"}, {}
                note["body"] = (rec.body or {}).get("body", note["body"])
                return 200, note, {}
        if (d := re.fullmatch(r"/discussions/([0-9a-f]+)", rest)) and rec.method == "PUT":
            found = next((x for x in mr.discussions if x["id"] == d.group(1)), None)
            if found is None:
                return 404, {"message": "404 Not found"}, {}
            first = found["notes"][0]
            if not first["resolvable"]:
                return 400, {"message": "400 Bad request - Discussion is not resolvable"}, {}
            if (self._known(username)["access"] or 0) < 30 and username != mr.author:
                return 403, {"message": "403 Forbidden"}, {}  # a Reporter's token: may comment, not resolve
            self._resolve(first, username, rec.query.get("resolved") == "true")
            return 200, found, {}
        if (d := re.fullmatch(r"/discussions/([0-9a-f]+)/notes", rest)) and rec.method == "POST":
            found = next((x for x in mr.discussions if x["id"] == d.group(1)), None)
            if found is None:
                return 404, {"message": "404 Not found"}, {}
            body = (rec.body or {}).get("body") if isinstance(rec.body, dict) else None
            if not isinstance(body, str) or not body:
                return 400, {"message": "400 Bad request - Note {:note=>[\"can't be blank\"]}"}, {}
            return 201, self._note(found, body, username), {}
        return 404, {"error": "404 Not Found"}, {}

    def _note(self, discussion: dict[str, Any], body: str, username: str) -> dict[str, Any]:
        first = discussion["notes"][0]
        note = {"id": next(self.ids), "type": "DiffNote" if first["position"] else "DiscussionNote", "body": body,
                "author": self.user_of(username), "system": False, "resolvable": first["resolvable"],
                "resolved": first["resolved"], "resolved_by": None, "resolved_at": None,
                "position": first["position"], "created_at": self._now()}
        discussion["notes"].append(note)
        return note

    def _resolve(self, first: dict[str, Any], username: str, resolved: bool) -> None:
        first.update(resolved=resolved, resolved_by=self.user_of(username) if resolved else None,
                     resolved_at=self._now() if resolved else None)

    def _discussion(self, mr: MergeRequest, body: str, username: str, position: dict | None) -> dict[str, Any]:
        note = {"id": next(self.ids), "type": "DiffNote" if position else None, "body": body,
                "author": self.user_of(username), "system": False, "resolvable": position is not None,
                "resolved": False, "resolved_by": None, "resolved_at": None, "position": position,
                "created_at": self._now()}
        discussion = {"id": f"{next(self.ids):040x}", "individual_note": position is None, "notes": [note]}
        mr.discussions.append(discussion)
        return discussion

    def _draft(self, mr: MergeRequest, body: Any, username: str) -> Answer:
        if not isinstance(body, dict) or not isinstance(body.get("note"), str) or not body["note"]:
            return 400, {"error": "note is missing"}, {}
        position = body.get("position")
        if position is not None and not self._valid(mr, position):
            return 400, {"message": LINE_CODE}, {}
        draft = {"id": next(self.ids), "author_id": 7, "author": username, "merge_request_id": mr.iid,
                 "note": body["note"], "position": position, "line_code": None, "discussion_id": None}
        mr.drafts.append(draft)
        return 201, _draft_reply(draft), {}

    def _valid(self, mr: MergeRequest, p: Any) -> bool:
        if not isinstance(p, dict) or p.get("position_type") != "text":
            return False
        if (p.get("base_sha"), p.get("start_sha"), p.get("head_sha")) != (mr.base_sha, mr.start_sha, mr.head_sha):
            return False
        entry = next((d for d in mr.diffs if d["new_path"] == p.get("new_path")), None)
        if entry is None or entry.get("old_path") != p.get("old_path"):
            return False
        new, old = p.get("new_line"), p.get("old_line")
        parsed = PatchSet("--- a/f\n+++ b/f\n" + entry["diff"] + ("" if entry["diff"].endswith("\n") else "\n"))
        for hunk in parsed[0]:
            for line in hunk:
                if line.target_line_no == new and new is not None:
                    return old == line.source_line_no  # added: no old_line; unchanged: its base number
        return False


def _draft_reply(draft: dict[str, Any]) -> dict[str, Any]:
    """A draft as GitLab gives it: a draft with no diff position still has a `position` object, its fields
    null (docs.gitlab.com/api/draft_notes, the sample reply), never a null position."""
    return {**{k: v for k, v in draft.items() if k != "author"}, "position": draft["position"] or NO_POSITION}
