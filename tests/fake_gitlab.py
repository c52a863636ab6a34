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
* PUT …/discussions/:discussion_id?resolved=true → 200.
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


class FakeGitLab(FakeForge):
    name = "gitlab"
    contract = "gitlab"  # gitlab.json (GitLab's openapi_v2.yaml) and gitlab.extra.json (the REST documentation)

    def __init__(self, project_path: str = "group/app", project_id: int = 42, **kw: Any) -> None:
        super().__init__(**kw)
        self.project_path, self.project_id = project_path, project_id
        self.users: dict[str, str] = {}  # token → username
        self.mrs: dict[int, MergeRequest] = {}

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
        return self

    def add_mr(self, iid: int, head: str, base: str, diffs: list[dict[str, Any]]) -> MergeRequest:
        mr = MergeRequest(iid, head, base, base, diffs)
        with self.lock:
            self.mrs[iid] = mr
        return mr

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
            return 200, {"id": 7, "username": self.users.get(token, "ocr-bot"), "state": "active"}, {}
        project = rf"/projects/(?:{self.project_id}|{re.escape(self.project_path)})"
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
                return 200, {"iid": mr.iid, "sha": mr.head_sha, "state": "opened",
                             "diff_refs": {"base_sha": mr.base_sha, "head_sha": mr.head_sha,
                                           "start_sha": mr.start_sha}}, {}
            if rest == "/diffs":
                return self.page(rec, mr.diffs)
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
            first["resolved"] = rec.query.get("resolved") == "true"
            return 200, found, {}
        return 404, {"error": "404 Not Found"}, {}

    def _discussion(self, mr: MergeRequest, body: str, username: str, position: dict | None) -> dict[str, Any]:
        note = {"id": next(self.ids), "type": "DiffNote" if position else None, "body": body,
                "author": {"id": 7, "username": username}, "system": False, "resolvable": position is not None,
                "resolved": False, "position": position}
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
