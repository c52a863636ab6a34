"""A fake of the Azure DevOps Git REST API parts ocr-hook publishes to, over real HTTP on 127.0.0.1.

Built from the Azure DevOps Services REST reference (learn.microsoft.com/rest/api/azure/devops/git, 7.1),
under {collection}/{project}/_apis/git/repositories/{repositoryId}:
  GET   pullRequests/{id}                                     the pull request (createdBy: its author)
  GET   pullRequests/{id}/iterations                          {"value": [...], "count": n}
  GET   pullRequests/{id}/iterations/{it}/changes             $top/$skip pages; nextSkip/nextTop (0: no more)
  GET   items?path=&versionDescriptor.version=SHA&…&includeContent=true   a file at a commit
  GET   pullRequests/{id}/threads                              {"value": [...], "count": n}
  POST  pullRequests/{id}/threads                              threadContext + pullRequestThreadContext
  PATCH pullRequests/{id}/threads/{tid}                       status (active, fixed, closed, …)
  PATCH pullRequests/{id}/threads/{tid}/comments/{cid}        a comment's content (its author only)
  POST  pullRequests/{id}/threads/{tid}/comments              a reply (parentCommentId: the comment answered)
  POST  pullRequests/{id}/statuses                            context {name, genre}, state, iterationId
  GET   pullRequests/{id}/statuses
and under {collection}/_apis (DESIGN 18: whether the person who set a thread's state may write):
  GET   identities?identityIds=ID&queryMembership=none        {"value": [Identity]}: its `descriptor`, the
        "TYPE;IDENTIFIER" string the ACLs take (served at vssps.dev.azure.com; here on the same server)
  GET   accesscontrollists/{namespaceId}?token=repoV2/{projectId}/{repositoryId}&descriptors=D&includeExtendedInfo=true
        the repository's ACL in the Git Repositories namespace with that person's ACE, `extendedInfo.effectiveAllow`
        the bits they have, inherited ones included (GenericContribute = 4: write access)
and {collection}/_apis/connectionData (the authenticated identity). The linked-issues check (issue 60):
  GET   pullRequests/{id}/workitems                            the linked work items' ResourceRefs (id a string)
  GET   {collection}/{project}/_apis/wit/workitems?ids=&fields=&errorPolicy=   Work Items - List
        (`work_items`: id → fields; `hidden` ids are null under errorPolicy=omit, TF401232 404 otherwise).
Every request needs `api-version` (else Azure's 400 VssVersionNotSpecifiedException). Errors have Azure's body shape
`{"$id", "innerException", "message", "typeName", "typeKey", "errorCode", "eventId"}` with the TF codes
Azure uses: TF400813 for an unknown token (401), TF401027 for a token without "Contribute to pull
requests" (403), TF401180 for an unknown pull request (404), TF401174 for a missing item.
What Azure does not document and the fake checks all the same (messages ours): a thread's
iteration context must name existing iterations, its changeTrackingId one of those iterations' changes
for that path, its lines must exist in that file at the iteration's source commit.
`fail()` (tests/fake_forge.py) queues answers (429 with Retry-After, 500) for the next matching requests.
What people do in the web UI, for the tests: `reply` (a comment in a thread), `set_status` (won't fix, by
design, closed...: Azure records no author for it, only the thread's lastUpdatedDate), `like` (usersLiked).
People's identities carry an `aad.` subject descriptor, the build service's is `svc.`. Everyone is a
Contributor on the repository unless `access[id]` says otherwise (READER_BITS: GenericRead only);
`security_refusal` (401/403) refuses the identity and ACL reads, as Azure does for a token without the scopes.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from fake_forge import Answer, FakeForge, Recorded

THREAD_STATUSES = {1: "active", 2: "fixed", 3: "wontFix", 4: "closed", 5: "byDesign", 6: "pending"}
STATUS_STATES = ("notSet", "pending", "succeeded", "failed", "error", "notApplicable")
MAX_COMMENT = 150_000
GIT_NAMESPACE = "2e9eb7ed-3c0a-47d4-87c1-0ffdd275fd87"  # Git Repositories
# GitRepositoryPermissions: GenericRead 2, GenericContribute 4, CreateBranch 16, CreateTag 32, ManageNote 64,
# PullRequestContribute 16384 (a Contributor's); a Reader has GenericRead only
CONTRIBUTOR_BITS, READER_BITS = 2 | 4 | 16 | 32 | 64 | 16384, 2
TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"


@dataclass
class Change:
    path: str  # "/app.py"
    change_type: str = "edit"  # add, edit, delete, rename, "edit, rename"
    original_path: str | None = None  # for a rename


@dataclass
class Iteration:
    source_commit: str
    target_commit: str
    changes: list[Change]


PERSON = {"id": "p-0001", "displayName": "A Person", "uniqueName": "person@example.com", "descriptor": "aad.cDAwMDE"}
AUTHOR = {"id": "p-0002", "displayName": "The Author", "uniqueName": "author@example.com",
          "descriptor": "aad.cDAwMDI"}


def person(n: int, name: str) -> dict[str, str]:
    return {"id": f"p-{n:04d}", "displayName": name, "uniqueName": f"{name.lower().replace(' ', '.')}@example.com",
            "descriptor": f"aad.cDAw{n:04d}"}


@dataclass
class AzurePull:
    number: int
    iterations: list[Iteration]
    status: str = "active"
    created_by: dict[str, str] = field(default_factory=lambda: dict(AUTHOR))
    threads: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    work_items: list[int] = field(default_factory=list)  # the work items linked to it (issue 60)
    title: str = "Rate-limit logins"
    description: str = ""


class FakeAzure(FakeForge):
    contract = "azure"
    name = "azure"

    def __init__(self, organization: str = "contoso", project: str = "Fabrikam", repository_id: str =
                 "3411ebc1-d5aa-464f-9615-0b527bc66719", *, page_size: int = 2) -> None:
        self.organization, self.project, self.repository_id = organization, project, repository_id
        self.identity = {"id": "a1b2c3d4-0000-4000-8000-000000000001",
                         "displayName": f"{project} Build Service ({organization})",
                         "uniqueName": "Build\\a1b2c3d4-0000-4000-8000-000000000001",
                         "descriptor": "svc.YTFiMmMzZDQ"}
        self.clock = itertools.count(1)  # the fake's time: each change a second later
        self.pulls: dict[int, AzurePull] = {}
        self.files: dict[tuple[str, str], str] = {}  # (commit, "/path") → content
        self.project_id = "6ce954b1-ce1f-45d1-b94d-e6bf2464ba2c"
        self.access: dict[str, int] = {}  # a person's id → the repository bits they have (else CONTRIBUTOR_BITS)
        self.security_refusal: int | None = None  # 401/403: identity and ACL reads refused
        self.work_items: dict[int, dict[str, Any]] = {}  # id → its fields; `hidden` ones the token may not read
        self.hidden: set[int] = set()
        super().__init__(page_size=page_size)  # Azure's changes default to $top=100 (at most 2,000)
        self.collection_uri = f"{self.url}/{organization}/"  # what SYSTEM_COLLECTIONURI holds

    # -- set-up -------------------------------------------------------------------------------------------

    def reset(self) -> None:
        super().reset()
        self.access, self.security_refusal = {}, None

    def add_pull(self, number: int, iterations: list[Iteration]) -> AzurePull:
        pull = AzurePull(number, list(iterations))
        with self.lock:
            self.pulls[number] = pull
        return pull

    def add_thread(self, number: int, content: str, *, author: dict[str, str] | None = None,
                   path: str | None = None, line: int | None = None, status: str = "active") -> dict[str, Any]:
        """A thread somebody else started (a person, by default)."""
        who = author or dict(PERSON)
        thread: dict[str, Any] = {"id": next(self.ids), "status": status, "isDeleted": False,
                                  "lastUpdatedDate": self.now(),
                                  "comments": [{"id": 1, "parentCommentId": 0, "author": who, "content": content,
                                                "commentType": "text", "publishedDate": self.now(),
                                                "usersLiked": []}]}
        if path is not None:
            thread["threadContext"] = {"filePath": path, "rightFileStart": {"line": line, "offset": 1},
                                       "rightFileEnd": {"line": line, "offset": 1}}
        with self.lock:
            self.pulls[number].threads.append(thread)
        return thread

    def now(self) -> str:
        tick = next(self.clock)  # a minute each, never turning back (dates are compared: issue 58.9)
        return f"2026-12-06T{5 + tick // 60:02d}:{tick % 60:02d}:00Z"

    def reply(self, thread: dict[str, Any], content: str, who: dict[str, str] | None = None) -> dict[str, Any]:
        """A person answers in a thread (the web UI's reply)."""
        with self.lock:
            comment = {"id": max(c["id"] for c in thread["comments"]) + 1, "parentCommentId": 1,
                       "author": dict(who or PERSON), "content": content, "commentType": "text",
                       "publishedDate": self.now(), "usersLiked": []}
            thread["comments"].append(comment)
            thread["lastUpdatedDate"] = comment["publishedDate"]
        return comment

    def set_status(self, thread: dict[str, Any], status: str) -> None:
        """A person sets a thread's status in the web UI: Azure keeps no author for it."""
        with self.lock:
            thread["status"], thread["lastUpdatedDate"] = status, self.now()

    def like(self, thread: dict[str, Any], who: dict[str, str]) -> None:
        with self.lock:
            thread["comments"][0].setdefault("usersLiked", []).append(dict(who))

    def route(self, rec: Recorded, token: str) -> Answer:
        bearer = rec.headers.get("authorization", "").lower().startswith("bearer ")
        if not bearer or token not in self.tokens:
            return _error(401, "TF400813: The user '' is not authorized to access this resource.",
                          "UnauthorizedRequestException", "Microsoft.TeamFoundation.Framework.Server")
        if "api-version" not in rec.query:
            return _error(400, f'No api-version was supplied for the "{rec.method}" request. The version must be '
                               'supplied either as part of the Accept header (e.g. "application/json; '
                               'api-version=1.0") or as a query parameter (e.g. "?api-version=1.0").',
                          "VssVersionNotSpecifiedException", "Microsoft.VisualStudio.Services.WebApi")
        if rec.path == f"/{self.organization}/_apis/identities" and rec.method == "GET":
            return self._identities(rec.query)
        if rec.path.lower().startswith(f"/{self.organization}/_apis/accesscontrollists/") and rec.method == "GET":
            return self._acl(rec.path.rsplit("/", 1)[1], rec.query)
        if rec.path == f"/{self.organization}/_apis/connectionData":
            # connectionData's users are Identity objects (providerDisplayName), not IdentityRefs
            me = {"id": self.identity["id"], "providerDisplayName": self.identity["displayName"], "isActive": True}
            return 200, {"authenticatedUser": me, "authorizedUser": me}, {}
        if rec.path == f"/{self.organization}/{self.project}/_apis/wit/workitems" and rec.method == "GET":
            return self._work_items(rec.query)
        prefix = f"/{self.organization}/{self.project}/_apis/git/repositories/{self.repository_id}"
        if not rec.path.startswith(prefix + "/"):
            return _error(404, "TF200016: The following project does not exist: " + rec.path.split("/")[2],
                          "ProjectDoesNotExistException", "Microsoft.TeamFoundation.Core.WebApi")
        rest = rec.path[len(prefix):]
        if rest == "/items" and rec.method == "GET":
            return self._item(rec.query)
        m = re.fullmatch(r"/pullRequests/(\d+)(/.*)?", rest, re.I)
        if not m:
            return _error(404, "The requested resource was not found.", "NotFoundException",
                          "Microsoft.VisualStudio.Services.WebApi")
        pull = self.pulls.get(int(m.group(1)))
        if pull is None:
            return _error(404, "TF401180: The requested pull request was not found.",
                          "GitPullRequestNotFoundException", "Microsoft.TeamFoundation.Git.Server")
        sub = m.group(2) or ""
        if rec.method != "GET" and self.tokens[token] != "write":
            return _error(403, "TF401027: You need the Git 'PullRequestContribute' permission to perform this "
                               f"action. Details: identity '{self.identity['uniqueName']}', scope 'repository'.",
                          "GitNeedsPermissionException", "Microsoft.TeamFoundation.Git.Server")
        if sub == "" and rec.method == "GET":
            last = pull.iterations[-1]
            return 200, {"pullRequestId": pull.number, "status": pull.status, "createdBy": dict(pull.created_by),
                         "title": pull.title, "description": pull.description,
                         "repository": {"id": self.repository_id, "name": "app",
                                        "project": {"id": self.project_id, "name": self.project}},
                         "lastMergeSourceCommit": {"commitId": last.source_commit},
                         "lastMergeTargetCommit": {"commitId": last.target_commit}}, {}
        if sub.lower() == "/workitems" and rec.method == "GET":  # ResourceRefs: Azure gives the id as a string
            refs = [{"id": str(n), "url": f"{self.url}/{self.organization}/_apis/wit/workItems/{n}"}
                    for n in pull.work_items]
            return 200, {"value": refs, "count": len(refs)}, {}
        if sub == "/iterations" and rec.method == "GET":
            values = [self._iteration(i + 1, it) for i, it in enumerate(pull.iterations)]
            return 200, {"value": values, "count": len(values)}, {}
        if c := re.fullmatch(r"/iterations/(\d+)/changes", sub):
            return self._changes(pull, int(c.group(1)), rec.query)
        if sub == "/threads":
            if rec.method == "GET":
                return 200, {"value": pull.threads, "count": len(pull.threads)}, {}
            if rec.method == "POST":
                return self._create_thread(pull, rec.body)
        if t := re.fullmatch(r"/threads/(\d+)(?:/comments/(\d+))?", sub):
            thread = next((x for x in pull.threads if x["id"] == int(t.group(1))), None)
            if thread is None:
                return _error(404, f"TF401181: The pull request thread {t.group(1)} was not found.",
                              "GitPullRequestCommentThreadNotFoundException", "Microsoft.TeamFoundation.Git.Server")
            if rec.method == "PATCH" and t.group(2) is None:
                return self._update_thread(thread, rec.body)
            if rec.method == "PATCH":
                return self._update_comment(thread, int(t.group(2)), rec.body)
        if (t := re.fullmatch(r"/threads/(\d+)/comments", sub)) and rec.method == "POST":
            thread = next((x for x in pull.threads if x["id"] == int(t.group(1))), None)
            if thread is None:
                return _error(404, f"TF401181: The pull request thread {t.group(1)} was not found.",
                              "GitPullRequestCommentThreadNotFoundException", "Microsoft.TeamFoundation.Git.Server")
            return self._add_comment(thread, rec.body)
        if sub == "/statuses":
            if rec.method == "GET":
                return 200, {"value": pull.statuses, "count": len(pull.statuses)}, {}
            if rec.method == "POST":
                return self._create_status(pull, rec.body)
        return _error(405, f"The requested resource does not support http method '{rec.method}'.",
                      "NotSupportedException", "System")

    def _work_items(self, query: dict[str, str]) -> Answer:
        """Work Items - List: `ids` (at most 200), `fields`, `errorPolicy` (omit: null for an item the token may
        not read or that does not exist; fail, the default: the whole request refused)."""
        try:
            ids = [int(x) for x in query.get("ids", "").split(",")]
        except ValueError:
            return _bad_request("The ids parameter must be a comma-separated list of work item ids.")
        if not ids or len(ids) > 200:
            return _bad_request("VS402337: The number of work items requested exceeds the limit of 200.")
        wanted = [f for f in query.get("fields", "").split(",") if f]
        out: list[dict[str, Any] | None] = []
        for n in ids:
            fields = self.work_items.get(n)
            if fields is None or n in self.hidden:
                if query.get("errorPolicy", "fail").lower() != "omit":
                    return _error(404, f"TF401232: Work item {n} does not exist, or you do not have permissions "
                                       "to read it.", "WorkItemUnauthorizedAccessException",
                                  "Microsoft.TeamFoundation.WorkItemTracking.Server")
                out.append(None)
                continue
            shown = {k: v for k, v in fields.items() if not wanted or k in wanted}
            out.append({"id": n, "rev": 1, "fields": shown,
                        "url": f"{self.url}/{self.organization}/_apis/wit/workItems/{n}"})
        return 200, {"count": len(out), "value": out}, {}

    def _people(self) -> dict[str, dict[str, Any]]:
        found = {}
        for pull in self.pulls.values():
            found[pull.created_by["id"]] = pull.created_by
            for thread in pull.threads:
                for c in thread["comments"]:
                    for who in (c["author"], *c.get("usersLiked", [])):
                        found[who["id"]] = who
        return found

    def _refused(self) -> Answer | None:
        if self.security_refusal == 401:
            return _error(401, "TF400813: The user is not authorized to access this resource.",
                          "UnauthorizedRequestException", "Microsoft.TeamFoundation.Framework.Server")
        if self.security_refusal == 403:
            return _error(403, "TF400813: Resource not available for anonymous access or insufficient scope.",
                          "UnauthorizedRequestException", "Microsoft.VisualStudio.Services.WebApi")
        return None

    def _identities(self, query: dict[str, str]) -> Answer:
        if refused := self._refused():
            return refused
        people = self._people()
        found = []
        for wanted in query.get("identityIds", "").split(","):
            who = people.get(wanted)
            if who is None:
                continue
            found.append({"id": who["id"], "descriptor": _identity_descriptor(who),
                          "subjectDescriptor": who.get("descriptor", ""),
                          "providerDisplayName": who.get("displayName", ""), "isActive": True,
                          "isContainer": False, "resourceVersion": 2, "metaTypeId": 0})
        return 200, {"count": len(found), "value": found}, {}

    def _acl(self, namespace: str, query: dict[str, str]) -> Answer:
        if refused := self._refused():
            return refused
        if namespace.lower() != GIT_NAMESPACE:
            return _error(404, f"The security namespace {namespace} was not found.",
                          "InvalidSecurityNamespaceIdException", "Microsoft.VisualStudio.Services.Security")
        token = query.get("token", "")
        if token.lower() != f"repoV2/{self.project_id}/{self.repository_id}".lower():
            return 200, {"count": 0, "value": []}, {}
        bits = {_identity_descriptor(who): self.access.get(pid, CONTRIBUTOR_BITS)
                for pid, who in self._people().items()}
        wanted = [d for d in query.get("descriptors", "").split(",") if d]
        extended = query.get("includeExtendedInfo", "").lower() == "true"
        aces = {}
        for d in wanted or list(bits):
            ace: dict[str, Any] = {"descriptor": d, "allow": 0, "deny": 0}  # inherited from the project's groups
            if extended:
                ace["extendedInfo"] = {"effectiveAllow": bits.get(d, 0), "effectiveDeny": 0,
                                       "inheritedAllow": bits.get(d, 0), "inheritedDeny": 0}
            aces[d] = ace
        acl = {"inheritPermissions": True, "token": token, "acesDictionary": aces, "includeExtendedInfo": extended}
        return 200, {"count": 1, "value": [acl]}, {}

    @staticmethod
    def _iteration(number: int, it: Iteration) -> dict[str, Any]:
        return {"id": number, "sourceRefCommit": {"commitId": it.source_commit},
                "targetRefCommit": {"commitId": it.target_commit}, "commonRefCommit": {"commitId": it.target_commit}}

    def _changes(self, pull: AzurePull, number: int, query: dict[str, str]) -> Answer:
        if not 1 <= number <= len(pull.iterations):
            return _bad_request(f"TF401172: The pull request iteration {number} does not exist.")
        top = min(int(query.get("$top", 100)), 2000, self.page_size)
        skip = int(query.get("$skip", 0))
        changes = pull.iterations[number - 1].changes
        entries = []
        for n, ch in enumerate(changes[skip: skip + top], start=skip + 1):
            entry: dict[str, Any] = {"changeTrackingId": n, "changeId": n, "changeType": ch.change_type,
                                     "item": {"objectId": f"{n:040x}", "path": ch.path}}
            if ch.original_path:
                entry["originalPath"] = ch.original_path
            entries.append(entry)
        more = skip + top < len(changes)
        return 200, {"changeEntries": entries, "nextSkip": skip + top if more else 0,
                     "nextTop": top if more else 0}, {}

    def _item(self, query: dict[str, str]) -> Answer:
        path, commit = query.get("path", ""), query.get("versionDescriptor.version", "")
        if (commit, path) not in self.files:
            return _error(404, f"TF401174: The item '{path}' could not be found in the repository at the version "
                               f"specified by '<Commit: {commit}>'.", "GitItemNotFoundException",
                          "Microsoft.TeamFoundation.Git.Server")
        item = {"objectId": "0" * 40, "gitObjectType": "blob", "commitId": commit, "path": path}
        if query.get("includeContent", "").lower() == "true":
            item["content"] = self.files[(commit, path)]
        return 200, item, {}

    def _create_thread(self, pull: AzurePull, body: Any) -> Answer:
        if not isinstance(body, dict):
            return _bad_request("The request body is not a pull request thread.")
        comments = body.get("comments")
        if not isinstance(comments, list) or not comments:
            return _bad_request("A thread must have at least one comment.")
        for c in comments:
            if not isinstance(c, dict) or not isinstance(c.get("content"), str) or not c["content"]:
                return _bad_request("The comment content is required.")
            if len(c["content"]) > MAX_COMMENT:
                return _bad_request(f"The comment is too long (at most {MAX_COMMENT} characters).")
        context = body.get("threadContext")
        if context is not None:
            problem = self._context_problem(pull, context, body.get("pullRequestThreadContext"))
            if problem:
                return _bad_request(problem)
        now = self.now()
        thread = {"id": next(self.ids), "status": _status_word(body.get("status", "active")), "isDeleted": False,
                  "properties": body.get("properties") or {}, "publishedDate": now, "lastUpdatedDate": now,
                  "comments": [{"id": n, "parentCommentId": int(c.get("parentCommentId") or 0),
                                "author": dict(self.identity), "content": c["content"], "publishedDate": now,
                                "commentType": c.get("commentType", "text"), "usersLiked": []}
                               for n, c in enumerate(comments, 1)]}
        if context is not None:
            thread["threadContext"] = context
            thread["pullRequestThreadContext"] = body.get("pullRequestThreadContext")
        pull.threads.append(thread)
        return 200, thread, {}

    def _context_problem(self, pull: AzurePull, context: Any, pr_context: Any) -> str | None:
        if not isinstance(context, dict) or not str(context.get("filePath", "")).startswith("/"):
            return "The thread's filePath must be a path starting with '/'."
        start, end = context.get("rightFileStart"), context.get("rightFileEnd")
        if not (isinstance(start, dict) and isinstance(end, dict)):
            return "A thread on the right side needs rightFileStart and rightFileEnd."
        for pos in (start, end):
            if not (isinstance(pos.get("line"), int) and pos["line"] >= 1 and isinstance(pos.get("offset"), int)
                    and pos["offset"] >= 1):
                return "Thread positions need a line and an offset of at least 1."
        if (end["line"], end["offset"]) < (start["line"], start["offset"]):
            return "rightFileEnd precedes rightFileStart."
        if not isinstance(pr_context, dict):
            return None
        iteration = (pr_context.get("iterationContext") or {})
        second = iteration.get("secondComparingIteration")
        first = iteration.get("firstComparingIteration")
        if not (isinstance(second, int) and isinstance(first, int) and 1 <= first <= second <= len(pull.iterations)):
            return "The thread's iteration context names an iteration that does not exist."
        changes = pull.iterations[second - 1].changes
        tracking = pr_context.get("changeTrackingId")
        if tracking is not None and not (isinstance(tracking, int) and 1 <= tracking <= len(changes)
                                         and changes[tracking - 1].path == context["filePath"]):
            return "The thread's changeTrackingId is not a change of that file in that iteration."
        text = self.files.get((pull.iterations[second - 1].source_commit, context["filePath"]))
        if text is not None and end["line"] > len(text.splitlines()):
            return "The thread's lines are past the end of the file."
        return None

    def _update_thread(self, thread: dict[str, Any], body: Any) -> Answer:
        if not isinstance(body, dict):
            return _bad_request("The request body is not a pull request thread.")
        if "status" in body:
            word = _status_word(body["status"])
            if word == "unknown":
                return _bad_request(f"Unknown thread status {body['status']!r}.")
            thread["status"], thread["lastUpdatedDate"] = word, self.now()
        return 200, thread, {}

    def _add_comment(self, thread: dict[str, Any], body: Any) -> Answer:
        if not isinstance(body, dict) or not isinstance(body.get("content"), str) or not body["content"]:
            return _bad_request("The comment content is required.")
        parent = body.get("parentCommentId", 0)
        if parent and not any(c["id"] == parent for c in thread["comments"]):
            return _bad_request(f"TF401182: The parent comment {parent} was not found.")
        comment = {"id": max(c["id"] for c in thread["comments"]) + 1, "parentCommentId": parent,
                   "author": dict(self.identity), "content": body["content"],
                   "commentType": body.get("commentType", "text"), "publishedDate": self.now(), "usersLiked": []}
        thread["comments"].append(comment)
        thread["lastUpdatedDate"] = comment["publishedDate"]
        return 200, comment, {}

    def _update_comment(self, thread: dict[str, Any], cid: int, body: Any) -> Answer:
        comment = next((c for c in thread["comments"] if c["id"] == cid), None)
        if comment is None:
            return _error(404, f"TF401182: The comment {cid} was not found.", "GitPullRequestCommentNotFoundException",
                          "Microsoft.TeamFoundation.Git.Server")
        if comment["author"]["id"] != self.identity["id"]:
            return _error(403, "TF401186: Only the author of a comment can edit it.",
                          "GitPullRequestCommentEditNotAllowedException", "Microsoft.TeamFoundation.Git.Server")
        if not isinstance(body, dict) or not isinstance(body.get("content"), str) or not body["content"]:
            return _bad_request("The comment content is required.")
        comment["content"] = body["content"]
        return 200, comment, {}

    def _create_status(self, pull: AzurePull, body: Any) -> Answer:
        if not isinstance(body, dict) or not isinstance(body.get("context"), dict) \
                or not body["context"].get("name"):
            return _bad_request("The status context name is required.")
        if body.get("state", "notSet") not in STATUS_STATES:
            return _bad_request(f"Unknown status state {body.get('state')!r}.")
        iteration = body.get("iterationId")
        if iteration is not None and not (isinstance(iteration, int) and 1 <= iteration <= len(pull.iterations)):
            return _bad_request(f"TF401172: The pull request iteration {iteration} does not exist.")
        status = {**body, "id": next(self.ids), "createdBy": dict(self.identity)}
        pull.statuses.append(status)
        return 200, status, {}


def _identity_descriptor(who: dict[str, Any]) -> str:
    """An identity descriptor as the Identities and Security APIs give it: "TYPE;IDENTIFIER" (a person's is a
    claims identity, tenant\\account)."""
    return f"Microsoft.IdentityModel.Claims.ClaimsIdentity;{TENANT}\\{who.get('uniqueName', who['id'])}"


def _status_word(value: Any) -> str:
    if isinstance(value, int):
        return THREAD_STATUSES.get(value, "unknown")
    return value if value in THREAD_STATUSES.values() else "unknown"


def _error(status: int, message: str, key: str, namespace: str) -> Answer:
    return status, {"$id": "1", "innerException": None, "message": message,
                    "typeName": f"{namespace}.{key}, {namespace}", "typeKey": key, "errorCode": 0,
                    "eventId": 3000}, {}


def _bad_request(message: str) -> Answer:
    return _error(400, message, "InvalidArgumentValueException", "Microsoft.TeamFoundation.SourceControl.WebApi")
