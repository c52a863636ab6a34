"""A small GitHub REST client over httpx2 (the HTTP client the Anthropic SDK brings).

The token goes in the Authorization header of requests to GITHUB_API_URL and nowhere else: redirects
are not followed, and a pagination link that leaves the API's origin and path is refused rather than
followed. No error message carries it (httpx's errors name the URL, never the headers).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import httpx2

from ocr_hook import __version__

DEFAULT_API_URL = "https://api.github.com"
PER_PAGE = 100
MAX_PAGES = 100  # 10,000 items: more than any pull request GitHub lists (3,000 files at most)
TIMEOUT_S = 30.0
_TOKEN = re.compile(r"[\x21-\x7e]{1,4096}")


class ApiRefusal(Exception):
    """GitHub answered with an error, or could not be reached (status None)."""

    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def __str__(self) -> str:
        return f"HTTP {self.status}: {self.message}" if self.status is not None else self.message


def api_base(value: str | None) -> str:
    """GITHUB_API_URL (GitHub Enterprise Server sets its own), without a trailing slash."""
    base = (value or "").strip() or DEFAULT_API_URL
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ApiRefusal(None, f"GITHUB_API_URL is not an http(s) URL: {base[:200]!r}")
    return base.rstrip("/")


class GitHubApi:
    def __init__(self, base_url: str, token: str, *, timeout: float = TIMEOUT_S) -> None:
        self.base = api_base(base_url)
        if not _TOKEN.fullmatch(token):
            # Checked here: the HTTP library's error for a bad header value would quote it.
            raise ApiRefusal(None, "the token has characters no token has (spaces, line breaks, non-ASCII)")
        self._client = httpx2.Client(
            base_url=self.base + "/",
            headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
                     "X-GitHub-Api-Version": "2022-11-28", "User-Agent": f"ocr-hook/{__version__}"},
            timeout=timeout,
            follow_redirects=False,
        )

    def __enter__(self) -> GitHubApi:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._client.close()

    def get_all(self, path: str, params: Mapping[str, str] | None = None) -> list[Any]:
        """Every item of a paginated list, following the Link header's `next`."""
        items: list[Any] = []
        url: str = path.lstrip("/")
        query: dict[str, str] | None = {"per_page": str(PER_PAGE), **(params or {})}
        for _ in range(MAX_PAGES):
            response = self._send("GET", url, params=query)
            page = _json(response)
            if not isinstance(page, list):
                raise ApiRefusal(response.status_code, f"GET {path}: expected a list, got {type(page).__name__}")
            items.extend(page)
            nxt = response.links.get("next", {}).get("url")
            if not nxt:
                return items
            url, query = self._same_api(nxt), None  # the link carries its own query
        raise ApiRefusal(None, f"GET {path}: more than {MAX_PAGES} pages")

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        return _json(self._send("POST", path.lstrip("/"), json=dict(body)))

    def _same_api(self, url: str) -> str:
        """A pagination link, checked to stay on GITHUB_API_URL before the token is sent to it."""
        if not url.startswith(self.base + "/"):
            raise ApiRefusal(None, "a pagination link points outside GITHUB_API_URL; not followed")
        return url

    def _send(self, method: str, url: str, **kw: Any) -> httpx2.Response:
        try:
            response = self._client.request(method, url, **kw)
        except httpx2.HTTPError as exc:
            raise ApiRefusal(None, f"cannot reach {self.base}: {exc.__class__.__name__}: {exc}") from None
        if response.status_code >= 300:
            raise ApiRefusal(response.status_code, error_message(response))
        return response


def _json(response: httpx2.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise ApiRefusal(response.status_code, "the answer is not JSON") from None


def error_message(response: httpx2.Response) -> str:
    """GitHub's `message` and `errors`, on one line."""
    try:
        data = response.json()
    except ValueError:
        data = None
    parts: list[str] = []
    if isinstance(data, dict):
        if data.get("message"):
            parts.append(str(data["message"]))
        for err in data.get("errors") or []:
            parts.append(str(err.get("message") or err.get("code") or err) if isinstance(err, dict) else str(err))
    text = ": ".join(parts) if parts else (response.reason_phrase or "error")
    return " ".join(text.split())[:400]
