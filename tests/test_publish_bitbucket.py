"""`ocr-hook publish` on Bitbucket Cloud (issue 29): a Code Insights report with its annotations, against
the loopback fake of the Code Insights API (tests/fake_bitbucket.py), from a real review's report
(tests/review_report_case.py), through the real CLI (forked) with the variables Pipelines sets.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import forked_cli
import pytest
from ci_repos import ci_free_env
from fake_bitbucket import API_HOST, AUTHOR, BOT, VIA_PROXY, FakeBitbucket, account
from publish_support import ROUTING_OFF
from review_report_case import (
    CONTEXT,
    FIXED,
    LONG_MESSAGE,
    NEW_NAME,
    OUTSIDE,
    PATH,
    PLAIN,
    RENAMED,
    UNANCHORED,
    ReportCase,
    docs_block,
    run_step,
    shared_case,
)

TOKEN = "ATCTT3xFfGN0bitbucketFakeToken0123456789abcdef"


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> ReportCase:
    return shared_case(tmp_path_factory)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeBitbucket]:
    with FakeBitbucket() as fake:
        yield fake


@pytest.fixture
def bitbucket(server: FakeBitbucket, case: ReportCase) -> Iterator[FakeBitbucket]:
    server.reset()
    server.tokens[TOKEN] = "write"
    server.commits = {case.head}
    server.files = {(case.head, PATH): (case.repo / PATH).read_text(), (case.head, NEW_NAME):
                    (case.repo / NEW_NAME).read_text()}
    yield server
    server.assert_conforms()  # off-contract traffic fails the test that sent it


def pipelines_env(case: ReportCase, fake: FakeBitbucket, *, token: str | None = TOKEN, **extra: str) -> dict[str, str]:
    env = ci_free_env(BITBUCKET_BUILD_NUMBER="42", BITBUCKET_WORKSPACE="team", BITBUCKET_REPO_SLUG="app",
                      BITBUCKET_COMMIT=case.head, BITBUCKET_BRANCH="feature", BITBUCKET_PR_ID="7",
                      BITBUCKET_PR_DESTINATION_BRANCH="main", BITBUCKET_API_URL=fake.api_url,
                      NO_PROXY="127.0.0.1,localhost")
    if token is not None:
        env["BITBUCKET_ACCESS_TOKEN"] = token
    env.update(extra)
    return env


def publish(case: ReportCase, env: dict[str, str], report: Path | None = None,
            *args: str) -> subprocess.CompletedProcess[str]:
    proc = forked_cli.run(["publish", "--from", str(report or case.report_path), *args], cwd=case.repo, env=env,
                          timeout=60, errors="replace")
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


def annotations(fake: FakeBitbucket, case: ReportCase) -> dict[str, dict[str, Any]]:
    return fake.annotations.get((case.head, "ocr-hook"), {})


def posts(fake: FakeBitbucket) -> list[Any]:
    return [r for r in fake.requests if r.method == "POST"]


def test_a_report_on_the_head_commit_with_annotations_at_their_lines(case: ReportCase,
                                                                       bitbucket: FakeBitbucket) -> None:
    line = one_line(publish(case, pipelines_env(case, bitbucket)))
    assert line == (f"ocr-hook: publish: published a Code Insights report (FAILED) on team/app@{case.head[:12]} "
                    "(pull request #7): 5 annotation(s) on lines, 1 on files")
    report = bitbucket.reports[(case.head, "ocr-hook")]
    assert (report["result"], report["report_type"], report["reporter"]) == ("FAILED", "BUG", "ocr-hook")
    assert case.report["verdict"] in report["details"]
    by_id = annotations(bitbucket, case)
    fp = {m: case.finding(m)["fingerprint"] for m in (FIXED, PLAIN, CONTEXT, UNANCHORED, OUTSIDE, RENAMED)}
    assert set(by_id) == set(fp.values())  # external_id is the fingerprint
    assert (by_id[fp[FIXED]]["path"], by_id[fp[FIXED]]["line"]) == (PATH, 3)
    assert by_id[fp[FIXED]]["severity"] == "HIGH" and by_id[fp[FIXED]]["annotation_type"] == "BUG"
    assert "Suggested change:\ndef f2(x):\n    return x + 2" in by_id[fp[FIXED]]["details"]
    assert (by_id[fp[PLAIN]]["line"], by_id[fp[CONTEXT]]["line"], by_id[fp[OUTSIDE]]["line"]) == (6, 5, 36)
    # The renamed file's annotation names its new path, at the line the review found.
    assert (by_id[fp[RENAMED]]["path"], by_id[fp[RENAMED]]["line"]) == (NEW_NAME, 6)
    assert "line" not in by_id[fp[UNANCHORED]] and by_id[fp[UNANCHORED]]["path"] == PATH
    assert "(about the whole file)" in by_id[fp[UNANCHORED]]["details"]
    # The head's files were read, the old report deleted, the new one put, the annotations posted in one go.
    src = f"/2.0/repositories/team/app/src/{case.head}/"
    steps = [(r.method, r.path.removeprefix(src) if r.path.startswith(src) else r.path.rsplit("/", 1)[-1])
             for r in bitbucket.requests]
    assert steps == [("GET", PATH), ("GET", NEW_NAME), ("DELETE", "ocr-hook"), ("PUT", "ocr-hook"),
                     ("POST", "annotations")]
    assert {r.headers["authorization"] for r in bitbucket.requests} == {f"Bearer {TOKEN}"}


def test_a_summary_over_450_characters_is_cut_with_an_ellipsis(case: ReportCase, bitbucket: FakeBitbucket) -> None:
    long = {**case.finding(PLAIN), "message": LONG_MESSAGE}
    one_line(publish(case, pipelines_env(case, bitbucket), case.with_findings("long", findings=[long])))
    [annotation] = annotations(bitbucket, case).values()
    assert len(annotation["summary"]) == 450 and annotation["summary"].endswith("…")
    assert annotation["summary"].startswith("medium · bug: This message is long on purpose.")
    assert annotation["details"] == LONG_MESSAGE  # the whole message is in the details
    assert [r.status for r in posts(bitbucket)] == [200]


def test_over_100_annotations_go_in_requests_of_100(case: ReportCase, bitbucket: FakeBitbucket) -> None:
    line = one_line(publish(case, pipelines_env(case, bitbucket), case.with_findings("many", findings=case.many(150))))
    assert "150 annotation(s) on lines, 0 on files" in line
    assert [(len(r.body), r.status) for r in posts(bitbucket)] == [(100, 200), (50, 200)]
    assert len(annotations(bitbucket, case)) == 150


def test_over_1000_findings_are_capped_and_said(case: ReportCase, bitbucket: FakeBitbucket) -> None:
    line = one_line(publish(case, pipelines_env(case, bitbucket), case.with_findings("most", findings=case.many(1005))))
    assert "1000 annotation(s) on lines, 0 on files, 5 beyond Bitbucket's 1,000 a report, not annotated" in line
    assert [len(r.body) for r in posts(bitbucket)] == [100] * 10 and {r.status for r in posts(bitbucket)} == {200}
    assert len(annotations(bitbucket, case)) == 1000
    assert "Only the 1000 most severe are annotated" in bitbucket.reports[(case.head, "ocr-hook")]["details"]


def test_a_rerun_replaces_the_report_and_a_passing_review_leaves_no_annotation(case: ReportCase,
                                                                               bitbucket: FakeBitbucket) -> None:
    env = pipelines_env(case, bitbucket)
    one_line(publish(case, env))
    first = dict(annotations(bitbucket, case))
    one_line(publish(case, env))
    assert len(bitbucket.reports) == 1 and annotations(bitbucket, case).keys() == first.keys()
    # The next push fixed everything: the same report says PASSED, and no stale annotation stays.
    line = one_line(publish(case, env, case.clean()))
    assert "published a Code Insights report (PASSED)" in line and "0 annotation(s) on lines, 0 on files" in line
    assert bitbucket.reports[(case.head, "ocr-hook")]["result"] == "PASSED"
    assert annotations(bitbucket, case) == {}
    assert [r.body for r in posts(bitbucket)][-1:] != [[]]  # no empty bulk request either


def test_lines_that_read_differently_on_the_commit_are_not_annotated_there(case: ReportCase,
                                                                          bitbucket: FakeBitbucket) -> None:
    # What a review of Pipelines' merge of the destination meets when that branch added lines at the top of
    # the file: on the built commit the same line numbers are other code.
    bitbucket.files[(case.head, PATH)] = "# one\n# two\n" + bitbucket.files[(case.head, PATH)]
    line = one_line(publish(case, pipelines_env(case, bitbucket)))
    assert "1 annotation(s) on lines, 5 on files" in line  # only the renamed file's finding is on its line
    moved = [a for a in annotations(bitbucket, case).values() if a["path"] == PATH and "line" not in a]
    assert len(moved) == 5 and sum("(its lines read differently on the commit)" in a["details"] for a in moved) == 4


def test_a_report_of_another_commit_publishes_nothing(case: ReportCase, bitbucket: FakeBitbucket) -> None:
    other = case.with_findings("other", scope=f"main...HEAD (merge base {case.base[:12]}..{'e' * 12})")
    line = one_line(publish(case, pipelines_env(case, bitbucket), other))
    assert f"nothing published on team/app@{case.head[:12]} (pull request #7): the report is of commit " \
           f"{'e' * 12}, not of the head {case.head[:12]}" in line
    assert bitbucket.writes() == [] and (case.head, "ocr-hook") not in bitbucket.reports


def test_inside_pipelines_the_proxy_signs_and_no_credential_is_sent(case: ReportCase,
                                                                     bitbucket: FakeBitbucket) -> None:
    env = pipelines_env(case, bitbucket, token=None, BITBUCKET_PIPELINES_PROXY=bitbucket.url)
    del env["BITBUCKET_API_URL"]
    line = one_line(publish(case, env))
    assert "published a Code Insights report (FAILED)" in line
    assert bitbucket.requests and all(r.headers.get(VIA_PROXY) == API_HOST for r in bitbucket.requests)
    assert all("authorization" not in r.headers for r in bitbucket.requests)
    assert len(annotations(bitbucket, case)) == 6


def test_outside_pipelines_without_a_token_nothing_is_sent(case: ReportCase, bitbucket: FakeBitbucket) -> None:
    env = pipelines_env(case, bitbucket, token=None)
    del env["BITBUCKET_BUILD_NUMBER"]
    line = one_line(publish(case, env, None, "--to", "bitbucket"))
    assert "no BITBUCKET_ACCESS_TOKEN, and not inside Bitbucket Pipelines" in line
    env = pipelines_env(case, bitbucket)
    del env["BITBUCKET_COMMIT"]
    assert "not a Bitbucket Pipelines build: BITBUCKET_COMMIT not set" in one_line(publish(case, env))
    assert bitbucket.requests == []


@pytest.mark.parametrize(("access", "expected"), [
    ("read", "HTTP 403: Your credentials lack one or more required privilege scopes.: granted repository: "
             "required repository:write (the token may not write Code Insights reports: it needs the "
             "repository:write scope)"),
    ("none", "HTTP 401: Token is invalid, expired, or not supported for this endpoint. (the token is not valid"),
])
def test_a_refused_token_is_one_line(case: ReportCase, bitbucket: FakeBitbucket, access: str, expected: str) -> None:
    if access == "none":
        del bitbucket.tokens[TOKEN]
    else:
        bitbucket.tokens[TOKEN] = access
    line = one_line(publish(case, pipelines_env(case, bitbucket)))
    assert line.startswith(f"ocr-hook: publish: nothing published on team/app@{case.head[:12]} (pull request #7): ")
    assert expected in line
    assert bitbucket.reports == {}


def test_an_unknown_commit_is_one_line(case: ReportCase, bitbucket: FakeBitbucket) -> None:
    bitbucket.commits = set()
    line = one_line(publish(case, pipelines_env(case, bitbucket)))
    assert f"HTTP 404: Commit not found: {case.head}" in line and "no such repository or commit" in line


def test_rate_limits_are_waited_out_and_a_500_is_one_line(case: ReportCase, bitbucket: FakeBitbucket) -> None:
    limited = {"type": "error", "error": {"message": "Rate limit for this resource has been exceeded"}}
    bitbucket.fail(".", 429, limited, {"Retry-After": "0"}, times=2)
    line = one_line(publish(case, pipelines_env(case, bitbucket)))
    assert "published a Code Insights report (FAILED)" in line
    assert [r.status for r in bitbucket.requests[:3]] == [429, 429, 200]
    # A wait longer than the publishing deadline allows is not waited: one line.
    bitbucket.fail(".", 429, limited, {"Retry-After": "3600"})
    line = one_line(publish(case, pipelines_env(case, bitbucket)))
    assert "HTTP 429: Rate limit for this resource has been exceeded (rate limited;" in line
    bitbucket.fail("PUT ", 500, {"type": "error", "error": {"message": "Something went wrong"}})
    line = one_line(publish(case, pipelines_env(case, bitbucket)))
    assert "nothing published on team/app@" in line and "HTTP 500: Something went wrong" in line


def test_a_refused_batch_says_how_far_it_got(case: ReportCase, bitbucket: FakeBitbucket) -> None:
    bitbucket.refuse_bulk_after = 1  # the second request of annotations gets a 500
    report = case.with_findings("refused", findings=case.many(150))
    line = one_line(publish(case, pipelines_env(case, bitbucket), report))
    assert "HTTP 500: Something went wrong (the report is there with 100 of 150 annotations)" in line
    assert len(annotations(bitbucket, case)) == 100


def test_a_redirect_is_not_followed_with_the_token(case: ReportCase, bitbucket: FakeBitbucket) -> None:
    with FakeBitbucket() as elsewhere:
        elsewhere.tokens[TOKEN] = "write"
        bitbucket.fail(".", 302, {}, {"Location": f"{elsewhere.api_url}/repositories/team/app/src/x/app.py"})
        line = one_line(publish(case, pipelines_env(case, bitbucket)))
        assert elsewhere.requests == []
    assert "a redirect; not followed with the token" in line
    assert bitbucket.writes() == []


# --- the docs' recipe, run as written ------------------------------------------------------------------------


def test_the_docs_recipe_runs_as_written(case: ReportCase, bitbucket: FakeBitbucket, tmp_path: Path) -> None:
    from fake_api import FakeMessagesAPI
    from review_report_case import script_review

    pipeline = docs_block("recipes/bitbucket.md", "## Code Insights on Bitbucket Cloud (`ocr-hook publish`)")
    [step] = [s["step"] for s in pipeline["pipelines"]["pull-requests"]["**"]]
    assert step["clone"]["depth"] == "full"
    clone = case.ci_clone(tmp_path, single_branch=True)
    with FakeMessagesAPI() as messages:
        script_review(messages)
        env = pipelines_env(case, bitbucket, token=None, BITBUCKET_PIPELINES_PROXY=bitbucket.url,
                            BITBUCKET_CLONE_DIR=str(clone), **case.sdk_env(messages))
        del env["BITBUCKET_API_URL"]
        review = run_step(step["script"], clone, env)
        assert [p.returncode for p in review] == [0, 1], [p.stderr for p in review]  # git fetch; the gate fails
        [published] = run_step(step["after-script"], clone, env)
    assert "published a Code Insights report (FAILED)" in one_line(published)
    reviewed = json.loads((clone / "ocr.json").read_text(encoding="utf-8"))
    assert {f["fingerprint"] for f in reviewed["findings"]} == set(annotations(bitbucket, case))
    assert reviewed["findings"] and all(r.headers.get(VIA_PROXY) == API_HOST for r in bitbucket.requests)


# --- DESIGN 18: the pull request's comments, whose threads resolve (OCR_HOOK_BITBUCKET_COMMENTS) -------------

MEMBER = account(3, "A Member")


@pytest.fixture
def pr(bitbucket: FakeBitbucket, case: ReportCase) -> FakeBitbucket:
    bitbucket.add_pull(7, case.head, case.base, case.unified)
    return bitbucket


def comments_env(case: ReportCase, fake: FakeBitbucket, **extra: str) -> dict[str, str]:
    return pipelines_env(case, fake, OCR_HOOK_BITBUCKET_COMMENTS="true", **{**ROUTING_OFF, **extra})


def ours(fake: FakeBitbucket, case: ReportCase, message: str) -> dict[str, Any]:
    return fake.comment_with(7, f"<!-- ocr-hook fingerprint={case.finding(message)['fingerprint']} -->")


def test_findings_as_pull_request_comments_and_the_report_as_the_verdict(case: ReportCase, pr: FakeBitbucket) -> None:
    line = one_line(publish(case, comments_env(case, pr)))
    assert line == ("ocr-hook: publish: published comments on team/app pull request #7: 4 inline comment(s), "
                    "2 finding(s) in the summary comment")
    inline = {(c["inline"]["path"], c["inline"]["to"]) for c in pr.comments[7] if "inline" in c}
    assert inline == {(PATH, 3), (PATH, 5), (PATH, 6), (NEW_NAME, 6)}
    assert all(c["user"]["uuid"] == BOT["uuid"] for c in pr.comments[7])
    [summary] = [c for c in pr.comments[7] if "inline" not in c]
    assert summary["content"]["raw"].startswith("<!-- ocr-hook review exit=1 ") and OUTSIDE in summary["content"]["raw"]
    # The Code Insights report is the verdict, without annotations (the comments are the findings).
    assert pr.reports[(case.head, "ocr-hook")]["result"] == "FAILED" and annotations(pr, case) == {}
    assert one_line(publish(case, comments_env(case, pr))).startswith(
        "ocr-hook: publish: nothing new to publish on team/app pull request #7")
    assert len(pr.comments[7]) == 5


def test_a_fix_resolves_its_thread_and_answers_one_a_person_answered(case: ReportCase, pr: FakeBitbucket) -> None:
    env = comments_env(case, pr)
    one_line(publish(case, env))
    plain, fixed = ours(pr, case, PLAIN), ours(pr, case, FIXED)
    pr.person_comment(7, "Why is this wrong?", MEMBER, parent=fixed)
    before = len(pr.requests)
    line = one_line(publish(case, env, case.fixed(case.root, PLAIN, FIXED)))
    assert "1 thread(s) resolved, 1 answered thread(s) told the finding looks fixed" in line
    resolved = [r.path for r in pr.requests[before:] if r.path.endswith("/resolve")]
    assert resolved == [f"/2.0/repositories/team/app/pullrequests/7/comments/{plain['id']}/resolve"]
    assert plain["resolution"]["user"]["uuid"] == BOT["uuid"] and "resolution" not in fixed
    [answer] = [c for c in pr.comments[7] if (c.get("parent") or {}).get("id") == fixed["id"]
                and c["user"]["uuid"] == BOT["uuid"]]
    assert answer["content"]["raw"].startswith(f"<!-- ocr-hook fixed fingerprint={case.finding(FIXED)['fingerprint']}")
    line = one_line(publish(case, env, case.fixed(case.root, PLAIN, FIXED)))
    assert "answered" not in line and "resolved" not in line  # said once, resolved once


def test_the_adapter_reads_who_resolved_their_access_and_replies(case: ReportCase, pr: FakeBitbucket) -> None:
    import time

    from ocr_hook.publish.forges import Setup, open_adapter

    one_line(publish(case, comments_env(case, pr)))
    pr.tokens[TOKEN] = "admin"  # a repository administrator's token: Bitbucket lists who may write
    reader = account(4, "A Reader")
    pr.permissions.update({MEMBER["uuid"]: "write", AUTHOR["uuid"]: "admin", reader["uuid"]: "read"})
    plain, fixed, context = ours(pr, case, PLAIN), ours(pr, case, FIXED), ours(pr, case, CONTEXT)
    said = pr.person_comment(7, "Intended: f3 multiplies on purpose.", MEMBER, parent=plain)
    pr.person_comment(7, "Agreed.", {"type": "app_user", "uuid": "{app}", "display_name": "some app"}, parent=said)
    pr.person_resolve(plain, MEMBER)
    pr.person_resolve(fixed, AUTHOR)
    pr.person_resolve(context, reader)
    adapter = open_adapter("bitbucket", Setup(comments_env(case, pr), time.monotonic() + 60, None))
    try:
        assert adapter.identity() == BOT["uuid"] and adapter.author() == AUTHOR["uuid"]
        posted = {p.id: p for p in adapter.existing()}
    finally:
        adapter.close()
    p = posted[str(plain["id"])]
    assert (p.resolved, p.resolvable, p.resolved_by, p.resolved_by_bot, p.resolved_by_can_write, p.path) == (
        True, True, MEMBER["uuid"], False, True, PATH)
    assert p.resolved_at == plain["resolution"]["created_on"]
    assert [(r.author, r.body, r.bot) for r in p.replies] == [
        (MEMBER["uuid"], "Intended: f3 multiplies on purpose.", False), ("{app}", "Agreed.", True)]
    assert (posted[str(fixed["id"])].resolved_by, posted[str(fixed["id"])].resolved_by_can_write) == (
        AUTHOR["uuid"], True)  # (the review then does not count the pull request's author)
    assert posted[str(context["id"])].resolved_by_can_write is False  # read access only
    assert str(said["id"]) not in posted  # a reply is not a thread of its own
    assert [r.status for r in pr.requests if "/permissions/" in r.path] == [200]  # listed once


def test_comments_without_a_token_or_with_a_read_token_are_one_line(case: ReportCase, pr: FakeBitbucket) -> None:
    env = comments_env(case, pr)
    del env["BITBUCKET_ACCESS_TOKEN"]
    assert "bitbucket_comments is on but there is no BITBUCKET_ACCESS_TOKEN" in one_line(publish(case, env))
    assert pr.requests == []
    pr.tokens[TOKEN] = "read"
    line = one_line(publish(case, comments_env(case, pr)))
    assert "nothing published on team/app pull request #7: HTTP 403: Your credentials lack" in line
    assert "it needs the pullrequest:write and account scopes" in line and pr.comments[7] == []


def test_a_members_resolve_dismisses_the_finding_for_the_next_review(case: ReportCase, pr: FakeBitbucket,
                                                                    tmp_path: Path) -> None:
    from fake_api import FakeMessagesAPI
    from review_report_case import script_review

    one_line(publish(case, comments_env(case, pr)))
    pr.tokens[TOKEN] = "admin"
    pr.permissions.update({MEMBER["uuid"]: "write", AUTHOR["uuid"]: "admin"})
    plain, fixed = ours(pr, case, PLAIN), ours(pr, case, FIXED)
    pr.person_comment(7, "f3 multiplies on purpose: it scales.", MEMBER, parent=plain)
    pr.person_resolve(plain, MEMBER)
    pr.person_comment(7, "Fine as it is.", AUTHOR, parent=fixed)
    pr.person_resolve(fixed, AUTHOR)  # the pull request's own author, an administrator at that
    out = tmp_path / "again.json"
    cache = {"OCR_HOOK_CACHE_DIR": str(tmp_path / "cache")}  # the pipeline's kept cache: the review history
    with FakeMessagesAPI() as messages:
        script_review(messages)
        proc = forked_cli.run(["review", "--base", "main", "--no-cache", "--no-review-filter", "--filter-mode",
                               "nofilter", "-q", "--format", "json", "--json-output", str(out)], cwd=case.repo,
                              env=comments_env(case, pr, **cache, **case.sdk_env(messages)), timeout=120,
                              errors="replace")
    assert "Traceback" not in proc.stderr and TOKEN not in proc.stdout + proc.stderr, proc.stderr
    found = {f["fingerprint"]: f for f in json.loads(out.read_text(encoding="utf-8"))["findings"]}
    dismissed = found[case.finding(PLAIN)["fingerprint"]]
    assert dismissed["suppressed"] == "dismissed", dismissed
    assert MEMBER["uuid"] in json.dumps(dismissed) and "f3 multiplies on purpose: it scales." in json.dumps(dismissed)
    assert found[case.finding(FIXED)["fingerprint"]]["suppressed"] is None
    assert proc.returncode == 1  # the other findings still count

    # The review history has the member's dismissal on the forge and the replies (Bitbucket Cloud has no
    # reactions on comments): `ocr-hook outcomes` for the pull request Pipelines names in BITBUCKET_PR_ID.
    outcomes = forked_cli.run(["outcomes", "--format", "json", "--pr", "7"], cwd=case.repo,
                              env=comments_env(case, pr, **cache), timeout=60, errors="replace")
    assert outcomes.returncode == 0, outcomes.stderr
    doc = json.loads(outcomes.stdout)
    assert doc["dismissed_by"] == {f"{MEMBER['uuid']} (forge)": 1}
    assert doc["feedback"] == {"thumbs_up": 0, "thumbs_down": 0, "replies": 2}


def test_a_bitbucket_mention_in_model_text_stays_inert(case: ReportCase, pr: FakeBitbucket) -> None:
    # Bitbucket Cloud mentions an account by `@{account id}` in a comment's markdown.
    report = case.with_findings("bb-mention", [{**case.finding(PLAIN),
                                                 "message": "Ask @{557058:0f1e2d3c} about f3."}])
    one_line(publish(case, comments_env(case, pr), report))
    [comment] = [c for c in pr.comments[7] if "inline" in c]
    assert "@\u200b{557058:0f1e2d3c}" in comment["content"]["raw"] and "@{" not in comment["content"]["raw"]


def test_the_comments_recipe_runs_as_written(case: ReportCase, pr: FakeBitbucket, tmp_path: Path) -> None:
    from fake_api import FakeMessagesAPI
    from review_report_case import script_review

    heading = "## Pull-request comments that resolve (`bitbucket_comments`)"
    [step] = [s["step"] for s in docs_block("recipes/bitbucket.md", heading)["pipelines"]["pull-requests"]["**"]]
    clone = case.ci_clone(tmp_path, single_branch=True)
    with FakeMessagesAPI() as messages:
        script_review(messages)
        env = comments_env(case, pr, BITBUCKET_CLONE_DIR=str(clone), **case.sdk_env(messages))
        review = run_step(step["script"], clone, env)
        assert [p.returncode for p in review] == [0, 1], [p.stderr for p in review]  # git fetch; the gate fails
        assert "not read" not in review[-1].stderr  # the review read the pull request's threads
        [published] = run_step(step["after-script"], clone, env)
    assert one_line(published).startswith("ocr-hook: publish: published comments on team/app pull request #7: ")
    assert any(r.path.endswith("/pullrequests/7/comments") and r.method == "GET" for r in pr.requests[:3])
    assert pr.reports[(case.head, "ocr-hook")]["result"] == "FAILED"
