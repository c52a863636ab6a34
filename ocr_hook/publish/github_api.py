"""The GitHub client: the shared ApiClient with GitHub's headers and root (GITHUB_API_URL), and its GraphQL
endpoint beside it.

The token goes in the Authorization header of requests to GITHUB_API_URL and nowhere else (api_client
says how that is kept), and to GitHub's GraphQL endpoint of the same API: `GITHUB_API_URL/graphql` on
github.com, `https://HOST/api/graphql` beside a GitHub Enterprise Server's `https://HOST/api/v3` (what
the runner's GITHUB_GRAPHQL_URL names in both cases). The SARIF upload (code_scanning), the pull-request
review and its threads use it.

GraphQL answers 200 even when it refuses: its `errors` carry a `type` (FORBIDDEN, NOT_FOUND, ...). Any error
is a refusal here (ApiRefusal, with 403 for FORBIDDEN and 404 for NOT_FOUND), never half an answer; but
RATE_LIMITED is waited out within the deadline, as REST's rate limits are. The runner's GITHUB_GRAPHQL_URL,
where set, names the endpoint; a 404 from the endpoint itself says so (not "no such pull request").
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from ocr_hook.publish.api_client import (
    MAX_ERROR_CHARS,
    ApiClient,
    ApiRefusal,
    api_root,
    check_token,
    error_message,
    reset_wait,
    retry_after,
)
from ocr_hook.publish.render import clip

__all__ = ["DEFAULT_API_URL", "ApiRefusal", "GitHubApi", "api_base", "error_message", "graphql_root"]

DEFAULT_API_URL = "https://api.github.com"
_STATUS = {"FORBIDDEN": 403, "NOT_FOUND": 404, "RATE_LIMITED": 429}


def api_base(value: str | None) -> str:
    """GITHUB_API_URL (GitHub Enterprise Server sets its own), without a trailing slash."""
    return api_root(value, DEFAULT_API_URL, "GITHUB_API_URL")


def graphql_root(base: str) -> str:
    """The root the GraphQL endpoint (`ROOT/graphql`) is under, for a REST root."""
    return base.removesuffix("/v3") if base.endswith("/api/v3") else base


class _GraphQLClient(ApiClient):
    """GitHub's GraphQL endpoint: its rate limit is a 200 whose `errors` say RATE_LIMITED, waited out as a 429."""

    def limited(self, response: Any) -> float | None:
        wait = super().limited(response)
        if wait is not None or response.status_code != 200 or b"RATE_LIMITED" not in response.content:
            return wait
        try:
            errors = response.json().get("errors")
        except (ValueError, AttributeError):
            return None
        if isinstance(errors, list) and any(isinstance(e, dict) and e.get("type") == "RATE_LIMITED" for e in errors):
            return retry_after(response) or reset_wait(response) or 0.0
        return None


class GitHubApi(ApiClient):
    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0, deadline: float | None = None,
                 graphql_url: str | None = None) -> None:
        base = api_base(base_url)
        check_token(token)
        headers = {"Authorization": f"Bearer {token}", "X-GitHub-Api-Version": "2022-11-28"}
        deadline = deadline if deadline is not None else time.monotonic() + 300.0
        super().__init__(base, headers=headers, secrets=(token,), variable="GITHUB_API_URL", timeout=timeout,
                         deadline=deadline, json_accept="application/vnd.github+json")
        # The runner's GITHUB_GRAPHQL_URL names the endpoint (a proxy, or GitHub Enterprise Server's); without it,
        # the one beside GITHUB_API_URL.
        given = (graphql_url or "").strip()
        url = api_root(given, "", "GITHUB_GRAPHQL_URL") if given else graphql_root(self.base) + "/graphql"
        root, self._graphql_path = (url.rsplit("/", 1) if urlsplit(url).path.strip("/") else (url, ""))
        self._graphql_variable = "GITHUB_GRAPHQL_URL" if given else "GITHUB_API_URL"
        self._graphql_url = url
        self._graphql = _GraphQLClient(root, headers=headers, secrets=(token,), variable=self._graphql_variable,
                                       timeout=timeout, deadline=deadline)

    def graphql(self, document: str, variables: Mapping[str, Any]) -> dict[str, Any]:
        """The `data` of one GraphQL request; any error in the answer is an ApiRefusal."""
        try:
            answer = self._graphql.post(self._graphql_path, {"query": document, "variables": dict(variables)})
        except ApiRefusal as exc:
            if exc.status in (404, 405):  # the endpoint itself is not there: not a pull request nobody can find
                raise ApiRefusal(None, f"no GraphQL endpoint at {self._graphql_url} (HTTP {exc.status}; "
                                       f"{self._graphql_variable} names it)") from None
            raise
        if not isinstance(answer, dict):
            raise ApiRefusal(200, "the GraphQL answer is not an object")
        errors = answer.get("errors")
        if errors:
            raise self._refusal(errors)
        data = answer.get("data")
        if not isinstance(data, dict):
            raise ApiRefusal(200, "the GraphQL answer has no data")
        return data

    def _refusal(self, errors: Any) -> ApiRefusal:
        found = [e for e in errors if isinstance(e, dict)] if isinstance(errors, list) else []
        kinds = [e.get("type") for e in found if isinstance(e.get("type"), str)]
        words = "; ".join(dict.fromkeys(str(e.get("message") or "") for e in found if e.get("message")))
        text = f"{words or 'GraphQL error'}" + (f" ({', '.join(dict.fromkeys(kinds))})" if kinds else "")
        status = next((_STATUS[k] for k in kinds if k in _STATUS), 200)
        # only NOT_FOUND means what REST's status would (no such pull request): GraphQL's words name the rest
        return ApiRefusal(status, clip(self.mask(" ".join(text.split())), MAX_ERROR_CHARS), hint=status == 404)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._graphql.__exit__(exc_type, exc, tb)
        super().__exit__(exc_type, exc, tb)
