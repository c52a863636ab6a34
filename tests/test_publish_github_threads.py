"""A GitHub pull request as a conversation (issue 53, DESIGN 18), through the real CLI against the fake GitHub
(REST and GraphQL, tests/fake_github.py) and the fake Messages API.

The report is a real review of a real repository (tests/publish_support.py). A first run posts the review;
the next run, after a fix, resolves exactly the fixed finding's thread and answers, without resolving,
the thread of a fixed finding a person replied to; a token without `contents: write` gets one line and
exit 0; a maintainer's resolve makes the next review in CI pass the gate with that finding dismissed by
them, the pull request's author's resolve counts for nothing, and `dismiss --from-forge` keeps it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake_api import FakeMessagesAPI
from fake_github import FakeGitHub, Pull
from publish_support import CONTEXT, FIXED, NEW_NAME, PATH, PLAIN, Reviewed, messages_env, ocr_hook, script

TOKEN = "ghs_fakeThreadsToken0123456789abcdefABCD"  # an Actions token: it writes as github-actions[bot]
BOT = "github-actions[bot]"


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Reviewed:
    return Reviewed(tmp_path_factory.mktemp("publish-github-threads"))


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:  # checks every REST request against the description, GraphQL against the schema
        fake.tokens[TOKEN] = "write"
        yield fake


@pytest.fixture
def pull(case: Reviewed, github: FakeGitHub) -> Pull:
    pull = github.add_pull(7, case.head, {PATH: case.patch(PATH), NEW_NAME: case.patch(NEW_NAME)})
    pull.author = "contributor"
    github.associations.update({"maint": "MEMBER", "contributor": "CONTRIBUTOR"})
    github.permissions.update({"maint": "write", "contributor": "write"})  # the author may write, and still
    return pull


def ci(github: FakeGitHub, tmp: Path, **more: str) -> dict[str, str]:
    event = tmp / "event.json"
    event.write_text(json.dumps({"number": 7, "pull_request": {"number": 7, "head": {"sha": github.pulls[7].head_sha},
                                                               "base": {"ref": "main"}}}), encoding="utf-8")
    return {"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "octo/app", "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(event), "GITHUB_API_URL": github.url, "GITHUB_TOKEN": TOKEN, **more}


def one_line(proc: Any, command: str = "publish") -> str:
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr and TOKEN not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ocr-hook: {command}: "), proc.stderr
    return lines[0]


def publish(case: Reviewed, github: FakeGitHub, tmp: Path, report: Path | None = None,
            command: str = "publish") -> str:
    return one_line(ocr_hook(case.repo, ci(github, tmp), command, "--from", str(report or case.report_path)),
                    command)


def opening(github: FakeGitHub, case: Reviewed, message: str) -> dict[str, Any]:
    """The comment ocr-hook opened the finding's thread with."""
    comment = github.comment_starting(7, f"<!-- ocr-hook fingerprint={case.finding(message)['fingerprint']} -->")
    assert comment["user"]["login"] == BOT
    return comment


def test_a_fix_resolves_exactly_its_thread_and_answers_the_one_a_person_replied_to(
        case: Reviewed, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    assert "published a review on octo/app#7: 4 inline comment(s)" in publish(case, github, tmp_path)
    fixed, answered, open_ = (opening(github, case, m)["id"] for m in (FIXED, CONTEXT, PLAIN))
    github.reply_in_thread(7, answered, "I will rename it in this pull request.", "contributor")
    github.reply_in_thread(7, open_, "Is this really a bug?", "maint")  # a finding still raised: left alone

    line = publish(case, github, tmp_path, case.fixed(tmp_path, FIXED, CONTEXT))
    assert "1 thread(s) resolved, 1 answered thread(s) told the finding looks fixed" in line, line
    assert github.resolved == [(7, fixed)]  # exactly the fixed finding's thread, through resolveReviewThread
    assert pull.threads[answered].resolved is False and pull.threads[open_].resolved is False
    [reply] = [r for r in github.writes() if r.path.endswith("/replies")]
    assert reply.path == f"/repos/octo/app/pulls/7/comments/{answered}/replies" and reply.status == 201
    assert reply.body["body"].startswith(f"<!-- ocr-hook fixed fingerprint={case.finding(CONTEXT)['fingerprint']} -->")
    assert "looks fixed" in reply.body["body"]
    mutations = [r.body for r in github.writes() if r.path == "/graphql"]
    assert [m["variables"] for m in mutations] == [{"thread": f"PRRT_{fixed}"}]

    # The next run finds the thread resolved and its own reply: nothing is resolved or said twice.
    before = len(github.writes())
    assert "nothing new to publish" in publish(case, github, tmp_path, case.fixed(tmp_path, FIXED, CONTEXT))
    assert len(github.writes()) == before


def test_a_token_that_may_not_resolve_is_one_line_and_exit_0(case: Reviewed, github: FakeGitHub, pull: Pull,
                                                             tmp_path: Path) -> None:
    github.no_contents_write.add(TOKEN)  # `pull-requests: write` only: GitHub answers FORBIDDEN to resolving
    publish(case, github, tmp_path, command="github-review")
    line = publish(case, github, tmp_path, case.fixed(tmp_path, FIXED), command="github-review")
    assert line.startswith("ocr-hook: github-review: published a review on octo/app#7: "), line
    assert ("(GitHub refused to resolve or answer the fixed findings' threads: HTTP 403: Resource not accessible by "
            "integration (FORBIDDEN) (resolving a review thread needs `permissions: contents: write`") in line, line
    assert github.resolved == [] and not any(t.resolved for t in pull.threads.values())
    assert len(pull.reviews) == 2  # the review itself was posted


def test_a_members_resolve_passes_the_gate_and_the_authors_counts_for_nothing(
        case: Reviewed, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    publish(case, github, tmp_path)
    high = opening(github, case, FIXED)["id"]  # the one finding that fails the gate (high)
    github.reply_in_thread(7, high, "Subtracting is what f2 is for; see the spec.", "maint")
    github.resolve_thread(7, high, "maint")
    github.resolve_thread(7, opening(github, case, PLAIN)["id"], "contributor")  # the author's own: no dismissal
    github.react(7, opening(github, case, PLAIN)["id"], "THUMBS_DOWN", "maint")
    github.react(7, opening(github, case, PLAIN)["id"], "THUMBS_UP", "contributor")

    report = tmp_path / "again.json"
    # the review history the outcomes read; GitHub names the pull request in GITHUB_REF
    cache = {"OCR_HOOK_CACHE_DIR": str(tmp_path / "cache"), "GITHUB_REF": "refs/pull/7/merge"}
    with FakeMessagesAPI() as messages:
        script(messages)
        proc = ocr_hook(case.repo, {**ci(github, tmp_path), **messages_env(messages), **cache}, "review", "--base",
                        "main", "--no-cache", "--no-review-filter", "--filter-mode", "nofilter", "-q", "--format",
                        "json", "--json-output", str(report))
    assert proc.returncode == 0, proc.stderr  # the gate passes: the high finding was dismissed by a maintainer
    findings = {f["message"]: f for f in json.loads(report.read_text(encoding="utf-8"))["findings"]}
    dismissed = findings[FIXED]
    assert dismissed["suppressed"] == "dismissed"
    assert dismissed["suppression_reason"] == "Subtracting is what f2 is for; see the spec."
    assert dismissed["dismissal"]["by"] == "maint" and "octo/app#7" in dismissed["dismissal"]["in"]
    assert findings[PLAIN]["suppressed"] is None  # the author resolved it: it still counts

    kept = ocr_hook(case.repo, ci(github, tmp_path), "dismiss", "--from-forge", "--from", str(report))
    try:
        assert kept.returncode == 0, kept.stderr
        entries = yaml.safe_load((case.repo / ".ocr-hook" / "dismissed.yaml").read_text(encoding="utf-8"))
    finally:
        (case.repo / ".ocr-hook" / "dismissed.yaml").unlink(missing_ok=True)
    [entry] = entries["dismissed"] if isinstance(entries, dict) else entries
    assert entry["fingerprint"] == case.finding(FIXED)["fingerprint"] and entry["by"] == "maint"

    # The review history kept the maintainer's dismissal on the forge and the people's reactions (DESIGN.md 18).
    outcomes = ocr_hook(case.repo, {**ci(github, tmp_path), **cache}, "outcomes", "--format", "json", "--pr", "7")
    assert outcomes.returncode == 0, outcomes.stderr
    doc = json.loads(outcomes.stdout)
    assert doc["dismissed_by"] == {"maint (forge)": 1}
    assert doc["feedback"] == {"thumbs_up": 1, "thumbs_down": 1, "replies": 1}
