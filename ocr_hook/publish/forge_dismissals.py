"""What people decided on the pull request, for the review in CI (DESIGN.md 18): the findings a person with
write access dismissed by resolving ocr-hook's thread (I/O at the edge; the rules are plan.forge_dismissals).

Read-only: the adapter's identity(), existing() and author(), and on a forge whose thread listing lacks
reactions (GitLab, Gitea) its thumbs() for each of ocr-hook's own comments, nothing written. Only in a CI run of a known
forge with its token (the same variables `ocr-hook publish` reads); anything else reads nothing and says
nothing. A refusal, an outage or an answer of the wrong shape is one note for the review and dismisses
nothing: the gate then counts every finding, as it would without the forge. The reactions read one comment at
a time come last: the deadline reached among them is no error (the feedback is partial, the dismissals count),
and a refusal there is a note that leaves the dismissals standing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ocr_hook.checks.model import Override
from ocr_hook.findings.dismissals import ForgeDismissal
from ocr_hook.publish.api_client import ApiRefusal
from ocr_hook.publish.forges import NotApplicable, Setup, detect, open_adapter
from ocr_hook.publish.plan import Posted, check_overrides, earlier, forge_dismissals, one_line


@dataclass(frozen=True, slots=True)
class Read:
    found: Mapping[str, ForgeDismissal] = field(default_factory=dict)  # fingerprint → who dismissed it
    where: str = ""  # "GitLab merge request group/app!3", when a request was read
    note: str | None = None  # why nothing could be read, for the review's notes
    # fingerprint → what people left on ocr-hook's comment (thumbs_up, thumbs_down, replies): the review history
    # keeps it for `ocr-hook outcomes`
    feedback: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # check key (publish.check_threads.check_key) → the override a person made by resolving that check's thread
    checks: Mapping[str, Override] = field(default_factory=dict)


def read(environ: Mapping[str, str], deadline: float, checkout: Path | None, *, forge: str = "auto",
         quiet: bool = True, feedback: bool = True) -> Read:
    """The request's person-made dismissals; `deadline` (time.monotonic()) bounds every request. `quiet`: no
    pull request or no token is no note (the review outside a pull request); else it is one. `feedback`: the
    reactions too (the review's history keeps them; `dismiss --from-forge` needs none)."""
    if deadline <= time.monotonic():
        return Read(note="dismissals on the pull request not read: the review's --timeout had passed")
    try:
        forge = detect(environ) if forge == "auto" else forge
        adapter = open_adapter(forge, Setup(environ, deadline, checkout))
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
        try:
            me = adapter.identity()
            posted = adapter.existing()
            author = adapter.author()
            found = forge_dismissals(posted, me, author, where)
            checks = check_overrides(posted, me, author, forge)
            before = earlier(posted, me)  # ocr-hook's own threads, by fingerprint
        except ApiRefusal as exc:
            hint = adapter.hints.get(exc.status or 0) if exc.hint else None
            return Read(where=where, note=f"dismissals on {where} not read: {one_line(str(exc))}"
                                          + (f" ({hint})" if hint else "") + "; every finding counts")
        except (TypeError, ValueError, AttributeError, KeyError, OverflowError) as exc:
            return Read(where=where, note=f"dismissals on {where} not read: {adapter.forge} answered with a shape "
                                          f"its API does not describe ({exc.__class__.__name__}); every finding counts")
        threads, note = _with_thumbs(adapter, before.threads, deadline, where) if feedback else (before.threads, None)
        # a person whose access the forge would not tell (Azure: the permission read was refused) dismissed nothing
        note = "; ".join(n for n in (getattr(adapter, "note", None), note) if n) or None
    finally:
        adapter.close()
    return Read(found, where, note=note, feedback=reactions(threads, before.names), checks=checks)


def _with_thumbs(adapter: object, threads: Mapping[str, Posted], deadline: float,
                 where: str) -> tuple[dict[str, Posted], str | None]:
    """Our threads with 👍/👎 on their opening comments, on a forge that needs a request per comment for them
    (the adapter's thumbs()); as many as the deadline leaves. A refusal stops there and is the note."""
    out = dict(threads)
    thumbs = getattr(adapter, "thumbs", None)
    if thumbs is None:
        return out, None
    for fp, p in threads.items():
        try:
            up, down = thumbs(p)
        except ApiRefusal as exc:
            if time.monotonic() >= deadline:
                return out, None  # what the --timeout left: the feedback is partial, nothing failed
            return out, f"reactions on {where} not read: {one_line(str(exc))}; the dismissals count"
        except (TypeError, ValueError, AttributeError, KeyError, OverflowError) as exc:
            return out, (f"reactions on {where} not read: the answer has a shape the forge's API does not "
                         f"describe ({exc.__class__.__name__}); the dismissals count")
        out[fp] = replace(p, thumbs_up=up, thumbs_down=down)
    return out, None


def reactions(threads: Mapping[str, Posted], names: frozenset[str]) -> dict[str, dict[str, int]]:
    """Per fingerprint of ocr-hook's own threads, the people's 👍, 👎 and replies on it (none: left out)."""
    out: dict[str, dict[str, int]] = {}
    for fp, p in threads.items():
        replies = sum(1 for r in p.replies if not r.bot and r.author not in names)
        if p.thumbs_up or p.thumbs_down or replies:
            out[fp] = {"thumbs_up": p.thumbs_up, "thumbs_down": p.thumbs_down, "replies": replies}
    return out
