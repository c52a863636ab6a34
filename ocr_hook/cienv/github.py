"""GitHub Actions, and Gitea and Forgejo Actions (their runners set the same GITHUB_* variables).

Variables:
  GITHUB_BASE_REF    pull_request / pull_request_target events: the target branch's name
                     → base origin/REF (or REF when the clone has no origin/REF)
  GITHUB_EVENT_NAME  "push" for push events
  GITHUB_EVENT_PATH  the event payload (JSON); for a push, its `before` is the commit the branch
                     pointed at before the push → base that commit. All zeros (a new branch) has no
                     base: exit 2 with a hint.
  GITEA_ACTIONS, FORGEJO_ACTIONS   "true" on those runners (Forgejo sets both); only the reported
                                   name changes
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ocr_hook.cienv.guess import Guess, branch_refs, value
from ocr_hook.errors import FatalError

VARIABLES = ("GITHUB_BASE_REF", "GITHUB_EVENT_PATH (push `before`)")
# Set (non-empty) in every job this CI system runs; SHALLOW_FIX: how a job here fetches the whole history,
# in this CI's own words (a shallow clone's fix).
RUNS_HERE = "GITHUB_ACTIONS"
SYSTEM = "GitHub Actions"
SHALLOW_FIX = "`fetch-depth: 0` in the actions/checkout step's `with:`"


def detect(environ: Mapping[str, str]) -> Guess | None:
    name = _name(environ)
    base_ref = value(environ, "GITHUB_BASE_REF")
    if base_ref:
        return Guess(f"{name} (pull request)", branch_refs(base_ref), f"GITHUB_BASE_REF={base_ref}")
    if value(environ, "GITHUB_EVENT_NAME") == "push" and value(environ, "GITHUB_EVENT_PATH"):
        return _push(name, value(environ, "GITHUB_EVENT_PATH"))
    return None


def _name(environ: Mapping[str, str]) -> str:
    if value(environ, "FORGEJO_ACTIONS") == "true":
        return "Forgejo Actions"
    if value(environ, "GITEA_ACTIONS") == "true":
        return "Gitea Actions"
    return "GitHub Actions"


def _push(name: str, path: str) -> Guess:
    try:
        with open(path, encoding="utf-8") as fh:
            payload = json.load(fh)
    except (OSError, ValueError) as exc:
        raise FatalError(f"--base auto: cannot read the push event payload GITHUB_EVENT_PATH={path}: "
                         f"{exc.__class__.__name__}: {exc}") from None
    before = payload.get("before") if isinstance(payload, dict) else None
    if not isinstance(before, str) or not before.strip():
        raise FatalError(f"--base auto: the push event payload {path} has no `before` commit; pass --base REF")
    before = before.strip()
    if set(before) == {"0"}:
        raise FatalError("--base auto: this push created the branch (`before` is all zeros), so it has no "
                         "previous commit to compare with; pass the branch it forked from, e.g. "
                         "--base origin/main, or run the review on pull_request events")
    return Guess(f"{name} (push)", (before,), f"push event before={before[:12]}")


def head_branch(environ: Mapping[str, str]) -> str | None:
    """The pull request's source branch (review memory's line of work); None outside pull requests."""
    return value(environ, "GITHUB_HEAD_REF") or None


def _event_request(environ: Mapping[str, str]) -> dict | None:
    """The event payload's `pull_request` object; None without one or for an unreadable payload."""
    path = value(environ, "GITHUB_EVENT_PATH")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            payload = json.load(fh)
    except (OSError, ValueError):
        return None
    request = payload.get("pull_request") if isinstance(payload, dict) else None
    return request if isinstance(request, dict) else None


def request_number(environ: Mapping[str, str]) -> str | None:
    """The pull request's number: a pull_request run's GITHUB_REF is refs/pull/N/merge (Gitea's refs/pull/N/head);
    a pull_request_target run's is the base branch, so its number comes from the event payload."""
    ref = value(environ, "GITHUB_REF")
    if ref.startswith("refs/pull/") and ref.count("/") >= 3:
        return ref.split("/")[2]
    if not value(environ, "GITHUB_EVENT_NAME").startswith("pull_request"):
        return None
    request = _event_request(environ)
    number = request.get("number") if request is not None else None
    return str(number) if isinstance(number, int) and not isinstance(number, bool) and number > 0 else None


def request_text(environ: Mapping[str, str]) -> str | None:
    """The pull request's title and body from the event payload (pull_request, pull_request_target);
    None for other events or an unreadable payload (intent is optional: no error)."""
    request = _event_request(environ)
    if request is None:
        return None
    title = request.get("title") if isinstance(request.get("title"), str) else ""
    body = request.get("body") if isinstance(request.get("body"), str) else ""
    return "\n\n".join(part.strip() for part in (title, body) if part and part.strip()) or None
