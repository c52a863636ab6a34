"""A fake of the parts of the GitHub REST API that ocr-hook publishes to, over real HTTP on 127.0.0.1.

It answers as GitHub does, from state a test sets up: a pull request's files with their patches,
its review comments and reviews (listed with Link-header pagination, in pages smaller than GitHub's
so that one pull request already needs several), creating a review (refused whole with a 422 when
one comment's line is not in the diff or a range leaves its hunk, as GitHub does), and SARIF
uploads to code scanning (a 403 "not enabled" where the repository has none). Tokens are either
write or read-only (a fork's pull request: 403 on every write); an unknown or missing token is a 401.
Every request is recorded with its headers, so tests can check where the token went.

DESIGN 18: replies to a review comment, a person's collaborator permission, and GraphQL (POST /graphql,
tests/fake_github_graphql.py): the review threads the comments make, who resolved them, people's replies
with their author association, reactions, and resolving (refused FORBIDDEN to a token without
`contents: write`, as GitHub refuses the Actions token). GraphQL requests are checked against GitHub's
published schema as REST ones are against its description.

Issue 58: `viewer` and `unresolveReviewThread`; a GitHub App's installation token (`ghs_…` in `logins`) that
writes as `<app>[bot]`; secondary rate limits (403 with Retry-After) and GraphQL's RATE_LIMITED (`limits`);
a GraphQL outage (`graphql_down`: 502s) and a GraphQL endpoint elsewhere (`graphql_path`, a runner's
GITHUB_GRAPHQL_URL), where `/graphql` is GitHub's 404.
"""

from __future__ import annotations

import base64
import gzip
import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import api_contract
from fake_github_graphql import GraphQLEndpoint, ThreadState
from loopback_http import LoopbackServer, QuietHandler
from unidiff import PatchSet

DOCS = "https://docs.github.com/rest"
NOT_ENABLED = ("Code scanning is not enabled for this repository. Please enable code scanning in the repository "
               "settings.")
NO_GHAS = "Advanced Security must be enabled for this repository to use code scanning."
MAX_BODY = 65536
SECONDARY = ("You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you "
             "reach out to GitHub Support for help, please include the request ID.")
LIMITS_DOCS = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
GRAPHQL_LIMIT = "API rate limit exceeded for installation ID 4242."
_PERMISSION = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read"}


@dataclass
class Recorded:
    method: str
    path: str  # without the query
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: Any
    status: int = 0


@dataclass
class Pull:
    number: int
    head_sha: str
    files: dict[str, str | None]  # filename → patch (None: binary or too large, as GitHub omits it)
    # Earlier heads' diffs: a review on an older commit has its comments resolved against that one.
    older: dict[str, dict[str, str | None]] = field(default_factory=dict)
    comments: list[dict[str, Any]] = field(default_factory=list)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    author: str = "contributor"  # who opened the pull request
    threads: dict[int, ThreadState] = field(default_factory=dict)  # first comment's id → the thread's state
    reactions: dict[int, list[tuple[str, str]]] = field(default_factory=dict)  # comment id → (content, login)
    closing: list[int] = field(default_factory=list)  # issue numbers it closes (GraphQL closingIssuesReferences)


class FakeGitHub:
    contract = "github"  # its traffic is checked against GitHub's REST description (tests/api_contract.py)

    def __init__(self, repository: str = "octo/app", *, page_size: int = 2) -> None:
        self.repository = repository
        self.repo_id = 4242
        self.page_size = page_size  # GitHub caps per_page at 100; smaller here so pagination is exercised
        self.tokens: dict[str, str] = {}  # token → "write" or "read"
        # token → the login GET /user names. Installation tokens (`ghs_…`, the Actions GITHUB_TOKEN) are
        # refused /user, as GitHub does, and write as github-actions[bot], or as the App's `<app>[bot]` named here
        # (GraphQL's viewer names either).
        self.logins: dict[str, str] = {}
        self.link_header: str | None = None  # a Link header to send on every list page instead of the real one
        self.odd_items: list[Any] | None = None  # a list page holding these (non-objects) instead of the items
        self.pulls: dict[int, Pull] = {}
        self.issues: dict[int, dict[str, str]] = {}  # number → {title, body} (GraphQL issueOrPullRequest; issue 60)
        self.associations: dict[str, str] = {}  # login → authorAssociation on this repository (else NONE)
        self.permissions: dict[str, str] = {}  # login → collaborator role (admin, maintain, write, triage, read)
        self.no_contents_write: set[str] = set()  # write tokens without `contents: write` (may not resolve)
        self.resolved: list[tuple[int, int]] = []  # (pull, first comment id) of every thread resolved through GraphQL
        self.unresolved: list[tuple[int, int]] = []  # ... and unresolved (unresolveReviewThread)
        self.graphql = GraphQLEndpoint(self)
        self.graphql_path = "/graphql"  # where GraphQL answers (a runner's GITHUB_GRAPHQL_URL may name another)
        self.graphql_down = 0  # answer this many GraphQL requests with a 502, as GitHub does in an outage
        # Rate limits to answer, each once, in order, before the request is served: ("rest", METHOD, PATH) a
        # secondary rate limit (403 with Retry-After, GitHub's words), ("graphql",) a GraphQL RATE_LIMITED (200,
        # `x-ratelimit-remaining: 0`, `x-ratelimit-reset`: now). `retry_after` is the value the 403 sends.
        self.limits: list[tuple[str, ...]] = []
        self.retry_after = "0"
        self.limited: list[Recorded] = []  # the requests answered with a rate limit
        self._clock = itertools.count(1)
        self.code_scanning: str = "enabled"  # "enabled", "not-enabled" (NOT_ENABLED), "no-ghas" (NO_GHAS)
        self.sarif_uploads: list[dict[str, Any]] = []  # {commit_sha, ref, log, ...}
        self.requests: list[Recorded] = []
        self.violations: list[str] = []  # requests and replies GitHub's description does not allow
        self.link_base: str | None = None  # pagination links on another origin (a client must not follow)
        self._ids = itertools.count(1000)
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-github", daemon=True)
        self._thread.start()

    # -- set-up -------------------------------------------------------------------------------------------

    def add_pull(self, number: int, head_sha: str, files: dict[str, str | None]) -> Pull:
        pull = Pull(number, head_sha, dict(files))
        with self._lock:
            self.pulls[number] = pull
        return pull

    def add_issue(self, number: int, title: str, body: str) -> None:
        with self._lock:
            self.issues[number] = {"title": title, "body": body}

    def add_comment(self, number: int, path: str, line: int, body: str, login: str = "someone") -> None:
        """A review comment somebody else left (e.g. a person)."""
        with self._lock:
            self.pulls[number].comments.append({"id": next(self._ids), "path": path, "line": line, "side": "RIGHT",
                                                "body": body, "user": _user(login), "created_at": self._now()})

    def comment_starting(self, number: int, text: str) -> dict[str, Any]:
        """The one comment on the pull request whose body starts with `text` (e.g. a finding's marker)."""
        [found] = [c for c in self.pulls[number].comments if c["body"].startswith(text)]
        return found

    def reply_in_thread(self, number: int, comment_id: int, body: str, login: str) -> None:
        """Somebody answers in the thread that comment `comment_id` opened."""
        with self._lock:
            pull = self.pulls[number]
            root = next(c for c in pull.comments if c["id"] == comment_id)
            pull.comments.append({"id": next(self._ids), "in_reply_to_id": comment_id, "path": root.get("path"),
                                  "body": body, "user": _user(login), "created_at": self._now()})

    def resolve_thread(self, number: int, comment_id: int, login: str) -> None:
        """Somebody resolves the thread that comment `comment_id` opened (in GitHub's web page)."""
        with self._lock:
            self.pulls[number].threads[comment_id] = ThreadState(True, login)

    def react(self, number: int, comment_id: int, content: str, login: str) -> None:
        with self._lock:
            self.pulls[number].reactions.setdefault(comment_id, []).append((content, login))

    def thread_roots(self, pull: Pull) -> list[dict[str, Any]]:
        return [c for c in pull.comments if c.get("in_reply_to_id") is None]

    def thread_comments(self, pull: Pull, root_id: int) -> list[dict[str, Any]]:
        return [c for c in pull.comments if c["id"] == root_id or c.get("in_reply_to_id") == root_id]

    def login_of(self, token: str) -> str:
        return self._user(token)["login"]

    def _now(self) -> str:
        tick = next(self._clock)
        return f"2026-01-01T{tick // 3600:02d}:{tick // 60 % 60:02d}:{tick % 60:02d}Z"

    def add_review(self, number: int, body: str, login: str = "someone") -> None:
        """A review somebody else submitted (its body may pose as ocr-hook's)."""
        with self._lock:
            self.pulls[number].reviews.append({"id": next(self._ids), "body": body, "state": "COMMENTED",
                                               "user": {"login": login, "type": "User"}})

    def writes(self) -> list[Recorded]:
        """Every request that may change something: not a GET, nor a GraphQL query (its mutations are)."""
        return [r for r in self.requests if r.method != "GET" and not (
            r.path == "/graphql" and not str((r.body or {}).get("query", "")).lstrip().startswith("mutation"))]

    # -- lifecycle ----------------------------------------------------------------------------------------

    def assert_conforms(self) -> None:
        """Raise (once) for what GitHub's API description does not allow, seen since the last call."""
        found, self.violations = self.violations, []
        assert not found, "traffic the API description does not allow:\n" + "\n".join(found)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=1)
        self.assert_conforms()

    def __enter__(self) -> FakeGitHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- answering ----------------------------------------------------------------------------------------

    def answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any, dict[str, str]]:
        split = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("latin-1")
        rec = Recorded(method, split.path, query, headers, body)
        if split.path == self.graphql_path:
            return self._graphql(rec)
        if split.path == "/graphql":  # GraphQL is elsewhere (behind a proxy): GitHub's 404 for an unknown URL
            with self._lock:
                self.requests.append(rec)
                rec.status = 404
            return 404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"}, {}
        # the Link header names pages by repository id, a route GitHub serves but does not describe
        described = re.sub(rf"^/repositories/{self.repo_id}(?=/)", f"/repos/{self.repository}", rec.path)
        with self._lock:
            self.requests.append(rec)
            self.violations += api_contract.check(self.contract, method, described, query, body)
            if self.limits and self.limits[0] == ("rest", method, described):
                self.limits.pop(0)
                self.limited.append(rec)
                rec.status = 403
                return 403, {"message": SECONDARY, "documentation_url": LIMITS_DOCS}, {"Retry-After": self.retry_after}
            status, payload, extra = self._route(rec)
            rec.status = status
            if self.odd_items is None:  # odd items are a hostile test's deliberate off-contract reply
                self.violations += api_contract.check_reply(self.contract, method, described, status, payload)
        return status, payload, extra

    def _graphql(self, rec: Recorded) -> tuple[int, Any, dict[str, str]]:
        with self._lock:
            self.requests.append(rec)
            if rec.method != "POST":
                rec.status = 404
                return 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/graphql"}, {}
            self.violations += api_contract.check_graphql(rec.body)
            token = _token(rec.headers)
            if token not in self.tokens:
                rec.status = 401
                return 401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/graphql"}, {}
            if self.graphql_down:
                self.graphql_down -= 1
                rec.status = 502
                return 502, {"message": "Server Error"}, {}
            if self.limits and self.limits[0] == ("graphql",):
                self.limits.pop(0)
                self.limited.append(rec)
                rec.status = 200
                return 200, {"errors": [{"type": "RATE_LIMITED", "message": GRAPHQL_LIMIT}]}, {
                    "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0",
                    "x-ratelimit-reset": str(int(time.time()))}
            status, payload = self.graphql.answer(rec.body, token)
            rec.status = status
        return status, payload, {}

    def _route(self, rec: Recorded) -> tuple[int, Any, dict[str, str]]:
        token = _token(rec.headers)
        if token not in self.tokens:
            return 401, {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"}, {}
        if rec.path == "/user" and rec.method == "GET":
            if token.startswith("ghs_"):
                return 403, {"message": "Resource not accessible by integration", "documentation_url": DOCS,
                             "status": "403"}, {}
            return 200, {"login": self.logins.get(token, "ocr-bot"), "id": 77, "type": "User"}, {}
        owner_repo = re.escape(self.repository)
        path = re.sub(rf"^/repositories/{self.repo_id}(?=/)", f"/repos/{self.repository}", rec.path)
        if m := re.fullmatch(rf"/repos/{owner_repo}/pulls/(\d+)/(files|comments|reviews)", path):
            pull = self.pulls.get(int(m.group(1)))
            if pull is None:
                return _not_found()
            if rec.method == "GET":
                return self._page(rec, m.group(0), m.group(2), self._items(pull, m.group(2)))
            if rec.method == "POST" and m.group(2) == "reviews":
                if self.tokens[token] != "write":
                    return _read_only()
                return self._create_review(pull, rec.body, self._user(token))
        if m := re.fullmatch(rf"/repos/{owner_repo}/pulls/(\d+)/comments/(\d+)/replies", path):
            pull = self.pulls.get(int(m.group(1)))
            root = next((c for c in pull.comments if c["id"] == int(m.group(2))), None) if pull else None
            if rec.method != "POST" or pull is None or root is None or root.get("in_reply_to_id") is not None:
                return _not_found()  # replies to replies are not supported: the id must open a thread
            if self.tokens[token] != "write":
                return _read_only()
            if not isinstance(rec.body, dict) or not isinstance(rec.body.get("body"), str) or not rec.body["body"]:
                return _unprocessable("Invalid request: body is missing")
            reply = {"id": next(self._ids), "in_reply_to_id": root["id"], "path": root.get("path"),
                     "body": rec.body["body"], "user": self._user(token), "created_at": self._now()}
            pull.comments.append(reply)
            return 201, reply, {}
        if m := re.fullmatch(rf"/repos/{owner_repo}/collaborators/([^/]+)/permission", path):
            if rec.method != "GET":
                return _not_found()
            role = self.permissions.get(m.group(1))  # REST says maintain as write and triage as read
            return 200, {"permission": _PERMISSION.get(role or "", "none"), "role_name": role or "none",
                         "user": _user(m.group(1))}, {}
        if path == f"/repos/{self.repository}/code-scanning/sarifs" and rec.method == "POST":
            if self.tokens[token] != "write":
                return _read_only()
            return self._upload(rec.body)
        return _not_found()

    def _user(self, token: str) -> dict[str, str]:
        if token.startswith("ghs_"):  # an installation token: the Actions one, or a GitHub App's (`<app>[bot]`)
            return _user(self.logins.get(token, "github-actions[bot]"))
        return _user(self.logins.get(token, "ocr-bot"))

    def _items(self, pull: Pull, kind: str) -> list[dict[str, Any]]:
        if kind == "files":
            return [{"sha": "0" * 40, "filename": name, "status": "modified", **({"patch": p} if p is not None else {})}
                    for name, p in pull.files.items()]
        return pull.comments if kind == "comments" else pull.reviews

    def _page(self, rec: Recorded, path: str, kind: str, items: list[dict[str, Any]]) -> tuple[int, Any, dict]:
        per_page = min(int(rec.query.get("per_page", 30)), 100, self.page_size)
        page = int(rec.query.get("page", 1))
        chunk = items[(page - 1) * per_page: page * per_page]
        if self.odd_items is not None:
            return 200, self.odd_items, {}
        if self.link_header is not None:
            return 200, chunk, {"Link": self.link_header}
        last = max(1, -(-len(items) // per_page))
        links = []
        # Like GitHub, the links name the repository by id.
        rest = path.removeprefix(f"/repos/{self.repository}")
        base = f"{self.link_base or self.url}/repositories/{self.repo_id}{rest}"
        if page < last:
            links.append(f'<{base}?per_page={per_page}&page={page + 1}>; rel="next"')
            links.append(f'<{base}?per_page={per_page}&page={last}>; rel="last"')
        return 200, chunk, ({"Link": ", ".join(links)} if links else {})

    def _create_review(self, pull: Pull, body: Any, user: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        if not isinstance(body, dict):
            return 400, {"message": "Problems parsing JSON", "documentation_url": DOCS}, {}
        event = body.get("event")
        if event not in (None, "APPROVE", "REQUEST_CHANGES", "COMMENT"):
            return _unprocessable(f"Unknown event {event}")
        commit = body.get("commit_id") or pull.head_sha
        files = pull.files if commit == pull.head_sha else pull.older.get(commit)
        if files is None:
            return _unprocessable(f"No commit found for SHA: {commit}")
        text = body.get("body") or ""
        if len(text) > MAX_BODY:
            return _unprocessable(f"Body is too long (maximum is {MAX_BODY} characters)")
        comments = body.get("comments") or []
        if event == "COMMENT" and not text and not comments:
            return _unprocessable("Review body is required for COMMENT")
        for c in comments:
            problem = _comment_problem(files, c)
            if problem:
                return _unprocessable(problem)
        review = {"id": next(self._ids), "user": user, "body": text,
                  "state": "COMMENTED" if event == "COMMENT" else "PENDING" if event is None else event,
                  "commit_id": commit}
        pull.reviews.append(review)
        for c in comments:
            pull.comments.append({"id": next(self._ids), "pull_request_review_id": review["id"],
                                  "commit_id": review["commit_id"], "user": review["user"], "created_at": self._now(),
                                  **c})
        return 200, review, {}

    def _upload(self, body: Any) -> tuple[int, Any, dict[str, str]]:
        if self.code_scanning != "enabled":
            message = NOT_ENABLED if self.code_scanning == "not-enabled" else NO_GHAS
            return 403, {"message": message, "documentation_url": DOCS, "status": "403"}, {}
        if not isinstance(body, dict) or not re.fullmatch(r"[0-9a-f]{40}", str(body.get("commit_sha"))) \
                or not re.fullmatch(r"refs/(heads|pull|tags)/\S+", str(body.get("ref"))):
            return _unprocessable("Invalid commit_sha or ref")
        try:
            log = json.loads(gzip.decompress(base64.b64decode(body["sarif"], validate=True)))
        except (KeyError, ValueError, OSError):
            return 400, {"message": "Invalid sarif: not gzip-compressed, base64-encoded JSON",
                         "documentation_url": DOCS}, {}
        if not isinstance(log, dict) or log.get("version") != "2.1.0":
            return 400, {"message": "Invalid sarif: unsupported version", "documentation_url": DOCS}, {}
        upload_id = f"upload-{next(self._ids)}"
        self.sarif_uploads.append({**{k: v for k, v in body.items() if k != "sarif"}, "log": log})
        return 202, {"id": upload_id, "url": f"{self.url}/repos/{self.repository}/code-scanning/sarifs/{upload_id}"}, {}


def _user(login: str) -> dict[str, str]:
    return {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"}


def _token(headers: dict[str, str]) -> str:
    auth = headers.get("authorization", "")
    return auth.split(" ", 1)[1] if auth.lower().startswith(("bearer ", "token ")) else ""


def _comment_problem(files: dict[str, str | None], c: Any) -> str | None:
    if not isinstance(c, dict) or not isinstance(c.get("body"), str) or not c["body"]:
        return "Invalid request: comment body is missing"
    if len(c["body"]) > MAX_BODY:
        return f"Body is too long (maximum is {MAX_BODY} characters)"
    if c.get("path") not in files:
        return "Path could not be resolved"
    line, start = c.get("line"), c.get("start_line")
    if not isinstance(line, int) or c.get("side", "RIGHT") != "RIGHT":
        return "Line could not be resolved"
    hunks = _right_hunks(files[c["path"]])
    hunk = next((h for h in hunks if line in h), None)
    if hunk is None:
        return "Pull request review thread line must be part of the diff"
    if start is not None:
        if not isinstance(start, int) or start >= line or c.get("start_side", "RIGHT") != "RIGHT":
            return "start_line must precede line"
        if start not in hunk:
            return "Pull request review thread start line must be part of the same hunk as the line."
    return None


def _right_hunks(patch: str | None) -> list[range]:
    if not patch:
        return []
    parsed = PatchSet("--- a/f\n+++ b/f\n" + patch + ("" if patch.endswith("\n") else "\n"))
    return [range(h.target_start, h.target_start + h.target_length) for h in parsed[0]]


def _unprocessable(error: str) -> tuple[int, Any, dict[str, str]]:
    return 422, {"message": "Unprocessable Entity", "errors": [error], "documentation_url": DOCS,
                 "status": "422"}, {}


def _not_found() -> tuple[int, Any, dict[str, str]]:
    return 404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"}, {}


def _read_only() -> tuple[int, Any, dict[str, str]]:
    return 403, {"message": "Resource not accessible by integration", "documentation_url": DOCS,
                 "status": "403"}, {}


class _Server(LoopbackServer):
    fake: FakeGitHub


class _Handler(QuietHandler):
    server: _Server

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, payload, extra = self.server.fake.answer(self.command, self.path, headers, raw)
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve
