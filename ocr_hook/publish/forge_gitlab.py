"""GitLab merge requests: diff discussions at the findings' lines, one MR note with the rest.

Where: CI_API_V4_URL, CI_PROJECT_ID (CI_PROJECT_PATH names it), CI_MERGE_REQUEST_IID (set only in
merge request pipelines). Token: GITLAB_TOKEN, a project or personal access token with `api` scope,
sent as PRIVATE-TOKEN. CI_JOB_TOKEN cannot be used: GitLab lets a job token call only a few endpoints
(packages, releases, its own job's artifacts...), and notes and discussions are not among them.

Inline: one draft note per finding with a text `position` (the SHAs of the MR's `diff_refs`; new_path
and old_path, which differ for a renamed file; an added line by `new_line`, an unchanged line by
both `old_line` and `new_line`), then each is published by its id (never `bulk_publish`, which would
publish the token owner's other pending drafts too). A draft that
GitLab refuses with 400 (`line_code`: the position is not on its diff) moves its finding to the note;
the others still post. A fix is ```suggestion:-0+N``` on the finding's first line, N lines below it.
Pending drafts an earlier run could not publish are deleted first. The note is updated in place on
later runs (found by its marker, among this identity's notes only), never posted twice. A
discussion whose finding is fixed is resolved, or, when a person answered in it, replied to once.

What people did with a thread (DESIGN.md 18): the first note's `resolved_by` and `resolved_at`, the later
notes as replies; whether the person who resolved it may write is their access level in the project
(`members/all/:user_id`, inherited and invited members included: Developer, 30, or more can push), and
whether they are a bot the user's `bot` flag (`users/:id`: project and group access tokens act as bot
users), each looked up once per person and only for threads someone else resolved; the authors of later
notes in ocr-hook's own threads are checked for `bot` the same way (a bot's note is nobody's answer).
👍/👎 are the first note's award emoji `thumbsup`/`thumbsdown`, one request per thread: not in existing()
(publishing never needs them), read by thumbs() for ocr-hook's own threads when the review in CI reads the
forge (publish.forge_dismissals).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any
from urllib.parse import quote

from ocr_hook.cienv.guess import value
from ocr_hook.publish.api_client import ApiClient, ApiRefusal, check_token
from ocr_hook.publish.forges import InlineText, NotApplicable, Setup
from ocr_hook.publish.plan import Posted, Reply, comment_fingerprint
from ocr_hook.publish.pr_diff import CommentableLines, FileLines, file_lines
from ocr_hook.publish.report_input import Report

DEFAULT_API_URL = "https://gitlab.com/api/v4"
MAX_NOTE = 1_000_000  # characters GitLab takes in one note
DEVELOPER = 30  # the lowest access level that may push (Guest 10, Reporter 20, Maintainer 40, Owner 50)


class GitLabAdapter:
    forge = "GitLab"
    kind = "merge request"
    fix_style = "gitlab"
    summary_style = "replace"
    max_body = MAX_NOTE
    published_as = "comments"
    summary_name = "the note"
    hints = MappingProxyType({
        401: "GITLAB_TOKEN is not a valid token",
        403: "GITLAB_TOKEN may not write notes: it needs the `api` scope and at least the Reporter role "
             "(a `read_api` token, or CI_JOB_TOKEN, cannot post)",
        404: "no such project or merge request, or the token cannot see it",
    })

    def __init__(self, api: ApiClient, project: str, iid: int, target: str) -> None:
        self.api, self.iid, self.target = api, iid, target
        self._mr = f"projects/{quote(project, safe='')}/merge_requests/{iid}"
        self.head_sha = ""
        self._refs: dict[str, str] = {}
        self._project = quote(project, safe="")
        self._me = ""
        self._request: dict[str, Any] | None = None
        self._writers: dict[int, bool] = {}  # user id → may push (looked up once per person)
        self._bots: dict[int, bool] = {}  # user id → is a bot

    def identity(self) -> str:
        me = self.api.get("user")
        name = me.get("username") if isinstance(me, dict) else None
        if not isinstance(name, str) or not name:
            raise ApiRefusal(200, "GET /user: the answer names no username")
        self._me = name
        return name

    def author(self) -> str:
        return _username(self._merge_request())

    def _merge_request(self) -> dict[str, Any]:
        if self._request is None:
            mr = self.api.get(self._mr)
            if not isinstance(mr, dict):
                raise ApiRefusal(200, "GET the merge request: the answer is not an object")
            self._request = mr
        return self._request

    def diff(self) -> CommentableLines:
        mr = self._merge_request()
        refs = mr.get("diff_refs") if isinstance(mr, dict) else None
        if not isinstance(refs, dict) or not all(isinstance(refs.get(k), str) for k in ("base_sha", "head_sha",
                                                                                         "start_sha")):
            raise ApiRefusal(200, "the merge request has no diff_refs yet (GitLab is still preparing its diff)")
        self._refs = {k: refs[k] for k in ("base_sha", "start_sha", "head_sha")}
        self.head_sha = self._refs["head_sha"]
        found: dict[str, FileLines] = {}
        for d in self.api.get_all(f"{self._mr}/diffs"):
            new, old, patch = d.get("new_path"), d.get("old_path"), d.get("diff")
            if d.get("deleted_file") or not isinstance(new, str) or not isinstance(patch, str) or not patch:
                continue
            found[new] = file_lines(patch, old if isinstance(old, str) and old != new else None)
        return found

    def existing(self) -> list[Posted]:
        posted = []
        for discussion in self.api.get_all(f"{self._mr}/discussions"):
            notes = discussion.get("notes")
            first = notes[0] if isinstance(notes, list) and notes and isinstance(notes[0], dict) else None
            if first is None:
                continue
            ours = bool(self._me) and _username(first) == self._me
            replies = tuple(self._reply(n, ours) for n in notes[1:] if isinstance(n, dict) and not n.get("system"))
            position = first.get("position")
            path = position.get("new_path") if isinstance(position, dict) else None
            resolver = first.get("resolved_by") if first.get("resolved") else None
            by = _username({"author": resolver})
            can_write = bool(by) and by != self._me and self._can_write(resolver)
            posted.append(Posted(_username(first), str(first.get("body") or ""), str(first.get("id", "")),
                                 str(discussion.get("id", "")), bool(first.get("resolved")),
                                 bool(first.get("resolvable")), str(first.get("created_at") or ""), replies,
                                 resolved_by=by, resolved_by_bot=can_write and self._is_bot(resolver),
                                 resolved_by_can_write=can_write, resolved_at=str(first.get("resolved_at") or ""),
                                 path=path if isinstance(path, str) else ""))
        return posted

    def _reply(self, note: dict[str, Any], ours: bool) -> Reply:
        """A later note; in a thread of ours, whether its author is a bot (a bot's note is not a person's answer)."""
        author = _username(note)
        bot = ours and author != self._me and self._is_bot(note.get("author"))
        return Reply(author, str(note.get("body") or ""), str(note.get("created_at") or ""), bot=bot)

    def _can_write(self, user: Any) -> bool:
        """The user's access level in the project (inherited and invited included) lets them push."""
        user_id = _user_id(user)
        if user_id is None:
            return False
        if user_id not in self._writers:
            try:
                member = self.api.get(f"projects/{self._project}/members/all/{user_id}")
            except ApiRefusal as exc:
                if exc.status != 404:  # 404: not a member, so no write access
                    raise
                member = {}
            level = member.get("access_level") if isinstance(member, dict) else None
            self._writers[user_id] = isinstance(level, int) and not isinstance(level, bool) and level >= DEVELOPER
        return self._writers[user_id]

    def _is_bot(self, user: Any) -> bool:
        """GitLab's `bot` flag of the user (project and group access tokens, service accounts)."""
        user_id = _user_id(user)
        if user_id is None:
            return False
        if user_id not in self._bots:
            profile = self.api.get(f"users/{user_id}")
            self._bots[user_id] = isinstance(profile, dict) and profile.get("bot") is True
        return self._bots[user_id]

    def thumbs(self, posted: Posted) -> tuple[int, int]:
        """👍 and 👎 on the note that opens a thread (one request), from anyone but the publishing identity."""
        if not posted.id.isdigit():
            return 0, 0
        names = [a.get("name") for a in self.api.get_all(f"{self._mr}/notes/{posted.id}/award_emoji")
                 if _username({"author": a.get("user")}) != self._me]
        return names.count("thumbsup"), names.count("thumbsdown")

    def reply(self, posted: Posted, body: str) -> None:
        self.api.post(f"{self._mr}/discussions/{quote(posted.thread, safe='')}/notes", {"body": body})

    def post_inline(self, items: Sequence[InlineText]) -> frozenset[str]:
        # Drafts an earlier run left unpublished (its bulk_publish failed) would be published with these:
        # ocr-hook's own pending drafts (GitLab lists only the token user's) are removed first. GitLab gives
        # them all in one reply: that list takes no page or per_page (lib/api/draft_notes.rb does not paginate).
        for draft in self.api.get_all(f"{self._mr}/draft_notes", per_page=""):
            if comment_fingerprint(str(draft.get("note") or "")) and draft.get("id") is not None:
                self.api.delete(f"{self._mr}/draft_notes/{quote(str(draft['id']), safe='')}")
        refused: set[str] = set()
        drafted: list[str] = []
        for item in items:
            try:
                draft = self.api.post(f"{self._mr}/draft_notes", {"note": item.body, "position": self._position(item)})
            except ApiRefusal as exc:
                if exc.status != 400:
                    raise
                refused.add(item.inline.finding.fingerprint)  # off GitLab's diff (line_code): to the note
                continue
            draft_id = draft.get("id") if isinstance(draft, dict) else None
            if not isinstance(draft_id, int) or isinstance(draft_id, bool):
                raise ApiRefusal(201, "POST draft_notes: the answer names no draft id")
            drafted.append(str(draft_id))
        # One by one, by id: bulk_publish would publish every pending draft of the token's owner, the
        # drafts of a person reviewing with that account included.
        for draft_id in drafted:
            self.api.put(f"{self._mr}/draft_notes/{draft_id}/publish", None)
        return frozenset(refused)

    def _position(self, item: InlineText) -> dict[str, Any]:
        path = item.inline.finding.path
        position: dict[str, Any] = {"position_type": "text", **self._refs, "new_path": path,
                                    "old_path": item.old_path or path, "new_line": item.inline.start}
        if item.old_line is not None:  # an unchanged line: GitLab wants both numbers
            position["old_line"] = item.old_line
        return position

    def put_summary(self, body: str, previous: Posted | None) -> None:
        if previous is not None and previous.id:
            self.api.put(f"{self._mr}/notes/{quote(previous.id, safe='')}", {"body": body})
        else:
            self.api.post(f"{self._mr}/notes", {"body": body})

    def resolve(self, posted: Sequence[Posted]) -> int:
        for p in posted:
            self.api.put(f"{self._mr}/discussions/{quote(p.thread, safe='')}", None, params={"resolved": "true"})
        return len(posted)

    def reopen(self, posted: Sequence[Posted]) -> int:
        """Unresolve these discussions: their finding is raised again."""
        for p in posted:
            self.api.put(f"{self._mr}/discussions/{quote(p.thread, safe='')}", None, params={"resolved": "false"})
        return len(posted)

    def report_verdict(self, report: Report, passed: bool) -> None:
        pass  # the pipeline's job status is the gate

    def close(self) -> None:
        self.api.__exit__(None, None, None)


def _user_id(user: Any) -> int | None:
    user_id = user.get("id") if isinstance(user, dict) else None
    return user_id if isinstance(user_id, int) and not isinstance(user_id, bool) else None


def _username(note: dict[str, Any]) -> str:
    author = note.get("author")
    name = author.get("username") if isinstance(author, dict) else None
    return name if isinstance(name, str) else ""


def open_adapter(setup: Setup) -> GitLabAdapter:
    env = setup.environ
    iid_text = value(env, "CI_MERGE_REQUEST_IID")
    project = value(env, "CI_PROJECT_ID") or value(env, "CI_MERGE_REQUEST_PROJECT_ID")
    if not iid_text:
        raise NotApplicable("not a merge request pipeline (no CI_MERGE_REQUEST_IID)")
    if not iid_text.isdigit() or not project:
        raise NotApplicable("CI_MERGE_REQUEST_IID or CI_PROJECT_ID is not set to what GitLab sets")
    target = f"{value(env, 'CI_PROJECT_PATH') or project}!{iid_text}"
    token = value(env, "GITLAB_TOKEN")
    if not token:
        raise NotApplicable("no GITLAB_TOKEN (a project or personal access token with `api` scope; "
                            "CI_JOB_TOKEN cannot write notes)", target)
    check_token(token)
    api = ApiClient(value(env, "CI_API_V4_URL") or DEFAULT_API_URL, headers={"PRIVATE-TOKEN": token},
                    secrets=(token,), variable="CI_API_V4_URL", deadline=setup.deadline)
    return GitLabAdapter(api, project, int(iid_text), target)
