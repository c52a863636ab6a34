"""`ocr-hook preview`: what would be reviewed, what is skipped and why, and what it could cost.

Calls no model and needs no key: only git, the settings and the file selection.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ocr_hook.agent.excerpt import new_and_short
from ocr_hook.budget.tokens import estimate_tokens
from ocr_hook.changes import collect_changes, open_snapshot, select_files
from ocr_hook.changes.ci_base import AutoBase
from ocr_hook.changes.collect import repo_relative_paths
from ocr_hook.changes.git import repo_top, resolve_commit
from ocr_hook.changes.model import ChangeSet
from ocr_hook.changes.scope import SCAN, Scope
from ocr_hook.changes.selection import Selected
from ocr_hook.changes.snapshot_api import Snapshot
from ocr_hook.guidance.resolve import GuidancePlan
from ocr_hook.guidance.settings_file import load_for_sides
from ocr_hook.settings import SCAN_DEFAULTS, Settings

if TYPE_CHECKING:
    from ocr_hook.effort import Profile

# Estimate of one file's review, deliberately on the high side:
#   input  = (SYSTEM_ALLOWANCE + tokens(patch, none for a short new file) + tokens(whole new file)) * TURN_FACTOR
#   output = OUTPUT_ALLOWANCE
# SYSTEM_ALLOWANCE covers the system prompt, tool definitions and instructions. Every model turn
# re-sends the whole conversation, and a file typically takes a plan request, a few main-loop turns
# and a review-filter request, so the first request's size is counted TURN_FACTOR times. Cache
# discounts are ignored, so real bills are usually lower. The effort profile changes the number of
# requests (ocr_hook.effort): quick has no plan phase and often one turn; deep plans every file.
SYSTEM_ALLOWANCE = 3_000
TURN_FACTOR = 5
TURN_FACTORS = {"quick": 2, "standard": TURN_FACTOR, "deep": 7}
OUTPUT_ALLOWANCE = 2_000
_PER_MILLION = 1_000_000


class Estimate(NamedTuple):
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # None when the model has no price in the settings
    max_cost_usd: float


class Previewed(NamedTuple):
    change_set: ChangeSet
    selected: list[Selected]
    estimate: Estimate
    settings: Settings
    ci: AutoBase | None = None  # what `--base auto` detected
    guidance: GuidancePlan | None = None  # the project's guidance per file
    profiles: Mapping[str, Profile] | None = None  # the effort profile of each file to review


def run(scope: Scope, paths: tuple[str, ...], config_file: str | None, fmt: str, *,
        environ: Mapping[str, str] | None = None, flags: Mapping[str, Any] | None = None,
        shard: str | None = None) -> int:
    seen = preview(scope, paths, config_file, environ=environ, flags=flags, shard=shard)
    out = render_json(*seen) if fmt == "json" else render_text(*seen)
    _write(out)
    return 0


def preview(scope: Scope, paths: Sequence[str], config_file: str | None, *, cwd: str | None = None,
            environ: Mapping[str, str] | None = None, flags: Mapping[str, Any] | None = None,
            shard: str | None = None) -> Previewed:
    """What would be reviewed and what it could cost, without printing anything. `flags` are the
    settings a review would take from its command line (e.g. effort); `shard` I/N: that share of the files, dealt
    as the review deals it (the caps apply per shard)."""
    environ = os.environ if environ is None else environ
    cwd = os.getcwd() if cwd is None else cwd
    root, head = repo_top(cwd)
    relative = repo_relative_paths(root, cwd, paths)
    sides = None
    if scope.kind not in ("staged", SCAN):
        from ocr_hook.changes.collect import resolve_sides

        sides = resolve_sides(root, scope, environ, head=head)
    if sides is not None:  # as review reads them: a range's settings at its trusted side (DESIGN.md 5)
        settings = load_for_sides(root, sides, config_file, flags or {}, environ)
    elif scope.kind == SCAN and scope.rev is not None and resolve_commit(root, scope.rev) != head:
        from ocr_hook.guidance.settings_file import load_for_scan  # REV's own settings, as its scan reads them

        settings = load_for_scan(root, scope.rev, config_file, flags or {}, environ, SCAN_DEFAULTS)
    else:  # the work tree's, or in a sparse checkout that leaves it out, the index's (issue 62.7)
        from ocr_hook.commands.review import load_worktree_settings

        settings = load_worktree_settings(root, config_file, flags or {}, environ,
                                          SCAN_DEFAULTS if scope.kind == SCAN else None)
    change_set = collect_changes(root, scope, relative, environ, head=head, max_bytes=settings.max_file_bytes,
                                 sides=sides, selection=settings)
    ci = change_set.auto_base  # `--base auto` is detected in one place: collect_changes
    snapshot = open_snapshot(root, change_set, settings.max_file_bytes)
    try:
        from ocr_hook.changes.shard import shard_change_set

        selected = select_files(shard_change_set(change_set, shard), snapshot, settings)
        from ocr_hook.guidance.resolve import resolve_guidance

        guidance = resolve_guidance(change_set, settings, [s.change.path for s in selected])
        from ocr_hook.effort import profiles_for

        profiles = profiles_for([s.change.path for s in selected if s.action == "review"], settings, environ)
        estimate = estimate_cost(selected, snapshot, settings, guidance, profiles)
    finally:
        snapshot.close()
    return Previewed(change_set, list(selected), estimate, settings, ci, guidance, profiles)


def estimate_cost(selected: Sequence[Selected], snapshot: Snapshot, settings: Settings,
                  guidance: GuidancePlan | None = None, profiles: Mapping[str, Profile] | None = None) -> Estimate:
    reviewed = [s.change for s in selected if s.action == "review"]
    input_tokens = 0
    for change in reviewed:
        text = snapshot.read_text(change.path) or ""
        # The file's guidance rides in the system prompt of every request, like the allowance.
        guide = sum(estimate_tokens(t) for t in guidance.sections(change.path)) if guidance else 0
        profile = (profiles or {}).get(change.path)
        factor = TURN_FACTORS[profile.name] if profile is not None else TURN_FACTOR
        # A short new file is sent once, numbered (agent/excerpt.repeats_new_file), not as a diff besides.
        patch = 0 if new_and_short(str(change.status), text) else estimate_tokens(change.patch)
        input_tokens += (SYSTEM_ALLOWANCE + guide + patch + estimate_tokens(text)) * factor
    output_tokens = OUTPUT_ALLOWANCE * len(reviewed)
    price = settings.price_for(settings.model)
    if price is None:
        return Estimate(input_tokens, output_tokens, None, settings.max_cost if reviewed else 0.0)
    cost = (input_tokens * price.input + output_tokens * price.output) / _PER_MILLION
    return Estimate(input_tokens, output_tokens, cost, min(settings.max_cost, cost))


# --- output -----------------------------------------------------------------------------------------


def render_json(change_set: ChangeSet, selected: Sequence[Selected], estimate: Estimate,
                settings: Settings, ci: AutoBase | None = None, guidance: GuidancePlan | None = None,
                profiles: Mapping[str, Profile] | None = None) -> str:
    # ensure_ascii keeps undecodable path bytes (lone surrogates) representable in the JSON text.
    return json.dumps(preview_dict(change_set, selected, estimate, settings, ci, guidance, profiles),
                      indent=2) + "\n"


def preview_dict(change_set: ChangeSet, selected: Sequence[Selected], estimate: Estimate,
                 settings: Settings, ci: AutoBase | None = None,
                 guidance: GuidancePlan | None = None,
                 profiles: Mapping[str, Profile] | None = None) -> dict[str, Any]:
    """The `preview --format json` document."""
    from ocr_hook.changes.names import shown as git_shown
    from ocr_hook.guidance.resolve import describe

    profiles = profiles or {}

    files = [
        {
            "path": git_shown(s.change.path),
            "status": s.change.status.value,
            "action": s.action,
            "reason": s.reason,
            "old_path": git_shown(s.change.old_path) if s.change.old_path else None,
            "added": s.change.added,
            "removed": s.change.removed,
            "incomplete": s.incomplete,
            "guidance": [describe(g) for g in guidance.per_path.get(s.change.path, ())] if guidance else [],
            # quick | standard | deep for a file to review (null for a skip), and why auto chose it
            "effort": _effort_of(profiles, s.change.path, "name"),
            "effort_reason": _effort_of(profiles, s.change.path, "why"),
        }
        for s in selected
    ]
    doc: dict[str, Any] = {
        "scope": change_set.description,
        "ci": None if ci is None else {"name": ci.ci, "base": ci.ref, "source": ci.source},
        "files": files,
        "estimate": {
            "input_tokens": estimate.input_tokens,
            "max_cost_usd": round(estimate.max_cost_usd, 4),
            "output_tokens": estimate.output_tokens,
            "model": settings.model,
            "cost_usd": None if estimate.cost_usd is None else round(estimate.cost_usd, 4),
            "max_cost_setting_usd": settings.max_cost,
        },
        "complete": not any(s.incomplete for s in selected),
    }
    if guidance is not None:
        doc["guidance_revision"] = guidance.revision
        doc["notes"] = guidance.notes
    return doc


def _effort_of(profiles: Mapping[str, Profile], path: str, attr: str) -> str | None:
    found = profiles.get(path)
    return None if found is None else (getattr(found, attr) or None)


def render_text(change_set: ChangeSet, selected: Sequence[Selected], estimate: Estimate,
                settings: Settings, ci: AutoBase | None = None, guidance: GuidancePlan | None = None,
                profiles: Mapping[str, Profile] | None = None) -> str:
    reviews = sum(1 for s in selected if s.action == "review")
    lines = [f"ocr-hook preview: {change_set.description}"]
    if ci is not None:
        lines.append(f"--base auto detected {ci.describe()}")
    noun = "file" if change_set.scan else "changed file"
    if not selected:
        lines.append(f"No {noun}s: nothing to review.")
        return "\n".join(lines) + "\n"
    lines.append(f"{len(selected)} {noun}{'s' if len(selected) != 1 else ''}: {reviews} to review, "
                 f"{len(selected) - reviews} skipped")
    names = [_display_name(s) for s in selected]
    width = min(60, max(len(n) for n in names))
    for s, name in zip(selected, names, strict=True):
        counts = f"+{s.change.added} -{s.change.removed}"
        row = f"  {s.action:<6}  {s.change.status.value:<12}  {name:<{width}}  {counts:>13}"
        if s.reason:
            row += f"  {s.reason}" + ("  [incomplete]" if s.incomplete else "")
        profile = (profiles or {}).get(s.change.path)
        if profile is not None:
            row += f"  effort: {profile.label}"
        lines.append(row.rstrip())
    if guidance is not None:
        guided = [s for s in selected if guidance.per_path.get(s.change.path)]
        if guided:
            lines.append(f"Guidance from {guidance.revision_label} applies to {len(guided)} file(s); "
                         "`ocr-hook rules` lists it per file.")
        lines += [f"Note: {n}" for n in guidance.notes]
    lines.append(_estimate_line(estimate, settings, reviews))
    if estimate.input_tokens + estimate.output_tokens > settings.max_tokens:
        lines.append(f"Warning: the estimate exceeds max_tokens ({settings.max_tokens:,}); the review may end "
                     "incomplete.")
    limited = sum(1 for s in selected if s.incomplete)
    if limited:
        lines.append(f"Warning: {limited} file{'s' if limited != 1 else ''} skipped for limits: the review would be "
                     "INCOMPLETE (exit 3 unless --on-error warn).")
    return "\n".join(lines) + "\n"


def _display_name(s: Selected) -> str:
    if s.change.old_path:
        return f"{shown(s.change.old_path)} -> {shown(s.change.path)}"
    return shown(s.change.path)


def _estimate_line(estimate: Estimate, settings: Settings, reviews: int) -> str:
    if reviews == 0:
        return "Estimate: nothing would be sent to the model ($0.00)."
    head = (f"Estimate: about {estimate.input_tokens:,} input and {estimate.output_tokens:,} output tokens "
            f"for {reviews} file{'s' if reviews != 1 else ''}")
    if estimate.cost_usd is None:
        return (f"{head}; no price for model {settings.model!r} in the settings, so the run may spend up to "
                f"max_cost ${settings.max_cost:.2f}.")
    return (f"{head}; at most ${estimate.max_cost_usd:.2f} ({settings.model} at list price ${estimate.cost_usd:.2f}, "
            f"max_cost ${settings.max_cost:.2f}).")


def shown(path: str) -> str:
    """A path safe to print on one terminal line: undecodable bytes and control characters escaped, no live
    workflow command."""
    from ocr_hook.changes.names import shown as git_shown
    from ocr_hook.ci_log import neutralize_commands

    quoted = git_shown(path)
    if quoted != path:  # not UTF-8: as git quotes it (issue 55.1), printable ASCII already
        return neutralize_commands(quoted)
    return neutralize_commands(
        "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in path))


def _write(text: str) -> None:
    stream = sys.stdout
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        # `ocr-hook preview | head`: the reader left; say nothing more (and nothing at exit either).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
