"""A fake of Bitbucket Cloud's Code Insights API (reports and annotations), over real HTTP on 127.0.0.1.

Built from Bitbucket Cloud's REST reference (developer.atlassian.com/cloud/bitbucket/rest/api-group-reports),
its traffic checked against Bitbucket's own OpenAPI description (tests/api_descriptions/bitbucket.json, with
the corrections in bitbucket.extra.json):
  PUT    /2.0/repositories/{workspace}/{repo_slug}/commit/{commit}/reports/{reportId}   create or replace
  GET    …/reports/{reportId}                                                          404 when absent
  DELETE …/reports/{reportId}                                                          its annotations go too
  POST   …/reports/{reportId}/annotations        bulk create-or-update by external_id, at most 100 a request
  GET    …/reports/{reportId}/annotations        paginated: {values, pagelen, page, size, next}
  DELETE …/reports/{reportId}/annotations/{id}
  GET    /2.0/repositories/{workspace}/{repo_slug}/src/{commit}/{path}             the file's raw content
and the limits and error bodies Bitbucket answers with, as users of the API quote them: a bulk request over
100 annotations is a 400 `{"code": 400, "message": "Bulk upload supports a maximum of /100 annotations."}`
(sonarqube-community-branch-plugin #209), an annotation summary over 450 characters a 400
`{"key": "report-service.general.bad-request", "message": "The summary field cannot contain more than 450
characters."}` (reviewdog #1285); a report holds at most 1,000 annotations and a request that would pass that
is refused whole (the documented limit; the message here is ours). Bitbucket's platform errors have the
shape `{"type": "error", "error": {"message": …}}` (401, 403 for a token without the scope, 404).

Authentication: a request sent directly needs `Authorization: Bearer TOKEN` with a known token ("write", or
"read": 403 on writes). A request sent through the fake as an HTTP proxy (absolute-form target
`http://api.bitbucket.org/2.0/…`, what Pipelines' proxy at localhost:29418 receives) is authenticated by the
proxy, so it needs none; one for another host is refused (502), as that proxy only speaks to Bitbucket.
`fail()` (tests/fake_forge.py) queues answers (429 with Retry-After, 500) for the next matching requests.
The recorded headers of a request that came through the proxy carry `x-via-proxy: HOST` (the fake adds it).

And a pull request's comments (DESIGN.md 18), from the same description (pullrequests group):
  GET  /2.0/user                                          the token's account {type, uuid, display_name}
  GET  …/pullrequests/{id}                                {author, source/destination commit hashes (12)}
  GET  …/diff/{source}..{destination}                     the pull request's diff (git-style text)
  GET  …/pullrequests/{id}/comments                       paginated {values, next}, oldest first
  POST …/pullrequests/{id}/comments                       {content: {raw}, inline?: {path, to}, parent?: {id}};
                                                          an inline `to` off the diff's new side is a 400
  PUT  …/pullrequests/{id}/comments/{cid}                 its author only (403 otherwise)
  POST …/pullrequests/{id}/comments/{cid}/resolve         a top-level comment only; 409 when resolved already
  GET  /2.0/workspaces/{ws}/permissions/repositories/{slug}   each user's permission; 403 unless the token is a
                                                          repository administrator's ("admin" here)
`person_comment`, `person_resolve` are what people do in the web UI. Bitbucket has no reactions on comments.
"""

from __future__ import annotations

import itertools
import re
import uuid
from typing import Any
from urllib.parse import urlsplit

from fake_forge import Answer, FakeForge, Recorded, new_hunks

API_HOST = "api.bitbucket.org"
MAX_BULK = 100
MAX_ANNOTATIONS = 1000
MAX_SUMMARY = 450
MAX_DETAILS = 2000
MAX_DATA = 10
REPORT_TYPES = ("SECURITY", "COVERAGE", "TEST", "BUG")
REPORT_RESULTS = ("PASSED", "FAILED", "PENDING")
ANNOTATION_TYPES = ("VULNERABILITY", "CODE_SMELL", "BUG")
SEVERITIES = ("CRITICAL", "HIGH", "MEDIUM", "LOW")
ANNOTATION_RESULTS = ("PASSED", "FAILED", "SKIPPED", "IGNORED")

_REPORTS = re.compile(r"/2\.0/repositories/([^/]+)/([^/]+)/commit/([0-9a-f]{7,40})/reports/([^/]+)"
                      r"(?:/annotations(?:/([^/]+))?)?")
_SRC = re.compile(r"/2\.0/repositories/([^/]+)/([^/]+)/src/([0-9a-f]{7,40})/(.+)")
_PULL = re.compile(r"/2\.0/repositories/([^/]+)/([^/]+)/pullrequests/(\d+)(/comments(?:/(\d+)(/resolve)?)?)?")
_DIFF = re.compile(r"/2\.0/repositories/([^/]+)/([^/]+)/diff/([0-9a-f]{7,40})\.\.([0-9a-f]{7,40})")
_PERMISSIONS = re.compile(r"/2\.0/workspaces/([^/]+)/permissions/repositories/([^/]+)")
BOT = {"type": "user", "uuid": "{b0b0b0b0-0000-4000-8000-000000000001}", "display_name": "app access token"}


def account(n: int, name: str) -> dict[str, str]:
    return {"type": "user", "uuid": f"{{0000{n:04d}-0000-4000-8000-000000000000}}", "display_name": name}


AUTHOR = account(2, "The Author")


VIA_PROXY = "x-via-proxy"


class FakeBitbucket(FakeForge):
    name = "bitbucket"
    contract = "bitbucket"  # checked against Bitbucket's swagger.v3.json: tests/api_descriptions/bitbucket.json

    def __init__(self, workspace: str = "team", repo_slug: str = "app", *, page_size: int = 3) -> None:
        self.workspace, self.repo_slug = workspace, repo_slug
        self.commits: set[str] = set()  # commits the repository has (40 hex); others are 404
        self.files: dict[tuple[str, str], str] = {}  # (commit, path) → content, for …/src/{commit}/{path}
        self.reports: dict[tuple[str, str], dict[str, Any]] = {}  # (commit, external id) → report
        self.annotations: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}  # same key → external_id → one
        self.refuse_bulk_after: int | None = None  # bulk requests after this many get a 500 (an outage mid-way)
        self.pulls: dict[int, dict[str, Any]] = {}  # id → {author, source, destination, diff}
        self.comments: dict[int, list[dict[str, Any]]] = {}  # pull request id → its comments, oldest first
        self.permissions: dict[str, str] = {}  # account uuid → read, write, admin
        self.clock = itertools.count(1)
        super().__init__(page_size=page_size)  # Bitbucket pages annotations by 10 (pagelen up to 100)
        self.api_url = self.url + "/2.0"

    def reset(self) -> None:
        super().reset()
        with self.lock:
            self.reports.clear()
            self.annotations.clear()
            self.tokens.clear()
            self.refuse_bulk_after = None
            self.pulls.clear()
            self.comments.clear()
            self.permissions.clear()

    def add_pull(self, number: int, source: str, destination: str, diff: str,
                 author: dict[str, str] | None = None) -> None:
        with self.lock:
            self.pulls[number] = {"author": dict(author or AUTHOR), "source": source, "destination": destination,
                                  "diff": diff}
            self.comments[number] = []

    def now(self) -> str:
        return f"2026-12-06T05:{next(self.clock) % 60:02d}:00.000000+00:00"

    def person_comment(self, number: int, raw: str, who: dict[str, str], parent: dict[str, Any] | None = None
                       ) -> dict[str, Any]:
        with self.lock:
            return self._add_comment(number, {"content": {"raw": raw}, **({"parent": {"id": parent["id"]}}
                                                                         if parent else {})}, who)

    def person_resolve(self, comment: dict[str, Any], who: dict[str, str]) -> None:
        with self.lock:
            comment["resolution"] = {"type": "comment_resolution", "user": dict(who), "created_on": self.now()}

    def comment_with(self, number: int, prefix: str) -> dict[str, Any]:
        return next(c for c in self.comments[number] if c["content"]["raw"].startswith(prefix))

    def _add_comment(self, number: int, body: dict[str, Any], who: dict[str, str]) -> dict[str, Any]:
        comment: dict[str, Any] = {"type": "pullrequest_comment", "id": next(self.ids), "user": dict(who),
                                   "content": {"raw": body["content"]["raw"], "markup": "markdown"},
                                   "created_on": self.now(), "deleted": False}
        for key in ("inline", "parent"):
            if key in body:
                comment[key] = dict(body[key])
        self.comments[number].append(comment)
        return comment

    def answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Answer:
        split = urlsplit(target)  # absolute-form: the request came to us as to a proxy
        headers = {k: v for k, v in headers.items() if k != VIA_PROXY}
        if split.scheme:
            headers[VIA_PROXY] = split.netloc
        return super().answer(method, target, headers, raw)

    def route(self, rec: Recorded, token: str) -> Answer:
        if VIA_PROXY in rec.headers:
            if rec.headers[VIA_PROXY] != API_HOST:
                return 502, {"type": "error", "error": {"message": f"The proxy only forwards to {API_HOST}"}}, {}
            access = "write"
        else:
            bearer = rec.headers.get("authorization", "").lower().startswith("bearer ")
            if not bearer or token not in self.tokens:
                return _error(401, "Token is invalid, expired, or not supported for this endpoint.")
            access = self.tokens[token]
        if src := _SRC.fullmatch(rec.path):
            return self._src(*src.groups())
        if rec.path == "/2.0/user" and rec.method == "GET":
            return 200, dict(BOT), {}
        if m := _PERMISSIONS.fullmatch(rec.path):
            if access != "admin":
                return _error(403, "The requesting user isn't an admin of the repository.")
            values = [{"type": "repository_permission", "permission": level,
                       "user": {"type": "user", "uuid": uuid, "display_name": uuid}}
                      for uuid, level in sorted(self.permissions.items())]
            return self._page(rec, values)
        if m := _DIFF.fullmatch(rec.path):
            found = [p for p in self.pulls.values() if p["source"].startswith(m.group(3))
                     and p["destination"].startswith(m.group(4))]
            return (200, found[0]["diff"], {}) if found else _error(404, "Commit not found")
        if m := _PULL.fullmatch(rec.path):
            return self._pull(rec, access, int(m.group(3)), m.group(4), m.group(5), m.group(6))
        m = _REPORTS.fullmatch(rec.path)
        if not m:
            return _error(404, "Resource not found")
        workspace, slug, commit, report_id, annotation_id = m.groups()
        if (workspace, slug) != (self.workspace, self.repo_slug):
            return _error(404, "Repository not found")
        if commit not in self.commits:
            return _error(404, f"Commit not found: {commit}")
        if rec.method != "GET" and access != "write":
            return 403, {"type": "error", "error": {
                "message": "Your credentials lack one or more required privilege scopes.",
                "detail": {"granted": ["repository"], "required": ["repository:write"]}}}, {}
        key = (commit, report_id)
        is_annotations = rec.path.rstrip("/").endswith("/annotations") or annotation_id is not None
        if not is_annotations:
            if rec.method == "PUT":
                return self._put_report(key, rec.body)
            if rec.method == "GET":
                return (200, self.reports[key], {}) if key in self.reports else _report_missing(report_id)
            if rec.method == "DELETE":
                self.reports.pop(key, None)
                self.annotations.pop(key, None)
                return 204, None, {}
            return _error(405, "Method not allowed")
        if key not in self.reports:
            return _report_missing(report_id)
        stored = self.annotations.setdefault(key, {})
        if annotation_id is not None:
            if rec.method == "DELETE" and annotation_id in stored:
                del stored[annotation_id]
                return 204, None, {}
            return _error(404, f"Annotation {annotation_id} not found")
        if rec.method == "GET":
            return self._page(rec, list(stored.values()))
        if rec.method == "POST":
            done = sum(1 for r in self.requests if r.method == "POST" and r.status == 200)
            if self.refuse_bulk_after is not None and done >= self.refuse_bulk_after:
                return _error(500, "Something went wrong")
            return self._bulk(key, stored, rec.body)
        return _error(405, "Method not allowed")

    def _pull(self, rec: Recorded, access: str, number: int, comments: str | None, cid: str | None,
              resolve: str | None) -> Answer:
        pull = self.pulls.get(number)
        if pull is None:
            return _error(404, f"Pull request {number} not found")
        if comments is None and rec.method == "GET":
            return 200, {"type": "pullrequest", "id": number, "state": "OPEN", "author": dict(pull["author"]),
                         "title": pull.get("title", ""), "summary": {"raw": pull.get("description", ""),
                                                                       "markup": "markdown"},
                         "source": {"commit": {"hash": pull["source"][:12]}},
                         "destination": {"commit": {"hash": pull["destination"][:12]}}}, {}
        if rec.method == "GET" and cid is None and comments:
            return self._page(rec, self.comments[number])
        if access != "write" and access != "admin":
            return _error(403, "Your credentials lack one or more required privilege scopes.")
        if rec.method == "POST" and cid is None and comments:
            return self._post_comment(number, pull, rec.body)
        comment = next((c for c in self.comments[number] if str(c["id"]) == cid), None)
        if comment is None:
            return _error(404, f"Comment {cid} not found")
        if rec.method == "PUT" and not resolve:
            if comment["user"]["uuid"] != BOT["uuid"]:
                return _error(403, "You can only edit your own comments.")
            raw = ((rec.body or {}).get("content") or {}).get("raw") if isinstance(rec.body, dict) else None
            if not isinstance(raw, str) or not raw:
                return _error(400, "content.raw is required")
            comment["content"] = {"raw": raw, "markup": "markdown"}
            comment["updated_on"] = self.now()
            return 200, comment, {}
        if rec.method == "POST" and resolve:
            if "parent" in comment:
                return _error(403, "Only a top-level comment's thread can be resolved.")
            if "resolution" in comment:
                return _error(409, "This comment thread is already resolved.")
            comment["resolution"] = {"type": "comment_resolution", "user": dict(BOT), "created_on": self.now()}
            return 200, comment["resolution"], {}
        return _error(405, "Method not allowed")

    def _post_comment(self, number: int, pull: dict[str, Any], body: Any) -> Answer:
        raw = ((body or {}).get("content") or {}).get("raw") if isinstance(body, dict) else None
        if not isinstance(raw, str) or not raw.strip():
            return _error(400, "content.raw: This field is required.")
        parent = body.get("parent")
        if parent is not None and not any(c["id"] == parent.get("id") for c in self.comments[number]):
            return _error(400, "parent: no such comment")
        inline = body.get("inline")
        if inline is not None:
            hunks = new_hunks(pull["diff"]).get(inline.get("path"), [])
            if not any(inline.get("to") in h for h in hunks):
                return _error(400, "inline: the line is not part of the pull request's diff")
        return 201, self._add_comment(number, body, BOT), {}

    def _src(self, workspace: str, slug: str, commit: str, path: str) -> Answer:
        if (workspace, slug) != (self.workspace, self.repo_slug):
            return _error(404, "Repository not found")
        if commit not in self.commits:
            return _error(404, f"Commit not found: {commit}")
        if (commit, path) not in self.files:
            return _error(404, f"No such file or directory: {path}")
        return 200, self.files[(commit, path)], {}

    def _put_report(self, key: tuple[str, str], body: Any) -> Answer:
        if not isinstance(body, dict):
            return _bad_request("The request body must be a JSON object.")
        for name in ("title", "report_type"):
            if not isinstance(body.get(name), str) or not body[name]:
                return _bad_request(f"The {name} field is required.")
        if body["report_type"] not in REPORT_TYPES:
            return _bad_request(f"Invalid report_type: {body['report_type']}")
        if body.get("result") is not None and body["result"] not in REPORT_RESULTS:
            return _bad_request(f"Invalid result: {body['result']}")
        if len(str(body.get("details") or "")) > MAX_DETAILS:
            return _bad_request(f"The details field cannot contain more than {MAX_DETAILS} characters.")
        if len(body.get("data") or []) > MAX_DATA:
            return _bad_request(f"A report cannot have more than {MAX_DATA} data elements.")
        old = self.reports.get(key)
        # a report names no commit (the URL does): Bitbucket's report has no such field
        report = {**body, "type": "report", "external_id": key[1],
                  "uuid": old["uuid"] if old else "{" + str(uuid.uuid4()) + "}"}
        self.reports[key] = report
        return 200, report, {}

    def _bulk(self, key: tuple[str, str], stored: dict[str, dict[str, Any]],
              body: Any) -> Answer:
        if not isinstance(body, list):
            return _bad_request("The request body must be a list of annotations.")
        if len(body) > MAX_BULK:
            return 400, {"code": 400, "message": f"Bulk upload supports a maximum of /{MAX_BULK} annotations."}, {}
        for a in body:
            problem = _annotation_problem(a)
            if problem:
                return _bad_request(problem)
        new_ids = {a["external_id"] for a in body} - set(stored)
        if len(stored) + len(new_ids) > MAX_ANNOTATIONS:
            return _bad_request(f"A report cannot have more than {MAX_ANNOTATIONS} annotations.")
        created = []
        for a in body:
            old = stored.get(a["external_id"])
            one = {**a, "type": "report_annotation",
                   "uuid": old["uuid"] if old else "{" + str(uuid.uuid4()) + "}"}
            stored[a["external_id"]] = one
            created.append(one)
        return 200, created, {}

    def _page(self, rec: Recorded, items: list[dict[str, Any]]) -> Answer:
        pagelen = min(int(rec.query.get("pagelen", 10)), 100, self.page_size)
        page = int(rec.query.get("page", 1))
        chunk = items[(page - 1) * pagelen: page * pagelen]
        answer: dict[str, Any] = {"pagelen": pagelen, "page": page, "size": len(items), "values": chunk}
        if page * pagelen < len(items):
            base = self.link_base or (f"http://{API_HOST}" if VIA_PROXY in rec.headers else self.url)
            answer["next"] = f"{base}{rec.path}?pagelen={pagelen}&page={page + 1}"
        return 200, answer, {}


def _annotation_problem(a: Any) -> str | None:
    if not isinstance(a, dict):
        return "Each annotation must be a JSON object."
    if not isinstance(a.get("external_id"), str) or not a["external_id"]:
        return "The external_id field is required."
    if a.get("annotation_type") not in ANNOTATION_TYPES:
        return f"Invalid annotation_type: {a.get('annotation_type')}"
    summary = a.get("summary")
    if not isinstance(summary, str) or not summary:
        return "The summary field is required."
    if len(summary) > MAX_SUMMARY:
        return f"The summary field cannot contain more than {MAX_SUMMARY} characters."
    if len(str(a.get("details") or "")) > MAX_DETAILS:
        return f"The details field cannot contain more than {MAX_DETAILS} characters."
    if a.get("severity") is not None and a["severity"] not in SEVERITIES:
        return f"Invalid severity: {a['severity']}"
    if a.get("result") is not None and a["result"] not in ANNOTATION_RESULTS:
        return f"Invalid result: {a['result']}"
    if a.get("line") is not None and (not isinstance(a["line"], int) or a["line"] < 1):
        return "The line field must be a positive integer."
    if a.get("line") is not None and not a.get("path"):
        return "An annotation with a line needs a path."
    return None


def _error(status: int, message: str) -> Answer:
    return status, {"type": "error", "error": {"message": message}}, {}


def _bad_request(message: str) -> Answer:
    return 400, {"key": "report-service.general.bad-request", "message": message, "arguments": {}}, {}


def _report_missing(report_id: str) -> Answer:
    return 404, {"key": "report-service.report.not-found", "message": f"Report {report_id} not found",
                 "arguments": {}}, {}
