"""Jira tickets for the linked-issues check (issue 60): keys of the listed projects, read from the one site the
trusted settings name (I/O at the edge; `adf_text` is pure).

Only what the trusted settings say is used: the site is `tickets.jira.url` and the keys those of
`tickets.jira.projects` (a key of any other project is never fetched: `SHA-256` is not a ticket); nothing in
the pull request, its settings or the environment can point the read at another host. The credentials come
from the environment, never from a file:
* Jira Cloud: `JIRA_EMAIL` and `JIRA_API_TOKEN` (an API token of that Atlassian account), sent as basic
  authentication; REST v3, `GET /rest/api/3/issue/{key}?fields=summary,description`, whose description is an
  Atlassian Document Format tree (`adf_text` flattens it to text);
* Jira Data Center (and Server): `JIRA_API_TOKEN` alone (no `JIRA_EMAIL`), a personal access token sent as a
  bearer token; REST v2, the same read, whose description is plain text (wiki markup).
No credentials: one note and no ticket. A ticket the token cannot read (Jira answers 404 for an issue that does
not exist and for one the account may not see, 403 for some) is one note each and is skipped; a refusal of the
site itself (401, an outage, the deadline) ends the read with one note, `failed` (the check keeps its last
verdict). Requests go through publish.api_client.ApiClient: its retries of 429 and 503 within the deadline, its
masking of the token in every message, no redirect followed with the credentials.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ocr_hook.checks.model import Ticket
from ocr_hook.publish.api_client import ApiClient, ApiRefusal, check_token
from ocr_hook.publish.plan import one_line
from ocr_hook.publish.ticket_text import adf_text
from ocr_hook.tickets.model import Reference, TicketsRead, TicketText, clipped

if TYPE_CHECKING:
    from ocr_hook.settings import JiraSettings

EMAIL, TOKEN = "JIRA_EMAIL", "JIRA_API_TOKEN"
UNREADABLE = (403, 404)


def read_jira(refs: Sequence[Reference], settings: JiraSettings, environ: Mapping[str, str], deadline: float,
              clip: int) -> TicketsRead:
    """The Jira tickets `refs` name, of the projects `settings` lists, from `settings.url`; each body clipped to
    `clip` characters. `deadline` (time.monotonic()) bounds every request."""
    projects = frozenset(settings.projects)
    keys: list[str] = []
    for ref in refs:
        key = ref.key.upper()
        if ref.source == "jira" and key.rsplit("-", 1)[0] in projects and key not in keys:
            keys.append(key)
    if not keys:
        return TicketsRead()
    credentials = _credentials(environ)
    if credentials is None:
        return TicketsRead(notes=(f"Jira tickets not read: no {TOKEN} in the environment (with {EMAIL} for Jira "
                                  "Cloud; alone, a Jira Data Center personal access token)",))
    headers, secrets, version = credentials
    if deadline <= time.monotonic():
        return TicketsRead(notes=("Jira tickets not read: the review's --timeout had passed",), failed=True)
    tickets: list[TicketText] = []
    notes: list[str] = []
    try:
        for secret in secrets[:1]:
            check_token(secret)
        with ApiClient(settings.url, headers=headers, secrets=secrets, variable="tickets.jira.url",
                       deadline=deadline) as api:
            for key in keys:
                try:
                    issue = api.get(f"rest/api/{version}/issue/{key}", {"fields": "summary,description"})
                except ApiRefusal as exc:
                    if exc.status not in UNREADABLE:
                        raise
                    notes.append(f"Jira ticket {key} skipped: the token cannot read it (HTTP {exc.status})")
                    continue
                tickets.append(_ticket(issue, key, settings.url, clip))
    except ApiRefusal as exc:
        notes.append(f"Jira tickets on {settings.url} not read: {one_line(str(exc))}")
        return TicketsRead(tuple(tickets), tuple(notes), failed=True)
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        notes.append(f"Jira tickets on {settings.url} not read: the answer has a shape Jira's API does not "
                     f"describe ({exc.__class__.__name__})")
        return TicketsRead(tuple(tickets), tuple(notes), failed=True)
    return TicketsRead(tuple(tickets), tuple(notes))


def _credentials(environ: Mapping[str, str]) -> tuple[dict[str, str], tuple[str, ...], str] | None:
    """(headers, secrets to mask, REST version) from the environment, or None: with an email, Jira Cloud's
    basic authentication and REST v3; the token alone, Jira Data Center's bearer token and REST v2."""
    email, token = environ.get(EMAIL, "").strip(), environ.get(TOKEN, "").strip()
    if not token:
        return None
    if email:
        encoded = base64.b64encode(f"{email}:{token}".encode()).decode("ascii")
        return {"Authorization": f"Basic {encoded}"}, (token, encoded), "3"
    return {"Authorization": f"Bearer {token}"}, (token,), "2"


def _ticket(issue: Any, key: str, site: str, clip: int) -> TicketText:
    fields = issue.get("fields") if isinstance(issue, dict) else None
    if not isinstance(fields, dict):
        raise TypeError("an issue without fields")
    title, description = fields.get("summary"), fields.get("description")
    body = adf_text(description) if isinstance(description, dict) else description if isinstance(description,
                                                                                                    str) else ""
    return clipped(Ticket(key, title if isinstance(title, str) else "", f"{site.rstrip('/')}/browse/{key}", "jira"),
                   body, clip)
