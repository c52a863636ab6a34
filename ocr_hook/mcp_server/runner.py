"""Runs the review and preview pipelines for one tool call: synchronous, in a worker thread.

Nothing new here: commands.review.review and commands.preview.preview do the work, the JSON report
module writes the document. This module adds what a server call needs around them: per-call caps that
can only lower the configured ones, no output files, and early stopping through the run's budget.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ocr_hook.changes.scope import Scope
from ocr_hook.mcp_server.arguments import ReviewCall
from ocr_hook.settings import Settings

if TYPE_CHECKING:
    from ocr_hook.budget.ledger import Budget

CANCELLED = "the review was cancelled by the MCP client"


class RunControl:
    """Stops a run early from another thread: the budget, once the run has one, is stopped (see
    Budget.stop), so nothing more is sent and requests in flight are cut off like at the deadline."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._budget: Budget | None = None
        self._reason: str | None = None

    def attach(self, budget: Budget) -> None:
        with self._lock:
            self._budget, reason = budget, self._reason
        if reason is not None:
            budget.stop(reason)

    def cancel(self, reason: str = CANCELLED) -> None:
        with self._lock:
            if self._reason is None:
                self._reason = reason
            budget = self._budget
        if budget is not None:
            budget.stop(reason)

    @property
    def cancelled(self) -> bool:
        with self._lock:
            return self._reason is not None


# fail_on values from the gate that fails on the most findings to the one that fails on none.
STRICTEST_FIRST = ("low", "medium", "high", "critical", "never")


def capped(settings: Settings, call: ReviewCall) -> Settings:
    """The settings of one call: its caps lower the configured ones, never raise them; no output files
    (the document goes back to the client, nothing is written into the repository)."""
    changes: dict[str, Any] = {"sarif_output": None, "json_output": None, "gitlab_output": None,
                               "patch_output": None, "format": "json"}
    if call.max_cost is not None:
        changes["max_cost"] = min(settings.max_cost, call.max_cost)
    if call.timeout is not None:
        changes["timeout"] = min(settings.timeout, call.timeout)
    if call.effort is not None:  # depth, not a cap: the budget caps above hold whatever the profile
        changes["effort"] = call.effort
    if call.fail_on is not None:  # a stricter gate only: an agent cannot wave its own findings through
        changes["fail_on"] = min(settings.fail_on, call.fail_on, key=STRICTEST_FIRST.index)
    return settings._replace(**changes)


def run_review(root: str, call: ReviewCall, on_event: Callable[[str, str, str], None],
               control: RunControl) -> dict[str, Any]:
    """The `review --format json` document of one call (raises FatalError like the CLI does)."""
    from ocr_hook.commands import review as review_cmd
    from ocr_hook.reports.json_report import report_dict

    done = review_cmd.review(call.scope, call.paths, None, {}, cwd=root, on_event=on_event, environ=os.environ,
                             adjust=lambda settings: capped(settings, call), on_budget=control.attach,
                             intent=call.intent)
    ctx = review_cmd.report_context(done.result, done.change_set, done.texts, done.settings)
    return report_dict(done.result, ctx)


def run_preview(root: str, scope: Scope, paths: tuple[str, ...], effort: str | None = None) -> dict[str, Any]:
    """The `preview --format json` document of one call."""
    from ocr_hook.commands import preview as preview_cmd

    seen = preview_cmd.preview(scope, paths, None, cwd=root, environ=os.environ, flags={"effort": effort})
    return preview_cmd.preview_dict(*seen)


# --- delegate mode (DESIGN.md 15): the calling agent reviews; no model request is made -------------------------


def run_delegate_start(root: str, scope: Scope, paths: tuple[str, ...], effort: str | None,
                       intent: str | None) -> dict[str, Any]:
    from ocr_hook.delegate import ops

    return ops.start(root, scope, paths, None, {"effort": effort} if effort else {}, os.environ, intent)


def run_delegate_call(root: str, session: str, path: str, tool: str, tool_input: Any) -> dict[str, Any]:
    from ocr_hook.delegate import ops

    return ops.call(root, session, path, tool, tool_input, os.environ)._asdict()


def run_delegate_finish(root: str, session: str, fail_on: str | None) -> dict[str, Any]:
    """The `review --format json` document of the session; no output files, a gate only stricter."""
    from ocr_hook.commands import delegate as delegate_cmd
    from ocr_hook.commands import review as review_cmd
    from ocr_hook.reports.json_report import report_dict

    call = ReviewCall(scope=Scope("staged"), paths=(), fail_on=fail_on)
    done, _ = delegate_cmd.finish(session, {}, cwd=root, environ=os.environ,
                                  adjust=lambda settings: capped(settings, call))
    ctx = review_cmd.report_context(done.result, done.change_set, done.texts, done.settings)
    return report_dict(done.result, ctx)
