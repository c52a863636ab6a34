"""Linked tickets' pure parts (issue 60): the references a change's texts name, the `tickets:` setting, what
a verdict is kept against, and the forges' requirement table. New modules and a new setting: every test
here fails on main by construction (no ocr_hook.tickets, no `tickets` setting, no requirements table)."""

from __future__ import annotations

import pytest

from ocr_hook.checks.model import CheckVerdict, Evidence, Requirement, Ticket
from ocr_hook.errors import ConfigError
from ocr_hook.settings import _coerce
from ocr_hook.tickets.model import TicketsRead, TicketText, clipped
from ocr_hook.tickets.refs import Texts, find


def keys(texts: Texts, forge: str, **kw: object) -> list[tuple[str, str]]:
    return [(r.key, r.origin) for r in find(texts, forge, **kw)]  # type: ignore[arg-type]


def test_github_references_in_reading_order_title_first_each_ticket_once() -> None:
    texts = Texts(title="Login rules (#12)",
                  body="Closes octo/app#12 and other/lib#4; see https://github.com/octo/app/issues/9, "
                       "https://example.com/octo/app/issues/8, a&#38;b, path/x#5 and feature#6",
                  branch="feature/42-login", commits=("fixes #12", "refs #3"))
    assert keys(texts, "github", repo="octo/app", web_root="https://github.com", limit=10) == [
        ("#12", "title"), ("other/lib#4", "body"), ("#9", "body"), ("path/x#5", "body"), ("#42", "branch"),
        ("#3", "commit")]
    assert len(find(texts, "github", repo="octo/app", limit=2)) == 2


def test_jira_keys_only_of_listed_projects_and_never_on_bitbucket_as_issues() -> None:
    texts = Texts(title="PAY-12: use SHA-256 and UTF-8", body="also OPS-3, ISO-8601", branch="PAY-7-fix")
    assert keys(texts, "bitbucket", jira_projects=["PAY"]) == [("PAY-12", "title"), ("PAY-7", "branch")]
    assert keys(texts, "bitbucket") == []


def test_gitlab_paths_and_urls_and_azure_work_items() -> None:
    gitlab = Texts(body="g/sub/p#5 and https://gitlab.example/g/p/-/issues/6", branch="12-x")
    assert keys(gitlab, "gitlab", repo="g/p", web_root="https://gitlab.example") == [
        ("g/sub/p#5", "body"), ("#6", "body"), ("#12", "branch")]
    azure = Texts(body="AB#5 and https://dev.azure.com/org/proj/_workitems/edit/6 and #7", branch="9-x")
    assert keys(azure, "azure", web_root="https://dev.azure.com/org") == [("AB#5", "body"), ("AB#6", "body")]


def test_the_setting_is_checked_and_a_jira_url_must_be_https_or_this_machine() -> None:
    given = _coerce("tickets", {"mode": "block", "max": 3, "jira": {"url": "https://x.atlassian.net/",
                                                                    "projects": ["PAY"]}}, "f")
    assert (given.mode, given.max, given.jira.url, given.configured) == ("block", 3, "https://x.atlassian.net", True)
    for bad in ({"mode": "never"}, {"max": 0}, {"jira": {"url": "http://jira.example", "projects": ["PAY"]}},
                {"jira": {"url": "https://x", "projects": ["pay"]}}, {"colour": "red"}):
        with pytest.raises(ConfigError, match="tickets"):
            _coerce("tickets", bad, "f")


def test_a_body_is_clipped_with_what_was_left_out_said() -> None:
    item = clipped(Ticket("#1", "t", "https://x/1", "github"), "a" * 50, 20)
    assert (len(item.body), item.ticket.clipped, item.left_out) == (20, True, "30 more characters not shown")


def test_an_edited_ticket_changes_the_verdicts_key() -> None:
    from ocr_hook.agent.checks_stage import check_key, linked_issues_check
    from ocr_hook.changes.model import ChangeSet
    from ocr_hook.settings import TicketSettings, load

    settings = load(None, environ={})
    change = ChangeSet(repo_root="/r", description="d", base="b", target="t", files=())
    check = linked_issues_check(TicketSettings())
    ticket = Ticket("#1", "Login", "https://x/1", "github")

    def key(body: str) -> str:
        return check_key(check, change, None, settings, TicketsRead((TicketText(ticket, body),)))

    assert key("a criterion") == key("a criterion") != key("an edited criterion")


def test_the_summary_table_links_tickets_and_keeps_their_text_inert() -> None:
    from ocr_hook.publish.check_threads import table

    verdict = CheckVerdict("linked-issues", "block", "fail", "One is not met.", "", tickets=(
        Ticket("#12", "@maintainers <img src=x> | login", "https://github.com/o/a/issues/12", "github"),
        Ticket("#13", "t", "javascript:alert(1)", "github")), requirements=(
        Requirement("#12", "locks after 5 tries", "not_met", reason="nothing counts attempts"),
        Requirement("#12", "refuses an empty password", "met", (Evidence("a.py", "x", 3, 3, True),))))
    text = "\n".join(table([verdict], frozenset(), "pull request"))
    assert "#### Linked tickets" in text and "](https://github.com/o/a/issues/12)" in text
    assert "@maintainers" not in text and "<img" not in text and "](javascript:" not in text
    assert "| ❌ not met | nothing counts attempts |" in text and "`a.py:3`" in text
