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
discussion whose finding review memory found fixed is resolved.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any
from urllib.parse import quote

from ocr_hook.cienv.guess import value
from ocr_hook.publish.api_client import ApiClient, ApiRefusal, check_token
from ocr_hook.publish.forges import InlineText, NotApplicable, Setup
from ocr_hook.publish.plan import Posted, comment_fingerprint
from ocr_hook.publish.pr_diff import CommentableLines, FileLines, file_lines
from ocr_hook.publish.report_input import Report

DEFAULT_API_URL = "https://gitlab.com/api/v4"
MAX_NOTE = 1_000_000  # characters GitLab takes in one note


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

    def identity(self) -> str:
        me = self.api.get("user")
        name = me.get("username") if isinstance(me, dict) else None
        if not isinstance(name, str) or not name:
            raise ApiRefusal(200, "GET /user: the answer names no username")
        return name

    def diff(self) -> CommentableLines:
        mr = self.api.get(self._mr)
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
            posted.append(Posted(_username(first), str(first.get("body") or ""), str(first.get("id", "")),
                                 str(discussion.get("id", "")), bool(first.get("resolved")),
                                 bool(first.get("resolvable"))))
        return posted

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

    def report_verdict(self, report: Report, passed: bool) -> None:
        pass  # the pipeline's job status is the gate

    def close(self) -> None:
        self.api.__exit__(None, None, None)


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
