"""The `--format json` report as the publishers read it (github-review and the forges to come).

The reader lives with the rest of the report's JSON form in ocr_hook.findings.serial (one place knows the
format; the result cache, `dismiss --from` and the publishers all import it from there, downward). These
names stay here for the publishers: `load_report(path, where)` checks strictly, `ReportError` is exit 2.
"""

from __future__ import annotations

from ocr_hook.findings.serial import Report, ReportError, load_report, parse_report, reviewed_commit

__all__ = ["Report", "ReportError", "load_report", "parse_report", "reviewed_commit"]
