"""Bitbucket Cloud: a report as a Code Insights report on the head commit, with its annotations (I/O).

Where: BITBUCKET_WORKSPACE, BITBUCKET_REPO_SLUG and BITBUCKET_COMMIT (Pipelines sets them on every
build; Code Insights hangs on the commit, so a branch build's report shows on the commit and on every pull
request whose head it is). Credentials: BITBUCKET_ACCESS_TOKEN (a repository, project or workspace access
token with the `repository:write` scope... Code Insights needs it) as a Bearer token to BITBUCKET_API_URL
(default https://api.bitbucket.org/2.0); without one, inside Pipelines (BITBUCKET_BUILD_NUMBER set), the
requests go unauthenticated as plain HTTP through the build's own proxy at localhost:29418, which adds
the credentials itself (BITBUCKET_PIPELINES_PROXY overrides its address: inside a pipe's container it is
http://host.docker.internal:29418).

Requests: GET …/src/{commit}/{path} for each file with findings on lines (an annotation goes on its line
only where the reviewed file reads as the commit's there), DELETE the report (its annotations go with it:
a re-run leaves one report with this run's annotations, nothing stale), PUT the report, POST the
annotations in batches of 100.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from ocr_hook.publish.bitbucket_insights import REPORT_ID, InsightsPlan, plan_insights
from ocr_hook.publish.forge_http import ApiRefusal, ForgeApi, NotHere
from ocr_hook.publish.report_input import Report

DEFAULT_API_URL = "https://api.bitbucket.org/2.0"
PIPELINES_API_URL = "http://api.bitbucket.org/2.0"  # plain HTTP: the proxy must see the request to sign it
PIPELINES_PROXY = "http://localhost:29418"
TOKEN_VARIABLE = "BITBUCKET_ACCESS_TOKEN"
VARIABLES = ("BITBUCKET_WORKSPACE", "BITBUCKET_REPO_SLUG", "BITBUCKET_COMMIT")

HINTS = {
    401: "the token is not valid (BITBUCKET_ACCESS_TOKEN)",
    403: "the token may not write Code Insights reports: it needs the repository:write scope",
    404: "no such repository or commit, or the token cannot see it",
}


@dataclass(frozen=True, slots=True)
class Commit:
    workspace: str
    repo_slug: str
    sha: str
    pull_request: str | None = None  # BITBUCKET_PR_ID, for the message only

    def __str__(self) -> str:
        where = f"{self.workspace}/{self.repo_slug}@{self.sha[:12]}"
        return where + (f" (pull request #{self.pull_request})" if self.pull_request else "")

    @property
    def prefix(self) -> str:
        return f"repositories/{quote(self.workspace, safe='')}/{quote(self.repo_slug, safe='')}"


def detect(environ: Mapping[str, str]) -> bool:
    return bool(environ.get("BITBUCKET_BUILD_NUMBER") or environ.get("BITBUCKET_COMMIT"))


def target(environ: Mapping[str, str]) -> Commit:
    values = {name: environ.get(name, "").strip() for name in VARIABLES}
    missing = [name for name, value in values.items() if not value]
    if missing:
        raise NotHere(f"not a Bitbucket Pipelines build: {', '.join(missing)} not set")
    sha = values["BITBUCKET_COMMIT"].lower()
    if len(sha) != 40 or any(c not in "0123456789abcdef" for c in sha):
        raise NotHere(f"BITBUCKET_COMMIT is not a commit hash: {sha[:60]!r}")
    return Commit(values["BITBUCKET_WORKSPACE"], values["BITBUCKET_REPO_SLUG"], sha,
                  environ.get("BITBUCKET_PR_ID", "").strip() or None)


def connect(environ: Mapping[str, str]) -> ForgeApi:
    token = environ.get(TOKEN_VARIABLE, "").strip()
    configured = environ.get("BITBUCKET_API_URL", "").strip()
    if token:
        return ForgeApi(configured or DEFAULT_API_URL, token=token, name="BITBUCKET_API_URL")
    if environ.get("BITBUCKET_BUILD_NUMBER", "").strip():
        proxy = environ.get("BITBUCKET_PIPELINES_PROXY", "").strip() or PIPELINES_PROXY
        return ForgeApi(configured or PIPELINES_API_URL, token=None, proxy=proxy, name="BITBUCKET_API_URL")
    raise NotHere(f"no {TOKEN_VARIABLE}, and not inside Bitbucket Pipelines (whose proxy needs none)")


def publish(api: ForgeApi, commit: Commit, report: Report, reviewed: Mapping[str, list[str]],
            checkout: Path | None = None) -> str:
    """Publish; the line that says what was published. Raises ApiRefusal."""
    reports = f"{commit.prefix}/commit/{commit.sha}/reports/{REPORT_ID}"
    head = _head_files(api, commit, report)
    plan = plan_insights(report, head, reviewed)
    api.delete(reports, missing_ok=True)
    api.put(reports, plan.report)
    posted = 0
    for batch in plan.batches():
        try:
            api.post(f"{reports}/annotations", batch)
        except ApiRefusal as exc:
            raise ApiRefusal(exc.status, f"{exc.message} (the report is there with {posted} of "
                                         f"{len(plan.annotations)} annotations)") from None
        posted += len(batch)
    return _published(commit, plan)


def _head_files(api: ForgeApi, commit: Commit, report: Report) -> dict[str, list[str]]:
    files: dict[str, list[str]] = {}
    for path in sorted({f.path for f in report.findings if f.anchored and f.suppressed is None}):
        text = api.get_text(f"{commit.prefix}/src/{commit.sha}/{quote(path)}", missing_ok=True)
        if text is not None:
            files[path] = text.split("\n")
        else:
            files[path] = []  # not in the commit: nothing of it can be annotated on a line
    return files


def _published(commit: Commit, plan: InsightsPlan) -> str:
    result = plan.report["result"]
    parts = [f"{plan.on_lines} annotation(s) on lines", f"{plan.without_line} on files"]
    if plan.left_out:
        parts.append(f"{plan.left_out} over Bitbucket's 1,000 a report, not annotated")
    if plan.suppressed:
        parts.append(f"{plan.suppressed} suppressed, not posted")
    return f"published a Code Insights report ({result}) on {commit}: " + ", ".join(parts)
