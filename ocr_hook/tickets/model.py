"""The types of linked tickets (issue 60): what was found in the change's texts, what was read. Pure.

NamedTuples like checks.model: a run without tickets never pays for dataclass creation.
"""

from __future__ import annotations

from typing import NamedTuple

from ocr_hook.checks.model import Ticket

SOURCES = ("github", "gitlab", "azure", "gitea", "jira")
ORIGINS = ("closing", "title", "body", "branch", "commit")  # the order references are taken in
CLIP = 4000  # characters of a ticket's body the model is given; the rest is said in words (TicketText.left_out)


class Reference(NamedTuple):
    """A ticket the change names (or the forge links to it), before it is read."""

    source: str  # github | gitlab | azure | gitea | jira
    key: str  # as shown: "#12", "owner/repo#3", "ABC-123", "AB#77"
    repo: str | None  # None: this repository (or, for jira, the site the settings name)
    number: int | None  # the issue/work-item number; None for a Jira key
    origin: str  # closing | body | title | branch | commit


class TicketText(NamedTuple):
    """One ticket as read: its record for the reports and its body for the model (untrusted, clipped)."""

    ticket: Ticket  # key, title, url, source, clipped
    body: str  # the description (acceptance criteria and all), clipped to the read's `clip` characters
    left_out: str = ""  # "" or what clipping left out, in words ("1,234 more characters")


class TicketsRead(NamedTuple):
    """What one read gave: the tickets (at most the limit, closing references first) and one note per ticket
    skipped (another repository's pull request, a ticket the token cannot read) or per source that failed."""

    tickets: tuple[TicketText, ...] = ()
    notes: tuple[str, ...] = ()
    failed: bool = False  # a whole source could not be read (outage, refusal): the last verdict is carried


def left_out(total: int, clip: int) -> str:
    """The words for what clipping a body of `total` characters to `clip` left out ("" when nothing)."""
    return "" if total <= clip else f"{total - clip:,} more characters not shown"


def clipped(ticket: Ticket, body: str, clip: int) -> TicketText:
    """A ticket and its body clipped to `clip` characters, with the ticket record saying so."""
    body = body or ""
    if len(body) <= clip:
        return TicketText(ticket._replace(clipped=False), body, "")
    return TicketText(ticket._replace(clipped=True), body[:clip], left_out(len(body), clip))
