"""Upload a SARIF file to GitHub code scanning (POST /repos/{o}/{r}/code-scanning/sarifs).

What github/codeql-action/upload-sarif does for one file, minus waiting for processing: the
category goes into each run's `automationDetails.id` (as `CATEGORY/`, that action's convention, so
results uploaded by either keep matching), the log is gzipped and base64-encoded. A repository
without code scanning (a private one without GitHub Code Security) answers with one of
NOT_ENABLED's messages: the Action's `upload-sarif: auto` makes that a notice.
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

from ocr_hook.publish.github_api import ApiRefusal, GitHubApi

NOT_ENABLED = ("code scanning is not enabled", "advanced security must be enabled")


def not_enabled(refusal: ApiRefusal) -> bool:
    """The refusal says the repository has no code scanning (rather than a bad token or file)."""
    return refusal.status in (403, 404) and any(m in refusal.message.lower() for m in NOT_ENABLED)


def with_category(log: dict[str, Any], category: str) -> dict[str, Any]:
    if not category:
        return log
    automation_id = category if category.endswith("/") else category + "/"
    runs = [dict(run) for run in log.get("runs") or []]
    for run in runs:
        if not (run.get("automationDetails") or {}).get("id"):
            run["automationDetails"] = {**(run.get("automationDetails") or {}), "id": automation_id}
    return {**log, "runs": runs}


def encoded(log: dict[str, Any]) -> str:
    raw = json.dumps(log, ensure_ascii=False).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, mtime=0)).decode("ascii")


def upload_sarif(api: GitHubApi, repository: str, log: dict[str, Any], *, commit_sha: str, ref: str,
                 category: str) -> str:
    """The upload's id; raises ApiRefusal."""
    answer = api.post(f"repos/{repository}/code-scanning/sarifs",
                      {"commit_sha": commit_sha, "ref": ref, "sarif": encoded(with_category(log, category)),
                       "tool_name": "ocr-hook"})
    return str(answer.get("id", "")) if isinstance(answer, dict) else ""
