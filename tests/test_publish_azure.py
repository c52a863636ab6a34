"""`ocr-hook publish` on Azure DevOps (issue 29): threads on their lines with the iteration context, one
general thread, the `ocr-hook` pull request status, against the loopback fake of the Azure DevOps Git REST
API (tests/fake_azure.py), from a real review's report (tests/review_report_case.py), through the real
CLI (forked) with the variables a pull request validation build sets.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import forked_cli
import pytest
from ci_repos import ci_free_env
from fake_azure import AUTHOR, READER_BITS, AzurePull, Change, FakeAzure, Iteration, person
from publish_support import ROUTING_OFF
from review_report_case import (
    AFTER,
    CONTEXT,
    FIXED,
    LIB_AFTER,
    NEW_NAME,
    OLD_NAME,
    OUTSIDE,
    PATH,
    PLAIN,
    RENAMED,
    UNANCHORED,
    ReportCase,
    docs_block,
    run_step,
    script_review,
    shared_case,
)

TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.fakeAzureSystemAccessToken.0123456789"
EARLIER_HEAD = "e" * 40


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> ReportCase:
    return shared_case(tmp_path_factory)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeAzure]:
    with FakeAzure() as fake:
        yield fake


@pytest.fixture
def azure(server: FakeAzure, case: ReportCase) -> Iterator[FakeAzure]:
    server.reset()
    server.tokens = {TOKEN: "write"}
    # Two pushes: the second is the reviewed head. Its changes list (pages of 2) holds more files than
    # one page, the rename among them.
    changes = [Change("/docs/notes.md", "add"), Change("/" + PATH), Change("/gone.py", "delete"),
               Change("/" + NEW_NAME, "edit, rename", "/" + OLD_NAME)]
    server.pulls = {}
    server.add_pull(7, [Iteration(EARLIER_HEAD, case.base, [Change("/" + PATH)]),
                        Iteration(case.head, case.base, changes)])
    server.files = {(case.head, "/" + PATH): AFTER, (case.head, "/" + NEW_NAME): LIB_AFTER}
    yield server
    server.assert_conforms()  # off-contract traffic fails the test that sent it


def pull(azure: FakeAzure) -> AzurePull:
    return azure.pulls[7]


def pr_env(case: ReportCase, fake: FakeAzure, *, token: str | None = TOKEN, **extra: str) -> dict[str, str]:
    env = ci_free_env(TF_BUILD="True", SYSTEM_COLLECTIONURI=fake.collection_uri, SYSTEM_TEAMPROJECT="Fabrikam",
                      BUILD_REPOSITORY_ID=fake.repository_id, BUILD_REPOSITORY_PROVIDER="TfsGit",
                      SYSTEM_PULLREQUEST_PULLREQUESTID="7", SYSTEM_PULLREQUEST_SOURCECOMMITID=case.head,
                      SYSTEM_PULLREQUEST_TARGETBRANCH="refs/heads/main",
                      SYSTEM_PULLREQUEST_SOURCEBRANCH="refs/heads/feature", NO_PROXY="127.0.0.1,localhost")
    if token is not None:
        env["SYSTEM_ACCESSTOKEN"] = token
    env.update(extra)
    return env


def publish(case: ReportCase, env: dict[str, str], report: Path | None = None) -> subprocess.CompletedProcess[str]:
    proc = forked_cli.run(["publish", "--from", str(report or case.report_path)], cwd=case.repo,
                          env={**ROUTING_OFF, **env}, timeout=60, errors="replace")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert TOKEN not in proc.stdout + proc.stderr
    return proc


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("ocr-hook: publish: ")
    return lines[0]


def by_fingerprint(azure: FakeAzure) -> dict[str, dict[str, Any]]:
    found = {}
    for t in pull(azure).threads:
        m = re.match(r"<!-- ocr-hook fingerprint=([0-9a-f]+) -->", t["comments"][0]["content"])
        if m:
            found[m.group(1)] = t
    return found


def general(azure: FakeAzure) -> list[dict[str, Any]]:
    return [t for t in pull(azure).threads if t["comments"][0]["content"].startswith("<!-- ocr-hook review ")]


def test_a_thread_per_finding_on_its_lines_the_rest_in_one_thread_and_a_status(case: ReportCase,
                                                                                azure: FakeAzure) -> None:
    line = one_line(publish(case, pr_env(case, azure)))
    assert line == ("ocr-hook: publish: published threads on Fabrikam pull request !7: 5 inline comment(s), "
                    "1 finding(s) in the general thread")
    threads = by_fingerprint(azure)
    fixed = threads[case.finding(FIXED)["fingerprint"]]
    plain = threads[case.finding(PLAIN)["fingerprint"]]
    assert fixed["threadContext"] == {"filePath": "/app.py", "rightFileStart": {"line": 3, "offset": 1},
                                      "rightFileEnd": {"line": 4, "offset": 1}}
    # Tied to the latest iteration and to app.py's change in it (its second entry: changeTrackingId 2).
    assert fixed["pullRequestThreadContext"] == {"changeTrackingId": 2, "iterationContext": {
        "firstComparingIteration": 1, "secondComparingIteration": 2}}
    assert "```suggestion\ndef f2(x):\n    return x + 2\n```" in fixed["comments"][0]["content"]
    assert plain["threadContext"]["rightFileStart"]["line"] == 6
    assert "f3 multiplies" in plain["comments"][0]["content"]
    assert "@property" not in plain["comments"][0]["content"]  # the mention is made inert: nobody is notified
    # Azure takes a thread on any line of a changed file: line 36 is far from the change but still app.py's.
    outside = threads[case.finding(OUTSIDE)["fingerprint"]]
    assert outside["threadContext"]["rightFileEnd"]["line"] == 36
    # The renamed file: its new path, and its own changeTrackingId (4, on the second page of changes).
    renamed = threads[case.finding(RENAMED)["fingerprint"]]
    assert renamed["threadContext"]["filePath"] == "/lib/new_name.py"
    assert renamed["threadContext"]["rightFileStart"]["line"] == 6
    # An unchanged context line is a line like any other for Azure.
    assert threads[case.finding(CONTEXT)["fingerprint"]]["threadContext"]["rightFileStart"]["line"] == 5
    assert renamed["pullRequestThreadContext"]["changeTrackingId"] == 4
    assert all(t["status"] == "active" for t in threads.values())
    [summary] = general(azure)
    assert "threadContext" not in summary
    assert UNANCHORED in summary["comments"][0]["content"] and case.report["verdict"] in summary["comments"][0][
        "content"]
    [status] = pull(azure).statuses
    assert (status["state"], status["context"], status["iterationId"]) == (
        "failed", {"name": "ocr-hook", "genre": "code-review"}, 2)
    # The changes were read page by page ($top 2: two pages), every request with api-version and the token.
    skips = [r.query.get("$skip") for r in azure.requests if r.path.endswith("/changes")]
    assert skips == ["0", "2"]
    assert all(r.query.get("api-version") == "7.1" for r in azure.requests)
    assert {r.headers["authorization"] for r in azure.requests} == {f"Bearer {TOKEN}"}


def test_a_rerun_posts_only_what_is_new_and_edits_the_general_thread(case: ReportCase, azure: FakeAzure) -> None:
    env = pr_env(case, azure)
    one_line(publish(case, env))
    line = one_line(publish(case, env))
    assert line == ("ocr-hook: publish: nothing new to publish on Fabrikam pull request !7: the general thread "
                    "already says this")
    assert len(pull(azure).threads) == 6 and len(general(azure)) == 1
    assert not [r for r in azure.writes() if r.method == "PATCH"]
    # The status goes on every run (a push's new iteration may have reset it), the same one.
    assert [s["state"] for s in pull(azure).statuses] == ["failed", "failed"]
    # One more finding: one more thread, and the general thread edited in place (not posted again).
    extra = {**case.finding(UNANCHORED), "message": "Another thought on the whole file.", "fingerprint": "ab" * 16}
    later = case.with_findings("later", findings=[*case.report["findings"], extra])
    line = one_line(publish(case, env, later))
    assert "0 inline comment(s), 2 finding(s) in the general thread, 5 already posted earlier" in line
    assert len(pull(azure).threads) == 6 and len(general(azure)) == 1
    [edit] = [r for r in azure.writes() if r.method == "PATCH"]
    assert re.search(r"/threads/\d+/comments/1$", edit.path) and "Another thought" in edit.body["content"]
    assert "Another thought" in general(azure)[0]["comments"][0]["content"]
    extra_inline = {**case.finding(PLAIN), "message": "A thought on f3.", "fingerprint": "cd" * 16}
    line = one_line(publish(case, env, case.with_findings("inline", findings=[*case.report["findings"],
                                                                                  extra_inline])))
    assert "1 inline comment(s)" in line and len(pull(azure).threads) == 7
    assert len(pull(azure).statuses) == 4  # a new status with the same context is how Azure updates one


def test_threads_of_fixed_findings_are_set_to_fixed(case: ReportCase, azure: FakeAzure) -> None:
    env = pr_env(case, azure)
    one_line(publish(case, env))
    plain = case.finding(PLAIN)
    rest = [f for f in case.report["findings"] if f["fingerprint"] != plain["fingerprint"]]
    resolved = [{k: plain[k] for k in ("path", "fingerprint", "severity", "category", "message", "start_line",
                                       "end_line")}]
    line = one_line(publish(case, env, case.with_findings("fixed", findings=rest, resolved=resolved)))
    assert "1 thread(s) resolved" in line
    assert by_fingerprint(azure)[plain["fingerprint"]]["status"] == "fixed"
    assert {t["status"] for fp, t in by_fingerprint(azure).items() if fp != plain["fingerprint"]} == {"active"}
    # Issue 58.11: the code comes back (the first report again): the thread is active again, and says why
    line = one_line(publish(case, env))
    assert "1 thread(s) reopened, 1 thread(s) told the finding is raised again" in line, line
    thread = by_fingerprint(azure)[plain["fingerprint"]]
    assert thread["status"] == "active"
    assert thread["comments"][-1]["content"].startswith(f"<!-- ocr-hook raised fingerprint={plain['fingerprint']} -->")


def test_lines_that_read_differently_on_the_head_go_in_the_general_thread(case: ReportCase,
                                                                         azure: FakeAzure) -> None:
    azure.files[(case.head, "/" + PATH)] = "# one\n# two\n" + AFTER  # the head has two more lines on top
    line = one_line(publish(case, pr_env(case, azure)))
    assert "1 inline comment(s), 5 finding(s) in the general thread" in line
    [summary] = general(azure)
    assert summary["comments"][0]["content"].count("these lines read differently on the pull request's head") == 4


def test_a_report_of_another_commit_publishes_nothing(case: ReportCase, azure: FakeAzure) -> None:
    other = case.with_findings("other", scope=f"main...HEAD (merge base {case.base[:12]}..{'e' * 12})")
    line = one_line(publish(case, pr_env(case, azure), other))
    assert f"the report is of commit {'e' * 12}, not of the head {case.head[:12]}" in line
    assert by_fingerprint(azure) == {} and general(azure) == [] and azure.writes() == []


def test_a_passing_review_is_a_succeeded_status(case: ReportCase, azure: FakeAzure) -> None:
    line = one_line(publish(case, pr_env(case, azure), case.clean()))
    assert "0 inline comment(s), 0 finding(s) in the general thread" in line
    [status] = pull(azure).statuses
    assert status["state"] == "succeeded" and status["description"] == "No problems found."


def test_markers_in_somebody_elses_thread_count_for_nothing(case: ReportCase, azure: FakeAzure) -> None:
    fp = case.finding(PLAIN)["fingerprint"]
    azure.add_thread(7, f"<!-- ocr-hook fingerprint={fp} --> quoted by a person", path="/app.py", line=6)
    line = one_line(publish(case, pr_env(case, azure)))
    assert "5 inline comment(s)" in line and "already" not in line
    assert by_fingerprint(azure)[fp]["comments"][0]["author"]["id"] == azure.identity["id"]


@pytest.mark.parametrize(("access", "expected"), [
    ("read", "HTTP 403: TF401027: You need the Git 'PullRequestContribute' permission to perform this action."),
    ("none", "HTTP 401: TF400813: The user '' is not authorized to access this resource."),
])
def test_a_refused_token_is_one_line(case: ReportCase, azure: FakeAzure, access: str, expected: str) -> None:
    azure.tokens = {TOKEN: "read"} if access == "read" else {}
    line = one_line(publish(case, pr_env(case, azure)))
    assert line.startswith("ocr-hook: publish: nothing published on Fabrikam pull request !7: ")
    assert expected in line
    assert ("Contribute to pull requests" in line) == (access == "read")
    assert pull(azure).threads == [] and pull(azure).statuses == []


def test_an_unknown_pull_request_and_an_outage_are_one_line(case: ReportCase, azure: FakeAzure) -> None:
    line = one_line(publish(case, pr_env(case, azure, SYSTEM_PULLREQUEST_PULLREQUESTID="8")))
    assert "nothing published on Fabrikam pull request !8: HTTP 404: TF401180: The requested pull request was " \
           "not found." in line
    azure.fail(".", 500, {"message": "TF246017: Azure DevOps Server could not connect to the database server."})
    assert "HTTP 500: TF246017" in one_line(publish(case, pr_env(case, azure)))
    assert azure.writes() == []


def test_a_rate_limit_is_waited_out(case: ReportCase, azure: FakeAzure) -> None:
    azure.fail(".", 429, {"message": "Request was blocked due to exceeding usage of resource."}, {"Retry-After": "0"})
    line = one_line(publish(case, pr_env(case, azure)))
    assert "5 inline comment(s)" in line and azure.requests[0].status == 429
    azure.fail(".", 429, {"message": "Request was blocked due to exceeding usage of resource."},
               {"Retry-After": "3600"})
    line = one_line(publish(case, pr_env(case, azure)))
    assert "HTTP 429: Request was blocked due to exceeding usage of resource. (rate limited;" in line


def test_not_a_pull_request_build_or_no_token_sends_nothing(case: ReportCase, azure: FakeAzure) -> None:
    env = pr_env(case, azure)
    del env["SYSTEM_PULLREQUEST_PULLREQUESTID"]
    assert one_line(publish(case, env)).endswith(
        "nothing published: not a pull request build (no SYSTEM_PULLREQUEST_PULLREQUESTID)")
    assert "no SYSTEM_ACCESSTOKEN: map it in the step" in one_line(publish(case, pr_env(case, azure, token=None)))
    github = pr_env(case, azure, BUILD_REPOSITORY_PROVIDER="GitHub")
    assert "the repository is on GitHub, not Azure Repos" in one_line(publish(case, github))
    assert azure.requests == []


def test_the_token_goes_to_the_collection_only(case: ReportCase, azure: FakeAzure) -> None:
    with FakeAzure() as elsewhere:
        elsewhere.tokens = {TOKEN: "write"}
        azure.fail(".", 302, {}, {"Location": f"{elsewhere.collection_uri}_apis/connectionData?api-version=7.1"})
        line = one_line(publish(case, pr_env(case, azure)))
        assert elsewhere.requests == []
    assert "a redirect; not followed with the token" in line


def test_the_docs_recipe_runs_as_written(case: ReportCase, azure: FakeAzure, tmp_path: Path) -> None:
    from fake_api import FakeMessagesAPI

    pipeline = docs_block("recipes/azure.md", "## Pull-request threads on Azure DevOps (`ocr-hook publish`)")
    steps = pipeline["steps"]
    assert steps[0] == {"checkout": "self", "fetchDepth": 0}
    scripts = [s for s in steps if "script" in s]
    assert scripts[-1]["condition"] == "always()"  # publishing runs after a failed review too
    clone = case.ci_clone(tmp_path, single_branch=False)
    macros = {"$(System.AccessToken)": TOKEN, "$(ANTHROPIC_API_KEY)": "from-the-secret-variable"}
    with FakeMessagesAPI() as messages:
        script_review(messages)
        results = []
        for step in scripts:
            env = pr_env(case, azure, token=None, **case.sdk_env(messages))
            for name, value in (step.get("env") or {}).items():
                env[name] = macros[value]
            if "ANTHROPIC_API_KEY" in (step.get("env") or {}):
                env["ANTHROPIC_API_KEY"] = case.sdk_env(messages)["ANTHROPIC_API_KEY"]
            results += run_step([step["script"]], clone, env)
    review, published = results
    assert review.returncode == 1, review.stderr  # the gate fails the review step
    assert one_line(published).startswith("ocr-hook: publish: published threads on Fabrikam pull request !7: ")
    reviewed = json.loads((clone / "ocr.json").read_text(encoding="utf-8"))
    posted = set(by_fingerprint(azure)) | {f for t in general(azure) for f in re.findall(
        r"fingerprints=([0-9a-f,]*)", t["comments"][0]["content"])[0].split(",") if f}
    assert {f["fingerprint"] for f in reviewed["findings"]} == posted
    assert pull(azure).statuses[-1]["state"] == "failed"


def test_a_guid_mention_in_model_text_stays_inert(case: ReportCase, azure: FakeAzure) -> None:
    # Issue 41, item 3: Azure DevOps mentions by `@<GUID>`; most GUIDs start with a digit.
    guid = "6f1a3b2c-0d4e-4f5a-9b8c-7d6e5f4a3b2c"
    report = case.with_findings("guid", [{**case.finding(PLAIN), "message": f"Ask @<{guid}> or @<A{guid[1:]}>."}])
    one_line(publish(case, pr_env(case, azure), report))
    [thread] = by_fingerprint(azure).values()
    content = thread["comments"][0]["content"]
    assert f"@\u200b<{guid}>" in content and "@<" not in content


@pytest.mark.parametrize(("pattern", "payload"), [
    (r"GET .*/connectionData$", {"authenticatedUser": "not an object"}),
    (r"GET .*/iterations$", {"value": [{"id": "one"}]}),
    (r"GET .*/threads$", {"value": [1]}),
])
def test_answers_of_the_wrong_shape_are_one_line(case: ReportCase, azure: FakeAzure, pattern: str,
                                                 payload: Any) -> None:
    # Issue 41, item 8: a string where an object is due, "one" for an id, value: [1]: one line, exit 0 (was
    # exit 4).
    azure.fail(pattern, 200, payload)
    line = one_line(publish(case, pr_env(case, azure)))
    assert "nothing published on " in line and "Azure DevOps answered with a shape its API does not describe" in line
    assert azure.writes() == []


# --- DESIGN 18: what people did with ocr-hook's threads, as the adapter reads it -----------------------------

MEMBER = person(3, "A Member")


def adapter_for(case: ReportCase, azure: FakeAzure) -> Any:
    """The Azure adapter the CLI would open for this build, over real HTTP to the fake."""
    import time

    from ocr_hook.publish.forges import Setup, open_adapter

    adapter = open_adapter("azure", Setup(pr_env(case, azure), time.monotonic() + 60, None))
    adapter.identity()
    return adapter


def test_the_adapter_reads_who_set_a_threads_state_replies_and_likes(case: ReportCase, azure: FakeAzure) -> None:
    one_line(publish(case, pr_env(case, azure)))
    threads = by_fingerprint(azure)
    plain, fixed, context = (threads[case.finding(m)["fingerprint"]] for m in (PLAIN, FIXED, CONTEXT))
    azure.set_status(plain, "byDesign")  # the member sets the state, then says why in the documented phrase
    azure.reply(plain, "/ocr-hook dismiss Intended: f3 multiplies on purpose.", MEMBER)
    azure.reply(fixed, "I'd rather keep it.", AUTHOR)
    azure.set_status(fixed, "wontFix")  # the pull request's author: a status is nobody's word (issue 58.9)
    azure.like(context, MEMBER)
    azure.like(context, azure.identity)  # a service identity's like is not a person's
    azure.set_status(context, "closed")  # nobody said anything: Azure keeps no author for a state
    adapter = adapter_for(case, azure)
    try:
        assert adapter.author() == AUTHOR["id"]
        posted = {p.thread: p for p in adapter.existing()}
    finally:
        adapter.close()
    p = posted[str(plain["id"])]
    assert (p.resolved, p.state, p.resolved_by, p.resolved_by_bot, p.resolved_by_can_write) == (
        True, "byDesign", MEMBER["id"], False, True)
    assert p.resolved_at == plain["lastUpdatedDate"] and p.created_at == plain["comments"][0]["publishedDate"]
    assert [(r.author, r.body, r.bot) for r in p.replies] == [
        (MEMBER["id"], "/ocr-hook dismiss Intended: f3 multiplies on purpose.", False)]
    f = posted[str(fixed["id"])]
    assert (f.state, f.resolved_by) == ("wontFix", "")  # the last to reply did not set it, as far as Azure says
    c = posted[str(context["id"])]
    assert (c.state, c.resolved, c.resolved_by, c.resolved_by_can_write, c.thumbs_up, c.thumbs_down) == (
        "closed", True, "", False, 1, 0)
    assert all(q.state == "" and not q.resolved_by for t, q in posted.items()
               if t not in {str(plain["id"]), str(fixed["id"]), str(context["id"])})


def test_a_reply_goes_into_the_thread_under_its_first_comment(case: ReportCase, azure: FakeAzure) -> None:
    one_line(publish(case, pr_env(case, azure)))
    thread = by_fingerprint(azure)[case.finding(PLAIN)["fingerprint"]]
    azure.reply(thread, "Is this right?", MEMBER)
    adapter = adapter_for(case, azure)
    try:
        [p] = [p for p in adapter.existing() if p.thread == str(thread["id"])]
        adapter.reply(p, "Looks fixed now.")
        [again] = [p for p in adapter.existing() if p.thread == str(thread["id"])]
    finally:
        adapter.close()
    [post] = [r for r in azure.writes() if r.path.endswith(f"/threads/{thread['id']}/comments")]
    assert post.body == {"parentCommentId": 1, "content": "Looks fixed now.", "commentType": "text"}
    assert [(r.author, r.body, r.bot) for r in again.replies] == [
        (MEMBER["id"], "Is this right?", False), (azure.identity["id"], "Looks fixed now.", True)]
    assert thread["status"] == "active" and again.resolved_by == ""  # a reply resolves nothing


def test_a_fix_resolves_its_thread_and_answers_one_a_person_answered(case: ReportCase, azure: FakeAzure) -> None:
    env = pr_env(case, azure)
    one_line(publish(case, env))
    threads = by_fingerprint(azure)
    plain, fixed = threads[case.finding(PLAIN)["fingerprint"]], threads[case.finding(FIXED)["fingerprint"]]
    azure.reply(fixed, "Why is this wrong?", MEMBER)
    before = len(azure.requests)
    line = one_line(publish(case, env, case.fixed(case.root, PLAIN, FIXED)))
    assert "1 thread(s) resolved, 1 answered thread(s) told the finding looks fixed" in line
    summary = f"/threads/{general(azure)[0]['id']}/"
    writes = [r for r in azure.requests[before:] if r.method != "GET" and "/threads/" in r.path
              and summary not in r.path + "/"]
    assert [(r.method, r.path.rsplit("/threads/", 1)[1]) for r in writes] == [
        ("PATCH", str(plain["id"])), ("POST", f"{fixed['id']}/comments")]
    assert plain["status"] == "fixed" and fixed["status"] == "active"  # the person's words stay in sight
    assert fixed["comments"][-1]["content"].startswith(
        f"<!-- ocr-hook fixed fingerprint={case.finding(FIXED)['fingerprint']} -->")
    assert {t["status"] for fp, t in by_fingerprint(azure).items() if t is not plain} == {"active"}
    # The next run says nothing more in that thread.
    line = one_line(publish(case, env, case.fixed(case.root, PLAIN, FIXED)))
    assert "answered" not in line and len(fixed["comments"]) == 3


def review_in_ci(case: ReportCase, azure: FakeAzure, out: Path) -> dict[str, Any]:
    """`ocr-hook review --base main` as the build runs it, with the forge's token: it reads the threads."""
    from fake_api import FakeMessagesAPI

    with FakeMessagesAPI() as messages:
        script_review(messages)
        env = {k: v for k, v in pr_env(case, azure, **case.sdk_env(messages)).items()}
        env["OCR_HOOK_CACHE_DIR"] = str(out.parent / "cache")  # the job's kept cache: the review history
        proc = forked_cli.run(["review", "--base", "main", "--no-cache", "--no-review-filter", "--filter-mode",
                               "nofilter", "-q", "--format", "json", "--json-output", str(out)],
                              cwd=case.repo, env=env, timeout=120, errors="replace")
    assert "Traceback" not in proc.stderr and TOKEN not in proc.stdout + proc.stderr, proc.stderr
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    report["exit"] = proc.returncode
    return report


def test_a_members_wont_fix_dismisses_the_finding_for_the_next_review(case: ReportCase, azure: FakeAzure,
                                                                      tmp_path: Path) -> None:
    one_line(publish(case, pr_env(case, azure)))
    threads = by_fingerprint(azure)
    plain, fixed = threads[case.finding(PLAIN)["fingerprint"]], threads[case.finding(FIXED)["fingerprint"]]
    azure.set_status(plain, "byDesign")
    azure.reply(plain, "/ocr-hook dismiss: f3 multiplies on purpose: it scales.", MEMBER)
    # Issue 58.9: the maintainer asks for a fix; the pull request's author then sets won't fix without a word
    azure.reply(fixed, "This must be fixed before merging.", MEMBER)
    azure.set_status(fixed, "wontFix")
    azure.like(plain, MEMBER)  # Azure has likes only (👍)
    report = review_in_ci(case, azure, tmp_path / "again.json")
    found = {f["fingerprint"]: f for f in report["findings"]}
    dismissed = found[case.finding(PLAIN)["fingerprint"]]
    assert dismissed["suppressed"] == "dismissed", dismissed
    assert dismissed["suppression_reason"] == "f3 multiplies on purpose: it scales." == dismissed["dismissal"]["reason"]
    assert dismissed["dismissal"]["by"] == MEMBER["id"]
    assert found[case.finding(FIXED)["fingerprint"]]["suppressed"] is None  # nobody said the author's won't fix
    assert report["exit"] == 1  # the other findings still count

    # The review history (the build's kept cache) has the member's dismissal on the forge, their like and the
    # replies: `ocr-hook outcomes` for pull request 7, which Azure Pipelines names in
    # SYSTEM_PULLREQUEST_PULLREQUESTID.
    outcomes = forked_cli.run(["outcomes", "--format", "json", "--pr", "7"], cwd=case.repo,
                              env={**pr_env(case, azure), "OCR_HOOK_CACHE_DIR": str(tmp_path / "cache")},
                              timeout=60, errors="replace")
    assert outcomes.returncode == 0, outcomes.stderr
    doc = json.loads(outcomes.stdout)
    assert doc["dismissed_by"] == {f"{MEMBER['id']} (forge)": 1} == {f"{dismissed['dismissal']['by']} (forge)": 1}
    assert doc["feedback"] == {"thumbs_up": 1, "thumbs_down": 0, "replies": 2}


READER = person(4, "A Reader")


def acl_reads(azure: FakeAzure) -> tuple[list[Any], list[Any]]:
    """The identity and ACL reads the review sent (DESIGN 18: whose status counts is Azure's word)."""
    return ([r for r in azure.requests if r.path.endswith("/_apis/identities")],
            [r for r in azure.requests if "/_apis/accesscontrollists/" in r.path])


def test_a_contributors_wont_fix_dismisses_after_azure_says_they_may_contribute(case: ReportCase, azure: FakeAzure,
                                                                               tmp_path: Path) -> None:
    one_line(publish(case, pr_env(case, azure)))
    threads = by_fingerprint(azure)
    plain, context = threads[case.finding(PLAIN)["fingerprint"]], threads[case.finding(CONTEXT)["fingerprint"]]
    for thread, why in ((plain, "f3 multiplies on purpose."), (context, "Known, tracked elsewhere.")):
        azure.set_status(thread, "wontFix")
        azure.reply(thread, f"/ocr-hook dismiss {why}", MEMBER)
    report = review_in_ci(case, azure, tmp_path / "again.json")
    found = {f["fingerprint"]: f for f in report["findings"]}
    assert [found[case.finding(m)["fingerprint"]]["suppressed"] for m in (PLAIN, CONTEXT)] == ["dismissed"] * 2
    # Asked once for the person (two threads), with the repository's token in the Git Repositories namespace.
    identities, acls = acl_reads(azure)
    assert [r.query for r in identities] == [{"identityIds": MEMBER["id"], "queryMembership": "none",
                                              "api-version": "7.1"}]
    [acl] = acls
    assert acl.path == "/contoso/_apis/accesscontrollists/2e9eb7ed-3c0a-47d4-87c1-0ffdd275fd87"
    assert acl.query == {"token": f"repoV2/{azure.project_id}/{azure.repository_id}",
                         "descriptors": f"Microsoft.IdentityModel.Claims.ClaimsIdentity;72f988bf-86f1-41af-91ab-"
                                        f"2d7cd011db47\\{MEMBER['uniqueName']}",
                         "includeExtendedInfo": "true", "api-version": "7.1"}


def test_a_readers_wont_fix_dismisses_nothing(case: ReportCase, azure: FakeAzure, tmp_path: Path) -> None:
    one_line(publish(case, pr_env(case, azure)))
    plain = by_fingerprint(azure)[case.finding(PLAIN)["fingerprint"]]
    azure.access[READER["id"]] = READER_BITS  # Readers may comment, and so set a thread's status
    azure.set_status(plain, "wontFix")
    azure.reply(plain, "/ocr-hook dismiss Not a bug.", READER)
    # Issue 58.9: a Reader closes the thread a maintainer last answered: not the maintainer's dismissal
    context = by_fingerprint(azure)[case.finding(CONTEXT)["fingerprint"]]
    azure.reply(context, "Please rename it before merging.", MEMBER)
    azure.set_status(context, "closed")
    # and a maintainer's phrase before someone changed the status again is not a dismissal of that change
    fixed = by_fingerprint(azure)[case.finding(FIXED)["fingerprint"]]
    azure.set_status(fixed, "wontFix")
    azure.reply(fixed, "/ocr-hook dismiss fine for now", MEMBER)
    azure.set_status(fixed, "active")
    azure.set_status(fixed, "wontFix")
    report = review_in_ci(case, azure, tmp_path / "again.json")
    found = {f["fingerprint"]: f for f in report["findings"]}
    assert [found[case.finding(m)["fingerprint"]]["suppressed"] for m in (PLAIN, CONTEXT, FIXED)] == [None] * 3
    assert report["exit"] == 1
    assert [len(x) for x in acl_reads(azure)] == [1, 1]  # Azure was asked, and said no
    assert not any("Identity (Read)" in n for n in report.get("notes", [])), report.get("notes")


@pytest.mark.parametrize("refusal", [403, 401])
def test_a_refused_permission_read_is_one_note_and_dismisses_nothing(case: ReportCase, azure: FakeAzure,
                                                                     tmp_path: Path, refusal: int) -> None:
    one_line(publish(case, pr_env(case, azure)))
    threads = by_fingerprint(azure)
    for m, who in ((PLAIN, MEMBER), (CONTEXT, person(5, "Another Member"))):
        azure.set_status(threads[case.finding(m)["fingerprint"]], "wontFix")
        azure.reply(threads[case.finding(m)["fingerprint"]], "/ocr-hook dismiss Won't fix.", who)
    azure.security_refusal = refusal  # the token may not read identities or the repository's permissions
    report = review_in_ci(case, azure, tmp_path / "again.json")
    found = {f["fingerprint"]: f for f in report["findings"]}
    assert [found[case.finding(m)["fingerprint"]]["suppressed"] for m in (PLAIN, CONTEXT)] == [None, None]
    assert report["exit"] == 1  # the review went on; the gate counts both findings
    notes = [n for n in report["notes"] if "Identity (Read)" in n]
    assert len(notes) == 1 and f"HTTP {refusal}" in notes[0] and "dismisses nothing" in notes[0], report["notes"]
    assert [len(x) for x in acl_reads(azure)] == [1, 0]  # one refusal: nobody else is asked


@pytest.mark.parametrize(("collection", "expected"), [
    ("https://dev.azure.com/contoso/", "https://vssps.dev.azure.com/contoso/"),
    ("https://contoso.visualstudio.com/", "https://contoso.vssps.visualstudio.com/"),
    ("https://tfs.example.com/tfs/DefaultCollection/", None),  # Azure DevOps Server: the collection answers
])
def test_identities_are_asked_where_azure_serves_them(collection: str, expected: str | None) -> None:
    from ocr_hook.publish.forge_azure import identities_root

    assert identities_root(collection) == expected
