"""The `--format json` report as the publishers read it (github-review and the forges to come).

The reader lives with the rest of the report's JSON form in ocr_hook.findings.serial (one place knows the
format; the result cache, `dismiss --from` and the publishers all import it from there, downward). These
names stay here for the publishers: `load_report(path, where)` checks strictly, `ReportError` is exit 2. The
checks' verdicts (the report's `checks` list, DESIGN.md 20) are read here, above the findings' floor: only the
publishers need them.
"""

from __future__ import annotations

from typing import Any

from ocr_hook.checks.model import VERDICTS, CheckVerdict, verdict_from_dict
from ocr_hook.findings import serial
from ocr_hook.findings.serial import Report, ReportError, reviewed_commit

__all__ = ["Report", "ReportError", "load_report", "parse_report", "reviewed_commit"]


def parse_report(data: Any) -> Report:
    """Strict, as serial.parse_report, with the checks: ValueError, KeyError or TypeError otherwise."""
    return serial.parse_report(data)._replace(checks=checks_of(data.get("checks")))


def load_report(path: str, where: str | None = None) -> Report:
    where = where or path
    data = serial.read_report_json(path, where, regular_only=True)
    try:
        return parse_report(data)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError, RecursionError) as exc:
        raise ReportError(f"{where}: is not an ocr-hook --format json report ({serial._short(exc)})") from None


def checks_of(items: Any) -> tuple[CheckVerdict, ...]:
    """The report's verdicts, strictly: a malformed one makes the report not ocr-hook's (names and reasons go
    into the forge's texts, lines into its requests, so only what this version writes passes)."""
    if items is None:
        return ()
    if not isinstance(items, list) or not all(isinstance(c, dict) for c in items):
        raise TypeError("checks must be a list of objects")
    verdicts = tuple(verdict_from_dict(c) for c in items)
    for v in verdicts:
        if v.verdict not in VERDICTS or not v.name or not all(
                isinstance(e.path, str) and isinstance(e.code, str) and type(e.start_line) is int
                and type(e.end_line) is int for e in v.evidence):
            raise ValueError("a check's verdict is not one ocr-hook writes")
    return verdicts
