"""Join the SARIF files of several `--shard I/N` runs into one run GitHub accepts.

GitHub rejects two runs with the same tool and category, so shard outputs cannot be uploaded side
by side: results and notifications are concatenated, rules united (result rule indexes rewritten),
and the invocation is successful only when every shard's was.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ocr_hook.errors import ConfigError
from ocr_hook.reports.base import TOOL_NAME
from ocr_hook.reports.sarif import MAX_RESULTS, cut_notification

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


def _importance(result: dict[str, Any]) -> tuple[int, int]:
    severity = result.get("properties", {}).get("severity")
    rank = _RANK.get(severity, _LEVEL_RANK.get(result.get("level", "warning"), 2))
    return (1 if result.get("suppressions") else 0, -rank)


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

    # Cut again: every shard kept up to the limit, the merged run may not.
    if len(results) > MAX_RESULTS:
        dropped = len(results) - MAX_RESULTS
        ranked = sorted(range(len(results)), key=lambda i: (_importance(results[i]), i))
        keep = sorted(ranked[:MAX_RESULTS])
        results = [results[i] for i in keep]
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
