"""The fake GitHub's GraphQL endpoint (POST /graphql): the real graphql-core executes each request against
GitHub's published schema (tests/api_descriptions/github.graphql), with resolvers that answer from the fake's
state, so a query GitHub would refuse (a misspelt field, a wrong argument, a missing variable) is refused
here too, with GitHub's 200-and-`errors` answer.

What it serves is what ocr-hook asks: a repository's pull request, its author and review threads (resolved,
outdated, by whom), each thread's comments (author with its association, body, time, 👍/👎 and the other
reactions), a thread by its node id, the `resolveReviewThread` and `unresolveReviewThread` mutations, and
`viewer` (the token's user; an installation token's bot with REST's `name[bot]` spelling), and for linked
tickets (issue 60) a pull request's `closingIssuesReferences` and a repository's `issueOrPullRequest` (the
fake's `issues`; a pull request's number answers a PullRequest, an unknown one NOT_FOUND). Connections page
as GitHub's do (`first` up to 100, `after` a cursor, an error without `first` or `last` when nodes are asked
for), in pages no larger than the fake's page size so that one pull request already needs several.

Threads are made of the fake's REST review comments: a comment without `in_reply_to_id` opens one, its
replies follow. Errors are shaped as GitHub's: `{"type": "FORBIDDEN", "path": [...], "locations": [...],
"message": ...}` beside `data` with null where the error was.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import api_contract
import graphql

if TYPE_CHECKING:
    from fake_github import FakeGitHub, Pull

MAX_FIRST = 100
REACTIONS = ("THUMBS_UP", "THUMBS_DOWN", "LAUGH", "HOORAY", "CONFUSED", "HEART", "ROCKET", "EYES")
NOT_INTEGRATION = "Resource not accessible by integration"


@dataclass
class ThreadState:
    resolved: bool = False
    resolved_by: str | None = None  # a login; a bot's is kept but GraphQL's resolvedBy (a User) is then null
    outdated: bool = False


class GitHubError(Exception):
    """An error GitHub reports in `errors` with its `type`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _cursor(index: int) -> str:
    return base64.b64encode(f"cursor:v2:{index}".encode()).decode()


def _index(cursor: str) -> int:
    try:
        return int(base64.b64decode(cursor).decode().rsplit(":", 1)[1])
    except (ValueError, IndexError):
        raise GitHubError("INVALID_CURSOR_ARGUMENTS", f"`{cursor}` does not appear to be a valid cursor.") from None


def _asks_for_items(info: graphql.GraphQLResolveInfo) -> bool:
    selections = [s for node in info.field_nodes for s in (node.selection_set.selections if node.selection_set else ())]
    return any(isinstance(s, graphql.FieldNode) and s.name.value in ("nodes", "edges") for s in selections)


def connection(items: list[Any], page_size: int) -> Any:
    """A resolver for a connection field over `items`."""

    def resolve(info: graphql.GraphQLResolveInfo, first: int | None = None, after: str | None = None,
                last: int | None = None, before: str | None = None, **_filters: Any) -> dict[str, Any]:
        name = info.field_name
        if first is None and last is None and _asks_for_items(info):
            raise GitHubError("MISSING_PAGINATION_BOUNDARIES",
                              f"You must provide a `first` or `last` value to properly paginate the `{name}` "
                              "connection.")
        if last is not None or before is not None:
            raise GitHubError("UNSUPPORTED", "this fake pages forwards only (`first` and `after`)")
        if first is not None and not 0 <= first <= MAX_FIRST:
            raise GitHubError("EXCESSIVE_PAGINATION", f"Requesting {first} records on the `{name}` connection "
                                                      f"exceeds the `first` limit of {MAX_FIRST} records.")
        start = _index(after) + 1 if after else 0
        size = min(first if first is not None else len(items), page_size)
        chunk = items[start:start + size]
        return {"totalCount": len(items), "nodes": chunk,
                "edges": [{"node": n, "cursor": _cursor(start + i)} for i, n in enumerate(chunk)],
                "pageInfo": {"hasNextPage": start + len(chunk) < len(items), "hasPreviousPage": start > 0,
                             "startCursor": _cursor(start) if chunk else None,
                             "endCursor": _cursor(start + len(chunk) - 1) if chunk else None}}

    return resolve


def actor(login: str | None) -> dict[str, Any] | None:
    """GraphQL's view of a login: a bot (REST's `name[bot]`) is a Bot whose login has no suffix."""
    if not login:
        return None
    if login.endswith("[bot]"):
        return {"__typename": "Bot", "login": login.removesuffix("[bot]"), "id": f"BOT_{login}"}
    return {"__typename": "User", "login": login, "id": f"U_{login}"}


class GraphQLEndpoint:
    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake

    def answer(self, body: Any, token: str) -> tuple[int, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            return 400, {"message": "Problems parsing JSON", "documentation_url": "https://docs.github.com/graphql"}
        schema = api_contract.graphql_schema()
        try:
            document = graphql.parse(body["query"])
        except graphql.GraphQLError as exc:
            return 200, {"errors": [{"message": exc.message, "locations": _locations(exc)}]}
        invalid = graphql.validate(schema, document)
        if invalid:
            return 200, {"errors": [{"message": e.message, "locations": _locations(e)} for e in invalid]}
        result = graphql.execute(schema, document, root_value=self._root(token),
                                 variable_values=body.get("variables") or {}, operation_name=body.get("operationName"))
        answer: dict[str, Any] = {"data": result.data}
        if result.errors:
            answer["errors"] = [_error(e) for e in result.errors]
        return 200, answer

    # -- the state, as GraphQL objects ------------------------------------------------------------------------

    def _root(self, token: str) -> dict[str, Any]:
        return {"repository": lambda info, owner, name, **_: self._repository(owner, name),
                "node": lambda info, id: self._node(id),
                "resolveReviewThread": lambda info, input: self._resolve(token, input),
                "unresolveReviewThread": lambda info, input: self._resolve(token, input, False),
                # GitHub names an App's (or the Actions) installation token's bot here with REST's spelling
                "viewer": lambda info: {"__typename": "User", "id": "U_viewer", **self.fake._user(token)}}

    def _repository(self, owner: str, name: str) -> dict[str, Any]:
        if f"{owner}/{name}" != self.fake.repository:
            raise GitHubError("NOT_FOUND", f"Could not resolve to a Repository with the name '{owner}/{name}'.")
        return {"__typename": "Repository", "nameWithOwner": self.fake.repository,
                "pullRequest": lambda info, number: self._pull(number),
                "issueOrPullRequest": lambda info, number: self._issue_or_pull(number)}

    def _issue(self, number: int) -> dict[str, Any]:
        issue = self.fake.issues[number]
        return {"__typename": "Issue", "id": f"I_{number}", "number": number, "title": issue["title"],
                "body": issue["body"], "url": f"https://github.com/{self.fake.repository}/issues/{number}",
                "repository": {"__typename": "Repository", "nameWithOwner": self.fake.repository}}

    def _issue_or_pull(self, number: int) -> dict[str, Any] | None:
        if number in self.fake.issues:
            return self._issue(number)
        if number in self.fake.pulls:  # issues and pull requests share one numbering
            return {"__typename": "PullRequest", "id": f"PR_{number}", "number": number,
                    "url": f"https://github.com/{self.fake.repository}/pull/{number}"}
        raise GitHubError("NOT_FOUND", f"Could not resolve to an issue or pull request with the number of {number}.")

    def _pull(self, number: int) -> dict[str, Any]:
        pull = self.fake.pulls.get(number)
        if pull is None:
            raise GitHubError("NOT_FOUND", f"Could not resolve to a PullRequest with the number of {number}.")
        size = self.fake.page_size
        threads = [self._thread(pull, root) for root in self.fake.thread_roots(pull)]
        return {"__typename": "PullRequest", "id": f"PR_{number}", "number": number, "author": actor(pull.author),
                "reviewThreads": connection(threads, size),
                "closingIssuesReferences": connection([self._issue(n) for n in pull.closing], size)}

    def _thread(self, pull: Pull, root: dict[str, Any]) -> dict[str, Any]:
        state = pull.threads.setdefault(root["id"], ThreadState())
        comments = [self._comment(pull, c) for c in self.fake.thread_comments(pull, root["id"])]
        resolver = actor(state.resolved_by) if state.resolved else None
        return {"__typename": "PullRequestReviewThread", "id": f"PRRT_{root['id']}", "isResolved": state.resolved,
                "isOutdated": state.outdated, "path": root.get("path", ""),
                "resolvedBy": resolver if resolver and resolver["__typename"] == "User" else None,
                "comments": connection(comments, self.fake.page_size)}

    def _comment(self, pull: Pull, comment: dict[str, Any]) -> dict[str, Any]:
        login = comment["user"]["login"]
        given = pull.reactions.get(comment["id"], [])
        groups = [{"content": kind, "reactors": connection([actor(who) for k, who in given if k == kind],
                                                            self.fake.page_size)} for kind in REACTIONS]
        return {"__typename": "PullRequestReviewComment", "id": f"PRRC_{comment['id']}",
                "fullDatabaseId": str(comment["id"]), "author": actor(login),
                "authorAssociation": "NONE" if login.endswith("[bot]") else self.fake.associations.get(login, "NONE"),
                "createdAt": comment.get("created_at", "2026-01-01T00:00:00Z"), "body": comment["body"],
                "reactionGroups": groups}

    def _node(self, node_id: str) -> dict[str, Any] | None:
        for pull in self.fake.pulls.values():
            for root in self.fake.thread_roots(pull):
                if f"PRRT_{root['id']}" == node_id:
                    return self._thread(pull, root)
        raise GitHubError("NOT_FOUND", f"Could not resolve to a node with the global id of '{node_id}'")

    def _resolve(self, token: str, given: dict[str, Any], resolve: bool = True) -> dict[str, Any]:
        # GitHub's rule for an App or Actions token: resolving (and unresolving) needs contents: write.
        if self.fake.tokens.get(token) != "write" or token in self.fake.no_contents_write:
            raise GitHubError("FORBIDDEN", NOT_INTEGRATION)
        for pull in self.fake.pulls.values():
            for root in self.fake.thread_roots(pull):
                if f"PRRT_{root['id']}" == given["threadId"]:
                    state = pull.threads.setdefault(root["id"], ThreadState())
                    state.resolved, state.resolved_by = resolve, self.fake.login_of(token) if resolve else None
                    (self.fake.resolved if resolve else self.fake.unresolved).append((pull.number, root["id"]))
                    return {"thread": self._thread(pull, root)}
        raise GitHubError("NOT_FOUND", f"Could not resolve to a node with the global id of '{given['threadId']}'")


def _locations(error: graphql.GraphQLError) -> list[dict[str, int]]:
    return [{"line": loc.line, "column": loc.column} for loc in error.locations or ()]


def _error(error: graphql.GraphQLError) -> dict[str, Any]:
    found: dict[str, Any] = {"path": error.path, "locations": _locations(error), "message": error.message}
    if isinstance(error.original_error, GitHubError):
        found = {"type": error.original_error.kind, **found}
    return found
