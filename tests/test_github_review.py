"""`ocr-hook github-review` (issue 23) against the fake GitHub REST API (tests/fake_github.py).

The report comes from a real review: a real repository with a feature branch, the real CLI and SDK
against the scripted fake Messages API. The pull request the fake serves has that branch's diff as
`git diff` prints it (GitHub's `patch` is the same hunks without the file header). The command runs as
a subprocess with the variables a GitHub Actions runner sets (forked from a warm one: tests/forked_cli.py).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import forked_cli
import pytest
from agent_support import main_opening
from ci_repos import ci_free_env
from conftest import TEST_API_KEY
from fake_api import FakeMessagesAPI, Reply, tool_use
from fake_github import FakeGitHub, Pull
from gitrepo import commit_all, git, make_repo, write
from publish_support import ROUTING_OFF

TOKEN = "ghs_fakeTokenValue0123456789abcdefABCDEF"
PATH = "app.py"
BEFORE = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(1, 21))  # 40 lines
AFTER = BEFORE.replace("    return x + 2\n", "    return x - 2\n").replace("    return x + 3\n", "    return x * 3\n")

FIXED_MESSAGE = "f2 subtracts where every other function adds."
PLAIN_MESSAGE = "f3 multiplies; was that meant? @property-style mentions must not ping anyone."
UNANCHORED_MESSAGE = "Somewhere this deletes a tree without checking the path."
OUTSIDE_MESSAGE = "f18 is unchanged but has the same off-by-one."


def _comment(content: str, code: str, severity: str, suggestion: str | None = None) -> dict[str, Any]:
    entry = {"content": content, "existing_code": code, "severity": severity, "category": "bug"}
    if suggestion is not None:
        entry["suggestion_code"] = suggestion
    return entry


COMMENTS = [
    _comment(FIXED_MESSAGE, "def f2(x):\n    return x - 2", "high", "def f2(x):\n    return x + 2"),
    _comment(PLAIN_MESSAGE, "return x * 3", "medium"),
    _comment(UNANCHORED_MESSAGE, "shutil.rmtree(path)", "low"),
    _comment(OUTSIDE_MESSAGE, "return x + 18", "medium", "    return x + 18  # checked"),
]


class Case:
    """The reviewed repository, its report, and the pull request's head and patch."""

    def __init__(self, root: Path) -> None:
        self.repo = make_repo(root / "repo")
        write(self.repo, PATH, BEFORE)
        commit_all(self.repo, "base")
        git(self.repo, "checkout", "-q", "-b", "feature")
        write(self.repo, PATH, AFTER)
        self.head = commit_all(self.repo, "feature")
        diff = git(self.repo, "diff", "main...feature", "--", PATH)
        self.patch = diff[diff.index("@@"):].rstrip("\n")  # what GitHub's pulls/files `patch` holds
        self.report_path = root / "report.json"
        with FakeMessagesAPI() as fake:
            fake.script(main_opening(PATH), [Reply([tool_use("code_comment", {"comments": COMMENTS})])])
            env = {k: v for k, v in ci_free_env().items() if not k.startswith("ANTHROPIC_")}
            env.update(ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY=TEST_API_KEY,
                       NO_PROXY="127.0.0.1,localhost")
            proc = forked_cli.run(["review", "--base", "main", "--no-cache", "--no-review-filter", "--filter-mode",
                                   "nofilter", "-q", "--format", "json", "--json-output", str(self.report_path)],
                                  cwd=self.repo, env=env, timeout=120)
        assert proc.returncode == 1, proc.stderr
        self.report: dict[str, Any] = json.loads(self.report_path.read_text(encoding="utf-8"))

    def finding(self, message: str) -> dict[str, Any]:
        return next(f for f in self.report["findings"] if f["message"] == message)


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    return Case(tmp_path_factory.mktemp("github-review"))


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.tokens[TOKEN] = "write"
        yield fake


def pr_event(tmp_path: Path, head: str, number: int = 7) -> Path:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "number": number,
                                 "pull_request": {"number": number, "head": {"sha": head, "ref": "feature"},
                                                  "base": {"ref": "main"}}}), encoding="utf-8")
    return event


def publish(case: Case, github: FakeGitHub, event: Path, *, report: Path | None = None, token: str | None = TOKEN,
            api_url: str | None = None, event_name: str = "pull_request") -> subprocess.CompletedProcess[str]:
    env = ci_free_env(GITHUB_ACTIONS="true", GITHUB_REPOSITORY="octo/app", GITHUB_EVENT_NAME=event_name,
                      GITHUB_EVENT_PATH=str(event), GITHUB_API_URL=api_url or github.url,
                      NO_PROXY="127.0.0.1,localhost", **ROUTING_OFF)
    if token is not None:
        env["GITHUB_TOKEN"] = token
    proc = forked_cli.run(["github-review", "--from", str(report or case.report_path)], cwd=case.repo, env=env,
                          timeout=60)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert TOKEN not in proc.stdout + proc.stderr
    return proc


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("ocr-hook: github-review: ")
    return lines[0]


def posted_reviews(github: FakeGitHub) -> list[Any]:
    return [r for r in github.requests if r.method == "POST" and r.path.endswith("/reviews")]


def suggestion_blocks(body: str) -> list[str]:
    return re.findall(r"^(`{3,})suggestion\n(.*?)\n?\1$", body, re.S | re.M)


@pytest.fixture
def pull(case: Case, github: FakeGitHub) -> Pull:
    pull = github.add_pull(7, case.head, {PATH: case.patch})
    # Two comments by a person first: with pages of two, ocr-hook's own are on the second page.
    github.add_comment(7, PATH, 4, "Looks odd to me.")
    github.add_comment(7, PATH, 6, "<!-- not ocr-hook --> Me too.")
    return pull


def test_the_report_has_the_four_kinds_of_finding(case: Case) -> None:
    fixed, plain = case.finding(FIXED_MESSAGE), case.finding(PLAIN_MESSAGE)
    unanchored, outside = case.finding(UNANCHORED_MESSAGE), case.finding(OUTSIDE_MESSAGE)
    assert fixed["fix"] == {"start_line": 3, "end_line": 4, "replacement": "def f2(x):\n    return x + 2"}
    assert (plain["start_line"], plain["end_line"], plain["fix"]) == (6, 6, None)
    assert unanchored["anchored"] is False
    assert outside["anchored"] and outside["start_line"] == 36 and outside["fix"] is not None
    assert "@@ -1,9 +1,9 @@" in case.patch  # line 36 is far from the one hunk


def test_one_review_inline_where_github_accepts_the_rest_in_the_body(case: Case, github: FakeGitHub, pull: Pull,
                                                                    tmp_path: Path) -> None:
    proc = publish(case, github, pr_event(tmp_path, case.head))
    line = one_line(proc)
    assert "published a review on octo/app#7: 2 inline comment(s), 2 finding(s) in the body" in line

    [post] = posted_reviews(github)
    assert post.status == 200
    request = post.body
    assert (request["event"], request["commit_id"]) == ("COMMENT", case.head)
    by_line = {c["line"]: c for c in request["comments"]}
    assert set(by_line) == {4, 6}
    fixed, plain = by_line[4], by_line[6]
    assert (fixed["path"], fixed["start_line"], fixed["side"], fixed["start_side"]) == (PATH, 3, "RIGHT", "RIGHT")
    # The suggested change holds exactly the fix's replacement, which GitHub puts in place of lines 3-4.
    assert [text for _, text in suggestion_blocks(fixed["body"])] == [case.finding(FIXED_MESSAGE)["fix"]["replacement"]]
    assert FIXED_MESSAGE in fixed["body"] and "high" in fixed["body"]
    assert (plain["path"], plain["side"], "start_line" in plain) == (PATH, "RIGHT", False)
    assert suggestion_blocks(plain["body"]) == []
    assert "@property" not in plain["body"] and "@\u200bproperty" in plain["body"]  # no one notified
    # Hidden markers carry the fingerprints.
    assert fixed["body"].startswith(f"<!-- ocr-hook fingerprint={case.finding(FIXED_MESSAGE)['fingerprint']} -->")
    assert plain["body"].startswith(f"<!-- ocr-hook fingerprint={case.finding(PLAIN_MESSAGE)['fingerprint']} -->")

    body = request["body"]
    assert UNANCHORED_MESSAGE in body and OUTSIDE_MESSAGE in body
    assert FIXED_MESSAGE not in body and "f3 multiplies" not in body
    assert "`app.py:36`" in body and "outside the pull request's diff" in body and "about the whole file" in body
    assert "return x + 18  # checked" in body
    assert case.report["verdict"] in body
    assert suggestion_blocks(body) == []  # a suggestion outside the diff cannot be applied
    # GitHub now has the review and its two comments (beside the person's two).
    assert len(pull.reviews) == 1 and len(pull.comments) == 4
    # Every request carried the token to the fake only; files, review threads and reviews were all read.
    assert {r.headers["authorization"] for r in github.requests} == {f"Bearer {TOKEN}"}
    reads = {r.path.rsplit("/", 1)[1] for r in github.requests if r.method == "GET"}
    assert reads == {"files", "reviews"}
    # Who publishes is asked first, of GitHub's GraphQL `viewer` (issue 58.13: an installation token may not read
    # /user); the threads come from GraphQL (issue 53): the person's two fill the one page the fake gives.
    viewer, threads = [r.body for r in github.requests if r.path == "/graphql"]
    assert "viewer" in viewer["query"] and github.requests[0].path == "/graphql"
    assert "reviewThreads" in threads["query"] and threads["variables"]["after"] is None


def test_a_rerun_posts_nothing_twice(case: Case, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    event = pr_event(tmp_path, case.head)
    one_line(publish(case, github, event))
    before = len(github.requests)
    line = one_line(publish(case, github, event))
    assert "nothing new to publish on octo/app#7: 4 finding(s) already posted" in line
    assert len(posted_reviews(github)) == 1 and len(pull.comments) == 4
    # ocr-hook's threads were found on the second page (the person's two fill the first): the cursor was followed.
    pages = [r.body["variables"]["after"] for r in github.requests[before:] if r.path == "/graphql"
             and "reviewThreads" in r.body["query"]]
    assert len(pages) == 2 and pages[0] is None and pages[1]

    # A later report with one more finding: one more review, with only that one.
    report = json.loads(case.report_path.read_text(encoding="utf-8"))
    extra = {**case.finding(PLAIN_MESSAGE), "message": "Another thought on f3.", "fingerprint": "ab" * 16}
    report["findings"].append(extra)
    later = tmp_path / "later.json"
    later.write_text(json.dumps(report), encoding="utf-8")
    line = one_line(publish(case, github, event, report=later))
    assert "1 inline comment(s), 0 finding(s) in the body, 4 already posted earlier" in line
    second = posted_reviews(github)[-1].body
    assert [c["body"].split("\n", 1)[0] for c in second["comments"]] == [f"<!-- ocr-hook fingerprint={'ab' * 16} -->"]
    assert "4 already posted by an earlier run (not repeated)" in second["body"]


def test_a_read_only_token_is_one_line_and_nothing_posted(case: Case, github: FakeGitHub, pull: Pull,
                                                         tmp_path: Path) -> None:
    github.tokens[TOKEN] = "read"  # a pull request from a fork
    line = one_line(publish(case, github, pr_event(tmp_path, case.head)))
    assert "review not published on octo/app#7: HTTP 403: Resource not accessible by integration" in line
    assert "read-only token" in line
    assert [(r.method, r.status) for r in github.writes()] == [("POST", 403)]
    assert pull.reviews == [] and len(pull.comments) == 2


def test_a_push_event_publishes_nothing(case: Case, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    event = tmp_path / "push.json"
    event.write_text(json.dumps({"ref": "refs/heads/feature", "before": "0" * 40, "after": case.head}))
    line = one_line(publish(case, github, event, event_name="push"))
    assert line == "ocr-hook: github-review: review not published: not a pull request (event push)"
    assert github.requests == []


def test_no_token_publishes_nothing(case: Case, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    line = one_line(publish(case, github, pr_event(tmp_path, case.head), token=None))
    assert line == "ocr-hook: github-review: review not published on octo/app#7: no GITHUB_TOKEN"
    assert github.requests == []


def test_a_bad_token_is_one_line(case: Case, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    del github.tokens[TOKEN]
    line = one_line(publish(case, github, pr_event(tmp_path, case.head)))
    assert "HTTP 401: Bad credentials (the token is not valid)" in line
    assert github.writes() == []


def test_a_token_with_a_line_break_is_never_quoted(case: Case, github: FakeGitHub, pull: Pull,
                                                   tmp_path: Path) -> None:
    odd = TOKEN[:20] + "\n" + TOKEN[20:]
    proc = publish(case, github, pr_event(tmp_path, case.head), token=odd)
    line = one_line(proc)
    assert "the token has characters no token has" in line
    assert TOKEN[:20] not in proc.stderr and TOKEN[20:] not in proc.stderr
    assert github.requests == []


def test_an_unreachable_api_is_one_line(case: Case, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    line = one_line(publish(case, github, pr_event(tmp_path, case.head), api_url=f"http://127.0.0.1:{port}"))
    assert f"review not published on octo/app#7: cannot reach http://127.0.0.1:{port}: ConnectError" in line


def test_an_unknown_pull_request_is_one_line(case: Case, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    line = one_line(publish(case, github, pr_event(tmp_path, case.head, number=8)))
    assert "review not published on octo/app#8: HTTP 404: Not Found" in line
    assert github.writes() == []


def test_refused_comment_lines_move_into_the_body(case: Case, github: FakeGitHub, pull: Pull,
                                                  tmp_path: Path) -> None:
    # The branch moved on while the review ran: GitHub lists the new head's diff, but resolves the
    # comments of a review on the reviewed commit against that commit's diff, where line 6 is unchanged.
    newer = "f" * 40
    pull.older[case.head] = {PATH: "@@ -1,5 +1,5 @@\n def f1(x):\n     return x + 1\n def f2(x):\n"
                                   "-    return x + 2\n+    return x - 2\n def f3(x):"}
    pull.head_sha = newer
    line = one_line(publish(case, github, pr_event(tmp_path, case.head)))
    assert "published a review on octo/app#7: 0 inline comment(s), 4 finding(s) in the body" in line
    assert "GitHub refused the inline comments: HTTP 422" in line
    first, second = posted_reviews(github)
    assert (first.status, len(first.body["comments"])) == (422, 2)
    assert (second.status, second.body["comments"]) == (200, [])
    body = second.body["body"]
    assert all(m in body for m in (FIXED_MESSAGE, "f3 multiplies", UNANCHORED_MESSAGE, OUTSIDE_MESSAGE))
    assert len(pull.reviews) == 1


def test_lines_that_moved_on_the_head_are_not_commented(case: Case, github: FakeGitHub, tmp_path: Path) -> None:
    # What a review of GitHub's merge commit meets when the base branch added lines at the top of the file:
    # the pull request's head has them elsewhere. GitHub would accept comments on lines 3-4 and 6, but
    # they are other code there, and the suggested change would replace the wrong lines.
    other = make_repo(tmp_path / "head")
    write(other, PATH, BEFORE)
    commit_all(other, "base")
    write(other, PATH, "# one\n# two\n" + AFTER)
    diff = git(other, "diff", "--", PATH)
    pull = github.add_pull(7, case.head, {PATH: diff[diff.index("@@"):]})
    line = one_line(publish(case, github, pr_event(tmp_path, case.head)))
    assert "0 inline comment(s), 4 finding(s) in the body" in line
    [post] = posted_reviews(github)
    assert post.body["comments"] == [] and suggestion_blocks(post.body["body"]) == []
    assert post.body["body"].count("these lines read differently on the pull request's head") == 2
    assert len(pull.reviews) == 1


def test_pagination_links_off_the_api_are_not_followed(case: Case, github: FakeGitHub, pull: Pull,
                                                       tmp_path: Path) -> None:
    for n in range(3):  # pages of two: the list of reviews has a second page
        github.add_review(7, f"A person's review {n}.")
    with FakeGitHub() as elsewhere:
        elsewhere.tokens[TOKEN] = "write"
        github.link_base = elsewhere.url  # a Link header naming another host
        line = one_line(publish(case, github, pr_event(tmp_path, case.head)))
        assert elsewhere.requests == []  # the token never went there
    assert "pagination link points outside GITHUB_API_URL" in line
    assert github.writes() == []


def test_a_report_that_is_not_one_is_exit_2(case: Case, github: FakeGitHub, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"findings": []}')
    proc = publish(case, github, pr_event(tmp_path, case.head), report=bad)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "is not an ocr-hook --format json report" in proc.stderr
    missing = publish(case, github, pr_event(tmp_path, case.head), report=tmp_path / "none.json")
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    assert github.requests == []


def test_suppressed_findings_are_counted_not_posted(case: Case, github: FakeGitHub, pull: Pull,
                                                    tmp_path: Path) -> None:
    report = json.loads(case.report_path.read_text(encoding="utf-8"))
    for f in report["findings"]:
        if f["message"] == PLAIN_MESSAGE:
            f["suppressed"] = "baseline"
    path = tmp_path / "suppressed.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    line = one_line(publish(case, github, pr_event(tmp_path, case.head), report=path))
    assert "1 inline comment(s), 2 finding(s) in the body, 1 suppressed, not posted" in line
    [post] = posted_reviews(github)
    assert "1 suppressed (not posted)" in post.body["body"]
    assert "f3 multiplies" not in json.dumps(post.body)



def test_a_report_of_another_commit_or_a_committed_one_is_not_the_verdict(case: Case, github: FakeGitHub,
                                                                          pull: Pull, tmp_path: Path) -> None:
    # Issue 41, item 1: github-review takes only this run's report of the pull request's head.
    data = dict(case.report, scope=f"main...HEAD (merge base {'d' * 12}..{'e' * 12})")
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data), encoding="utf-8")
    line = one_line(publish(case, github, pr_event(tmp_path, case.head), report=other))
    assert line.startswith("ocr-hook: github-review: review not published on octo/app#7: the report is of commit "
                           f"{'e' * 12}, not of the head {case.head[:12]}"), line
    committed = case.repo / "ocr.json"
    committed.write_text(case.report_path.read_text(encoding="utf-8"), encoding="utf-8")
    git(case.repo, "add", "ocr.json")  # staged is enough: git then tracks it
    try:
        proc = publish(case, github, pr_event(tmp_path, case.head), report=committed)
    finally:
        git(case.repo, "rm", "-q", "--cached", "ocr.json")
        committed.unlink()
    assert proc.returncode == 2 and "ocr.json: git tracks this file" in proc.stderr, proc.stderr
    assert github.writes() == []  # (a GraphQL query reads)
