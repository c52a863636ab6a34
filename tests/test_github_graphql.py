"""GitHub's GraphQL API as ocr-hook uses it (issue 53, DESIGN 18): every query and mutation the product sends is
valid against GitHub's published schema (vendored from @octokit/graphql-schema), the check fails on a
misspelt field (statically and on the fake GitHub, which executes requests against the same schema), and
the GitHub adapter reads a pull request's review threads into `Posted` exactly: who resolved a thread and
whether they may write, replies with their authors' association, bots never counted, 👍/👎 from people,
threads and comments over several pages. The adapter runs in the test's process over real HTTP.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import api_contract
import httpx2
import pytest
from fake_github import FakeGitHub

from ocr_hook.publish.api_client import ApiRefusal
from ocr_hook.publish.forge_github import GitHubAdapter
from ocr_hook.publish.github_api import GitHubApi, graphql_root
from ocr_hook.publish.github_threads import AUTHOR, DOCUMENTS, MORE_COMMENTS, RESOLVE, THREADS, UNRESOLVE, VIEWER
from ocr_hook.publish.plan import Posted, Reply
from ocr_hook.publish.pr_target import PullRequest

TOKEN = "ghs_fakeGraphQLToken0123456789abcdefABCD"
HEAD = "c" * 40
OURS = "<!-- ocr-hook fingerprint={} -->\n**ocr-hook** · high · bug\n\nSomething."
# Variables for each document, as the adapter sends them.
VARIABLES = {THREADS: {"owner": "octo", "name": "app", "number": 7, "after": None},
             MORE_COMMENTS: {"thread": "PRRT_1", "after": "Y3Vyc29yOnYyOjE="},
             AUTHOR: {"owner": "octo", "name": "app", "number": 7}, RESOLVE: {"thread": "PRRT_1"},
             UNRESOLVE: {"thread": "PRRT_1"}, VIEWER: {}}


# --- the schema and the check ----------------------------------------------------------------------------


def test_the_vendored_schema_is_the_packages() -> None:
    record = json.loads((api_contract.HERE / "github.graphql.json").read_text(encoding="utf-8"))["source"]
    data = (api_contract.HERE / "github.graphql").read_bytes()
    assert hashlib.sha256(data).hexdigest() == record["sha256"]  # unchanged since extract.py copied it
    assert record["package"].startswith("npm:@octokit/graphql-schema@") and record["integrity"].startswith("sha512-")
    schema = api_contract.graphql_schema()
    thread = schema.get_type("PullRequestReviewThread")
    assert {"isResolved", "resolvedBy", "comments"} <= set(thread.fields)  # type: ignore[union-attr]


def test_every_document_the_product_sends_is_valid_against_githubs_schema() -> None:
    assert set(VARIABLES) == set(DOCUMENTS)
    for document, variables in VARIABLES.items():
        assert api_contract.check_graphql({"query": document, "variables": variables}) == [], document


@pytest.mark.parametrize(("change", "problem"), [
    (("isResolved", "isResolvd"), "Cannot query field 'isResolvd' on type 'PullRequestReviewThread'"),
    (("fullDatabaseId", "databaseId"), "PullRequestReviewComment.databaseId is deprecated"),  # GitHub drops it
    (("$number: Int!", "$number: String!"), "Variable '$number' of type 'String!' used in position expecting"),
    (("reviewThreads(first: 100", "reviewThreads(frist: 100"), "Unknown argument 'frist'"),
])
def test_the_check_fails_on_what_github_would_refuse(change: tuple[str, str], problem: str) -> None:
    broken = THREADS.replace(*change)
    assert broken != THREADS
    found = api_contract.check_graphql({"query": broken, "variables": VARIABLES[THREADS]})
    assert any(problem in p for p in found), found


def test_variables_of_the_wrong_type_or_undeclared_are_refused() -> None:
    assert api_contract.check_graphql({"query": THREADS, "variables": {**VARIABLES[THREADS], "number": "7"}})
    assert api_contract.check_graphql({"query": RESOLVE, "variables": {"thread": "x", "body": "y"}})
    assert api_contract.check_graphql({"query": RESOLVE, "variables": {}})  # $thread is required


def test_graphql_lives_beside_the_rest_root() -> None:
    assert graphql_root("https://api.github.com") == "https://api.github.com"
    assert graphql_root("https://ghe.example/api/v3") == "https://ghe.example/api"  # GHES: /api/graphql


# --- the fake GitHub: the same schema, executed ------------------------------------------------------------


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:  # page size 2: threads and comments need several pages
        fake.tokens[TOKEN] = "write"
        yield fake


def api(github: FakeGitHub) -> GitHubApi:
    return GitHubApi(github.url, TOKEN)


def test_a_misspelt_field_fails_on_the_fake_as_on_github(github: FakeGitHub) -> None:
    github.add_pull(7, HEAD, {"a.py": None})
    client = api(github)
    with pytest.raises(ApiRefusal) as refused:
        client.graphql(THREADS.replace("isResolved", "isResolvd"), VARIABLES[THREADS])
    assert refused.value.status == 200 and "Cannot query field 'isResolvd'" in refused.value.message
    with pytest.raises(AssertionError, match="isResolvd"):
        github.assert_conforms()  # and the test that sent it fails
    assert client.graphql(THREADS, VARIABLES[THREADS])["repository"]["pullRequest"]["author"]["login"]


def test_errors_are_githubs_shape(github: FakeGitHub) -> None:
    github.add_pull(7, HEAD, {"a.py": None})
    client = api(github)
    with pytest.raises(ApiRefusal) as refused:
        client.graphql(THREADS, {**VARIABLES[THREADS], "number": 8})
    assert refused.value.status == 404 and "(NOT_FOUND)" in refused.value.message
    github.no_contents_write.add(TOKEN)
    github.add_comment(7, "a.py", 1, "a comment")
    with pytest.raises(ApiRefusal) as refused:
        client.graphql(RESOLVE, {"thread": "PRRT_1000"})
    assert refused.value.status == 403
    assert refused.value.message == "Resource not accessible by integration (FORBIDDEN)"
    answer = json.loads(github_post(github, RESOLVE, {"thread": "PRRT_1000"}))
    assert answer["data"] == {"resolveReviewThread": None}
    [error] = answer["errors"]
    assert (error["type"], error["path"], error["message"]) == ("FORBIDDEN", ["resolveReviewThread"],
                                                                "Resource not accessible by integration")


def github_post(github: FakeGitHub, query: str, variables: dict[str, Any]) -> str:
    return httpx2.post(f"{github.url}/graphql", json={"query": query, "variables": variables},
                       headers={"Authorization": f"Bearer {TOKEN}"}).text


# --- the adapter's reading of the threads -------------------------------------------------------------------


def test_threads_are_read_as_posted(github: FakeGitHub) -> None:
    pull = github.add_pull(7, HEAD, {"a.py": None})
    pull.author = "contributor"
    github.associations.update({"maint": "MEMBER", "owner": "OWNER", "contributor": "CONTRIBUTOR"})
    github.permissions.update({"maint": "maintain", "reader": "read"})
    bot = "github-actions[bot]"
    # 1: ours, answered by the author, a member and a bot, over three pages of comments; resolved by a maintainer.
    github.add_comment(7, "a.py", 1, OURS.format("1" * 32), login=bot)
    first = github.comment_starting(7, OURS.format("1" * 32))["id"]
    github.reply_in_thread(7, first, "It is on purpose.", "contributor")
    github.reply_in_thread(7, first, "Agreed, by design.", "maint")
    github.reply_in_thread(7, first, "<!-- a bot's note -->", "coderabbitai[bot]")
    github.reply_in_thread(7, first, "Resolving.", "owner")
    github.resolve_thread(7, first, "maint")
    for who in ("maint", "renovate[bot]", "owner"):  # the bot among the first two reactors: not counted
        github.react(7, first, "THUMBS_UP", who)
    github.react(7, first, "THUMBS_DOWN", "contributor")
    # 2: ours, resolved by someone who may only read. 3: a person's, resolved by an admin (not asked about).
    github.add_comment(7, "a.py", 2, OURS.format("2" * 32), login=bot)
    github.resolve_thread(7, github.comment_starting(7, OURS.format("2" * 32))["id"], "reader")
    github.add_comment(7, "a.py", 3, "A person's own thread.", login="owner")
    github.resolve_thread(7, github.comment_starting(7, "A person's own")["id"], "admin")
    # 4: ours, resolved by a bot (GraphQL names no User then), and 5: ours, open.
    github.add_comment(7, "a.py", 4, OURS.format("4" * 32), login=bot)
    github.resolve_thread(7, github.comment_starting(7, OURS.format("4" * 32))["id"], "github-actions[bot]")
    github.add_comment(7, "a.py", 5, OURS.format("5" * 32), login=bot)

    adapter = GitHubAdapter(api(github), PullRequest("octo/app", 7, HEAD))
    found = adapter.existing()
    threads = [p for p in found if p.thread]
    assert [p.body.split("\n", 1)[0] for p in threads] == [
        OURS.format(n).split("\n", 1)[0] for n in ("1" * 32, "2" * 32)] + ["A person's own thread."] + [
        OURS.format(n).split("\n", 1)[0] for n in ("4" * 32, "5" * 32)]
    one, two, person, four, five = threads
    assert one == Posted(
        bot, OURS.format("1" * 32), id=str(first), thread=f"PRRT_{first}", resolved=True, resolvable=True,
        created_at=one.created_at, replies=(
            Reply("contributor", "It is on purpose.", one.replies[0].at, bot=False),
            Reply("maint", "Agreed, by design.", one.replies[1].at, bot=False),
            Reply("coderabbitai[bot]", "<!-- a bot's note -->", one.replies[2].at, bot=True),
            Reply("owner", "Resolving.", one.replies[3].at, bot=False)),
        state="", resolved_by="maint", resolved_by_bot=False, resolved_by_can_write=True, resolved_at="",
        thumbs_up=2, thumbs_down=1, path="a.py")
    assert one.created_at < one.replies[0].at < one.replies[3].at  # ISO 8601, oldest first
    assert (two.resolved, two.resolved_by, two.resolved_by_can_write) == (True, "reader", False)
    assert (person.author, person.resolved_by, person.resolved_by_can_write) == ("owner", "admin", False)
    assert (four.resolved, four.resolved_by, four.resolved_by_can_write) == (True, "", False)
    assert (five.resolved, five.resolved_by, five.replies, five.thumbs_up) == (False, "", (), 0)
    assert adapter.author() == "contributor"  # from the same query: no request of its own

    asked = [r.path.rsplit("/", 2)[1] for r in github.requests if r.path.endswith("/permission")]
    assert asked == ["maint", "reader"]  # the resolvers of ours only, each once; never the bot
    queries = [r.body["query"] for r in github.requests if r.path == "/graphql"]
    # Five threads in pages of two: three pages; thread 1's five comments: two more pages of its own.
    assert [q.lstrip().split("(", 1)[0].split()[1] for q in queries] == [
        "ReviewThreads", "ThreadComments", "ThreadComments", "ReviewThreads", "ReviewThreads"]


def test_author_without_existing_asks_once(github: FakeGitHub) -> None:
    github.add_pull(7, HEAD, {"a.py": None}).author = "dependabot[bot]"
    adapter = GitHubAdapter(api(github), PullRequest("octo/app", 7, HEAD))
    assert adapter.author() == adapter.author() == "dependabot[bot]"  # REST's spelling of a bot
    assert len([r for r in github.requests if r.path == "/graphql"]) == 1
