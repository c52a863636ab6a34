"""Issue 60: each forge adapter's `linked_tickets`, against its fake (tests/fake_*.py), every request checked
against the forge's API description. The adapter is opened as the review in CI opens it (publish/forges.py
`open_adapter` from the CI variables, as publish/forge_dismissals.py does); no CLI run, so each test is cheap.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_azure import Change, FakeAzure, Iteration
from fake_bitbucket import FakeBitbucket
from fake_gitea import FakeGitea
from fake_gitlab import FakeGitLab

from ocr_hook.publish.forges import Setup, open_adapter
from ocr_hook.tickets.model import Reference

HEAD, BASE = "a" * 40, "b" * 40
CRITERIA = "Acceptance criteria:\n- logins are rate limited\n- a locked account says so\n- the limit is logged"


def adapter(forge: str, env: dict[str, str]):
    return open_adapter(forge, Setup(env, time.monotonic() + 30, None))


def ref(source: str, key: str, number: int | None, repo: str | None = None, origin: str = "body") -> Reference:
    return Reference(source, key, repo, number, origin)


# --- GitLab ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gitlab() -> Iterator[FakeGitLab]:
    with FakeGitLab() as fake:
        fake.fresh("glpat-tickets0123456789abcdef", "ocr-bot")
        fake.add_mr(3, HEAD, BASE, [])
        fake.add_issue(1, "Rate-limit logins", CRITERIA)
        fake.add_issue(2, "Log the limit", "x" * 50)
        fake.add_issue(4, "Shared login page", "Lives in another project", project="group/other", project_id=77)
        fake.add_issue(9, "Secret", "never read", project="group/private", project_id=78)
        fake.add_issue(6, "Too many", "over the limit")
        fake.private.add("group/private")
        fake.mrs[3].closes = [("group/app", 1), ("group/other", 4)]
        yield fake


def test_gitlab_reads_closing_issues_then_references(gitlab: FakeGitLab) -> None:
    env = {"GITLAB_CI": "true", "CI_API_V4_URL": gitlab.api, "CI_PROJECT_ID": "42", "CI_PROJECT_PATH": "group/app",
           "CI_MERGE_REQUEST_IID": "3", "GITLAB_TOKEN": "glpat-tickets0123456789abcdef"}
    opened = adapter("gitlab", env)
    refs = [ref("gitlab", "#1", 1), ref("gitlab", "group/private#9", 9, "group/private"),
            ref("gitlab", "group/app#2", 2, "group/app"), ref("gitlab", "#6", 6),
            ref("jira", "ABC-1", None)]
    try:
        read = opened.linked_tickets(refs, 3, 20)
    finally:
        opened.close()
    # the closing issues first (another project's with its path), #1 once, #2 by this project's path as #2;
    # the private project's issue is a note; #6 is past the limit of three and never read
    assert [t.ticket.key for t in read.tickets] == ["#1", "group/other#4", "#2"]
    first = read.tickets[0]
    assert first.ticket.title == "Rate-limit logins" and first.ticket.source == "gitlab"
    assert first.ticket.url == f"{gitlab.url}/group/app/-/issues/1"
    assert first.body == CRITERIA[:20] and first.ticket.clipped and first.left_out.startswith(f"{len(CRITERIA) - 20}")
    assert read.notes == ("GitLab issue group/private#9 skipped: the token cannot read it (HTTP 404)",)
    paths = [r.path for r in gitlab.requests]
    assert paths == ["/api/v4/projects/42/merge_requests/3/closes_issues", "/api/v4/projects/group/private/issues/9",
                     "/api/v4/projects/42/issues/2"]
    gitlab.assert_conforms()


# --- Azure DevOps -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def azure() -> Iterator[FakeAzure]:
    with FakeAzure() as fake:
        fake.tokens["az-tickets-token"] = "read"
        fake.add_pull(7, [Iteration(HEAD, BASE, [Change("/app.py")])]).work_items = [77, 78]
        fake.work_items = {
            77: {"System.Title": "Rate-limit logins", "System.Description": "<div>Users are <b>locked</b> out &amp; "
                 "told.</div><script>steal()</script>", "Microsoft.VSTS.Common.AcceptanceCriteria":
                 "<ul><li>five tries</li><li>a message</li></ul>"},
            78: {"System.Title": "hidden", "System.Description": "never read"},
            79: {"System.Title": "Log it", "System.Description": "<p>log every lockout</p>"}}
        fake.hidden = {78}
        yield fake


def test_azure_reads_linked_work_items_then_ab_references(azure: FakeAzure) -> None:
    env = {"TF_BUILD": "True", "SYSTEM_COLLECTIONURI": azure.collection_uri, "SYSTEM_TEAMPROJECT": "Fabrikam",
           "BUILD_REPOSITORY_ID": azure.repository_id, "BUILD_REPOSITORY_PROVIDER": "TfsGit",
           "SYSTEM_PULLREQUEST_PULLREQUESTID": "7", "SYSTEM_ACCESSTOKEN": "az-tickets-token"}
    opened = adapter("azure", env)
    try:
        read = opened.linked_tickets([ref("azure", "AB#77", 77), ref("azure", "AB#79", 79)], 5, 4000)
    finally:
        opened.close()
    assert [t.ticket.key for t in read.tickets] == ["AB#77", "AB#79"]
    first = read.tickets[0]
    # acceptance criteria first; the HTML is text only (no tag, no script, entities decoded)
    assert first.body == "Acceptance criteria:\n- five tries\n- a message\n\nUsers are locked out & told."
    assert first.ticket.url == f"{azure.collection_uri}Fabrikam/_workitems/edit/77" and not first.ticket.clipped
    assert read.notes == ("Azure DevOps work item AB#78 skipped: the token cannot read it, or there is none",)
    lists = [r for r in azure.requests if r.path.endswith("/_apis/wit/workitems")]
    assert len(lists) == 1 and lists[0].query["ids"] == "77,78,79" and lists[0].query["errorPolicy"] == "omit"
    azure.assert_conforms()


# --- Gitea --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gitea() -> Iterator[FakeGitea]:
    with FakeGitea() as fake:
        fake.tokens["gitea-tickets-token"] = "read"
        fake.add_issue(5, "Rate-limit logins", CRITERIA)
        fake.add_issue(6, "A pull request", "not a ticket", pull=True)
        fake.add_issue(7, "Elsewhere", "private", repository="octo/secret")
        fake.add_issue(8, "Library issue", "read it", repository="octo/lib")
        fake.private.add("octo/secret")
        yield fake


def test_gitea_reads_referenced_issues_and_skips_pull_requests(gitea: FakeGitea, tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 3, "head": {"sha": HEAD}}}), encoding="utf-8")
    env = {"GITEA_ACTIONS": "true", "GITHUB_REPOSITORY": "octo/app", "GITHUB_EVENT_NAME": "pull_request",
           "GITHUB_EVENT_PATH": str(event), "GITHUB_API_URL": gitea.api, "GITEA_TOKEN": "gitea-tickets-token"}
    opened = adapter("gitea", env)
    refs = [ref("gitea", "#5", 5, origin="title"), ref("gitea", "#6", 6),
            ref("gitea", "octo/secret#7", 7, "octo/secret"),
            ref("gitea", "octo/lib#8", 8, "octo/lib"), ref("gitea", "octo/app#5", 5, "octo/app")]
    try:
        read = opened.linked_tickets(refs, 5, 4000)
    finally:
        opened.close()
    assert [(t.ticket.key, t.ticket.title) for t in read.tickets] == [("#5", "Rate-limit logins"),
                                                                     ("octo/lib#8", "Library issue")]
    assert read.tickets[0].body == CRITERIA and read.tickets[0].ticket.url == f"{gitea.url}/octo/app/issues/5"
    assert read.notes == ("Gitea #6 skipped: it is a pull request, not an issue",
                          "Gitea issue octo/secret#7 skipped: the token cannot read it (HTTP 404)")
    assert len(gitea.requests) == 4  # octo/app#5 is #5, read once
    gitea.assert_conforms()


# --- Bitbucket Cloud ----------------------------------------------------------------------------------------


def test_bitbucket_reads_no_issue_and_says_so() -> None:
    with FakeBitbucket() as fake:
        env = {"BITBUCKET_BUILD_NUMBER": "42", "BITBUCKET_WORKSPACE": "team", "BITBUCKET_REPO_SLUG": "app",
               "BITBUCKET_COMMIT": HEAD, "BITBUCKET_BRANCH": "ABC-12-login", "BITBUCKET_PR_ID": "7",
               "BITBUCKET_API_URL": fake.api_url, "BITBUCKET_ACCESS_TOKEN": "bb-tickets-token"}
        opened = adapter("bitbucket", env)
        try:
            read = opened.linked_tickets([], 5, 4000)
        finally:
            opened.close()
        assert read.tickets == () and len(read.notes) == 1
        assert "Bitbucket Cloud's own issues are not read" in read.notes[0] and "Jira" in read.notes[0]
        assert fake.requests == []
