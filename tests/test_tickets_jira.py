"""Issue 60: Jira tickets (ocr_hook/tickets/jira.py) against the fake Jira (tests/fake_jira.py), every request
checked against the schema written from Atlassian's REST documentation. Only keys of the listed projects are
fetched, only from the site the settings name, with the token from the environment; no token is one note.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from fake_jira import FakeJira

from ocr_hook.publish.jira import read_jira
from ocr_hook.publish.ticket_text import adf_text
from ocr_hook.settings import JiraSettings
from ocr_hook.tickets.model import Reference

EMAIL, API_TOKEN, PAT = "dev@example.com", "ATATT3xFfGF0-cloudTokenNeverShown", "NjY2-dataCenterPatNeverShown"
ADF = {"type": "doc", "version": 1, "content": [
    {"type": "heading", "attrs": {"level": 2}, "content": [{"type": "text", "text": "Acceptance criteria"}]},
    {"type": "bulletList", "content": [
        {"type": "listItem", "content": [{"type": "paragraph", "content": [
            {"type": "text", "text": "five tries", "marks": [{"type": "strong"}]}]}]},
        {"type": "listItem", "content": [{"type": "paragraph", "content": [
            {"type": "text", "text": "then tell "}, {"type": "mention", "attrs": {"id": "1", "text": "@Ann"}}]}]}]},
    {"type": "paragraph", "content": [{"type": "text", "text": "see"}, {"type": "hardBreak"},
                                      {"type": "inlineCard", "attrs": {"url": "https://example.com/spec"}}]}]}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeJira]:
    with FakeJira() as fake:
        fake.cloud, fake.personal = (EMAIL, API_TOKEN), PAT
        fake.add_issue("ABC-1", "Rate-limit logins", ADF)
        fake.add_issue("ABC-2", "Plain", None)
        fake.add_issue("OPS-7", "Data Center", "Lock after five tries.\nLog it.")
        fake.add_issue("SEC-3", "Hidden", "never read")
        fake.add_issue("SHA-256", "not a ticket", "a key of a project the settings do not list")
        fake.hidden.add("SEC")
        yield fake


@pytest.fixture
def jira(server: FakeJira) -> Iterator[FakeJira]:
    server.reset()
    yield server
    server.assert_conforms()


def refs(*keys: str) -> list[Reference]:
    return [Reference("jira", key, None, None, "body") for key in keys]


def settings(jira: FakeJira) -> JiraSettings:
    return JiraSettings(jira.url, ("ABC", "OPS", "SEC"))


def read(jira: FakeJira, keys: list[Reference], env: dict[str, str], clip: int = 4000):
    return read_jira(keys, settings(jira), env, time.monotonic() + 30, clip)


CLOUD = {"JIRA_EMAIL": EMAIL, "JIRA_API_TOKEN": API_TOKEN}


def test_cloud_reads_listed_keys_with_their_adf_as_text(jira: FakeJira) -> None:
    got = read(jira, refs("ABC-1", "SHA-256", "abc-1", "ABC-2", "SEC-3"), CLOUD)
    assert [t.ticket.key for t in got.tickets] == ["ABC-1", "ABC-2"]
    first = got.tickets[0]
    assert first.ticket.title == "Rate-limit logins" and first.ticket.url == f"{jira.url}/browse/ABC-1"
    assert first.body == "Acceptance criteria\n\n- five tries\n- then tell @Ann\n\nsee\nhttps://example.com/spec"
    assert got.tickets[1].body == "" and not got.failed
    assert got.notes == ("Jira ticket SEC-3 skipped: the token cannot read it (HTTP 404)",)
    # the unlisted project's key is never fetched; ABC-1 once; v3 with basic authentication
    assert [r.path for r in jira.requests] == ["/rest/api/3/issue/ABC-1", "/rest/api/3/issue/ABC-2",
                                               "/rest/api/3/issue/SEC-3"]
    assert all(r.query == {"fields": "summary,description"} and r.headers["authorization"].startswith("Basic ")
               for r in jira.requests)


def test_the_site_is_the_settings_never_the_environment(jira: FakeJira) -> None:
    with FakeJira() as other:
        other.cloud = (EMAIL, API_TOKEN)
        other.add_issue("ABC-1", "elsewhere", None)
        env = {**CLOUD, "JIRA_URL": other.url, "JIRA_BASE_URL": other.url, "JIRA_SITE": other.url}
        got = read(jira, refs("ABC-1"), env)
        assert [t.ticket.title for t in got.tickets] == ["Rate-limit logins"] and other.requests == []


def test_data_center_reads_v2_with_a_bearer_token_and_clips(jira: FakeJira) -> None:
    got = read(jira, refs("OPS-7"), {"JIRA_API_TOKEN": PAT}, clip=10)  # no JIRA_EMAIL: Data Center
    [ticket] = got.tickets
    assert ticket.body == "Lock after" and ticket.ticket.clipped and ticket.left_out.startswith("20 more characters")
    assert [r.path for r in jira.requests] == ["/rest/api/2/issue/OPS-7"]
    assert jira.requests[0].headers["authorization"] == f"Bearer {PAT}"


def test_no_token_is_one_note_and_no_request(jira: FakeJira) -> None:
    got = read(jira, refs("ABC-1", "ABC-2"), {"JIRA_EMAIL": EMAIL})
    assert got.tickets == () and not got.failed and len(got.notes) == 1
    assert "JIRA_API_TOKEN" in got.notes[0] and "Data Center" in got.notes[0]
    assert jira.requests == []


def test_a_refused_token_ends_the_read_with_one_note_that_never_shows_it(jira: FakeJira) -> None:
    got = read(jira, refs("ABC-1", "ABC-2"), {"JIRA_EMAIL": EMAIL, "JIRA_API_TOKEN": "ATATT3x-wrongTokenValue"})
    assert got.tickets == () and got.failed and len(got.notes) == 1
    assert got.notes[0].startswith(f"Jira tickets on {jira.url} not read: HTTP 401")
    assert "wrongTokenValue" not in got.notes[0]
    assert len(jira.requests) == 1


def test_adf_text_is_the_documents_text_only() -> None:
    assert adf_text({"type": "doc", "version": 1, "content": [
        {"type": "table", "content": [{"type": "tableRow", "content": [
            {"type": "tableHeader", "content": [{"type": "paragraph", "content": [{"type": "text", "text": "a"}]}]},
            {"type": "tableCell", "content": [{"type": "paragraph", "content": [{"type": "text", "text": "b"}]}]}]}]},
        {"type": "codeBlock", "content": [{"type": "text", "text": "x = 1"}]},
        {"type": "media", "attrs": {"id": "secret-file"}}, "not a node", {"type": "rule"}]}) == "| a | b\nx = 1"
    deep: dict = {"type": "text", "text": "bottom"}
    for _ in range(5000):  # a hostile tree deeper than any editor writes: no RecursionError
        deep = {"type": "blockquote", "content": [deep]}
    assert adf_text(deep) == ""


def test_a_rate_limit_is_waited_out_by_the_api_client(jira: FakeJira) -> None:
    jira.fail(r"GET /rest/api/3/issue/ABC-1$", 429, {"errorMessages": ["Rate limit exceeded."], "errors": {}},
              {"Retry-After": "0"})
    got = read(jira, refs("ABC-1"), CLOUD)
    assert [t.ticket.key for t in got.tickets] == ["ABC-1"] and got.notes == () and not got.failed
    assert [r.status for r in jira.requests] == [429, 200]
