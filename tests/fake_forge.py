"""What the loopback forge fakes share (tests/fake_gitlab.py, tests/fake_gitea.py, and the Bitbucket and
Azure fakes): a threaded HTTP server on 127.0.0.1, every request recorded with its headers, Link-header
pagination in small pages, and one-shot faults a test queues (a 429 with Retry-After, a 500, a 403).

A subclass implements `route(rec, token)` → (status, payload, headers); a payload that is `str` goes
out as text (a diff, GitLab's plain "Retry later"), anything else as JSON. `auth(headers)` pulls the
token out of the request the way that forge takes it.

A subclass names its `contract` (a forge in tests/api_descriptions/), and every request and reply is
checked against that forge's API description (tests/api_contract.py); a violation is recorded and fails
the test loudly at the next `reset()` or at `close()`. A fake without one does not start: no forge test
runs outside the checker.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import api_contract
from loopback_http import LoopbackServer, QuietHandler

Answer = tuple[int, Any, dict[str, str]]


@dataclass
class Recorded:
    method: str
    path: str  # without the query, percent-decoding left to the fake
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: Any
    status: int = 0


@dataclass
class Fault:
    pattern: str  # a regex on "METHOD /path"
    status: int
    payload: Any
    headers: dict[str, str]
    times: int = 1


class FakeForge:
    name = "forge"
    contract: str | None = None  # the API description its traffic is checked against

    def __init__(self, *, page_size: int = 2, tls: tuple[Path, Path] | None = None) -> None:
        if not self.contract or not api_contract.operations(self.contract):
            raise TypeError(f"{type(self).__name__} names no API description to check its traffic against")
        self.page_size = page_size  # small, so one request already needs several pages
        self.tokens: dict[str, str] = {}  # token → its scope ("write", "read")
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self.violations: list[str] = []  # requests and replies the forge's description does not allow
        self.link_base: str | None = None  # pagination links on another origin (a client must not follow)
        self.link_header: str | None = None  # a Link header to send instead of the real one
        self.holds: list[tuple[str, threading.Event]] = []  # requests left unanswered until the event is set
        self.held = threading.Event()  # a held request arrived
        self.ids = itertools.count(100)
        self.lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        if tls is not None:  # (certificate, key): a site the product reaches over https only (Jira's url)
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True,
                                                      do_handshake_on_connect=False)
            self.url = self.url.replace("http://", "https://", 1)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fake-{self.name}", daemon=True)
        self._thread.start()

    # -- test-side ------------------------------------------------------------------------------------------

    def fail(self, pattern: str, status: int, payload: Any, headers: dict[str, str] | None = None,
             times: int = 1) -> None:
        """The next `times` requests matching `pattern` ("POST /…/notes$") get this answer."""
        with self.lock:
            self.faults.append(Fault(pattern, status, payload, dict(headers or {}), times))

    def hold(self, pattern: str) -> threading.Event:
        """Requests matching `pattern` ("GET /…/award_emoji$") wait unanswered (a server that stalls) until the
        returned event is set; `held` is set when the first arrives."""
        gate = threading.Event()
        with self.lock:
            self.holds.append((pattern, gate))
        return gate

    def writes(self) -> list[Recorded]:
        return [r for r in self.requests if r.method != "GET"]

    def assert_conforms(self) -> None:
        """Raise (once) for what the forge's API description does not allow, seen since the last call."""
        found, self.violations = self.violations, []
        assert not found, "traffic the API description does not allow:\n" + "\n".join(found)

    def reset(self) -> None:
        self.assert_conforms()
        with self.lock:
            self.requests.clear()
            self.faults.clear()
            self.link_base = self.link_header = None
            gates, self.holds = [gate for _, gate in self.holds], []
        for gate in gates:
            gate.set()
        self.held.clear()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=1)
        self.assert_conforms()

    def __enter__(self) -> FakeForge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- answering ------------------------------------------------------------------------------------------

    def auth(self, headers: dict[str, str]) -> str:
        value = headers.get("authorization", "")
        return value.split(" ", 1)[1] if " " in value else ""

    def route(self, rec: Recorded, token: str) -> Answer:
        raise NotImplementedError

    def answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Answer:
        split = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("latin-1")
        rec = Recorded(method, unquote(split.path), query, headers, body)
        with self.lock:
            gates = [gate for pattern, gate in self.holds if re.search(pattern, f"{method} {rec.path}")]
        for gate in gates:
            self.held.set()
            gate.wait(60)
        with self.lock:
            self.requests.append(rec)
            # the path as sent: a description's {id} may be a percent-encoded "group%2Fapp"
            self.violations += api_contract.check(self.contract, method, split.path, query, body)
            for fault in self.faults:
                if fault.times > 0 and re.search(fault.pattern, f"{method} {rec.path}"):
                    fault.times -= 1  # a test's deliberate answer (a redirect, a wrong shape): not checked
                    rec.status = fault.status
                    return fault.status, fault.payload, fault.headers
            status, payload, extra = self.route(rec, self.auth(headers))
            rec.status = status
            self.violations += api_contract.check_reply(self.contract, method, split.path, status, payload)
        return status, payload, extra

    def page(self, rec: Recorded, items: list[Any], *, size_param: str = "per_page") -> Answer:
        """One page of `items` with a Link header naming the next and last (as GitHub, GitLab, Gitea do)."""
        per_page = max(1, min(int(rec.query.get(size_param, 20) or 20), 100, self.page_size))
        page = max(1, int(rec.query.get("page", 1) or 1))
        chunk = items[(page - 1) * per_page: page * per_page]
        last = max(1, -(-len(items) // per_page))
        headers = {"X-Total": str(len(items)), "X-Total-Count": str(len(items))}
        if self.link_header is not None:
            headers["Link"] = self.link_header
            return 200, chunk, headers
        base = f"{self.link_base or self.url}{rec.path}"
        if page < last:
            headers["Link"] = (f'<{base}?{size_param}={per_page}&page={page + 1}>; rel="next", '
                               f'<{base}?{size_param}={per_page}&page={last}>; rel="last"')
            headers["X-Next-Page"] = str(page + 1)
        return 200, chunk, headers


class _Server(LoopbackServer):
    fake: FakeForge


class _Handler(QuietHandler):
    server: _Server

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, payload, extra = self.server.fake.answer(self.command, self.path, headers, raw)
        if status == 204:
            data, kind = b"", "application/json"
        elif isinstance(payload, str):
            data, kind = payload.encode("utf-8"), "text/plain; charset=utf-8"
        else:
            data, kind = json.dumps(payload).encode("utf-8"), "application/json"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve


def new_hunks(diff: str) -> dict[str, list[range]]:
    """The new-side line ranges of each file's hunks in a unified diff: where a forge takes inline comments."""
    from unidiff import PatchSet

    found: dict[str, list[range]] = {}
    for patched in PatchSet(diff):
        name = patched.target_file[2:] if patched.target_file.startswith("b/") else patched.target_file
        found[name] = [range(h.target_start, h.target_start + h.target_length) for h in patched]
    return found
