"""The checks stage of a review (DESIGN.md 20): the trusted checks, which apply, which the cache answers, the
change-level pass for the rest, and the overrides recorded for this change.

Called after the per-file reviews with their findings. Returns the verdicts in the checks' order; never prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ocr_hook.checks.model import LINKED_ISSUES, Check, CheckVerdict

if TYPE_CHECKING:
    from ocr_hook.budget.ledger import Budget
    from ocr_hook.changes.model import ChangeSet
    from ocr_hook.changes.snapshot_api import Snapshot
    from ocr_hook.findings import Finding
    from ocr_hook.outcome import Usage
    from ocr_hook.settings import Settings, TicketSettings
    from ocr_hook.tickets.model import TicketsRead

# The built-in check's instruction (issue 60): the tickets themselves reach the model apart, as quoted data.
LINKED_ISSUES_INSTRUCTION = (
    "Does the change do what its linked tickets ask? For every ticket listed under \"Linked tickets\", restate "
    "its requirements (its acceptance criteria first, when it has them) and say of each whether the change meets "
    "it (met, with the code quoted), does not (not_met, with the code that does it wrong or the reason nothing in "
    "the change addresses it) or cannot show it (needs_person), in check_verdict's `requirements`.")


def linked_issues_check(tickets: TicketSettings) -> Check:
    """The built-in check as the trusted settings configure it (`tickets:`): no file, no paths (the whole change)."""
    return Check(LINKED_ISSUES, LINKED_ISSUES_INSTRUCTION, "", (), tickets.mode, tickets.when)


class ChecksPlan(NamedTuple):
    """What a change needs of the checks, decided before any request (so the files' reviews know whether to
    leave the checks their share of the budget)."""

    checks: tuple[Check, ...]  # every check of the trusted revision, in order
    to_ask: list[Check]
    decided: list[CheckVerdict]  # not applicable
    edited: frozenset[str]
    notes: list[str]
    commit_time: bool
    tickets: TicketsRead | None = None  # linked-issues: what reading the tickets gave (None: not listed)


def plan_checks(change_set: ChangeSet, commit_time: bool, tickets: TicketSettings | None = None,
                read: TicketsRead | None = None) -> ChecksPlan:
    """The checks of the trusted revision, and the built-in linked-issues when `read` says the tickets were
    looked for (`tickets`: the trusted settings' `tickets:`): not applicable without a ticket (no request), asked
    with them, and asked too when a source failed (the stage then carries the last verdict, sending nothing)."""
    from ocr_hook.checks.load import (
        applicable,
        change_notes,
        changed_check_files,
        changed_paths,
        not_applicable,
        trusted_checks,
    )

    loaded = trusted_checks(change_set)
    notes = change_notes(loaded, change_set)
    edited = frozenset(changed_check_files(change_set))
    checks = loaded.checks
    builtin = None
    if tickets is not None and read is not None and tickets.mode != "off":
        if any(c.name == LINKED_ISSUES for c in checks):
            notes.append(f"the check file named {LINKED_ISSUES} is evaluated; the built-in check of that name (the "
                         "linked tickets) is not: rename the file to have both")
        else:
            builtin = linked_issues_check(tickets)
            checks = (*checks, builtin)
            notes += read.notes
    if not checks:
        return ChecksPlan((), [], [], edited, notes, commit_time)
    to_ask, decided = applicable([c for c in checks if c is not builtin], changed_paths(change_set), commit_time,
                                 edited)
    if builtin is not None and read is not None:
        if read.tickets or read.failed:
            to_ask.append(builtin)
        else:
            decided.append(not_applicable(builtin, "no linked ticket was found" if not read.notes else
                                          "no linked ticket was read (see the notes)"))
    return ChecksPlan(tuple(checks), to_ask, decided, edited, notes, commit_time, read if builtin else None)


class StageOutcome(NamedTuple):
    verdicts: list[CheckVerdict]
    notes: list[str]
    usage: Usage | None  # of the pass's requests; None when none was sent


def check_key(check: Check, change_set: ChangeSet, intent: str | None, settings: Settings,
              tickets: TicketsRead | None = None) -> str:
    """What a verdict depends on: the check as written, the diffs of the files under its paths, the intent, the
    model, and our prompts and tools; for linked-issues the tickets as read too (an edited ticket is asked
    again). The same key: the same question about the same change."""
    from ocr_hook.agent.prompts import digest
    from ocr_hook.agent.run import tools_digest
    from ocr_hook.checks.load import matches
    from ocr_hook.store.result_cache import cache_key

    diffs = [f"{f.path}\0{f.old_path or ''}\0{f.status}\0{f.patch}" for f in change_set.files
             if matches(check, f.path) or (f.old_path and matches(check, f.old_path))]
    parts = {"kind": "check-verdict", "check": repr(tuple(check)), "diffs": "\0\0".join(diffs),
             "intent": intent or "", "model": settings.model_for("main"), "prompts": digest(), "tools": tools_digest()}
    if tickets is not None:
        parts["tickets"] = repr([(t.ticket.key, t.ticket.title, t.ticket.url, t.body, t.left_out)
                                 for t in tickets.tickets])
    return cache_key(parts)


def last_key(check: Check, change_set: ChangeSet, environ: Mapping[str, str]) -> str:
    """Where linked-issues' latest verdict for this pull request (else this change) is kept whatever the tickets
    said: what an outage of the tracker carries."""
    from ocr_hook.cienv import request_number
    from ocr_hook.store.result_cache import cache_key

    number = request_number(environ)
    where = {"request": number} if number else {"head": change_set.target or "", "base": change_set.base or ""}
    return cache_key({"kind": "check-verdict-last", "check": check.name, "repo": change_set.repo_root, **where})


def _cached(cache: object, key: str) -> CheckVerdict | None:
    from ocr_hook.checks.model import verdict_from_dict

    data = cache.store.read(key)  # type: ignore[attr-defined]
    item = data.get("check_verdict") if isinstance(data, dict) else None
    if not isinstance(item, dict):
        return None
    try:
        return verdict_from_dict(item)
    except (KeyError, TypeError, ValueError):
        return None


def run_checks(plan: ChecksPlan, change_set: ChangeSet, snapshot: Snapshot, settings: Settings,
               findings: Sequence[Finding], environ: Mapping[str, str], budget: Budget | None, *,
               intent: str | None = None, cache: object | None = None,
               overrides: Mapping[str, object] | None = None,
               given: Mapping[str, CheckVerdict] | None = None) -> StageOutcome:
    """Every check of the trusted revision that this change needs answered (`plan_checks`), answered.

    `budget`: the pass's share (None: no request may be sent, e.g. Claude Code, whose parity is its own work);
    `cache`: a ResultCache (None: cache off); `overrides`: check name → Override recorded for this change;
    `given`: the verdicts a host agent reported (delegate mode), in place of the pass: no request, and a check it
    did not answer is inconclusive, never a pass."""
    notes = list(plan.notes)
    if not plan.checks:
        return StageOutcome([], notes, None)
    edited, to_ask, decided, commit_time = plan.edited, plan.to_ask, plan.decided, plan.commit_time
    answered: dict[str, CheckVerdict] = {v.name: v for v in decided}
    keys: dict[str, str] = {}
    tickets = plan.tickets
    if tickets is not None and tickets.failed:  # the tracker did not answer: the last verdict, said as such
        check = next(c for c in to_ask if c.name == LINKED_ISSUES)
        answered[check.name] = _carry_last(check, change_set, environ, cache)
    if to_ask and cache is not None:
        for check in to_ask:
            if check.name in answered:
                continue
            keys[check.name] = check_key(check, change_set, intent, settings,
                                         tickets if check.name == LINKED_ISSUES else None)
            hit = _cached(cache, keys[check.name])
            if hit is not None:
                answered[check.name] = hit._replace(carried=True, changed_in_change=check.source in edited,
                                                    override=None)
    ask = [c for c in to_ask if c.name not in answered]
    usage = None
    if ask:
        from ocr_hook.agent.checks_pass import ChecksTask, evaluate_checks, unanswered

        if given is not None:
            for check in ask:
                answered[check.name] = given[check.name] if check.name in given else unanswered(
                    check, "no verdict: the host agent reported none for this check", edited)
        elif budget is None:
            for check in ask:
                answered[check.name] = unanswered(check, "not evaluated: this provider does not evaluate checks yet",
                                                  edited)
        else:
            task = ChecksTask(change_set, snapshot, settings, ask, findings, intent, edited,
                              rounds=1 if commit_time else max(2, settings.max_rounds),
                              tickets=tickets.tickets if tickets is not None else ())
            outcome = evaluate_checks(task, budget, environ)
            usage = budget.usage
            notes += outcome.notes
            for verdict in outcome.verdicts:
                answered[verdict.name] = verdict
                # Only what the model answered is kept: an unanswered check is asked again next time.
                if cache is not None and not verdict.incomplete and verdict.reason != _no_verdict():
                    from ocr_hook.checks.model import verdict_as_dict

                    check = next(c for c in ask if c.name == verdict.name)
                    linked = tickets if check.name == LINKED_ISSUES else None
                    cache.store.write(keys.get(verdict.name) or check_key(  # type: ignore[attr-defined]
                        check, change_set, intent, settings, linked), {"check_verdict": verdict_as_dict(verdict)})
                    if linked is not None:
                        cache.store.write(last_key(check, change_set, environ),  # type: ignore[attr-defined]
                                          {"check_verdict": verdict_as_dict(verdict)})
    carried = sum(1 for v in answered.values() if v.carried)
    if carried:
        notes.append(f"{carried} check verdict(s) carried from an earlier run with the same check, diffs, intent and "
                     "model (no request sent)")
    order = [c.name for c in plan.checks if c.name in answered]
    verdicts = [answered[name] for name in order]
    if overrides:
        verdicts = [v._replace(override=overrides[v.name]) if v.name in overrides else v  # type: ignore[arg-type]
                    for v in verdicts]
    return StageOutcome(verdicts, notes, usage)


def _carry_last(check: Check, change_set: ChangeSet, environ: Mapping[str, str], cache: object | None) -> CheckVerdict:
    """linked-issues when a ticket source failed: the verdict last given for this change (carried, and its reason
    says why), else inconclusive; never a request (the tickets the model would judge are not all there)."""
    from ocr_hook.agent.checks_pass import unanswered

    last = _cached(cache, last_key(check, change_set, environ)) if cache is not None else None
    if last is None:
        return unanswered(check, "the linked tickets could not be read (see the notes) and no earlier verdict for "
                                 "this change is kept", frozenset())
    return last._replace(carried=True, override=None, reason=f"carried from the last run, the linked tickets could "
                                                             f"not be read (see the notes): {last.reason}"[:700])


def _no_verdict() -> str:
    from ocr_hook.agent.checks_pass import NO_VERDICT

    return NO_VERDICT
