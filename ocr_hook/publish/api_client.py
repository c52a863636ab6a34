"""The one HTTP client every forge adapter uses (over httpx2, the HTTP client the Anthropic SDK brings).

What it guarantees, whatever the forge:
* The credentials (headers the adapter gives) go to the configured API root and nowhere else:
  redirects are never followed, and a pagination link that leaves the root is refused, not followed.
* No message carries a secret: every refusal's text is masked with the secrets the adapter names
  (the token and any encoded form of it), and a token with characters no token has is refused before
  the HTTP library could quote it in an error.
* Every failure is an ApiRefusal with a one-line message: an HTTP error with the forge's own words,
  an unreachable host, an answer that is not JSON, a list holding non-objects, a pagination header
  too large to be one (httpx2.InvalidURL is caught, not raised).
* 429 (and 503) with Retry-After, and GitHub's secondary rate limit (a 403 with Retry-After, or with no
  requests remaining until `x-ratelimit-reset`), are retried (tenacity) while the wait ends before the
  publishing deadline; after that the answer is the refusal.
Pagination: a Link header's `next` (GitHub, GitLab, Gitea), a `next` URL in the body (Bitbucket:
`items_key="values"`), or a continuation-token header (Azure DevOps: `continuation=...`).
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import httpx2

from ocr_hook import __version__
from ocr_hook.publish.render import clip

PER_PAGE = 100
MAX_PAGES = 100  # 10,000 items: more than any forge lists on one request
TIMEOUT_S = 30.0
MAX_LINK_HEADER = 16_384  # bytes; a real one is a few hundred
MAX_RETRY_WAIT_S = 60.0
MIN_RETRY_WAIT_S = 0.25  # the first pause after a 429, doubling after each
MAX_ATTEMPTS = 8  # of one request answered 429/503 again and again
MAX_ERROR_CHARS = 400  # of a forge's error text in a message
_TOKEN = re.compile(r"[\x21-\x7e]{1,4096}")


class ApiRefusal(Exception):
    """The forge answered with an error, or could not be reached (status None)."""

    def __init__(self, status: int | None, message: str, *, hint: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.hint = hint  # False: the message names the cause, and the forge's hint for the status would not

    def __str__(self) -> str:
        return f"HTTP {self.status}: {self.message}" if self.status is not None else self.message


def check_token(token: str) -> None:
    if not _TOKEN.fullmatch(token):
        # Checked here: the HTTP library's error for a bad header value would quote it.
        raise ApiRefusal(None, "the token has characters no token has (spaces, line breaks, non-ASCII)")


def api_root(value: str | None, default: str, variable: str) -> str:
    """An API root URL from a variable (or its default), without a trailing slash."""
    base = (value or "").strip() or default
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ApiRefusal(None, f"{variable} is not an http(s) URL: {base[:200]!r}")
    return base.rstrip("/")


class RateLimited(Exception):
    def __init__(self, response: httpx2.Response, wait: float) -> None:
        super().__init__(f"HTTP {response.status_code}")
        self.response, self.wait = response, wait


class ApiClient:
    """`headers` carry the credentials; `secrets` are masked in every message; `deadline` is a
    time.monotonic() value no request or retry wait may pass."""

    def __init__(self, base_url: str, *, headers: Mapping[str, str], secrets: Iterable[str] = (),
                 variable: str = "the API URL", deadline: float | None = None, timeout: float = TIMEOUT_S,
                 json_accept: str = "application/json") -> None:
        self.base = api_root(base_url, "", variable)
        self.variable = variable
        self.deadline = deadline if deadline is not None else time.monotonic() + 300.0
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._expired = threading.Event()
        self._watchdog: threading.Timer | None = None
        self._client = httpx2.Client(
            base_url=self.base + "/",
            headers={"Accept": json_accept, "User-Agent": f"ocr-hook/{__version__}", **headers},
            timeout=timeout,
            follow_redirects=False,
            # An http:// root never meets TLS (nothing is sent off the root): no CA bundle to load (80 ms).
            verify=urlsplit(self.base).scheme == "https",
        )

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        self._client.close()

    # -- the deadline over whole requests ---------------------------------------------------------------------
    # httpx's timeouts are per read: a server sending one byte a second keeps a request alive for ever. So
    # every socket this client opens is noted (httpcore's trace extension), and at the deadline a timer
    # shuts them all down: whatever read is waiting returns at once, and the request fails.

    def _note_socket(self, event: str, info: dict[str, Any]) -> None:
        if event in ("connection.connect_tcp.complete", "connection.connect_unix_socket.complete"):
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                with self._lock:
                    self._sockets.append(sock)
                    expired = self._expired.is_set()
                if expired:
                    _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self._expired.set()
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)

    def _arm(self) -> None:
        if self._watchdog is None:
            self._watchdog = threading.Timer(max(0.0, self.deadline - time.monotonic()), self._expire)
            self._watchdog.daemon = True
            self._watchdog.start()

    def mask(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    # -- requests ---------------------------------------------------------------------------------------------

    def get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        return _json(self._send("GET", path.lstrip("/"), params=dict(params or {})), self)

    def user_login(self, token_user: str | frozenset[str], statuses: tuple[int, ...]) -> str | frozenset[str]:
        """Who the token publishes as, from `GET /user` (GitHub's API, and Gitea's after it): its login, or
        `token_user` when the API refuses with one of `statuses` (a CI system's job token has no user)."""
        try:
            me = self.get("user")
        except ApiRefusal as exc:
            if exc.status in statuses:
                return token_user
            raise
        login = me.get("login") if isinstance(me, dict) else None
        if not isinstance(login, str) or not login:
            raise ApiRefusal(200, "GET /user: the answer names no login")
        return login

    def get_text(self, path: str, params: Mapping[str, str] | None = None) -> str:
        return self._send("GET", path.lstrip("/"), params=dict(params or {})).text

    def post(self, path: str, body: Any) -> Any:
        return _json(self._send("POST", path.lstrip("/"), json=body), self, empty_ok=True)

    def put(self, path: str, body: Any, params: Mapping[str, str] | None = None) -> Any:
        return _json(self._send("PUT", path.lstrip("/"), json=body, params=dict(params or {})), self,
                     empty_ok=True)

    def patch(self, path: str, body: Any) -> Any:
        return _json(self._send("PATCH", path.lstrip("/"), json=body), self, empty_ok=True)

    def delete(self, path: str) -> None:
        self._send("DELETE", path.lstrip("/"))

    def get_all(self, path: str, params: Mapping[str, str] | None = None, *, per_page: str = "per_page",
                items_key: str | None = None, continuation: str | None = None,
                objects: bool = True) -> list[Any]:
        """Every item of a paginated list. `items_key`: the list is under that key of each page, with the
        next page's URL under "next" (Bitbucket). `continuation`: the response header whose value goes
        back as the `continuationToken` parameter (Azure DevOps). `objects`: every item must be a JSON
        object (anything else is a refusal, never a traceback further on)."""
        items: list[Any] = []
        url: str = path.lstrip("/")
        query: dict[str, str] | None = {per_page: str(PER_PAGE), **(params or {})} if per_page else dict(params or {})
        for _ in range(MAX_PAGES):
            response = self._send("GET", url, params=query)
            page = _json(response, self)
            values = page.get(items_key) if items_key and isinstance(page, dict) else page
            if not isinstance(values, list):
                raise ApiRefusal(response.status_code, f"GET {path}: expected a list, got {type(values).__name__}")
            if objects and any(not isinstance(v, dict) for v in values):
                odd = next(type(v).__name__ for v in values if not isinstance(v, dict))
                raise ApiRefusal(response.status_code, f"GET {path}: the list holds a {odd}, not objects")
            items.extend(values)
            nxt = self._next(response, page, items_key, continuation)
            if nxt is None:
                return items
            if continuation:
                query = {**(query or {}), "continuationToken": nxt}
            else:
                url, query = self._same_api(nxt), None  # the link carries its own query
        raise ApiRefusal(None, f"GET {path}: more than {MAX_PAGES} pages")

    def _next(self, response: httpx2.Response, page: Any, items_key: str | None,
              continuation: str | None) -> str | None:
        if continuation:
            token = response.headers.get(continuation, "")
            return token[:2048] or None
        if items_key:
            nxt = page.get("next") if isinstance(page, dict) else None
            return nxt if isinstance(nxt, str) and nxt else None
        header = response.headers.get("link", "")
        if len(header) > MAX_LINK_HEADER:
            raise ApiRefusal(None, f"a pagination Link header of {len(header)} bytes; not followed")
        try:
            nxt = response.links.get("next", {}).get("url")
        except (httpx2.InvalidURL, ValueError):
            raise ApiRefusal(None, "a pagination Link header that is not one; not followed") from None
        return nxt or None

    def _same_api(self, url: str) -> str:
        """A pagination link, checked to stay on the API root before the credentials are sent to it."""
        if not url.startswith(self.base + "/") or len(url) > 8192:
            raise ApiRefusal(None, f"a pagination link points outside {self.variable}; not followed")
        return url

    def _send(self, method: str, url: str, **kw: Any) -> httpx2.Response:
        import tenacity

        # The server's Retry-After, but never less than a growing pause: "Retry-After: 0" (or a date
        # already past) from a server that keeps answering 429 would otherwise be asked again at once.
        backoff = tenacity.wait_exponential(multiplier=MIN_RETRY_WAIT_S, min=MIN_RETRY_WAIT_S, max=MAX_RETRY_WAIT_S)

        def wait(state: tenacity.RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            asked = exc.wait if isinstance(exc, RateLimited) else 0.0
            return asked if asked > MAX_RETRY_WAIT_S else max(asked, backoff(state))

        def stop(state: tenacity.RetryCallState) -> bool:
            pause = wait(state)
            return (state.attempt_number >= MAX_ATTEMPTS or pause > MAX_RETRY_WAIT_S
                    or time.monotonic() + pause >= self.deadline)

        retrying = tenacity.Retrying(retry=tenacity.retry_if_exception_type(RateLimited), wait=wait, stop=stop,
                                     reraise=True)
        try:
            return retrying(self._once, method, url, **kw)
        except RateLimited as limited:
            tries = retrying.statistics.get("attempt_number", 1)
            why = (f"still after {tries} tries" if tries >= MAX_ATTEMPTS
                   else "retrying would pass the publishing deadline")
            words = f"{self.forge_words(limited.response)} (rate limited; {why})"
            raise ApiRefusal(limited.response.status_code, words, hint=False) from None

    def _once(self, method: str, url: str, **kw: Any) -> httpx2.Response:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise ApiRefusal(None, f"the publishing deadline passed before {method} {self._name(url)}")
        self._arm()
        try:
            response = self._client.request(method, url, timeout=min(TIMEOUT_S, remaining),
                                            extensions={"trace": self._note_socket}, **kw)
        except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
            if self._expired.is_set():
                raise ApiRefusal(None, f"the publishing deadline passed during {method} {self._name(url)}") from None
            raise ApiRefusal(None, self.mask(f"cannot reach {self.base}: {exc.__class__.__name__}: {exc}")) from None
        if (wait := self.limited(response)) is not None:
            raise RateLimited(response, wait)
        if 300 <= response.status_code < 400:
            raise ApiRefusal(response.status_code, "a redirect; not followed with the token")
        if response.status_code >= 400:
            raise ApiRefusal(response.status_code, self.forge_words(response))
        return response

    def limited(self, response: httpx2.Response) -> float | None:
        """The seconds a rate-limited answer asks to wait before the same request, or None (not one): a 429 or 503
        with Retry-After, and GitHub's secondary rate limit, a 403 with Retry-After (or with
        `x-ratelimit-remaining: 0`, until `x-ratelimit-reset`)."""
        status = response.status_code
        if status in (403, 429, 503) and (wait := retry_after(response)) is not None:
            return wait
        if status in (403, 429) and response.headers.get("x-ratelimit-remaining", "").strip() == "0":
            return reset_wait(response)
        return None

    def forge_words(self, response: httpx2.Response) -> str:
        """The forge's error text for a message: masked whole, then cut (a cut first could split a token
        so that the mask no longer finds it, and print the part before the cut)."""
        return clip(self.mask(error_message(response)), MAX_ERROR_CHARS)

    def _name(self, url: str) -> str:
        return url.split("?", 1)[0][:120]


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # closed already


def retry_after(response: httpx2.Response) -> float | None:
    """Retry-After in seconds (a number or an HTTP date), or None when there is none."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def reset_wait(response: httpx2.Response) -> float | None:
    """The seconds until `x-ratelimit-reset` (epoch seconds, GitHub's), or None when there is none."""
    value = response.headers.get("x-ratelimit-reset", "").strip()
    return max(0.0, int(value) - time.time()) if value.isdigit() and len(value) < 16 else None


def _json(response: httpx2.Response, client: ApiClient, *, empty_ok: bool = False) -> Any:
    if empty_ok and not response.content.strip():
        return None
    try:
        return response.json()
    except ValueError:
        raise ApiRefusal(response.status_code, "the answer is not JSON") from None


def error_message(response: httpx2.Response) -> str:
    """The forge's own words, on one line: GitHub's `message` and `errors`, GitLab's `message` (a string,
    or field → problems) and `error`, Gitea's `message`, Bitbucket's `error.message`/`detail`,
    Azure's `message`."""
    try:
        data = response.json()
    except ValueError:
        data = None
    parts: list[str] = []
    if isinstance(data, dict):
        for key in ("message", "error", "error_description", "detail"):
            parts += _words(data.get(key))
        for err in data.get("errors") or [] if isinstance(data.get("errors"), list) else []:
            parts += _words(err.get("message") or err.get("code") or err) if isinstance(err, dict) else _words(err)
    if not parts and data is None and 0 < len(response.text.strip()) <= 300:
        parts = [response.text.strip()]  # a plain-text answer (GitLab's 429 "Retry later")
    text = ": ".join(p for p in parts if p) if parts else (response.reason_phrase or "error")
    return " ".join(text.split())  # whole: ApiClient.forge_words masks it, then cuts it


def _words(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        if "message" in value or "detail" in value:
            return _words(value.get("message")) + _words(value.get("detail"))
        return [f"{k} {', '.join(str(x) for x in v) if isinstance(v, list) else v}" for k, v in value.items()]
    if isinstance(value, list):
        return [", ".join(str(x) for x in value)]
    return [] if value is None else [str(value)]
