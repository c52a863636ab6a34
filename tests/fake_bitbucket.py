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
"""

from __future__ import annotations

import re
import uuid
from typing import Any
from urllib.parse import urlsplit

from fake_forge import Answer, FakeForge, Recorded

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
        super().__init__(page_size=page_size)  # Bitbucket pages annotations by 10 (pagelen up to 100)
        self.api_url = self.url + "/2.0"

    def reset(self) -> None:
        super().reset()
        with self.lock:
            self.reports.clear()
            self.annotations.clear()
            self.tokens.clear()
            self.refuse_bulk_after = None

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
