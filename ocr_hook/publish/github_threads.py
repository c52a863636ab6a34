"""A GitHub pull request's review threads through GraphQL (DESIGN.md 18): the documents the GitHub adapter
sends, and the pure reading of their answers into `plan.Posted`.

GitHub's REST API lists review comments but not their threads: whether a thread is resolved, by whom, and
resolving it are GraphQL only (`pullRequest.reviewThreads`, `resolveReviewThread`). Each thread becomes one
Posted: its first comment (author, body, REST id for a reply), the thread's node id, whether it is resolved
and by whom, its later comments as replies, and the 👍/👎 people gave the first comment.

Spellings are REST's, as the rest of the adapter reads them: GraphQL names a bot `github-actions` where REST
(and `GET /user`) say `github-actions[bot]`, so a Bot's login gets the suffix back. Who resolved a thread
(`resolvedBy`, a User) has no association with the repository in GraphQL: the adapter asks REST for that
person's permission.

tests/test_github_graphql.py validates every document here against GitHub's published schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ocr_hook.publish.plan import Posted, Reply

MAX_PAGES = 100  # of threads, or of one thread's comments: 10,000, more than any pull request has
# With 100 threads, 100 comments each and 100 reactors on each first comment's groups, a page stays far below
# GitHub's limit of 500,000 nodes a query (100 + 100*100 + 100*1*100 + 100*1 = 20,200).

_COMMENT = """
fragment ThreadComment on PullRequestReviewComment {
  fullDatabaseId
  author { __typename login }
  createdAt
  body
}
"""

THREADS = """
query ReviewThreads($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      author { __typename login }
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id
          isResolved
          path
          resolvedBy { __typename login }
          opening: comments(first: 1) {
            nodes {
              reactionGroups { content reactors(first: 100) { totalCount nodes { __typename } } }
            }
          }
          comments(first: 100) {
            pageInfo { hasNextPage endCursor }
            nodes { ...ThreadComment }
          }
        }
      }
    }
  }
}
""" + _COMMENT

MORE_COMMENTS = """
query ThreadComments($thread: ID!, $after: String) {
  node(id: $thread) {
    ... on PullRequestReviewThread {
      comments(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes { ...ThreadComment }
      }
    }
  }
}
""" + _COMMENT

AUTHOR = """
query PullRequestAuthor($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) { author { __typename login } }
  }
}
"""

RESOLVE = """
mutation ResolveThread($thread: ID!) {
  resolveReviewThread(input: {threadId: $thread}) { thread { id isResolved } }
}
"""

UNRESOLVE = """
mutation UnresolveThread($thread: ID!) {
  unresolveReviewThread(input: {threadId: $thread}) { thread { id isResolved } }
}
"""

# Who the token is, as GitHub says: an App's installation token (`ghs_…`) writes as `<app>[bot]`, which
# REST's `GET /user` refuses to name (issue 58.13).
VIEWER = """
query Viewer { viewer { __typename login } }
"""

DOCUMENTS = (THREADS, MORE_COMMENTS, AUTHOR, RESOLVE, UNRESOLVE, VIEWER)  # every document the adapter sends

WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})  # REST's collaborator permission that does


class ShapeError(ValueError):
    """An answer of a shape the schema does not give (the publish command says so in one line)."""


@dataclass(frozen=True, slots=True)
class Actor:
    login: str  # REST's spelling: a bot's with "[bot]"
    bot: bool


def actor(node: Any) -> Actor:
    """An author or resolver; a deleted account (null) is nobody, with no rights."""
    if node is None:
        return Actor("", False)
    if not isinstance(node, dict) or not isinstance(node.get("login"), str):
        raise ShapeError("an actor without a login")
    login, bot = node["login"], node.get("__typename") == "Bot"
    if bot and not login.endswith("[bot]"):
        login += "[bot]"
    return Actor(login, bot or login.endswith("[bot]"))


def connection(node: Any, what: str) -> tuple[list[Any], str | None]:
    """A connection's nodes and, when there are more, the cursor after them."""
    if not isinstance(node, dict) or not isinstance(node.get("nodes"), list):
        raise ShapeError(f"{what}: no list of nodes")
    info = node.get("pageInfo") or {}
    cursor = info.get("endCursor") if isinstance(info, dict) and info.get("hasNextPage") else None
    return node["nodes"], cursor if isinstance(cursor, str) and cursor else None


def pull_of(data: Any) -> dict[str, Any]:
    repo = data.get("repository") if isinstance(data, dict) else None
    pull = repo.get("pullRequest") if isinstance(repo, dict) else None
    if not isinstance(pull, dict):
        raise ShapeError("no pull request in the answer")
    return pull


@dataclass(frozen=True, slots=True)
class Thread:
    """One review thread as read so far; `more` is the cursor of comments still to fetch."""

    id: str
    resolved: bool
    path: str
    resolver: Actor
    comments: tuple[dict[str, Any], ...]
    thumbs: tuple[int, int]
    more: str | None


def threads_page(data: Any) -> tuple[Actor, list[Thread], str | None]:
    """The pull request's author, one page of its threads, and the cursor of the next page."""
    pull = pull_of(data)
    nodes, cursor = connection(pull.get("reviewThreads"), "reviewThreads")
    found = []
    for t in nodes:
        if not isinstance(t, dict) or not isinstance(t.get("id"), str):
            raise ShapeError("a review thread without an id")
        comments, more = connection(t.get("comments"), "comments")
        opening, _ = connection(t.get("opening"), "comments")
        found.append(Thread(t["id"], t.get("isResolved") is True, str(t.get("path") or ""),
                            actor(t.get("resolvedBy")), tuple(comments), thumbs(opening[0] if opening else {}), more))
    return actor(pull.get("author")), found, cursor


def comments_page(data: Any) -> tuple[list[Any], str | None]:
    node = data.get("node") if isinstance(data, dict) else None
    if not isinstance(node, dict):
        raise ShapeError("the thread is gone from the answer")
    return connection(node.get("comments"), "comments")


def thumbs(comment: Any) -> tuple[int, int]:
    """👍 and 👎 on a comment from anyone but bots (reactors past the first page are counted as people)."""
    counts = {"THUMBS_UP": 0, "THUMBS_DOWN": 0}
    groups = comment.get("reactionGroups") if isinstance(comment, dict) else None
    for group in groups or ():
        if not isinstance(group, dict) or group.get("content") not in counts:
            continue
        reactors = group.get("reactors") or {}
        listed = reactors.get("nodes") or [] if isinstance(reactors, dict) else []
        total = reactors.get("totalCount", 0) if isinstance(reactors, dict) else 0
        bots = sum(1 for r in listed if isinstance(r, dict) and r.get("__typename") == "Bot")
        counts[group["content"]] += max(0, int(total) - bots)
    return counts["THUMBS_UP"], counts["THUMBS_DOWN"]


def thread_posted(thread: Thread, resolver_can_write: bool) -> Posted | None:
    """The thread as the plan reads it (None for a thread without comments, which GitHub does not list)."""
    if not thread.comments:
        return None
    first, *later = thread.comments
    if not isinstance(first, dict):
        raise ShapeError("a comment that is not an object")
    replies = []
    for c in later:
        if not isinstance(c, dict):
            raise ShapeError("a comment that is not an object")
        who = actor(c.get("author"))
        replies.append(Reply(who.login, str(c.get("body") or ""), str(c.get("createdAt") or ""), who.bot))
    opener = actor(first.get("author"))
    resolver = thread.resolver if thread.resolved else Actor("", False)
    # state stays "": GitHub's threads are open or resolved, nothing more. resolved_at stays "": GitHub keeps
    # no time of a resolve (no field of the thread, no timeline event).
    return Posted(opener.login, str(first.get("body") or ""), id=str(first.get("fullDatabaseId") or ""),
                  thread=thread.id, resolved=thread.resolved, resolvable=True,
                  created_at=str(first.get("createdAt") or ""), replies=tuple(replies), resolved_by=resolver.login,
                  resolved_by_bot=resolver.bot,
                  resolved_by_can_write=resolver_can_write and bool(resolver.login) and not resolver.bot,
                  thumbs_up=thread.thumbs[0], thumbs_down=thread.thumbs[1], path=thread.path)


def resolvers(threads: Sequence[Thread], ours: Any) -> list[str]:
    """The people (no bots) who resolved threads whose first comment `ours(body)` says is ocr-hook's: whose
    write access the adapter asks REST for."""
    seen: list[str] = []
    for t in threads:
        first = t.comments[0] if t.comments else None
        if t.resolved and t.resolver.login and not t.resolver.bot and isinstance(first, dict) \
                and ours(str(first.get("body") or "")) and t.resolver.login not in seen:
            seen.append(t.resolver.login)
    return seen
