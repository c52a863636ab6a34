"""Findings as JSON objects and back: the form the result cache and the review memory store.

Pure: the stores around it decide where the objects live. `finding_from_json` is strict (ValueError or
KeyError on anything malformed), so a store can treat a bad entry as a miss.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ocr_hook.findings.model import STATUSES, Category, Finding, Fix, Severity


def finding_to_json(finding: Finding) -> dict[str, Any]:
    return {
        "path": finding.path,
        "start_line": finding.start_line,
        "end_line": finding.end_line,
        "severity": str(finding.severity),
        "category": str(finding.category),
        "message": finding.message,
        "suggestion": finding.suggestion,
        "anchored": finding.anchored,
        "fingerprint": finding.fingerprint,
        "existing_code": finding.existing_code,
        "anchor_note": finding.anchor_note,
        "suppressed": finding.suppressed,
        "fix": None if finding.fix is None else finding.fix.as_dict(),
        "status": finding.status,
        "extra": dict(finding.extra),
    }


def _typed(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = data[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise ValueError(f"{name} has the wrong type")
    return value


def _fix_from_json(data: Any) -> Fix | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError("fix must be an object or null")
    return Fix(_typed(data, "start_line", int), _typed(data, "end_line", int), _typed(data, "replacement", str))


def finding_from_json(data: Any) -> Finding:
    """The inverse of finding_to_json; ValueError/KeyError on anything malformed."""
    if not isinstance(data, dict):
        raise ValueError("a finding must be an object")
    extra = _typed(data, "extra", dict)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in extra.items()):
        raise ValueError("extra must map strings to strings")
    status = _typed(data, "status", str)
    if status not in STATUSES:
        raise ValueError("unknown status")
    return Finding(
        path=_typed(data, "path", str),
        start_line=_typed(data, "start_line", int),
        end_line=_typed(data, "end_line", int),
        severity=Severity(_typed(data, "severity", str)),
        category=Category(_typed(data, "category", str)),
        message=_typed(data, "message", str),
        suggestion=_typed(data, "suggestion", (str, type(None))),
        anchored=_typed(data, "anchored", bool),
        fingerprint=_typed(data, "fingerprint", str),
        existing_code=_typed(data, "existing_code", str),
        anchor_note=_typed(data, "anchor_note", (str, type(None))),
        suppressed=_typed(data, "suppressed", (str, type(None))),
        fix=_fix_from_json(data["fix"]),
        status=status,
        extra=extra,
    )


def findings_from_json(items: Any) -> list[Finding]:
    if not isinstance(items, list):
        raise ValueError("findings must be a list")
    return [finding_from_json(item) for item in items]
