"""`ocr-hook checks`: the team's checks that apply to a change, their mode and what evaluating them would cost,
read as a review reads them (from the trusted revision). No key needed, no model called (like `preview`)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ocr_hook.changes.scope import Scope

if TYPE_CHECKING:
    from ocr_hook.changes.model import ChangeSet
    from ocr_hook.settings import Settings
    from ocr_hook.tickets.model import TicketsRead

SYSTEM_ALLOWANCE = 2_000  # the pass's instructions and tool definitions
ROUNDS_FACTOR = 3  # a pass reads a few files before it answers: its first message is sent about this often
OUTPUT_ALLOWANCE = 1_500


def run(scope: Scope, paths: Sequence[str], config_file: str | None, fmt: str, *,
        environ: Mapping[str, str] | None = None) -> int:
    from ocr_hook.agent.checks_stage import plan_checks
    from ocr_hook.budget.tokens import estimate_tokens
    from ocr_hook.changes import collect_changes
    from ocr_hook.changes.collect import repo_relative_paths, resolve_sides
    from ocr_hook.changes.git import repo_top
    from ocr_hook.checks.load import matches
    from ocr_hook.checks.model import LINKED_ISSUES
    from ocr_hook.commands.preview import _write
    from ocr_hook.guidance.settings_file import load_for_sides
    from ocr_hook.settings import load

    environ = os.environ if environ is None else environ
    cwd = os.getcwd()
    root, head = repo_top(cwd)
    relative = repo_relative_paths(root, cwd, paths)
    sides = resolve_sides(root, scope, environ, head=head) if scope.kind != "staged" else None
    settings = load_for_sides(root, sides, config_file, {}, environ) if sides is not None else \
        load(root, config_file, flags={}, environ=environ)
    change_set = collect_changes(root, scope, relative, environ, head=head, max_bytes=settings.max_file_bytes,
                                 sides=sides)
    commit_time = change_set.target is None
    tickets = _tickets(change_set, settings, environ, commit_time)
    plan = plan_checks(change_set, commit_time, settings.tickets, tickets.would)
    asked = {c.name for c in plan.to_ask}
    decided = {v.name: v for v in plan.decided}
    tokens = SYSTEM_ALLOWANCE + sum(estimate_tokens(c.instruction) for c in plan.to_ask)
    tokens += tickets.tokens if LINKED_ISSUES in asked else 0
    tokens += sum(estimate_tokens(f.patch) for f in change_set.files
                  if any(matches(c, f.path) for c in plan.to_ask))
    rounds = 1 if plan.commit_time else ROUNDS_FACTOR
    price = settings.price_for(settings.model_for("main"))
    cost = None
    if asked and price is not None:
        cost = (tokens * rounds * price.input + OUTPUT_ALLOWANCE * rounds * price.output) / 1_000_000
    rows: list[dict[str, Any]] = []
    for check in plan.checks:
        if check.mode == "off":
            state = "off (not evaluated)"
        elif check.name in asked:
            state = "applies" + (f": {tickets.said}" if check.name == LINKED_ISSUES else "")
        elif check.name in decided:
            state = "not applicable: " + decided[check.name].reason
        else:
            state = "not at commit time (when: ci)"
        rows.append({"name": check.name, "mode": check.mode, "when": check.when, "source": check.source,
                     "applies": check.name in asked, "state": state,
                     "changed_in_change": check.source in plan.edited})
    if fmt == "json":
        _write(json.dumps({"scope": change_set.description, "checks": rows, "notes": plan.notes,
                           "estimate": {"input_tokens": tokens * rounds if asked else 0,
                                        "cost_usd": None if cost is None else round(cost, 6)}}, indent=2) + "\n")
        return 0
    lines = [f"Checks for {change_set.description}:"]
    if not rows:
        lines.append("  (no check files in .ocr-hook/checks/ at the trusted revision)")
    for row in rows:
        edited = " (its file changes with this change; takes effect after merge)" if row["changed_in_change"] else ""
        lines.append(f"  {row['name']} [{row['mode']}, when {row['when']}]: {row['state']}{edited}")
    lines += [f"  note: {n}" for n in plan.notes]
    if asked:
        said = f"about ${cost:.4f}" if cost is not None else "unknown (no price for the model)"
        lines.append(f"Evaluating {len(asked)} check(s): one pass, ~{tokens * rounds:,} input tokens, {said}")
    else:
        lines.append("No check applies: no request would be sent for checks.")
    _write("\n".join(lines) + "\n")
    return 0


class _Tickets(NamedTuple):
    would: TicketsRead | None  # a stand-in for the read the review would make (no request here)
    said: str  # which tickets would be read
    tokens: int  # what their text would add to the pass's first message, at most


def _tickets(change_set: ChangeSet, settings: Settings, environ: Mapping[str, str], commit_time: bool) -> _Tickets:
    """linked-issues (issue 60) without reading anything: the references the change's texts name, and on a
    forge's pull request its closing references besides (those only the forge can list)."""
    from ocr_hook.publish.tickets_read import plan
    from ocr_hook.tickets.model import CLIP, TicketsRead

    planned = plan(change_set, settings.tickets, environ, commit_time)
    if planned is None:
        return _Tickets(None, "", 0)
    keys = [r.key for r in planned.refs]
    said = ("would read " + ", ".join(keys) if keys else "would read") + (
        (" and" if keys else "") + " the pull request's closing references" if planned.forge else "")
    # Each ticket's body is clipped to CLIP characters: about a token for every 4 of them, at most tickets.max.
    most = settings.tickets.max if planned.forge else len(keys)
    stand_in = TicketsRead(failed=True) if most else TicketsRead()
    return _Tickets(stand_in, said, most * (CLIP // 4 + 50))
