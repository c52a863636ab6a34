"""GitHub's linked tickets (issue 60): the pull request's closing references and the issues its texts name,
read through GraphQL (`closingIssuesReferences`, `issueOrPullRequest`) with the token `publish` uses (an
Actions token needs `issues: read`). Read-only.

The closing references come first (GitHub's own list: the body's closing keywords and the issues linked in
the sidebar), then the references tickets/refs.py found; at most `limit`. A reference to a pull request is
not a ticket, and an issue the token cannot see (another repository, a private one) is left out: one note
each. A refusal of the closing references themselves is the caller's (publish/tickets_read.py: a note, and
the check carries its last verdict).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ocr_hook.checks.model import Ticket
from ocr_hook.publish.api_client import ApiRefusal
from ocr_hook.publish.github_api import GitHubApi
from ocr_hook.publish.plan import one_line
from ocr_hook.tickets.model import Reference, TicketsRead, TicketText, clipped
from ocr_hook.tickets.refs import identity

CLOSING = """query($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      closingIssuesReferences(first: $first, after: $after) {
        nodes { number title body url repository { nameWithOwner } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}"""

ISSUE = """query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    issueOrPullRequest(number: $number) {
      __typename
      ... on Issue { number title body url }
      ... on PullRequest { number url }
    }
  }
}"""

MAX_PAGES = 5


def linked_tickets(api: GitHubApi, repository: str, number: int, refs: Sequence[Reference], limit: int,
                   clip: int) -> TicketsRead:
    """The tickets of pull request `repository#number`: its closing references, then `refs` (GitHub's)."""
    out: list[TicketText] = []
    notes: list[str] = []
    seen: set[tuple[str, str | None, str]] = set()
    for node in _closing(api, repository, number, limit):
        ref = _reference(str(node["repository"]["nameWithOwner"]), int(node["number"]), repository, "closing")
        if identity(ref) in seen or len(out) >= limit:
            continue
        seen.add(identity(ref))
        out.append(_text(ref, node, clip))
    left = 0
    for given in refs:
        if given.source != "github" or given.number is None:
            continue
        ref = _reference(given.repo or repository, given.number, repository, given.origin)
        if identity(ref) in seen:
            continue
        seen.add(identity(ref))
        if len(out) >= limit:
            left += 1
            continue
        owner, name = (ref.repo or repository).split("/", 1)
        try:
            found = (api.graphql(ISSUE, {"owner": owner, "name": name, "number": ref.number}).get("repository")
                     or {}).get("issueOrPullRequest")
        except ApiRefusal as exc:
            if exc.status not in (403, 404):  # an outage, a bad token: the whole read's
                raise
            notes.append(f"ticket {ref.key} not read: {one_line(str(exc), 160)}")
            continue
        if not isinstance(found, dict):
            notes.append(f"ticket {ref.key} not read: no such issue")
        elif found.get("__typename") != "Issue":
            notes.append(f"{ref.key} is a pull request, not a ticket: not read")
        else:
            out.append(_text(ref, found, clip))
    if left:
        notes.append(f"{left} more linked ticket(s) not read: tickets.max is {limit}")
    return TicketsRead(tuple(out), tuple(notes))


def _closing(api: GitHubApi, repository: str, number: int, limit: int) -> list[dict[str, Any]]:
    owner, name = repository.split("/", 1)
    nodes: list[dict[str, Any]] = []
    after = None
    for _ in range(MAX_PAGES):
        data = api.graphql(CLOSING, {"owner": owner, "name": name, "number": number, "first": min(limit, 100),
                                     "after": after})
        connection = data["repository"]["pullRequest"]["closingIssuesReferences"] or {}
        nodes += [n for n in connection.get("nodes") or () if isinstance(n, dict)]
        page = connection.get("pageInfo") or {}
        if len(nodes) >= limit or not page.get("hasNextPage"):
            break
        after = page.get("endCursor")
    return nodes[:limit]


def _reference(repo: str, number: int, this: str, origin: str) -> Reference:
    if repo.lower() == this.lower():
        return Reference("github", f"#{number}", None, number, origin)
    return Reference("github", f"{repo}#{number}", repo, number, origin)


def _text(ref: Reference, node: dict[str, Any], clip: int) -> TicketText:
    title, url, body = node.get("title"), node.get("url"), node.get("body")
    if not isinstance(title, str) or not isinstance(url, str):
        raise TypeError("an issue without a title or url")
    return clipped(Ticket(ref.key, title, url, "github"), body if isinstance(body, str) else "", clip)
