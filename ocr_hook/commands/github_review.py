"""`ocr-hook github-review --from REPORT.json`: `ocr-hook publish --to github` under its first name.

Publishing never changes the gate: not a pull request, no token, GitHub refusing (a fork's
read-only token answers 403) or not answering is one line on standard error and exit 0. Only a
--from file that is not an ocr-hook JSON report is an error (exit 2).
"""

from __future__ import annotations

from ocr_hook.commands import publish


def run(report_path: str) -> int:
    return publish.run(report_path, "github", command="github-review")
