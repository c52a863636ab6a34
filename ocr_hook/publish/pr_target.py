"""Which pull request to publish on, from the variables a GitHub Actions runner sets.

GITHUB_REPOSITORY is owner/name; the number and head commit come from the `pull_request` object of
the event payload at GITHUB_EVENT_PATH (pull_request and pull_request_target events carry it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class PullRequest:
    repository: str  # owner/name
    number: int
    head_sha: str

    def __str__(self) -> str:
        return f"{self.repository}#{self.number}"


class NoPullRequest(Exception):
    """Nothing to publish on; the message says why, in a few words."""


def pull_request(environ: Mapping[str, str]) -> PullRequest:
    repository = environ.get("GITHUB_REPOSITORY", "").strip()
    if not _REPO.fullmatch(repository):
        raise NoPullRequest("GITHUB_REPOSITORY is not set to owner/name")
    path = environ.get("GITHUB_EVENT_PATH", "").strip()
    event_name = environ.get("GITHUB_EVENT_NAME", "").strip() or "unknown"
    if not path:
        raise NoPullRequest("no GITHUB_EVENT_PATH: not a GitHub Actions run")
    try:
        with open(path, encoding="utf-8") as fh:
            payload = json.load(fh)
    except (OSError, ValueError) as exc:
        raise NoPullRequest(f"cannot read the event payload GITHUB_EVENT_PATH: {exc.__class__.__name__}") from None
    pull = payload.get("pull_request") if isinstance(payload, dict) else None
    if not isinstance(pull, dict):
        raise NoPullRequest(f"not a pull request (event {event_name})")
    number, head = pull.get("number"), pull.get("head")
    sha = head.get("sha") if isinstance(head, dict) else None
    if not isinstance(number, int) or number < 1 or not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise NoPullRequest(f"the {event_name} event payload has no pull request number and head sha")
    return PullRequest(repository, number, sha)
