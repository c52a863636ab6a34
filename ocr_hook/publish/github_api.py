"""The GitHub REST client: the shared ApiClient with GitHub's headers and root (GITHUB_API_URL).

The token goes in the Authorization header of requests to GITHUB_API_URL and nowhere else (api_client
says how that is kept); the SARIF upload (code_scanning) and the pull-request review both use it.
"""

from __future__ import annotations

import time

from ocr_hook.publish.api_client import ApiClient, ApiRefusal, api_root, check_token, error_message

__all__ = ["DEFAULT_API_URL", "ApiRefusal", "GitHubApi", "api_base", "error_message"]

DEFAULT_API_URL = "https://api.github.com"


def api_base(value: str | None) -> str:
    """GITHUB_API_URL (GitHub Enterprise Server sets its own), without a trailing slash."""
    return api_root(value, DEFAULT_API_URL, "GITHUB_API_URL")


class GitHubApi(ApiClient):
    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0, deadline: float | None = None) -> None:
        base = api_base(base_url)
        check_token(token)
        super().__init__(base, headers={"Authorization": f"Bearer {token}", "X-GitHub-Api-Version": "2022-11-28"},
                         secrets=(token,), variable="GITHUB_API_URL", timeout=timeout,
                         deadline=deadline if deadline is not None else time.monotonic() + 300.0,
                         json_accept="application/vnd.github+json")
