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

from ocr_hook.settings import TicketSettings
from ocr_hook.tickets.model import CLIP, TicketsRead
from ocr_hook.tickets.refs import Texts, find

# Where each forge's web pages are (issue URLs in a body are references only to these), from its CI variables.
_WEB_ROOT = {"github": ("GITHUB_SERVER_URL", "https://github.com"), "gitea": ("GITHUB_SERVER_URL", ""),
             "gitlab": ("CI_SERVER_URL", "https://gitlab.com"), "azure": ("SYSTEM_COLLECTIONURI", "")}


def web_root(forge: str, environ: Mapping[str, str]) -> str:
    name, default = _WEB_ROOT.get(forge, ("", ""))
    return (environ.get(name, "") if name else "").strip().rstrip("/") or default


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
