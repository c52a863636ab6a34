"""Issue 41, items 2, 4, 5, 6, 10 and 11: what a hostile or careless forge server, or a model's text, does to
`ocr-hook publish`, through the real CLI against the fake GitLab API (tests/fake_gitlab.py) and a loopback
server that answers one byte at a time. The report is a real review (tests/review_report_case.py).
Each test failed on the code before.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import api_contract
import forked_cli
import pytest
from fake_gitlab import FakeGitLab, MergeRequest
from loopback_http import LoopbackServer, QuietHandler
from publish_support import FIXED, PATH, PLAIN, ocr_hook
from review_report_case import ReportCase, shared_case

TOKEN = "glpat-fakeTokenValue0123456789abcd"


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> ReportCase:
    return shared_case(tmp_path_factory)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeGitLab]:
    with FakeGitLab() as fake:
        yield fake


@pytest.fixture
def gitlab(server: FakeGitLab) -> Iterator[FakeGitLab]:
    yield server.fresh(TOKEN)
    server.assert_conforms()  # off-contract traffic fails the test that sent it


@pytest.fixture
def mr(case: ReportCase, gitlab: FakeGitLab) -> MergeRequest:
    diffs = [{"old_path": PATH, "new_path": PATH, "diff": case.patch(PATH), "new_file": False, "renamed_file": False,
              "deleted_file": False}]
    return gitlab.add_mr(3, case.head, case.base, diffs)


def ci(api: str) -> dict[str, str]:
    return {"GITLAB_CI": "true", "CI_API_V4_URL": api, "CI_PROJECT_ID": "42", "CI_PROJECT_PATH": "group/app",
            "CI_MERGE_REQUEST_IID": "3", "GITLAB_TOKEN": TOKEN}


def publish(case: ReportCase, api: str, *args: str, report: Path | None = None) -> str:
    proc = ocr_hook(case.repo, ci(api), "publish", "--from", str(report or case.report_path), *args)
    assert proc.returncode == 0 and proc.stdout == "" and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ocr-hook: publish: "), proc.stderr
    return lines[0]


# -- item 2: mask, then cut ---------------------------------------------------------------------------------


def test_a_token_across_the_cut_of_an_error_text_is_masked(case: ReportCase, gitlab: FakeGitLab,
                                                           mr: MergeRequest) -> None:
    # The forge echoes the token so that it starts 15 characters before the 400th: a cut first keeps
    # "glpat-fakeToken", which the mask no longer recognises.
    echo = "x" * 385 + TOKEN + " was not accepted"
    gitlab.fail(r"GET .*/merge_requests/3$", 403, {"message": echo})
    line = publish(case, gitlab.api)
    assert "HTTP 403: " + "x" * 385 + "***" in line
    assert TOKEN[:6] + "fake" not in line and line.count("x") < 400


# -- item 4: the deadline covers whole requests -------------------------------------------------------------


class _Trickle(QuietHandler):
    """Answers every request with a status line, then a header one byte at a time, for ever."""

    server: Any

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        self.server.arrived.set()
        self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        self.wfile.flush()
        try:
            while not self.server.done.wait(0.05):  # one byte every 50 ms: no read ever times out
                self.wfile.write(b"a")
                self.wfile.flush()
        except OSError:
            self.server.dropped.set()  # the client hung up


def test_one_byte_at_a_time_does_not_outlive_the_timeout(case: ReportCase) -> None:
    trickle = LoopbackServer(("127.0.0.1", 0), _Trickle)
    trickle.arrived, trickle.done, trickle.dropped = threading.Event(), threading.Event(), threading.Event()
    trickle.paths = []
    thread = threading.Thread(target=trickle.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        proc = forked_cli.run(["publish", "--from", str(case.report_path), "--timeout", "1"], cwd=case.repo,
                              env=_env(f"http://127.0.0.1:{trickle.server_address[1]}/api/v4"), timeout=15,
                              errors="replace")
        took = time.monotonic() - started
        assert trickle.arrived.is_set() and trickle.dropped.wait(5)
    finally:
        trickle.done.set()
        trickle.shutdown()
        trickle.server_close()
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == ("ocr-hook: publish: nothing published on group/app!3: the publishing deadline "
                                   "passed during GET user"), proc.stderr
    assert took < 6, took  # 1 s of deadline and a process start; the per-read timeouts would never end it
    # this server stands in for GitLab too: what was asked of it is a documented operation
    assert trickle.paths and [p for path in trickle.paths for p in api_contract.check(
        "gitlab", "GET", urlsplit(path).path, dict(parse_qsl(urlsplit(path).query)), None)] == []


def _env(api: str) -> dict[str, str]:
    from ci_repos import ci_free_env

    env = {k: v for k, v in ci_free_env(NO_PROXY="127.0.0.1,localhost").items()
           if not k.endswith("_TOKEN") and not k.startswith("ANTHROPIC_")}
    return {**env, **ci(api)}


# -- item 6: ocr-hook's own drafts, by id -------------------------------------------------------------------


def test_the_token_owners_other_drafts_stay_pending(case: ReportCase, gitlab: FakeGitLab, mr: MergeRequest) -> None:
    gitlab.add_draft(3, "Half-written thought of the person who owns the token.", "ocr-bot")
    line = publish(case, gitlab.api)
    assert "published comments on group/app!3: 3 inline comment(s)" in line, line
    assert [d["note"] for d in mr.drafts] == ["Half-written thought of the person who owns the token."]
    assert not any("Half-written" in d["notes"][0]["body"] for d in mr.discussions)
    assert not any(r.path.endswith("bulk_publish") for r in gitlab.requests)


# -- item 10: Retry-After: 0 backs off ----------------------------------------------------------------------


def test_retry_after_zero_backs_off(case: ReportCase, gitlab: FakeGitLab, mr: MergeRequest) -> None:
    gitlab.fail(r"GET /api/v4/user$", 429, {"message": "429 Too Many Requests"}, {"Retry-After": "0"}, times=1000)
    line = publish(case, gitlab.api, "--timeout", "1")
    assert "nothing published on group/app!3: HTTP 429: 429 Too Many Requests (rate limited;" in line
    # Pauses of 0.25 s, then 0.5 s: the third would pass the 1 s deadline (at once, it was 20 and more).
    assert 2 <= len(gitlab.requests) <= 3, len(gitlab.requests)


# -- item 11: references stay inert -------------------------------------------------------------------------

REFERENCES = "Same bug as #1 and !2, see group/proj#3 and other/proj!4, GH-5, epic &6; ask &#64;lead or &commat;ops."


def test_references_in_model_text_link_nothing(case: ReportCase, gitlab: FakeGitLab, mr: MergeRequest) -> None:
    plain = case.finding(PLAIN)
    report = case.with_findings("references", [{**plain, "message": REFERENCES},
                                               {**plain, "message": REFERENCES, "anchored": False,
                                                "fingerprint": "f" * 32}])
    assert "1 inline comment(s), 1 finding(s) in the note" in publish(case, gitlab.api, report=report)
    bodies = [d["notes"][0]["body"] for d in mr.discussions]
    assert len(bodies) == 2 and all("Same bug as" in b for b in bodies)
    for body in bodies:
        assert re.findall(r"[#!&%$][0-9]|GH-[0-9]|&#64;|&commat;", body) == [], body
        assert "#\u200b1" in body and "group/proj#\u200b3" in body and "&amp;#" in body


# -- item 5: no quick action inside a fence --------------------------------------------------------------

QUICK = "x = 1\n```\n/merge\n  /approve\n```\n"


def test_quick_actions_inside_a_fence_stay_inert(case: ReportCase, gitlab: FakeGitLab, mr: MergeRequest) -> None:
    fixed = case.finding(FIXED)
    plain = case.finding(PLAIN)
    report = case.with_findings("quick", [{**fixed, "fix": {**fixed["fix"], "replacement": QUICK}},
                                          {**plain, "suggestion": QUICK},
                                          {**plain, "suggestion": QUICK, "anchored": False, "fingerprint": "e" * 32}])
    assert "2 inline comment(s), 1 finding(s) in the note" in publish(case, gitlab.api, report=report)
    bodies = [d["notes"][0]["body"] for d in mr.discussions]
    assert len(bodies) == 3 and all("\u200b/merge" in b and "\u200b/approve" in b for b in bodies)
    for body in bodies:  # as older GitLab reads them: no line is a quick action, no suggestion holds one
        assert re.findall(r"^[ \t]*/(?:merge|approve)", body, re.M) == [], body
        assert "```suggestion" not in body
