"""A Gitea (or Forgejo) pull request's linked issues, for the linked-issues check (issue 60; read-only).

Gitea's API has no closing references of a pull request: the tickets are the `#N`, `owner/repo#N` and issue
URLs found in its texts (tickets/refs.py), each read with `GET /repos/{owner}/{repo}/issues/{index}` (issueGetIssue).
Gitea numbers issues and pull requests together, and that read answers for both: a pull request (its
`pull_request` set) is not a ticket, and is skipped with one note (another repository's, or this one's). An
issue the token cannot read (403, 404) is one note and is skipped; any other refusal ends the read (the
caller's note). Token: a personal access token with `read:issue`, or the Actions job token.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ocr_hook.checks.model import Ticket
from ocr_hook.publish.api_client import ApiClient, ApiRefusal
from ocr_hook.tickets.model import Reference, TicketsRead, TicketText, clipped

UNREADABLE = (403, 404)


def linked_tickets(api: ApiClient, repository: str, refs: Sequence[Reference], limit: int,
                   clip: int) -> TicketsRead:
    """`repository`: owner/name of the pull request's repository. At most `limit` tickets, in `refs`' order."""
    tickets: list[TicketText] = []
    notes: list[str] = []
    seen: set[tuple[str, int]] = set()
    for ref in refs:
        if ref.source != "gitea" or ref.number is None or len(tickets) >= limit:
            continue
        repo = None if ref.repo is None or ref.repo.lower() == repository.lower() else ref.repo
        if ((repo or "").lower(), ref.number) in seen:
            continue
        seen.add(((repo or "").lower(), ref.number))
        key = f"{repo}#{ref.number}" if repo else f"#{ref.number}"
        if repo and (repo.count("/") != 1 or any(part in ("", ".", "..") for part in repo.split("/"))):
            notes.append(f"Gitea issue {key} skipped: not an owner/name reference")
            continue
        try:
            issue = api.get(f"repos/{repo or repository}/issues/{ref.number}")
        except ApiRefusal as exc:
            if exc.status not in UNREADABLE:
                raise
            notes.append(f"Gitea issue {key} skipped: the token cannot read it (HTTP {exc.status})")
            continue
        if not isinstance(issue, dict):
            raise TypeError("an issue that is not an object")
        if issue.get("pull_request"):
            notes.append(f"Gitea {key} skipped: it is a pull request{' of another repository' if repo else ''}, "
                         "not an issue")
            continue
        tickets.append(_ticket(issue, key, clip))
    return TicketsRead(tuple(tickets), tuple(notes))


def _ticket(issue: dict[str, Any], key: str, clip: int) -> TicketText:
    title, url, body = issue.get("title"), issue.get("html_url"), issue.get("body")
    return clipped(Ticket(key, title if isinstance(title, str) else "", url if isinstance(url, str) else "",
                          "gitea"), body if isinstance(body, str) else "", clip)
