"""A GitLab merge request's linked issues, for the linked-issues check (issue 60; read-only, I/O at the edge).

The merge request's own closing references first (`GET …/merge_requests/:iid/closes_issues`: the issues GitLab
will close on merge, from "Closes #12" in its description or commits; an external tracker's issue there, which
GitLab's Jira integration lists as {id, title}, is left to the Jira reader), then the `#N` and `group/project#N`
references found in its texts (tickets/refs.py), each read with `GET /projects/:id/issues/:iid`. GitLab keeps
merge requests apart (`!N`), so a `#N` is always an issue. An issue the token cannot read (403, 404: another
project it has no access to, a confidential issue) is one note and is skipped; any other refusal ends the read
(the caller's note). Token scope: `read_api` reads both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from ocr_hook.checks.model import Ticket
from ocr_hook.publish.api_client import ApiClient, ApiRefusal
from ocr_hook.tickets.model import Reference, TicketsRead, TicketText, clipped

UNREADABLE = (403, 404)


def linked_tickets(api: ApiClient, project: str, project_path: str, iid: int, refs: Sequence[Reference],
                   limit: int, clip: int) -> TicketsRead:
    """`project`: the id (or path) the adapter addresses the project by; `project_path`: group/project, for
    keys. At most `limit` tickets, closing references first."""
    tickets: list[TicketText] = []
    notes: list[str] = []
    seen: set[tuple[str, int]] = set()
    here = quote(project, safe="")
    for issue in api.get_all(f"projects/{here}/merge_requests/{iid}/closes_issues"):
        if len(tickets) >= limit:
            break
        number = issue.get("iid")
        if not isinstance(number, int) or isinstance(number, bool):
            continue  # an external tracker's issue ({id: "ABC-1", title}, GitLab's Jira integration): not GitLab's
        other = _other_project(issue, project, project_path)
        seen.add(((other or "").lower(), number))
        tickets.append(_ticket(issue, f"{other}#{number}" if other else f"#{number}", clip))
    for ref in refs:
        if ref.source != "gitlab" or ref.number is None or len(tickets) >= limit:
            continue
        repo = None if ref.repo is None or ref.repo.lower() == project_path.lower() else ref.repo
        if ((repo or "").lower(), ref.number) in seen:
            continue
        seen.add(((repo or "").lower(), ref.number))
        key = f"{repo}#{ref.number}" if repo else f"#{ref.number}"
        try:
            issue = api.get(f"projects/{quote(repo or project, safe='')}/issues/{ref.number}")
        except ApiRefusal as exc:
            if exc.status not in UNREADABLE:
                raise
            notes.append(f"GitLab issue {key} skipped: the token cannot read it (HTTP {exc.status})")
            continue
        if not isinstance(issue, dict):
            raise TypeError("an issue that is not an object")
        tickets.append(_ticket(issue, key, clip))
    return TicketsRead(tuple(tickets), tuple(notes))


def _other_project(issue: dict[str, Any], project: str, project_path: str) -> str | None:
    """The group/project of a closing issue in another project, None for this one."""
    pid = issue.get("project_id")
    if str(pid) == project or not isinstance(pid, int):
        return None
    refs = issue.get("references")
    full = refs.get("full") if isinstance(refs, dict) else None
    if isinstance(full, str) and "#" in full:
        path = full.rsplit("#", 1)[0]
        return None if path.lower() == project_path.lower() else path
    return str(pid)


def _ticket(issue: dict[str, Any], key: str, clip: int) -> TicketText:
    title, url, body = issue.get("title"), issue.get("web_url"), issue.get("description")
    return clipped(Ticket(key, title if isinstance(title, str) else "", url if isinstance(url, str) else "",
                          "gitlab"), body if isinstance(body, str) else "", clip)
