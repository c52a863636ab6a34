"""`ocr-hook github-review --from REPORT.json`: a finished review as a GitHub pull-request review.

Publishing never changes the gate: not a pull request, no token, GitHub refusing (a fork's
read-only token answers 403) or not answering is one line on standard error and exit 0. Only a
--from file that is not an ocr-hook JSON report is an error (exit 2).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from ocr_hook.publish.report_input import load_report

_HINTS = {
    401: "the token is not valid",
    403: "the token may not write reviews: a pull request from a fork gets a read-only token, and the job "
         "needs `permissions: pull-requests: write`",
    404: "no such pull request, or the token cannot see the repository",
    422: "GitHub did not accept the review",
}


def run(report_path: str) -> int:
    from ocr_hook.publish.pr_target import NoPullRequest, pull_request

    report = load_report(report_path, f"github-review: {report_path}")
    token = os.environ.get("GITHUB_TOKEN", "").strip()
    say = _sayer(token)
    try:
        pr = pull_request(os.environ)
    except NoPullRequest as exc:
        say(f"review not published: {exc}")
        return 0
    if not token:
        say(f"review not published on {pr}: no GITHUB_TOKEN")
        return 0

    from ocr_hook.publish.github_api import ApiRefusal, GitHubApi
    from ocr_hook.publish.pr_review import checkout_root, publish_review

    try:
        with GitHubApi(os.environ.get("GITHUB_API_URL", ""), token) as api:
            line = publish_review(api, pr, report, checkout_root(Path.cwd()))
    except ApiRefusal as exc:
        hint = _HINTS.get(exc.status or 0)
        say(f"review not published on {pr}: {exc}" + (f" ({hint})" if hint else ""))
        return 0
    say(line)
    return 0


def _sayer(token: str) -> Callable[[str], None]:
    def say(line: str) -> None:
        # Nothing we print is built from the token; this only makes sure of it.
        if token:
            line = line.replace(token, "***")
        from ocr_hook.commands.progress import sanitise  # GitHub's messages: one line, no live workflow command

        print(f"ocr-hook: github-review: {sanitise(line)}", file=sys.stderr)

    return say
