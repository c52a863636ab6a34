"""Reading a change's linked tickets, for the review in CI (issue 60; I/O at the edge, like
publish/forge_dismissals.py's `read`). It lives in publish/, not tickets/: it opens the forges' adapters and
Jira's client (publish/jira.py) over publish.api_client, and tickets/ (pure types and parsing) sits below the
agent, which reads those types.

The forge's adapter, opened with the token `ocr-hook publish` uses (the same variables), gives its own
closing references plus the references of its kind found in the change's texts (`linked_tickets`); then Jira,
when the trusted settings name a site (`tickets.jira`). Read-only. No pull request or no token is one note and
no ticket (the check is then not applicable); an outage or a refusal of the whole read is one note and
`TicketsRead.failed` (the check then carries its last verdict, said as such).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ocr_hook.settings import TicketSettings
from ocr_hook.tickets.model import CLIP, Reference, TicketsRead
from ocr_hook.tickets.refs import Texts, find

if TYPE_CHECKING:
    from ocr_hook.changes.model import ChangeSet

# Where each forge's web pages are (issue URLs in a body are references only to these), from its CI variables.
_WEB_ROOT = {"github": ("GITHUB_SERVER_URL", "https://github.com"), "gitea": ("GITHUB_SERVER_URL", ""),
             "gitlab": ("CI_SERVER_URL", "https://gitlab.com"), "azure": ("SYSTEM_COLLECTIONURI", "")}


def web_root(forge: str, environ: Mapping[str, str]) -> str:
    name, default = _WEB_ROOT.get(forge, ("", ""))
    return (environ.get(name, "") if name else "").strip().rstrip("/") or default


class Planned(NamedTuple):
    forge: str | None  # the CI run's forge (None: Jira only)
    texts: Texts
    refs: tuple[Reference, ...]  # what the texts name (the forge's closing references come on top)


def plan(change_set: ChangeSet, tickets: TicketSettings, environ: Mapping[str, str],
         commit_time: bool) -> Planned | None:
    """Whether the tickets are looked for, and in what: None when the built-in check has nothing to say: off;
    at commit time unless `tickets.when: commit`; outside a CI run of a known forge without Jira; and, without
    `tickets:` in the settings, when the change's texts name no ticket (no request then, no line in the output).
    No request is sent here (`ocr-hook checks` shows it)."""
    if tickets.mode == "off" or (commit_time and tickets.when != "commit"):
        return None
    from ocr_hook.publish.forges import NotApplicable, detect

    try:
        forge: str | None = None if commit_time else detect(environ)
    except NotApplicable:
        forge = None
    if forge is None and tickets.jira is None:
        return None
    texts = Texts(body=_request_text(environ) if forge else "", branch=_branch(change_set, environ, commit_time),
                  commits=tuple(_commit_messages(change_set)))
    refs = find(texts, forge or "", repo=environ.get("GITHUB_REPOSITORY", "") if forge == "github" else "",
                web_root=web_root(forge or "", environ),
                jira_projects=tickets.jira.projects if tickets.jira is not None else (), limit=tickets.max)
    if not tickets.configured and not refs:
        return None
    return Planned(forge, texts, refs)


def _request_text(environ: Mapping[str, str]) -> str:
    from ocr_hook.cienv import request_text

    return request_text(environ) or ""


def _branch(change_set: ChangeSet, environ: Mapping[str, str], commit_time: bool) -> str:
    """The branch under review: the CI system's word for it, else (at commit time) the checked-out branch."""
    from ocr_hook.changes import git
    from ocr_hook.cienv import head_branch

    found = head_branch(environ)
    if found or not commit_time:
        return found or ""
    return git.git_text(change_set.repo_root, ["symbolic-ref", "--quiet", "--short", "HEAD"], ok_codes=(0, 1)).strip()


def _commit_messages(change_set: ChangeSet) -> list[str]:
    from ocr_hook.context.intent import commit_messages

    return commit_messages(change_set.repo_root, change_set)


def read(environ: Mapping[str, str], deadline: float, checkout: Path | None, settings: TicketSettings,
         texts: Texts, *, forge: str | None = "auto") -> TicketsRead:
    """The tickets the change links to, at most `settings.max`, the forge's first and then Jira's; `deadline`
    (time.monotonic()) bounds every request. `forge` None: Jira only (a commit-time review, not a CI run)."""
    from ocr_hook.publish.api_client import ApiRefusal
    from ocr_hook.publish.forges import NotApplicable, Setup, detect, open_adapter
    from ocr_hook.publish.plan import one_line

    if deadline <= time.monotonic():
        return TicketsRead(notes=("linked tickets not read: the review's --timeout had passed",), failed=True)
    projects = settings.jira.projects if settings.jira is not None else ()
    tickets, notes, failed = [], [], False
    adapter = None
    try:
        forge = detect(environ) if forge == "auto" else forge
        if forge is not None:
            adapter = open_adapter(forge, Setup(environ, deadline, checkout))
    except NotApplicable as exc:
        notes.append(f"linked tickets on the forge not read: {exc.reason}")
    except ApiRefusal as exc:
        notes.append(f"linked tickets on the forge not read: {one_line(str(exc))}")
        failed = True
    except (TypeError, ValueError, AttributeError, KeyError, OverflowError, OSError) as exc:
        notes.append(f"linked tickets on the forge not read: the CI environment is not what the forge sets "
                     f"({exc.__class__.__name__})")
    if adapter is not None and not (texts.title or texts.body) and hasattr(adapter, "request_text"):
        # Azure Pipelines and Bitbucket Pipelines name no title or description: the adapter reads them
        try:
            texts = texts._replace(body=adapter.request_text())
        except (ApiRefusal, TypeError, ValueError, AttributeError, KeyError) as exc:
            notes.append(f"the {adapter.kind}'s title and description not read: {one_line(str(exc))}")
    refs = find(texts, forge if adapter is not None and forge else "", repo=getattr(adapter, "repository", ""),
                web_root=getattr(adapter, "web_root", "") or web_root(forge or "", environ),
                jira_projects=projects, limit=settings.max)
    if adapter is not None:
        try:
            linked = getattr(adapter, "linked_tickets", None)
            if linked is None:
                notes.append(f"linked tickets are not read on {adapter.forge} by this version")
            else:
                got = linked([r for r in refs if r.source != "jira"], settings.max, CLIP)
                tickets += got.tickets
                notes += got.notes
                failed = failed or got.failed
        except ApiRefusal as exc:
            hint = adapter.hints.get(exc.status or 0) if exc.hint else None
            notes.append(f"linked tickets on {adapter.forge} {adapter.kind} {adapter.target} not read: "
                         f"{one_line(str(exc))}" + (f" ({hint})" if hint else ""))
            failed = True
        except (TypeError, ValueError, AttributeError, KeyError, OverflowError) as exc:
            notes.append(f"linked tickets on {adapter.forge} not read: {adapter.forge} answered with a shape its "
                         f"API does not describe ({exc.__class__.__name__})")
            failed = True
        finally:
            adapter.close()
    jira_refs = [r for r in refs if r.source == "jira"]
    room = settings.max - len(tickets)
    if settings.jira is not None and jira_refs and room > 0:
        from ocr_hook.publish.jira import read_jira

        got = read_jira(jira_refs[:room], settings.jira, environ, deadline, CLIP)
        tickets += got.tickets
        notes += got.notes
        failed = failed or got.failed
    return TicketsRead(tuple(tickets), tuple(notes), failed)
