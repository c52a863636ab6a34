"""`ocr-hook publish` on a GitLab merge request (issue 29) against the fake GitLab API (tests/fake_gitlab.py).

The report is a real review of a real repository (tests/publish_support.py); the MR the fake serves has
that branch's diffs as GitLab lists them (hunks without headers, a renamed file with its old path).
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_gitlab import LINE_CODE, FakeGitLab, MergeRequest
from publish_support import (
    CONTEXT,
    FIXED,
    NEW_NAME,
    OLD_NAME,
    OUTSIDE,
    PATH,
    PLAIN,
    RENAMED,
    UNANCHORED,
    Reviewed,
    publish_cli,
)

TOKEN = "glpat-fakeTokenValue0123456789abcd"
JOB_TOKEN = "glcbt-64_jobTokenNeverSentAnywhere"


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Reviewed:
    return Reviewed(tmp_path_factory.mktemp("publish-gitlab"))


@pytest.fixture(scope="module")
def server() -> Iterator[FakeGitLab]:
    with FakeGitLab() as fake:
        yield fake


@pytest.fixture
def gitlab(server: FakeGitLab) -> Iterator[FakeGitLab]:
    yield server.fresh(TOKEN)
    server.assert_conforms()  # off-contract traffic fails the test that sent it


@pytest.fixture
def mr(case: Reviewed, gitlab: FakeGitLab) -> MergeRequest:
    diffs = [{"old_path": PATH, "new_path": PATH, "diff": case.patch(PATH), "new_file": False, "renamed_file": False,
              "deleted_file": False},
             {"old_path": OLD_NAME, "new_path": NEW_NAME, "diff": case.patch(NEW_NAME), "new_file": False,
              "renamed_file": True, "deleted_file": False},
             {"old_path": "docs/gone.md", "new_path": "docs/gone.md", "diff": "@@ -1 +0,0 @@\n-gone\n",
              "new_file": False, "renamed_file": False, "deleted_file": True}]  # three: two pages of two
    mr = gitlab.add_mr(3, case.head, case.base, diffs)
    gitlab.add_note(3, "Thanks, looking.")  # a person's note first
    return mr


def ci(gitlab: FakeGitLab, **over: str) -> dict[str, str]:
    env = {"GITLAB_CI": "true", "CI_API_V4_URL": gitlab.api, "CI_PROJECT_ID": "42", "CI_PROJECT_PATH": "group/app",
           "CI_MERGE_REQUEST_IID": "3", "CI_PIPELINE_SOURCE": "merge_request_event", "GITLAB_TOKEN": TOKEN,
           "CI_JOB_TOKEN": JOB_TOKEN}
    env.update(over)
    return {k: v for k, v in env.items() if v != ""}


def run(case: Reviewed, gitlab: FakeGitLab, *, report: Path | None = None, **env: str) -> str:
    proc = publish_cli(case.repo, ci(gitlab, **env), "--from", str(report or case.report_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert TOKEN not in proc.stderr and JOB_TOKEN not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ocr-hook: publish: "), proc.stderr
    for r in gitlab.requests:  # the token only to the API root, never the job token
        assert r.headers.get("private-token") == TOKEN and JOB_TOKEN not in json.dumps(r.headers)
    return lines[0]


def drafts(gitlab: FakeGitLab) -> list[Any]:
    return [r for r in gitlab.requests if r.method == "POST" and r.path.endswith("/draft_notes")]


def summary_notes(mr: MergeRequest) -> list[dict[str, Any]]:
    return [d["notes"][0] for d in mr.discussions if d["notes"][0]["body"].startswith("<!-- ocr-hook review")]


def test_discussions_at_their_lines_and_one_note_with_the_rest(case: Reviewed, gitlab: FakeGitLab,
                                                               mr: MergeRequest) -> None:
    line = run(case, gitlab)
    assert "published comments on group/app!3: 4 inline comment(s), 2 finding(s) in the note" in line
    by_text = {next(m for m in (FIXED, PLAIN, CONTEXT, RENAMED) if m[:20] in r.body["note"]): r
               for r in drafts(gitlab)}
    assert set(by_text) == {FIXED, PLAIN, CONTEXT, RENAMED} and all(r.status == 201 for r in by_text.values())
    refs = {"base_sha": case.base, "start_sha": case.base, "head_sha": case.head, "position_type": "text"}
    fixed, plain = by_text[FIXED].body, by_text[PLAIN].body
    # Line 3 is unchanged (context): both numbers; line 6 is added: new_line only.
    assert fixed["position"] == {**refs, "new_path": PATH, "old_path": PATH, "new_line": 3, "old_line": 3}
    assert plain["position"] == {**refs, "new_path": PATH, "old_path": PATH, "new_line": 6}
    assert by_text[CONTEXT].body["position"] == {**refs, "new_path": PATH, "old_path": PATH, "new_line": 5,
                                                 "old_line": 5}
    assert by_text[RENAMED].body["position"] == {**refs, "new_path": NEW_NAME, "old_path": OLD_NAME, "new_line": 6}
    # The fix: a suggestion from the commented line 3 down one more line, holding exactly the replacement.
    assert re.search(r"^```suggestion:-0\+1\ndef f2\(x\):\n    return x \+ 2\n```$", fixed["note"], re.M)
    assert "suggestion" not in plain["note"] and "@\u200bproperty" in plain["note"]
    fp = case.finding(FIXED)["fingerprint"]
    assert fixed["note"].startswith(f"<!-- ocr-hook fingerprint={fp} -->")
    # Published at once; the discussions exist with their positions.
    assert [r.path.rsplit("/", 1)[1] for r in gitlab.writes()].count("publish") == 4  # each draft by its id
    assert mr.drafts == [] and len([d for d in mr.discussions if d["notes"][0]["position"]]) == 4
    [note] = summary_notes(mr)
    assert OUTSIDE in note["body"] and UNANCHORED in note["body"] and FIXED not in note["body"]
    assert case.report["verdict"] in note["body"] and "outside the merge request's diff" in note["body"]
    # The diffs were read past their first page.
    assert len([r for r in gitlab.requests if r.path.endswith("/diffs")]) == 2


def test_a_rerun_updates_the_note_and_repeats_nothing(case: Reviewed, gitlab: FakeGitLab, mr: MergeRequest,
                                                      tmp_path: Path) -> None:
    run(case, gitlab)
    before = len(mr.discussions)
    assert "nothing new to publish on group/app!3" in run(case, gitlab)
    assert len(mr.discussions) == before
    # A later review finds one more thing outside the diff: the same note is edited, nothing re-posted.
    extra = {**case.finding(OUTSIDE), "message": "f19 as well.", "fingerprint": "cd" * 16}
    later = case.variant(tmp_path, "later.json", lambda d: d["findings"].append(extra))
    line = run(case, gitlab, report=later)
    assert "0 inline comment(s), 3 finding(s) in the note, 4 already posted earlier" in line
    assert len(mr.discussions) == before and len(summary_notes(mr)) == 1
    assert "f19 as well." in summary_notes(mr)[0]["body"]
    assert [r.method for r in gitlab.writes() if re.search(r"/notes(/\d+)?$", r.path)] == ["POST", "PUT"]


def test_a_finding_memory_resolved_resolves_its_discussion(case: Reviewed, gitlab: FakeGitLab, mr: MergeRequest,
                                                           tmp_path: Path) -> None:
    run(case, gitlab)
    fixed = case.finding(FIXED)

    def fixed_since(d: dict[str, Any]) -> None:  # the next review's report: review memory found it fixed
        d["findings"] = [f for f in d["findings"] if f["fingerprint"] != fixed["fingerprint"]]
        d["resolved"] = [{k: fixed[k] for k in ("path", "fingerprint", "severity", "category", "message",
                                                "start_line", "end_line")}]
    line = run(case, gitlab, report=case.variant(tmp_path, "resolved.json", fixed_since))
    assert "1 thread(s) resolved" in line
    thread = next(d for d in mr.discussions if d["notes"][0]["body"].startswith(
        f"<!-- ocr-hook fingerprint={fixed['fingerprint']}"))
    assert thread["notes"][0]["resolved"] is True
    assert sum(d["notes"][0]["resolved"] for d in mr.discussions) == 1


def test_a_position_gitlab_refuses_moves_to_the_note(case: Reviewed, gitlab: FakeGitLab, mr: MergeRequest) -> None:
    gitlab.fail(r"POST .*/draft_notes$", 400, {"message": LINE_CODE})  # the first draft only
    line = run(case, gitlab)
    assert "3 inline comment(s), 3 finding(s) in the note" in line and "1 inline comment(s) refused" in line
    [note] = summary_notes(mr)
    assert "GitLab refused the inline comments" in note["body"] and FIXED in note["body"]  # most severe first


def test_someone_elses_markers_silence_nothing(case: Reviewed, gitlab: FakeGitLab, mr: MergeRequest) -> None:
    fps = ",".join(f["fingerprint"] for f in case.report["findings"])
    gitlab.add_note(3, f"<!-- ocr-hook review exit=1 status=complete fingerprints={fps} -->\nall fine", "mallory")
    gitlab.add_note(3, f"<!-- ocr-hook fingerprint={case.finding(FIXED)['fingerprint']} -->", "mallory")
    line = run(case, gitlab)
    assert "4 inline comment(s), 2 finding(s) in the note" in line
    assert len(summary_notes(mr)) == 2  # mallory's, untouched, and ocr-hook's own
    assert [r.method for r in gitlab.writes() if "/notes" in r.path and "draft" not in r.path] == ["POST"]


@pytest.mark.parametrize(("setup", "expected"), [
    ("read_api", "HTTP 403: insufficient_scope: The request requires higher privileges than provided by the "
                 "access token. (GITLAB_TOKEN may not write notes"),
    ("no-mr", "nothing published on group/app!4: HTTP 404: 404 Not found"),
    ("bad-token", "HTTP 401: 401 Unauthorized (GITLAB_TOKEN is not a valid token)"),
    ("500", "HTTP 500: 500 Internal Server Error"),
    ("429-long", "HTTP 429: Retry later (rate limited; retrying would pass the publishing deadline)"),
])
def test_refusals_are_one_line(case: Reviewed, gitlab: FakeGitLab, mr: MergeRequest, setup: str,
                               expected: str) -> None:
    env: dict[str, str] = {}
    if setup == "read_api":
        gitlab.tokens[TOKEN] = "read"
    elif setup == "no-mr":
        env["CI_MERGE_REQUEST_IID"] = "4"
    elif setup == "bad-token":
        del gitlab.tokens[TOKEN]
    elif setup == "500":
        gitlab.fail(r"PUT .*/draft_notes/\d+/publish$", 500, {"message": "500 Internal Server Error"})
    else:
        gitlab.fail(r"GET .*/discussions$", 429, "Retry later\n", {"Retry-After": "3600"})
    line = run(case, gitlab, **env)
    assert expected in line
    assert summary_notes(mr) == []


def test_drafts_a_failed_publish_left_are_not_published_twice(case: Reviewed, gitlab: FakeGitLab,
                                                             mr: MergeRequest) -> None:
    gitlab.fail(r"PUT .*/draft_notes/\d+/publish$", 500, {"message": "500 Internal Server Error"})
    assert "HTTP 500" in run(case, gitlab)
    assert len(mr.drafts) == 4  # pending, seen by nobody else
    assert "4 inline comment(s), 2 finding(s) in the note" in run(case, gitlab)
    assert mr.drafts == [] and len([d for d in mr.discussions if d["notes"][0]["position"]]) == 4
    assert len([r for r in gitlab.writes() if r.method == "DELETE"]) == 4


def test_a_429_within_the_deadline_is_waited_for(case: Reviewed, gitlab: FakeGitLab, mr: MergeRequest) -> None:
    gitlab.fail(r"POST .*/notes$", 429, "Retry later\n", {"Retry-After": "0"})
    line = run(case, gitlab)
    assert "4 inline comment(s), 2 finding(s) in the note" in line
    assert [r.status for r in gitlab.requests if r.method == "POST" and r.path.endswith("/notes")] == [429, 201]


@pytest.mark.parametrize(("env", "expected"), [
    ({"CI_MERGE_REQUEST_IID": ""}, "nothing published: not a merge request pipeline (no CI_MERGE_REQUEST_IID)"),
    ({"GITLAB_TOKEN": ""}, "nothing published on group/app!3: no GITLAB_TOKEN (a project or personal access token "
                           "with `api` scope; CI_JOB_TOKEN cannot write notes)"),
    ({"GITLAB_CI": "", "CI_API_V4_URL": ""}, "nothing published: not a CI run of a known forge"),
])
def test_nothing_to_publish_on_is_one_line(case: Reviewed, gitlab: FakeGitLab, mr: MergeRequest,
                                          env: dict[str, str], expected: str) -> None:
    assert expected in run(case, gitlab, **env)
    assert gitlab.requests == []


def test_an_unreachable_api_and_an_off_host_link(case: Reviewed, gitlab: FakeGitLab, mr: MergeRequest) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    line = run(case, gitlab, CI_API_V4_URL=f"http://127.0.0.1:{port}/api/v4")
    assert f"nothing published on group/app!3: cannot reach http://127.0.0.1:{port}/api/v4: ConnectError" in line
    with FakeGitLab() as elsewhere:
        gitlab.link_base = elsewhere.url
        assert "a pagination link points outside CI_API_V4_URL; not followed" in run(case, gitlab)
        assert elsewhere.requests == []
    assert gitlab.writes() == []


def test_a_report_of_another_commit_publishes_nothing(case: Reviewed, gitlab: FakeGitLab, mr: MergeRequest,
                                                       tmp_path: Path) -> None:
    other = case.variant(tmp_path, "other.json",
                         lambda d: d.update(scope=f"main...HEAD (merge base {case.base[:12]}..{'e' * 12})"))
    line = run(case, gitlab, report=other)
    assert f"nothing published on group/app!3: the report is of commit {'e' * 12}, not of the head " \
           f"{case.head[:12]}" in line
    assert gitlab.writes() == [] and summary_notes(mr) == []


def test_a_file_that_is_not_a_report_is_exit_2(case: Reviewed, gitlab: FakeGitLab, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"findings": []}')
    proc = publish_cli(case.repo, ci(gitlab), "--from", str(bad))
    assert proc.returncode == 2 and "is not an ocr-hook --format json report" in proc.stderr
    assert proc.stderr.count("\n") == 1 and gitlab.requests == []
