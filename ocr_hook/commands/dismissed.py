"""`ocr-hook dismissed`: the entries of the dismissals file (the work tree's), and which have expired."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from collections.abc import Mapping

from ocr_hook.changes.git import repo_top
from ocr_hook.findings import dismissals
from ocr_hook.settings import load


def run(fmt: str, config_file: str | None, *, environ: Mapping[str, str] | None = None,
        today: dt.date | None = None) -> int:
    environ = os.environ if environ is None else environ
    today = today or dt.date.today()
    root, _head = repo_top(os.getcwd())
    settings = load(root, config_file, flags={}, environ=environ)
    name = settings.dismissals_file
    entries = dismissals.load_file(root, name)
    if fmt == "json":
        doc = {"file": name, "exists": os.path.lexists(os.path.join(root, name)),
               "dismissed": [{**_jsonable(e.as_dict()), "expired": e.expired(today)} for e in entries]}
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        return 0
    sys.stdout.write(render_text(name, entries, today))
    return 0


def _jsonable(entry: dict[str, object]) -> dict[str, object]:
    return {k: (v.isoformat() if isinstance(v, dt.date) else v) for k, v in entry.items()}


def render_text(name: str, entries: tuple[dismissals.Dismissal, ...], today: dt.date) -> str:
    from ocr_hook.reports.base import safe_for_log

    if not entries:
        return f"No dismissals ({name} has none).\n"
    lapsed = sum(1 for e in entries if e.expired(today))
    lines = [f"{name}: {len(entries)} dismissal(s)" + (f", {lapsed} expired (they no longer suppress)" if lapsed
                                                        else "")]
    for e in entries:
        state = f"EXPIRED {e.expires}" if e.expired(today) else (f"until {e.expires}" if e.expires else "no expiry")
        by = f" by {e.by}" if e.by else ""
        lines.append(safe_for_log(f"  {e.short_id}  {e.path}  {e.severity} {e.category}  on {e.on}{by}  {state}"))
        lines.append(safe_for_log(f"      reason: {' '.join(e.reason.split())}"))
        if list(e.paths) != [e.path]:
            lines.append(safe_for_log(f"      teaches: {', '.join(e.paths)}"))
        if e.request:
            lines.append(safe_for_log(f"      dismissed on: {e.request}"))
    return "\n".join(lines) + "\n"
