"""Join the SARIF files of several `--shard I/N` runs into one run GitHub accepts.

GitHub rejects two runs with the same tool and category, so shard outputs cannot be uploaded side
by side: results and notifications are concatenated, rules united (result rule indexes rewritten),
and the invocation is successful only when every shard's was.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ocr_hook.errors import ConfigError
from ocr_hook.reports.base import TOOL_NAME
from ocr_hook.reports.sarif import MAX_RESULTS, OUR_FINGERPRINT, cut_notification

_RANK = {"critical": 4, "high": 3, "medium": 2, "low": 1}
_LEVEL_RANK = {"error": 3, "warning": 2, "note": 1, "none": 0}


def _load_run(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise ConfigError(f"cannot read SARIF file {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a JSON file ({exc})") from None
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, list) or len(runs) != 1 or not isinstance(runs[0], dict):
        raise ConfigError(f"{path}: expected a SARIF log with exactly one run")
    run = runs[0]
    name = run.get("tool", {}).get("driver", {}).get("name")
    if data.get("version") != "2.1.0" or name != TOOL_NAME:
        raise ConfigError(f"{path}: not a SARIF 2.1.0 file written by {TOOL_NAME}")
    return run


def _rank(result: dict[str, Any]) -> int:
    severity = result.get("properties", {}).get("severity")
    return _RANK.get(severity, _LEVEL_RANK.get(result.get("level", "warning"), 2))


def _place(result: dict[str, Any]) -> tuple[str, int, int, str]:
    """(path, start line as the finding had it, end line, our fingerprint), read back from a result."""
    from urllib.parse import unquote

    location = (result.get("locations") or [{}])[0].get("physicalLocation", {})
    path = unquote(location.get("artifactLocation", {}).get("uri", ""), errors="surrogateescape")
    region = location.get("region", {})
    anchored = result.get("properties", {}).get("anchored", True) is not False
    start = int(region.get("startLine", 1)) if anchored else 0
    return path, start, int(region.get("endLine", region.get("startLine", 1))), \
        str(result.get("partialFingerprints", {}).get(OUR_FINGERPRINT, ""))


def _importance(result: dict[str, Any]) -> tuple[Any, ...]:
    """The unsharded run's order for the cap (reports.base.severity_order): unsuppressed first, worst first,
    then reading order with the fingerprint and the message to break every tie (issue 55.7)."""
    path, start, _end, fingerprint = _place(result)
    rule = str(result.get("ruleId", ""))
    return (1 if result.get("suppressions") else 0, -_rank(result), path, start, rule, fingerprint,
            str(result.get("message", {}).get("text", "")))


def _shown_order(result: dict[str, Any]) -> tuple[Any, ...]:
    """The order the unsharded run lists what it kept in (reports.sarif.sarif_log)."""
    path, start, end, fingerprint = _place(result)
    first = max(start, 1)
    return (1 if result.get("suppressions") else 0, path, (first, max(end, first)), -_rank(result), fingerprint)


_MASKED = re.compile(r"^(\d+) likely secret\(s\) were masked before text was sent to the model$")
_GROUPS = ("file-skipped", "file-failed", "note", "resolved", "results-truncated")


def _merged_notifications(notifications: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The notes as one run would write them: each note once (every shard read the same settings), the masked
    secrets summed into one note, and the files' notes in path order as the unsharded run gives them."""
    masked = 0
    seen: set[str] = set()
    kept: list[dict[str, Any]] = []
    for note in notifications:
        descriptor = note.get("descriptor", {}).get("id", "").removeprefix(f"{TOOL_NAME}/")
        text = note.get("message", {}).get("text", "")
        if descriptor == "results-truncated":
            continue  # said again below, for the merged run's own cut
        found = _MASKED.match(text) if descriptor == "note" else None
        if found:
            masked += int(found.group(1))
            continue
        identity = json.dumps(note, sort_keys=True)
        if identity in seen:
            continue
        seen.add(identity)
        kept.append(note)
    if masked:
        text = f"{masked} likely secret(s) were masked before text was sent to the model"
        kept.append({"level": "note", "message": {"text": text}, "descriptor": {"id": f"{TOOL_NAME}/note"}})

    def order(item: tuple[int, dict[str, Any]]) -> tuple[Any, ...]:
        index, note = item
        descriptor = note.get("descriptor", {}).get("id", "").removeprefix(f"{TOOL_NAME}/")
        group = _GROUPS.index(descriptor) if descriptor in _GROUPS else len(_GROUPS)
        by_path = descriptor in ("file-skipped", "file-failed", "resolved")
        return (group, note.get("message", {}).get("text", "") if by_path else "", index)

    return [note for _i, note in sorted(enumerate(kept), key=order)]


def _cut_count(note: dict[str, Any]) -> int:
    if note.get("descriptor", {}).get("id") != f"{TOOL_NAME}/results-truncated":
        return 0
    found = re.match(r"(\d+) more findings", note.get("message", {}).get("text", ""))
    return int(found.group(1)) if found else 0


def _merged_exit_code(codes: list[int]) -> int:
    if 1 in codes:
        return 1
    return max(codes, default=0)


def merge_sarif(paths: Sequence[str | os.PathLike[str]]) -> dict[str, Any]:
    """One SARIF log whose single run holds everything from the given shard files."""
    if not paths:
        raise ConfigError("merge-sarif needs at least one SARIF file")
    runs = [_load_run(Path(p)) for p in paths]
    categories = {run.get("automationDetails", {}).get("id") for run in runs}
    if len(categories) != 1:
        shown = ", ".join(sorted(repr(c) for c in categories))
        raise ConfigError(f"cannot merge SARIF files of different categories ({shown}): merge each category apart")

    rules: list[dict[str, Any]] = []
    rule_index: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    successful = True
    codes: list[int] = []
    totals: dict[str, Any] = {}
    for run in runs:
        for rule in run["tool"]["driver"].get("rules", []):
            if rule["id"] not in rule_index:
                rule_index[rule["id"]] = len(rules)
                rules.append(rule)
        for result in run.get("results", []):
            result = dict(result)
            if "ruleId" in result:
                result["ruleIndex"] = rule_index[result["ruleId"]]
            results.append(result)
        for invocation in run.get("invocations", []):
            successful = successful and bool(invocation.get("executionSuccessful", False))
            notifications += invocation.get("toolExecutionNotifications", [])
            if isinstance(invocation.get("exitCode"), int):
                codes.append(invocation["exitCode"])
            for key, value in invocation.get("properties", {}).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    totals[key] = round(totals.get(key, 0) + value, 6)
        if not run.get("invocations"):
            successful = False

    # Cut again: every shard kept up to the limit, the merged run may not. The same order as one run's, so the
    # same results are kept; a shard's own cut counts what it dropped.
    dropped = sum(_cut_count(n) for n in notifications)
    ranked = sorted(results, key=_importance)
    dropped += max(0, len(ranked) - MAX_RESULTS)
    results = sorted(ranked[:MAX_RESULTS], key=_shown_order)
    notifications = _merged_notifications(notifications)
    if dropped:
        notifications.append(cut_notification(dropped, MAX_RESULTS))

    first = runs[0]
    driver = {**first["tool"]["driver"], "rules": rules}
    invocation: dict[str, Any] = {
        "executionSuccessful": successful,
        "toolExecutionNotifications": notifications,
        "properties": {"status": "complete" if successful else "incomplete", "shards": len(runs), **totals},
    }
    if codes:
        invocation["exitCode"] = _merged_exit_code(codes)
    merged: dict[str, Any] = {"tool": {"driver": driver}}
    if "automationDetails" in first:
        merged["automationDetails"] = first["automationDetails"]
    merged["invocations"] = [invocation]
    for key in ("originalUriBaseIds", "columnKind"):
        if key in first:
            merged[key] = first[key]
    merged["results"] = results
    return {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [merged]}
