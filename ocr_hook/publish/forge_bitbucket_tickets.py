"""Bitbucket Cloud and the linked-issues check (issue 60): its own issue tracker is not read.

Bitbucket Cloud's issues are a legacy tracker most teams have replaced with Jira, and a pull request has no
closing references in its API. So on Bitbucket the linked tickets are the Jira keys of the listed projects in
the branch, title and description (tickets/jira.py, with `tickets.jira`), and the adapter says once that no
Bitbucket issue was read. Bitbucket Pipelines names the branch (BITBUCKET_BRANCH) but not the pull request's
title and description: `request_text` gives them from the pull request itself (`GET …/pullrequests/{id}`: its
`title` and `summary.raw`), read with BITBUCKET_ACCESS_TOKEN (the Pipelines proxy signs Code Insights only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ocr_hook.tickets.model import Reference, TicketsRead

NOTE = ("Bitbucket Cloud's own issues are not read: on Bitbucket the linked tickets are the Jira keys (tickets.jira) "
        "in the branch, title and description")


def linked_tickets(refs: Sequence[Reference], limit: int, clip: int) -> TicketsRead:
    del refs, limit, clip  # Bitbucket has no references of its own kind (tickets/refs.py finds none for it)
    return TicketsRead(notes=(NOTE,))


def request_text(pull: Any) -> str:
    """A pull request's title and description (Bitbucket's `summary.raw`), as the reply of GET …/pullrequests/{id}."""
    if not isinstance(pull, dict):
        raise TypeError("the pull request is not an object")
    summary = pull.get("summary")
    parts = (pull.get("title"), summary.get("raw") if isinstance(summary, dict) else None)
    return "\n\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
