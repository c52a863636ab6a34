"""What people decided on the pull request, for the review in CI (DESIGN.md 18): the findings a person with
write access dismissed by resolving ocr-hook's thread (I/O at the edge; the rules are plan.forge_dismissals).

Read-only: the adapter's identity(), existing() and author(), nothing written. Only in a CI run of a known
forge with its token (the same variables `ocr-hook publish` reads); anything else reads nothing and says
nothing. A refusal, an outage or an answer of the wrong shape is one note for the review and dismisses
nothing: the gate then counts every finding, as it would without the forge.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ocr_hook.findings.dismissals import ForgeDismissal
from ocr_hook.publish.api_client import ApiRefusal
from ocr_hook.publish.forges import NotApplicable, Setup, detect, open_adapter
from ocr_hook.publish.plan import forge_dismissals, one_line


@dataclass(frozen=True, slots=True)
class Read:
    found: Mapping[str, ForgeDismissal] = field(default_factory=dict)  # fingerprint → who dismissed it
    where: str = ""  # "GitLab merge request group/app!3", when a request was read
    note: str | None = None  # why nothing could be read, for the review's notes


def read(environ: Mapping[str, str], deadline: float, checkout: Path | None, *, forge: str = "auto",
         quiet: bool = True) -> Read:
    """The request's person-made dismissals; `deadline` (time.monotonic()) bounds every request. `quiet`: no
    pull request or no token is no note (the review outside a pull request); else it is one."""
    if deadline <= time.monotonic():
        return Read(note="dismissals on the pull request not read: the review's --timeout had passed")
    try:
        adapter = open_adapter(detect(environ) if forge == "auto" else forge, Setup(environ, deadline, checkout))
    except NotApplicable as exc:  # not a pull request of a known forge, or no token
        return Read() if quiet else Read(note=f"no pull request to read{' (' + exc.target + ')' if exc.target else ''}"
                                              f": {exc.reason}")
    except ApiRefusal as exc:  # a token or URL refused before any request
        return Read(note=f"dismissals on the pull request not read: {one_line(str(exc))}")
    except (TypeError, ValueError, AttributeError, KeyError, OverflowError, OSError) as exc:
        # the CI variables or the event file an adapter reads are not what the forge writes: never the review's end
        return Read(note=f"dismissals on the pull request not read: the CI environment is not what the forge "
                         f"sets ({exc.__class__.__name__})")
    where = f"{adapter.forge} {adapter.kind} {adapter.target}"
    if not hasattr(adapter, "author"):  # an adapter that cannot name the request's author cannot tell a dismissal
        adapter.close()
        return Read(where=where)
    try:
        me = adapter.identity()
        found = forge_dismissals(adapter.existing(), me, adapter.author(), where)
    except ApiRefusal as exc:
        hint = adapter.hints.get(exc.status or 0)
        return Read(where=where, note=f"dismissals on {where} not read: {one_line(str(exc))}"
                                      + (f" ({hint})" if hint else "") + "; every finding counts")
    except (TypeError, ValueError, AttributeError, KeyError, OverflowError) as exc:
        return Read(where=where, note=f"dismissals on {where} not read: {adapter.forge} answered with a shape its "
                                      f"API does not describe ({exc.__class__.__name__}); every finding counts")
    finally:
        adapter.close()
    return Read(found, where)
