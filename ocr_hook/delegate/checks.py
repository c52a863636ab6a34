"""The checks pass in delegate mode (DESIGN.md 15 and 20): the host agent answers the team's checks through the
same tools the API's pass offers (the read-only four, `check_verdict`, `task_done`), addressed as the session's
pseudo-file `:checks`; `finish` refuses (exit 3) a session where an applicable check has no verdict, and hands
the review pipeline the host's verdicts in place of the pass. No model request is made here.

The checks are those of the trusted revision that apply to the change (checks.stage.plan_checks), decided again
from the same snapshot at every call and at finish: a session is bound to its snapshot, so they are the same.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ocr_hook.errors import FatalError

if TYPE_CHECKING:
    from ocr_hook.agent.checks_stage import ChecksPlan
    from ocr_hook.agent.tool_api import ToolResult
    from ocr_hook.changes.model import ChangeSet
    from ocr_hook.changes.snapshot_api import Snapshot
    from ocr_hook.checks.model import Check, CheckVerdict
    from ocr_hook.delegate.session import Session
    from ocr_hook.settings import Settings

CHECKS_PASS = ":checks"  # the `--file` of the checks pass's calls (no path git tracks starts a listing so)


class Unanswered(FatalError):
    """finish on a session where an applicable check has no verdict: incomplete, never a pass (exit 3)."""

    exit_code = 3


def plan(change_set: ChangeSet) -> ChecksPlan | None:
    """The checks this change needs answered (None: a scan, which has no change to judge)."""
    if change_set.scan:
        return None
    from ocr_hook.agent.checks_stage import plan_checks

    return plan_checks(change_set, commit_time=change_set.target is None)


def brief(change_set: ChangeSet, snapshot: Snapshot, settings: Settings,
          intent: tuple[str, str] | None) -> tuple[dict[str, Any] | None, list[str]]:
    """start's `checks`: the pass's first message and system text, its rounds and tools (check_verdict's `check`
    an enum of the applicable checks' names); and those names. (None, []) when no check applies."""
    planned = plan(change_set)
    if planned is None or not planned.to_ask:
        return None, []
    from ocr_hook.agent.checks_pass import ChecksTask, check_tools, first_message
    from ocr_hook.agent.conversation import SecretMasker
    from ocr_hook.agent.prompts import template
    from ocr_hook.secrets_mask import mask_secrets

    rendered = None
    if intent is not None and intent[0].strip():
        from ocr_hook.context.intent import render

        rendered = render(*intent)[0]
    rounds = 1 if planned.commit_time else max(2, settings.max_rounds)
    task = ChecksTask(change_set, snapshot, settings, planned.to_ask, (), rendered, planned.edited, rounds)
    names = [c.name for c in planned.to_ask]
    tools = [{"name": t["name"], "description": t["description"], "input_schema": t["input_schema"]}
             for t in check_tools(names)]
    listed = [{"name": c.name, "mode": c.mode, "source": c.source} for c in planned.to_ask]
    doc = {"file": CHECKS_PASS, "checks": listed,
           "rounds": rounds, "system": template("checks_system.md").strip(),
           "brief": first_message(task, SecretMasker(mask_secrets), rounds), "tools": tools,
           "notes": list(planned.notes)}
    return doc, names


def _check(change_set: ChangeSet, name: str) -> Check | None:
    planned = plan(change_set)
    return next((c for c in planned.to_ask if c.name == name), None) if planned is not None else None


def answer(session: Session, change_set: ChangeSet, snapshot: Snapshot, tool: str, tool_input: Any) -> ToolResult:
    """One call of the checks pass, answered as the API's pass answers it; check_verdict records the verdict
    (anchored as the pass anchors it) in the session, a later one for the same check replacing it."""
    from ocr_hook.agent import registry
    from ocr_hook.agent.checks_pass import anchor_evidence, verdict_of
    from ocr_hook.agent.conversation import SecretMasker
    from ocr_hook.agent.loop import as_shown, run_tool
    from ocr_hook.agent.tool_api import ToolContext, ToolResult
    from ocr_hook.changes.selection import is_sensitive
    from ocr_hook.checks.model import verdict_as_dict
    from ocr_hook.secrets_mask import mask_secrets

    error = registry.validate_input(tool, tool_input, "checks")
    if error is not None:
        return ToolResult(error, is_error=True)
    if tool == "task_done":
        session.checks_done = True
        missing = [n for n, v in session.checks.items() if v is None]
        left = f" Still without a verdict (finish refuses until answered): {', '.join(missing)}." if missing else ""
        return ToolResult("Checks evaluation finished." + left)
    if tool == "check_verdict":
        check = _check(change_set, str(tool_input["check"])) if tool_input["check"] in session.checks else None
        if check is None:
            return ToolResult(f"There is no check named {str(tool_input['check'])[:80]!r}. The checks to answer: "
                              f"{', '.join(session.checks)}.", is_error=True)
        evidence = anchor_evidence(tool_input.get("evidence") or (), change_set, snapshot)
        again = session.checks.get(check.name) is not None
        planned = plan(change_set)
        verdict = verdict_of(check, tool_input, evidence, planned.edited if planned is not None else frozenset())
        session.checks[check.name] = verdict_as_dict(verdict)
        missing = [n for n, v in session.checks.items() if v is None]
        said = f"Recorded {verdict.verdict} for {check.name}" + (" (replacing your earlier verdict)." if again else ".")
        lost = [e for e in evidence if not e.anchored]
        if lost:
            said += (f" {len(lost)} piece(s) of evidence could not be located in the files after the change: quote "
                     "the code exactly as it is there.")
        return ToolResult(said + (f" Still without a verdict: {', '.join(missing)}." if missing else
                                  " Every check has a verdict: call task_done."))
    ctx = ToolContext(snapshot=snapshot, change_set=change_set, current_path="",
                      is_hidden=functools.partial(is_sensitive, settings=session.settings))
    return as_shown(run_tool(tool, dict(tool_input), ctx), SecretMasker(mask_secrets))


def require_verdicts(session: Session) -> None:
    """Unanswered (exit 3) when an applicable check of the session has no verdict from the host."""
    missing = [name for name, v in session.checks.items() if v is None]
    if missing:
        raise Unanswered(f"delegate session {session.id[:12]}…: no verdict for the check(s) {', '.join(missing)}; "
                         f"answer each with `ocr-hook delegate call {session.id} --file {CHECKS_PASS} check_verdict "
                         "JSON`, then finish again (a check left unanswered is incomplete, never a pass)")


def host_verdicts(session: Session) -> Mapping[str, CheckVerdict]:
    from ocr_hook.checks.model import verdict_from_dict

    return {name: verdict_from_dict(v) for name, v in session.checks.items() if v is not None}
