"""Bitbucket Cloud and the linked-issues check (issue 60): its own issue tracker is not read.

Bitbucket Cloud's issues are a legacy tracker most teams have replaced with Jira, and a pull request has no
closing references in its API. So on Bitbucket the linked tickets are the Jira keys of the listed projects in
the branch, title and description (tickets/jira.py, with `tickets.jira`), and the adapter says once that no
Bitbucket issue was read.
"""

from __future__ import annotations

from collections.abc import Sequence

from ocr_hook.tickets.model import Reference, TicketsRead

NOTE = ("Bitbucket Cloud's own issues are not read: on Bitbucket the linked tickets are the Jira keys (tickets.jira) "
        "in the branch, title and description")


def linked_tickets(refs: Sequence[Reference], limit: int, clip: int) -> TicketsRead:
    del refs, limit, clip  # Bitbucket has no references of its own kind (tickets/refs.py finds none for it)
    return TicketsRead(notes=(NOTE,))
