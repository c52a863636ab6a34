"""`ocr-hook rules`: which project guidance applies to each changed file, and from which revision.

Calls no model and needs no key: git, the settings and the trusted revision's guidance files only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from ocr_hook.changes.collect import collect_changes, repo_relative_paths
from ocr_hook.changes.git import repo_top
from ocr_hook.changes.scope import Scope
from ocr_hook.commands.preview import _write, shown
from ocr_hook.findings.dismissals import Dismissal
from ocr_hook.guidance.resolve import GuidancePlan, describe, resolve_guidance
from ocr_hook.guidance.settings_file import load_for
from ocr_hook.settings import Settings


def run(scope: Scope, paths: tuple[str, ...], config_file: str | None, fmt: str, *,
        environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    cwd = os.getcwd()
    root, head = repo_top(cwd)
    change_set = collect_changes(root, scope, repo_relative_paths(root, cwd, paths), environ, head=head)
    settings = load_for(change_set, config_file, {}, environ)  # the rules a review of this scope applies
    changed = [f.path for f in change_set.files]
    plan = resolve_guidance(change_set, settings, changed)
    if fmt == "json":
        _write(render_json(change_set.description, changed, plan, settings))
    else:
        _write(render_text(change_set.description, changed, plan, settings))
    return 0


def render_json(description: str, changed: list[str], plan: GuidancePlan, settings: Settings) -> str:
    doc = {
        "scope": description,
        "trusted_revision": plan.revision,
        "language": settings.language,
        "files": [{"path": path, "guidance": [describe(i) for i in plan.per_path.get(path, ())],
                   "ignore_categories": sorted(plan.ignore.get(path, {})),
                   "dismissals": [_dismissal(d) for d in plan.dismissals.get(path, ())]} for path in changed],
        "notes": plan.notes,
    }
    return json.dumps(doc, indent=2) + "\n"


def _dismissal(entry: Dismissal) -> dict[str, object]:
    return {"fingerprint": entry.fingerprint, "path": entry.path, "reason": entry.reason, "on": entry.on.isoformat(),
            "paths": list(entry.paths)}


def render_text(description: str, changed: list[str], plan: GuidancePlan, settings: Settings) -> str:
    lines = [f"ocr-hook rules: {description}",
             f"Guidance is read from the trusted revision {plan.revision_label}; comments in {settings.language}."]
    if not changed:
        lines.append("No changed files.")
    for path in changed:
        items = plan.per_path.get(path, ())
        lines.append(f"{shown(path)}: " + ("no guidance" if not items else f"{len(items)} part(s)"))
        for item in items:
            e = describe(item)
            where = "settings file (as read now)" if e["revision"] is None else f"at {e['revision'][:12]}"
            name = e["source"] + (f" from {e['file']}" if e["kind"] == "rule" and e["file"] else "")
            size = f"{e['bytes']:,} bytes" + (f" (cut from {e['original_bytes']:,})" if e["cut"] else "")
            lines.append(f"  {e['kind']:<8} {shown(name)}  {where}  {size}")
        for category, rule in sorted(plan.ignore.get(path, {}).items()):
            lines.append(f"  ignores  {category} findings ({rule})")
        for entry in plan.dismissals.get(path, ()):  # what the reviewer is taught, most recent first
            lines.append(f"  dismissed {entry.short_id} ({shown(entry.path)}, on {entry.on}): "
                         f"{shown(' '.join(entry.reason.split()))}")
    if plan.notes:
        lines += ["", "Notes:"] + [f"  - {n}" for n in plan.notes]
    return "\n".join(lines) + "\n"
