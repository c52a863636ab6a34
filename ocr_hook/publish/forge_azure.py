"""Azure DevOps pull requests (Azure Repos): a thread per inline finding, one general thread, a PR status.

Where: SYSTEM_COLLECTIONURI (https://dev.azure.com/ORG/), SYSTEM_TEAMPROJECT, BUILD_REPOSITORY_ID and
SYSTEM_PULLREQUEST_PULLREQUESTID, which a pull request validation build sets; token SYSTEM_ACCESSTOKEN
(the job's OAuth token, which a step only sees when it maps it: `env: SYSTEM_ACCESSTOKEN:
$(System.AccessToken)`), whose identity, "PROJECT Build Service (ORG)", needs "Contribute to pull
requests" on the repository. Every request carries api-version 7.1 (Azure refuses one without).

Requests (REST 7.1, under {collection}{project}/_apis/git/repositories/{repository}/pullRequests/{id}):
* GET {collection}_apis/connectionData: the token's identity (markers count only in its comments);
* GET iterations (the latest one's source commit is the head) and its changes ($top/$skip pages):
  the changed files and their changeTrackingIds. Azure takes a thread on any line of a changed file, so
  each file's commentable lines are all of them, and their text is read (GET items at the head commit)
  only for a file a finding is on, when the same-text check asks for it;
* GET threads; POST threads, one per inline finding: `threadContext` (filePath with a leading slash,
  rightFileStart/rightFileEnd) and `pullRequestThreadContext` (changeTrackingId, iterationContext 1..latest)
  so that Azure keeps the thread on its lines when later pushes move them; its fix a ```suggestion```
  block, which Azure Repos offers to apply. A 400 for one thread moves that finding to the general thread;
* the general thread (no file): POST once, then PATCH its first comment on later runs;
* PATCH a thread's status to `fixed` when its finding is fixed (back to `active` when it is raised
  again); POST a reply in a thread (threads/{id}/comments)
  where a person answered a fixed finding's thread instead;
* GET the pull request (createdBy: its author, whose own won't fix never dismisses anything). What people did
  with a thread (DESIGN.md 18): its status, its later comments (replies), the first comment's `usersLiked`
  (Azure has likes only: 👍, never 👎). Azure records no author for a status change, so a status is nobody's
  word: a won't fix, by design or closed dismisses only with a person's explicit reply after it, starting with
  the documented phrase (`/ocr-hook dismiss REASON`, plan.DISMISS_PHRASE) and the thread's latest update.
  Any identity that may comment on a pull request (Readers included) may set a status, so
  the adapter asks Azure what that person may do, once per person and only for a dismissing status on one of
  its own threads: GET {vssps}_apis/identities?identityIds=ID (the Identities API, at vssps.dev.azure.com
  for dev.azure.com: the person's identity descriptor) and GET {collection}_apis/accesscontrollists/
  {Git Repositories namespace}?token=repoV2/{projectId}/{repositoryId}&descriptors=D&includeExtendedInfo=true
  (their effective bits on the repository, group memberships included): write access is GenericContribute.
  A refused or failed read (the token lacks the Identity (Read) scope, or may not read the repository's
  permissions) makes that person's status dismiss nothing, and is one note (`note`) for the review;
* POST statuses: `ocr-hook` in genre `code-review`, succeeded/failed from the gate, on the latest
  iteration; a branch policy can require "code-review/ocr-hook". A new status with the same context is
  how Azure updates one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from ocr_hook.publish.api_client import ApiClient, ApiRefusal, api_root, check_token
from ocr_hook.publish.check_threads import checks_said
from ocr_hook.publish.forges import InlineText, NotApplicable, Setup
from ocr_hook.publish.plan import Posted, Reply, said_dismiss
from ocr_hook.publish.pr_diff import CommentableLines, FileLines
from ocr_hook.publish.render import plain
from ocr_hook.publish.report_input import Report

API_VERSION = "7.1"
STATUS_NAME, STATUS_GENRE = "ocr-hook", "code-review"
CHANGES_PAGE = 100  # Azure's default $top for iteration changes (2,000 at most)
MAX_CHANGE_PAGES = 100
ANY_LINE = range(1, 10_000_000)  # Azure accepts a thread on any line of a changed file
CLOSED = ("fixed", "closed", "wontFix", "byDesign")
DISMISSING = ("closed", "wontFix", "byDesign")
GIT_NAMESPACE = "2e9eb7ed-3c0a-47d4-87c1-0ffdd275fd87"  # the Git Repositories security namespace
GENERIC_CONTRIBUTE = 4  # GitRepositoryPermissions.GenericContribute: push to the repository ("Contribute")
ACCESS_NEEDS = ("a person's won't fix, by design or closed counts only when Azure says they may contribute to "
                "the repository: the token needs the Identity (Read) scope (vso.identity) and Read on the repository "
                "(which reads its access control lists)")
_V = f"api-version={API_VERSION}"  # in the path of writes (the client's post/patch take no parameters)
_PARAMS = {"api-version": API_VERSION}  # reads: parameters given replace a query in the path


class _FileText(Mapping[int, str]):
    """A changed file's lines at the head commit, read from Azure the first time they are asked for."""

    def __init__(self, fetch: Callable[[], list[str]]) -> None:
        self._fetch, self._lines = fetch, None  # type: list[str] | None

    def _all(self) -> list[str]:
        if self._lines is None:
            self._lines = self._fetch()
        return self._lines

    def __getitem__(self, line: int) -> str:
        lines = self._all()
        if not 1 <= line <= len(lines):
            raise KeyError(line)
        return lines[line - 1]

    def __iter__(self) -> Iterator[int]:
        return iter(range(1, len(self._all()) + 1))

    def __len__(self) -> int:
        return len(self._all())


class AzureAdapter:
    forge = "Azure DevOps"
    kind = "pull request"
    fix_style = "suggestion"
    summary_style = "replace"
    max_body = 60_000
    published_as = "threads"
    summary_name = "the general thread"
    hints = MappingProxyType({
        401: "SYSTEM_ACCESSTOKEN is not valid: map it in the step (env: SYSTEM_ACCESSTOKEN: $(System.AccessToken))",
        403: "the build identity may not comment: allow \"PROJECT Build Service (ORG)\" to \"Contribute to pull "
             "requests\" on the repository",
        404: "no such pull request, or the token cannot see the repository",
    })

    def __init__(self, api: ApiClient, project: str, repository: str, number: int, head_sha: str,
                 identities: ApiClient | None = None) -> None:
        self.api, self.number, self.head_sha = api, number, head_sha
        self.identities = identities or api  # the Identities API's host (vssps), or the collection itself
        self.target = f"{project} pull request !{number}"
        self._repo = f"{quote(project, safe='')}/_apis/git/repositories/{quote(repository, safe='')}"
        self._pr = f"{self._repo}/pullRequests/{number}"
        self._iteration = 0
        self._tracking: dict[str, int] = {}
        self._me = ""
        self._pull: dict[str, Any] | None = None
        self._may_write: dict[str, bool] = {}  # a person's id → GenericContribute on the repository
        self.note: str | None = None  # why a person's status could not count (a refused permission read)

    # -- reading -------------------------------------------------------------------------------------------

    def identity(self) -> str:
        data = self.api.get("_apis/connectionData", _PARAMS)
        me = (data.get("authenticatedUser") or {}).get("id") if isinstance(data, dict) else None
        if not isinstance(me, str) or not me:
            raise ApiRefusal(200, "GET connectionData: the answer names no authenticated user")
        self._me = me
        return me

    def diff(self) -> CommentableLines:
        iterations = self.api.get(f"{self._pr}/iterations", _PARAMS)
        values = iterations.get("value") if isinstance(iterations, dict) else None
        if not isinstance(values, list) or not values or not all(isinstance(v, dict) for v in values):
            raise ApiRefusal(200, "GET iterations: the pull request has no iterations")
        latest = max(values, key=lambda v: int(v.get("id") or 0))
        self._iteration = int(latest["id"])
        head = (latest.get("sourceRefCommit") or {}).get("commitId")
        if isinstance(head, str) and head:
            self.head_sha = head
        lines: dict[str, FileLines] = {}
        for change in self._changes():
            item = change.get("item") or {}
            path, kind = str(item.get("path") or ""), str(change.get("changeType") or "")
            if not path.startswith("/") or "delete" in kind or item.get("isFolder"):
                continue
            name = path[1:]
            self._tracking[name] = int(change.get("changeTrackingId") or 0)
            original = change.get("originalPath") or change.get("sourceServerItem")
            old = str(original)[1:] if "rename" in kind and isinstance(original, str) else None
            lines[name] = FileLines((ANY_LINE,), _FileText(self._reader(path)), old_path=old)
        return lines

    def _changes(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        skip, top = 0, CHANGES_PAGE
        for _ in range(MAX_CHANGE_PAGES):
            page = self.api.get(f"{self._pr}/iterations/{self._iteration}/changes",
                                {"$top": str(top), "$skip": str(skip), "api-version": API_VERSION})
            entries = page.get("changeEntries") if isinstance(page, dict) else None
            if not isinstance(entries, list):
                raise ApiRefusal(200, "GET iteration changes: no changeEntries in the answer")
            found += [e for e in entries if isinstance(e, dict)]
            nxt, nxt_top = int(page.get("nextSkip") or 0), int(page.get("nextTop") or 0)
            if nxt <= skip or nxt_top <= 0:
                return found
            skip, top = nxt, nxt_top
        raise ApiRefusal(None, f"GET iteration changes: more than {MAX_CHANGE_PAGES} pages")

    def _reader(self, path: str) -> Callable[[], list[str]]:
        def read() -> list[str]:
            try:
                item = self.api.get(f"{self._repo}/items", {
                    "path": path, "versionDescriptor.version": self.head_sha,
                    "versionDescriptor.versionType": "commit", "includeContent": "true", "api-version": API_VERSION})
            except ApiRefusal as exc:
                if exc.status == 404:
                    return []
                raise
            content = item.get("content") if isinstance(item, dict) else None
            return content.split("\n") if isinstance(content, str) else []
        return read

    def existing(self) -> list[Posted]:
        data = self.api.get(f"{self._pr}/threads", _PARAMS)
        threads = data.get("value") if isinstance(data, dict) else None
        return [p for t in (threads if isinstance(threads, list) else []) if (p := self._posted(t)) is not None]

    def _posted(self, t: Any) -> Posted | None:
        """A thread as Posted. Azure does not say who set a thread's status (see _dismissed_by)."""
        comments = t.get("comments") if isinstance(t, dict) else None
        if t.get("isDeleted") or not isinstance(comments, list) or not comments or not isinstance(comments[0], dict):
            return None
        first = comments[0]
        status = str(t.get("status") or "active")
        later = [c for c in comments[1:] if isinstance(c, dict) and not c.get("isDeleted")
                 and c.get("commentType") != "system"]
        replies = tuple(Reply(_id(c.get("author")), str(c.get("content") or ""), str(c.get("publishedDate") or ""),
                              bot=_service(c.get("author")))
                        for c in later)
        by = _dismissed_by(replies, status, str(t.get("lastUpdatedDate") or ""), self._me)
        by_can_write = (by is not None and not by.bot and _id(first.get("author")) == self._me
                        and self._can_write(by.author))
        liked = first.get("usersLiked")
        context = t.get("threadContext") if isinstance(t.get("threadContext"), dict) else {}
        path = context.get("filePath")
        return Posted(author=_id(first.get("author")), body=str(first.get("content") or ""),
                      id=f"{t.get('id')}/{first.get('id')}", thread=str(t.get("id") or ""),
                      resolved=status in CLOSED, created_at=str(first.get("publishedDate") or ""), replies=replies,
                      state="" if status == "active" else status,
                      resolved_by=by.author if by else "", resolved_by_bot=by.bot if by else False,
                      resolved_by_can_write=by_can_write,
                      resolved_at=str(t.get("lastUpdatedDate") or "") if by else "",
                      thumbs_up=sum(1 for u in liked if not _service(u)) if isinstance(liked, list) else 0,
                      path=path[1:] if isinstance(path, str) and path.startswith("/") else "")

    def _pull_request(self) -> dict[str, Any]:
        if self._pull is None:
            pr = self.api.get(self._pr, _PARAMS)
            self._pull = pr if isinstance(pr, dict) else {}
        return self._pull

    def author(self) -> str:
        return _id(self._pull_request().get("createdBy"))

    def _can_write(self, person: str) -> bool:
        """Azure's word on whether this person may contribute to the repository: their identity descriptor,
        then their effective bits in the repository's ACL. Asked once per person; after a refusal, nobody
        else is asked (the token is what was refused) and nobody's status counts."""
        if person not in self._may_write:
            if self.note is not None:
                return False
            try:  # the author's own status never counts: not asked
                self._may_write[person] = person != self.author() and self._contributes(person)
            except ApiRefusal as exc:
                self._may_write[person] = False
                self.note = (f"{ACCESS_NEEDS}; {'it was refused' if exc.status in (401, 403) else 'not read'} "
                             f"({plain(str(exc), 200)}): that status dismisses nothing")
            except (TypeError, ValueError, AttributeError) as exc:
                self._may_write[person] = False
                self.note = (f"{ACCESS_NEEDS}; Azure's answer has a shape its API does not describe "
                             f"({exc.__class__.__name__}): that status dismisses nothing")
        return self._may_write[person]

    def _contributes(self, person: str) -> bool:
        found = self.identities.get("_apis/identities", {"identityIds": person, "queryMembership": "none",
                                                         "api-version": API_VERSION})
        values = found.get("value") if isinstance(found, dict) else None
        descriptor = next((v.get("descriptor") for v in values or () if isinstance(v, dict) and v.get("id") == person
                           and isinstance(v.get("descriptor"), str)), None)
        repository = self._pull_request().get("repository") or {}
        project = (repository.get("project") or {}).get("id")
        if not descriptor or not project or not repository.get("id"):
            return False
        acls = self.api.get(f"_apis/accesscontrollists/{GIT_NAMESPACE}", {
            "token": f"repoV2/{project}/{repository['id']}", "descriptors": descriptor,
            "includeExtendedInfo": "true", "api-version": API_VERSION})
        allowed = 0
        for acl in (acls.get("value") if isinstance(acls, dict) else None) or ():
            ace = ((acl.get("acesDictionary") or {}) if isinstance(acl, dict) else {}).get(descriptor) or {}
            allowed |= int((ace.get("extendedInfo") or {}).get("effectiveAllow") or 0)
        return bool(allowed & GENERIC_CONTRIBUTE)

    # -- writing -------------------------------------------------------------------------------------------

    def post_inline(self, items: Sequence[InlineText]) -> frozenset[str]:
        refused: set[str] = set()
        for item in items:
            try:
                self.api.post(f"{self._pr}/threads?{_V}", self.thread(item))
            except ApiRefusal as exc:
                if exc.status != 400:
                    raise
                refused.add(item.inline.finding.fingerprint)  # Azure refused its lines: the finding is listed
        return frozenset(refused)

    def thread(self, item: InlineText) -> dict[str, Any]:
        path, start, end = item.inline.finding.path, item.inline.start, item.inline.end
        return {
            "comments": [{"parentCommentId": 0, "content": item.body, "commentType": "text"}],
            "status": "active",
            "threadContext": {"filePath": "/" + path, "rightFileStart": {"line": start, "offset": 1},
                              "rightFileEnd": {"line": end, "offset": 1}},
            "pullRequestThreadContext": {
                "changeTrackingId": self._tracking.get(path, 0),
                "iterationContext": {"firstComparingIteration": 1, "secondComparingIteration": self._iteration}},
        }

    def put_summary(self, body: str, previous: Posted | None) -> None:
        if previous is not None and "/" in previous.id:
            thread, comment = previous.id.split("/", 1)
            self.api.patch(f"{self._pr}/threads/{thread}/comments/{comment}?{_V}", {"content": body})
            return
        self.api.post(f"{self._pr}/threads?{_V}",
                      {"comments": [{"parentCommentId": 0, "content": body, "commentType": "text"}],
                       "status": "active"})

    def resolve(self, posted: Sequence[Posted]) -> int:
        for p in posted:
            self.api.patch(f"{self._pr}/threads/{p.thread}?{_V}", {"status": "fixed"})
        return len(posted)

    def reopen(self, posted: Sequence[Posted]) -> int:
        """Set these threads active again: their finding is raised again."""
        for p in posted:
            self.api.patch(f"{self._pr}/threads/{p.thread}?{_V}", {"status": "active"})
        return len(posted)

    def reply(self, posted: Posted, body: str) -> None:
        first = posted.id.split("/", 1)[1] if "/" in posted.id else "1"
        self.api.post(f"{self._pr}/threads/{posted.thread}/comments?{_V}",
                      {"parentCommentId": int(first) if first.isdigit() else 1, "content": body, "commentType": "text"})

    def report_verdict(self, report: Report, passed: bool) -> None:
        self.api.post(f"{self._pr}/statuses?{_V}", status_body(report, passed, self._iteration))

    def close(self) -> None:
        if self.identities is not self.api:
            self.identities.__exit__(None, None, None)
        self.api.__exit__(None, None, None)


# How long after a reply Azure may date the thread's last update for that reply itself (issue 58.9)
SAME_UPDATE_S = 2.0


def _dismissed_by(replies: Sequence[Reply], status: str, updated: str, me: str) -> Reply | None:
    """Who dismissed the finding of a thread set to won't fix, by design or closed. Azure records no author for
    a status (no comment, property or field of the thread names one: the vendored API description), and anyone
    who may comment may set one; so the status alone is nobody's word, and the last person to reply is not
    the one who set it (issue 58.9). The dismissal is an explicit reply after the change: the thread's latest
    comment, starting with the documented phrase (plan.DISMISS_PHRASE), and nothing changed in the thread after
    it (its lastUpdatedDate is that reply's). The adapter then asks whether its author may write."""
    if status not in DISMISSING or not replies:
        return None
    last = replies[-1]
    if last.author in ("", me) or not said_dismiss(last.body):
        return None
    try:
        after = datetime.fromisoformat(updated.replace("Z", "+00:00")) - \
            datetime.fromisoformat(last.at.replace("Z", "+00:00"))
    except ValueError:
        return None
    return last if after.total_seconds() <= SAME_UPDATE_S else None


def _id(identity: Any) -> str:
    value = identity.get("id") if isinstance(identity, dict) else None
    return value if isinstance(value, str) else ""


def _service(identity: Any) -> bool:
    """A service identity, not a person: a build service or a service principal (the subject descriptor's
    `svc.`/`s2s.` kind; the build identity's unique name is `Build\\GUID`)."""
    if not isinstance(identity, dict):
        return False
    descriptor, unique = str(identity.get("descriptor") or ""), str(identity.get("uniqueName") or "")
    return descriptor.startswith(("svc.", "s2s.")) or unique.startswith("Build\\")


def status_body(report: Report, passed: bool, iteration: int) -> dict[str, Any]:
    state = "succeeded" if passed else "failed"
    said = plain(report.verdict or state) + (f"; checks: {checks_said(report.checks)}" if report.checks else "")
    body: dict[str, Any] = {"state": state, "description": plain(said, 400),
                            "context": {"name": STATUS_NAME, "genre": STATUS_GENRE}}
    if iteration:
        body["iterationId"] = iteration
    return body


def identities_root(collection: str) -> str | None:
    """Where the Identities API answers for this collection: Azure DevOps Services serves it on its own host
    (https://dev.azure.com/ORG/ → https://vssps.dev.azure.com/ORG/, https://ORG.visualstudio.com/ →
    https://ORG.vssps.visualstudio.com/); Azure DevOps Server on the collection itself (None)."""
    parts = urlsplit(collection)
    host = (parts.hostname or "").lower()
    if host == "dev.azure.com":
        return urlunsplit(parts._replace(netloc="vssps.dev.azure.com"))
    if host.endswith(".visualstudio.com") and host.count(".") == 2:
        return urlunsplit(parts._replace(netloc=host.replace(".visualstudio.com", ".vssps.visualstudio.com")))
    return None


def open_adapter(setup: Setup) -> AzureAdapter:
    env = setup.environ
    provider = env.get("BUILD_REPOSITORY_PROVIDER", "").strip()
    if provider and provider != "TfsGit":
        raise NotApplicable(f"the repository is on {provider}, not Azure Repos (publish with that forge's --to)")
    number = env.get("SYSTEM_PULLREQUEST_PULLREQUESTID", "").strip()
    if not number:
        raise NotApplicable("not a pull request build (no SYSTEM_PULLREQUEST_PULLREQUESTID)")
    if not number.isdigit() or int(number) < 1:
        raise NotApplicable(f"SYSTEM_PULLREQUEST_PULLREQUESTID is not a number: {plain(number, 40)!r}")
    names = ("SYSTEM_COLLECTIONURI", "SYSTEM_TEAMPROJECT", "BUILD_REPOSITORY_ID")
    missing = [n for n in names if not env.get(n, "").strip()]
    if missing:
        raise NotApplicable(f"not an Azure Pipelines run: {', '.join(missing)} not set")
    project, repository = env["SYSTEM_TEAMPROJECT"].strip(), env["BUILD_REPOSITORY_ID"].strip()
    target = f"{project} pull request !{number}"
    token = env.get("SYSTEM_ACCESSTOKEN", "").strip()
    if not token:
        raise NotApplicable("no SYSTEM_ACCESSTOKEN: map it in the step (env: SYSTEM_ACCESSTOKEN: "
                            "$(System.AccessToken))", target)
    check_token(token)
    root = api_root(env["SYSTEM_COLLECTIONURI"], "", "SYSTEM_COLLECTIONURI")
    api = ApiClient(root, headers={"Authorization": f"Bearer {token}"}, secrets=(token,),
                    variable="SYSTEM_COLLECTIONURI", deadline=setup.deadline)
    vssps = identities_root(root)
    identities = None if vssps is None else ApiClient(
        vssps, headers={"Authorization": f"Bearer {token}"}, secrets=(token,), variable="SYSTEM_COLLECTIONURI",
        deadline=setup.deadline)
    return AzureAdapter(api, project, repository, int(number),
                        env.get("SYSTEM_PULLREQUEST_SOURCECOMMITID", "").strip(), identities)
