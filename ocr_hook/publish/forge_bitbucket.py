"""Bitbucket Cloud: a report as a Code Insights report on the head commit, with its annotations (I/O).

Where: BITBUCKET_WORKSPACE, BITBUCKET_REPO_SLUG and BITBUCKET_COMMIT (Pipelines sets them on every
build; Code Insights hangs on the commit, so a branch build's report shows on the commit and on every pull
request whose head it is). Credentials: BITBUCKET_ACCESS_TOKEN (a repository, project or workspace access
token with the `repository:write` scope, which Code Insights writes need) as a Bearer token to BITBUCKET_API_URL
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
from types import MappingProxyType
from urllib.parse import quote

import httpx2

from ocr_hook import __version__
from ocr_hook.publish.api_client import TIMEOUT_S, ApiClient, ApiRefusal, check_token
from ocr_hook.publish.bitbucket_insights import REPORT_ID, InsightsPlan, plan_insights
from ocr_hook.publish.forge_bitbucket_pr import BitbucketPullRequestAdapter
from ocr_hook.publish.forges import NotApplicable, Setup
from ocr_hook.publish.report_input import Report

DEFAULT_API_URL = "https://api.bitbucket.org/2.0"
PIPELINES_API_URL = "http://api.bitbucket.org/2.0"  # plain HTTP: the proxy must see the request to sign it
PIPELINES_PROXY = "http://localhost:29418"
TOKEN_VARIABLE = "BITBUCKET_ACCESS_TOKEN"
VARIABLES = ("BITBUCKET_WORKSPACE", "BITBUCKET_REPO_SLUG", "BITBUCKET_COMMIT")


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


class ProxiedClient(ApiClient):
    """The shared client, sending through Pipelines' authenticating proxy instead of with a token."""

    def __init__(self, base_url: str, proxy: str, *, deadline: float) -> None:
        super().__init__(base_url, headers={}, variable="BITBUCKET_API_URL", deadline=deadline)
        self._client.close()
        self._client = httpx2.Client(base_url=self.base + "/", proxy=proxy, trust_env=False, timeout=TIMEOUT_S,
                                     follow_redirects=False,
                                     headers={"Accept": "application/json", "User-Agent": f"ocr-hook/{__version__}"})


class BitbucketAdapter:
    """Code Insights is a report with up to 1,000 annotations rather than 50 comments and a summary:
    publishing.publish hands the whole run to `publish_report` (the inline/summary steps do not apply)."""

    forge = "Bitbucket"
    kind = "commit"
    fix_style = "none"
    summary_style = "replace"
    max_body = 2000
    published_as = "a Code Insights report"
    summary_name = "the report"
    hints = MappingProxyType({
        401: f"the token is not valid ({TOKEN_VARIABLE})",
        403: "the token may not write Code Insights reports: it needs the repository:write scope",
        404: "no such repository or commit, or the token cannot see it",
    })

    def __init__(self, api: ApiClient, commit: Commit) -> None:
        self.api, self.commit = api, commit
        self.target, self.head_sha = str(commit), commit.sha

    def publish_report(self, report: Report, reviewed: Mapping[str, list[str]], stale: bool = False) -> str:
        """Publish; the line that says what was published. Raises ApiRefusal. `stale`: the report is of
        another commit than this one (its line numbers may be other code here: no annotation on a line)."""
        reports = f"{self.commit.prefix}/commit/{self.commit.sha}/reports/{REPORT_ID}"
        head = {} if stale else self._head_files(report)
        plan = plan_insights(report, head, reviewed, stale=stale)
        try:
            self.api.delete(reports)  # its annotations go with it: nothing stale stays
        except ApiRefusal as exc:
            if exc.status != 404:
                raise
        self.api.put(reports, plan.report)
        posted = 0
        for batch in plan.batches():
            try:
                self.api.post(f"{reports}/annotations", batch)
            except ApiRefusal as exc:
                raise ApiRefusal(exc.status, f"{exc.message} (the report is there with {posted} of "
                                             f"{len(plan.annotations)} annotations)") from None
            posted += len(batch)
        line = _published(self.commit, plan)
        return line + (f"; the report is of commit {report.commit}, not {self.commit.sha[:12]}: no annotation on a "
                       "line" if stale else "")

    def _head_files(self, report: Report) -> dict[str, list[str]]:
        files: dict[str, list[str]] = {}
        for path in sorted({f.path for f in report.findings if f.anchored and f.suppressed is None}):
            try:
                text = self.api.get_text(f"{self.commit.prefix}/src/{self.commit.sha}/{quote(path)}")
            except ApiRefusal as exc:
                if exc.status != 404:
                    raise
                text = None
            # Not in the commit: nothing of it can be annotated on a line.
            files[path] = text.split("\n") if text is not None else []
        return files

    def close(self) -> None:
        self.api.__exit__(None, None, None)


def target(environ: Mapping[str, str]) -> Commit:
    values = {name: environ.get(name, "").strip() for name in VARIABLES}
    missing = [name for name, value in values.items() if not value]
    if missing:
        raise NotApplicable(f"not a Bitbucket Pipelines build: {', '.join(missing)} not set")
    sha = values["BITBUCKET_COMMIT"].lower()
    if len(sha) != 40 or any(c not in "0123456789abcdef" for c in sha):
        raise NotApplicable(f"BITBUCKET_COMMIT is not a full commit hash: {sha[:60]!r}")
    return Commit(values["BITBUCKET_WORKSPACE"], values["BITBUCKET_REPO_SLUG"], sha,
                  environ.get("BITBUCKET_PR_ID", "").strip() or None)


def comments_wanted(setup: Setup) -> bool:
    """The setting bitbucket_comments, as the review read it (.ocr-hook.yaml in the checkout, or
    OCR_HOOK_BITBUCKET_COMMENTS); settings that do not load leave Code Insights, as before."""
    from ocr_hook.errors import ConfigError
    from ocr_hook.settings import load

    try:
        return load(setup.checkout, None, flags={}, environ=setup.environ).bitbucket_comments
    except ConfigError:
        return False


def open_adapter(setup: Setup) -> BitbucketAdapter | BitbucketPullRequestAdapter:
    """Code Insights on the commit; in a pull-request pipeline with the setting bitbucket_comments and a token,
    the pull request's comments instead (forge_bitbucket_pr: threads that resolve, DESIGN.md 18)."""
    env = setup.environ
    commit = target(env)
    token = env.get(TOKEN_VARIABLE, "").strip()
    configured = env.get("BITBUCKET_API_URL", "").strip()
    if commit.pull_request and comments_wanted(setup):
        if not token:
            raise NotApplicable(f"bitbucket_comments is on but there is no {TOKEN_VARIABLE} (Pipelines' proxy "
                                "signs Code Insights requests only)", str(commit))
        if not commit.pull_request.isdigit():
            raise NotApplicable(f"BITBUCKET_PR_ID is not a number: {commit.pull_request[:40]!r}", str(commit))
        check_token(token)
        api = ApiClient(configured or DEFAULT_API_URL, headers={"Authorization": f"Bearer {token}"},
                        secrets=(token,), variable="BITBUCKET_API_URL", deadline=setup.deadline)
        repo = f"{quote(commit.workspace, safe='')}/{quote(commit.repo_slug, safe='')}"
        return BitbucketPullRequestAdapter(api, repo, commit.workspace, int(commit.pull_request), commit.sha)
    if token:
        check_token(token)
        api = ApiClient(configured or DEFAULT_API_URL, headers={"Authorization": f"Bearer {token}"},
                        secrets=(token,), variable="BITBUCKET_API_URL", deadline=setup.deadline)
    elif env.get("BITBUCKET_BUILD_NUMBER", "").strip():
        proxy = env.get("BITBUCKET_PIPELINES_PROXY", "").strip() or PIPELINES_PROXY
        api = ProxiedClient(configured or PIPELINES_API_URL, proxy, deadline=setup.deadline)
    else:
        raise NotApplicable(f"no {TOKEN_VARIABLE}, and not inside Bitbucket Pipelines (whose proxy needs none)",
                            str(commit))
    return BitbucketAdapter(api, commit)


def _published(commit: Commit, plan: InsightsPlan) -> str:
    result = plan.report["result"]
    parts = [f"{plan.on_lines} annotation(s) on lines", f"{plan.without_line} on files"]
    if plan.left_out:
        parts.append(f"{plan.left_out} beyond Bitbucket's 1,000 a report, not annotated")
    if plan.suppressed:
        parts.append(f"{plan.suppressed} suppressed, not posted")
    return f"published a Code Insights report ({result}) on {commit}: " + ", ".join(parts)
