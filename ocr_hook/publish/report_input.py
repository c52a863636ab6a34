"""The `--format json` report as publish and github-review read it: the fields it needs, checked on the way in."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ocr_hook.errors import FatalError
from ocr_hook.findings import Category, Finding, Fix, Severity

_FINGERPRINT = re.compile(r"[0-9a-f]{8,64}")


@dataclass(frozen=True, slots=True)
class Report:
    status: str  # complete / incomplete
    exit_code: int
    verdict: str
    findings: tuple[Finding, ...]
    skipped: int  # files not reviewed (size, budget, …)
    failed: int
    resolved: tuple[str, ...] = ()  # fingerprints of earlier findings review memory found fixed
    commit: str | None = None  # the reviewed commit as the scope names it (12+ hex digits); None: staged, unknown


class ReportError(FatalError):
    """The --from file is not an ocr-hook JSON report (exit 2)."""


def load_report(path: str) -> Report:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise ReportError(f"cannot read the report {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ReportError(f"{path} is not JSON: {exc}") from None
    try:
        return parse_report(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportError(f"{path} is not an ocr-hook --format json report ({exc!r})") from None


def parse_report(data: Any) -> Report:
    if not isinstance(data, dict) or data.get("tool", {}).get("name") != "ocr-hook":
        raise ValueError("no tool.name ocr-hook")
    coverage = data.get("coverage") or {}
    return Report(
        status=str(data["status"]),
        exit_code=int(data["exit_code"]),
        verdict=str(data.get("verdict") or ""),
        findings=tuple(_finding(f) for f in data["findings"]),
        skipped=len(coverage.get("skipped") or []),
        failed=len(coverage.get("failed") or []),
        resolved=tuple(_fingerprint(r["fingerprint"]) for r in data.get("resolved") or ()
                       if isinstance(r, dict) and "fingerprint" in r),
        commit=reviewed_commit(data.get("scope")),
    )


# The scope's wording names the reviewed commit last (collect.resolve_sides): "main...HEAD (merge base
# a..b)", "x..y (a..b)", "commit b against its first parent a", "push range a..b (…)". Staged: none.
_SCOPE_COMMIT = re.compile(r"\.\.([0-9a-f]{12,64})\b|^commit ([0-9a-f]{12,64})\b")


def reviewed_commit(scope: Any) -> str | None:
    if not isinstance(scope, str) or scope.startswith("staged"):
        return None
    found = [a or b for a, b in _SCOPE_COMMIT.findall(scope)]
    return found[-1] if found else None


def _finding(f: dict[str, Any]) -> Finding:
    fix = f.get("fix")
    return Finding(
        path=_text(f["path"]),
        start_line=int(f["start_line"]),
        end_line=int(f["end_line"]),
        severity=Severity(f["severity"]),
        category=Category(f["category"]),
        message=_text(f.get("message") or ""),
        suggestion=None if f.get("suggestion") is None else _text(f["suggestion"]),
        anchored=bool(f["anchored"]),
        fingerprint=_fingerprint(f["fingerprint"]),
        suppressed=None if not f.get("suppressed") else _text(f["suppressed"]),
        fix=None if fix is None else Fix(int(fix["start_line"]), int(fix["end_line"]), _text(fix["replacement"])),
        status=_status(f.get("status")),
    )


def _status(value: Any) -> str:
    if value is None:  # a report from before review memory
        return "new"
    if value not in ("new", "carried", "late"):
        raise ValueError(f"status {value!r} is not new, carried or late")
    return str(value)


def _fingerprint(value: Any) -> str:
    # The markers carry it verbatim: ocr-hook writes hex, nothing else may pass.
    if not isinstance(value, str) or not _FINGERPRINT.fullmatch(value):
        raise ValueError(f"fingerprint {value!r} is not what ocr-hook writes")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value
