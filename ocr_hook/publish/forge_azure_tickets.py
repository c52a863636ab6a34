"""An Azure DevOps pull request's linked work items, for the linked-issues check (issue 60; read-only).

The work items linked to the pull request (`GET …/pullRequests/{id}/workitems`) first, then the `AB#N`
references found in its texts (tickets/refs.py), read together in one request: `GET {project}/_apis/wit/
workitems?ids=…&fields=System.Title,System.Description,Microsoft.VSTS.Common.AcceptanceCriteria&errorPolicy=omit`
(Work Items - List, at most 200 ids). With `errorPolicy=omit` Azure answers null for an id the token may not
read or that does not exist: one note each, skipped. The description and acceptance criteria are HTML; the
model gets their text only (`html_text`: tags dropped, entities decoded, blocks on their own lines), so no
markup of the ticket's author reaches a prompt or a report. Token scope: Work Items (Read), `vso.work`; the
pipeline's SYSTEM_ACCESSTOKEN has it when the build service may read the project's work items.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from ocr_hook.checks.model import Ticket
from ocr_hook.publish.api_client import ApiClient
from ocr_hook.publish.ticket_text import html_text
from ocr_hook.tickets.model import Reference, TicketsRead, TicketText, clipped

FIELDS = ("System.Title", "System.Description", "Microsoft.VSTS.Common.AcceptanceCriteria")
MAX_IDS = 200  # Work Items - List takes at most 200 ids


def linked_tickets(api: ApiClient, project: str, pull: str, web_root: str, refs: Sequence[Reference], limit: int,
                   clip: int, version: str) -> TicketsRead:
    """`pull`: the pull request's API path (…/pullRequests/{id}); `web_root`: the collection URL (work items'
    pages). At most `limit` work items, the linked ones first."""
    ids: list[int] = []
    linked = api.get(f"{pull}/workitems", {"api-version": version})
    values = linked.get("value") if isinstance(linked, dict) else None
    if not isinstance(values, list):
        raise TypeError("the linked work items are not a list")
    for item in values:
        number = int(str(item.get("id"))) if isinstance(item, dict) else None
        if number is not None and number not in ids:
            ids.append(number)
    ids += [r.number for r in refs if r.source == "azure" and r.number is not None and r.number not in ids]
    ids = ids[:min(limit, MAX_IDS)]
    if not ids:
        return TicketsRead()
    got = api.get(f"{quote(project, safe='')}/_apis/wit/workitems", {
        "ids": ",".join(map(str, ids)), "fields": ",".join(FIELDS), "errorPolicy": "omit", "api-version": version})
    items = got.get("value") if isinstance(got, dict) else None
    if not isinstance(items, list):
        raise TypeError("the work items are not a list")
    by_id = {i.get("id"): i for i in items if isinstance(i, dict)}
    tickets: list[TicketText] = []
    notes: list[str] = []
    for number in ids:
        item = by_id.get(number)
        if item is None:
            notes.append(f"Azure DevOps work item AB#{number} skipped: the token cannot read it, or there is none")
            continue
        fields = item.get("fields") if isinstance(item.get("fields"), dict) else {}
        tickets.append(_ticket(number, fields, f"{web_root.rstrip('/')}/{quote(project, safe='')}/_workitems/"
                                               f"edit/{number}" if web_root else "", clip))
    return TicketsRead(tuple(tickets), tuple(notes))


def _ticket(number: int, fields: dict[str, Any], url: str, clip: int) -> TicketText:
    title = fields.get("System.Title")
    description = html_text(str(fields.get("System.Description") or ""))
    criteria = html_text(str(fields.get("Microsoft.VSTS.Common.AcceptanceCriteria") or ""))
    # acceptance criteria first: the check restates them before anything else, and clipping keeps them
    body = "\n\n".join(p for p in (f"Acceptance criteria:\n{criteria}" if criteria else "", description) if p)
    return clipped(Ticket(f"AB#{number}", title if isinstance(title, str) else "", url, "azure"), body, clip)


def request_text(pull: dict[str, Any]) -> str:
    """The pull request's title and description (Azure Pipelines' variables name neither): `AB#N` in them."""
    parts = (pull.get("title"), pull.get("description"))
    return "\n\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
