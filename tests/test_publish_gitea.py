"""`ocr-hook publish` on a Gitea/Forgejo pull request (issue 29) against the fake Gitea API (tests/fake_gitea.py).

The report is a real review of a real repository (tests/publish_support.py); the fake's `.diff` is that
branch's `git diff main...feature`, as Gitea serves it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_gitea import FakeGitea, GiteaPull
from publish_support import CONTEXT, FIXED, NEW_NAME, OUTSIDE, PATH, PLAIN, RENAMED, UNANCHORED, Reviewed, publish_cli

TOKEN = "gitea_fakeTokenValue0123456789abcdef0123"
ACTIONS_TOKEN = "gta_actionsJobTokenValue0123456789abcdef"


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Reviewed:
    return Reviewed(tmp_path_factory.mktemp("publish-gitea"))


@pytest.fixture(scope="module")
def server() -> Iterator[FakeGitea]:
    with FakeGitea() as fake:
        yield fake


@pytest.fixture
def gitea(server: FakeGitea) -> Iterator[FakeGitea]:
    server.reset()
    server.tokens.clear()
    server.tokens.update({TOKEN: "write", ACTIONS_TOKEN: "actions"})
    server.pulls.clear()
    yield server
    server.assert_conforms()  # off-contract traffic fails the test that sent it


@pytest.fixture
def pull(case: Reviewed, gitea: FakeGitea) -> GiteaPull:
    pull = gitea.add_pull(7, case.head, case.unified)
    gitea.add_review(7, "LGTM mostly.")  # two reviews by people: ocr-hook's own land on a second page
    gitea.add_review(7, "One question inline.")
    return pull


def ci(tmp: Path, gitea: FakeGitea, head: str, **over: str) -> dict[str, str]:
    event = tmp / "event.json"
    event.write_text(json.dumps({"action": "synchronized", "number": 7, "pull_request": {
        "number": 7, "head": {"sha": head, "ref": "feature"}, "base": {"ref": "main"}}}), encoding="utf-8")
    env = {"GITEA_ACTIONS": "true", "GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "octo/app",
           "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event), "GITHUB_API_URL": gitea.api,
           "GITHUB_SERVER_URL": gitea.url, "GITEA_TOKEN": TOKEN, "GITHUB_TOKEN": ACTIONS_TOKEN,
           "GITHUB_REF": "refs/pull/7/head"}  # Gitea Actions names a pull request's head ref (GitHub its merge ref)
    env.update(over)
    return {k: v for k, v in env.items() if v != ""}


def run(case: Reviewed, gitea: FakeGitea, tmp: Path, *, report: Path | None = None, **env: str) -> str:
    proc = publish_cli(case.repo, ci(tmp, gitea, case.head, **env), "--from", str(report or case.report_path))
    assert proc.returncode == 0 and proc.stdout == "" and "Traceback" not in proc.stderr, proc.stderr
    assert TOKEN not in proc.stderr and ACTIONS_TOKEN not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ocr-hook: publish: "), proc.stderr
    return lines[0]


def reviews_posted(gitea: FakeGitea) -> list[Any]:
    return [r for r in gitea.requests if r.method == "POST" and r.path.endswith("/reviews")]


def test_one_review_with_comments_at_their_lines(case: Reviewed, gitea: FakeGitea, pull: GiteaPull,
                                                 tmp_path: Path) -> None:
    line = run(case, gitea, tmp_path)
    assert "published a review on octo/app#7: 4 inline comment(s), 2 finding(s) in the body" in line
    [post] = reviews_posted(gitea)
    assert post.status == 200 and post.body["event"] == "COMMENT" and post.body["commit_id"] == case.head
    by = {(c["path"], c["new_position"]): c for c in post.body["comments"]}
    assert set(by) == {(PATH, 3), (PATH, 5), (PATH, 6), (NEW_NAME, 6)}
    assert all(c["old_position"] == 0 for c in by.values())
    fixed = by[(PATH, 3)]["body"]
    # No suggestions on Gitea: the fix is a diff of the head's lines 3-4 against the replacement.
    assert "```diff\n-def f2(x):\n-    return x - 2\n+def f2(x):\n+    return x + 2\n```" in fixed
    assert "suggestion" not in json.dumps(post.body)
    assert FIXED in fixed and CONTEXT in by[(PATH, 5)]["body"] and RENAMED in by[(NEW_NAME, 6)]["body"]
    assert PLAIN[:20] in by[(PATH, 6)]["body"]
    assert OUTSIDE in post.body["body"] and UNANCHORED in post.body["body"]
    # GITEA_TOKEN, in Gitea's header form, to the API root only; the Actions token was not used.
    assert {r.headers["authorization"] for r in gitea.requests} == {f"token {TOKEN}"}
    assert {r.path.split("/api/v1")[0] for r in gitea.requests} == {""}


def test_a_rerun_posts_only_what_is_new(case: Reviewed, gitea: FakeGitea, pull: GiteaPull, tmp_path: Path) -> None:
    run(case, gitea, tmp_path)
    assert "nothing new to publish on octo/app#7: 6 finding(s) already posted" in run(case, gitea, tmp_path)
    extra = {**case.finding(PLAIN), "message": "And f3 again.", "fingerprint": "ef" * 16}
    line = run(case, gitea, tmp_path, report=case.variant(tmp_path, "later.json",
                                                          lambda d: d["findings"].append(extra)))
    assert "1 inline comment(s), 0 finding(s) in the body, 6 already posted earlier" in line
    assert len(reviews_posted(gitea)) == 2 and len(pull.reviews) == 4


def test_the_actions_token_publishes_as_gitea_actions(case: Reviewed, gitea: FakeGitea, pull: GiteaPull,
                                                      tmp_path: Path) -> None:
    fps = ",".join(f["fingerprint"] for f in case.report["findings"])
    gitea.add_review(7, f"<!-- ocr-hook review exit=1 status=complete fingerprints={fps} -->", "mallory")
    line = run(case, gitea, tmp_path, GITEA_TOKEN="")
    assert "4 inline comment(s), 2 finding(s) in the body" in line  # mallory's marker silences nothing
    assert pull.reviews[-1]["user"]["login"] == "gitea-actions"
    assert "nothing new to publish" in run(case, gitea, tmp_path, GITEA_TOKEN="")  # its own markers count


def test_a_500_for_one_bad_comment_posts_everything_in_the_body(case: Reviewed, gitea: FakeGitea, pull: GiteaPull,
                                                                 tmp_path: Path) -> None:
    gitea.fail(r"POST .*/reviews$", 500, {"message": "", "url": f"{gitea.url}/api/swagger"})
    line = run(case, gitea, tmp_path)
    assert "published a review on octo/app#7: 0 inline comment(s), 6 finding(s) in the body" in line
    assert "Gitea refused the inline comments: HTTP 500" in line
    first, second = reviews_posted(gitea)
    assert (first.status, len(first.body["comments"])) == (500, 4)
    assert (second.status, second.body["comments"]) == (200, [])
    assert all(m[:20] in second.body["body"] for m in (FIXED, PLAIN, CONTEXT, RENAMED, OUTSIDE, UNANCHORED))


@pytest.mark.parametrize(("setup", "expected"), [
    ("read", "HTTP 403: token does not have at least one of required scope(s): [write:repository]"),
    ("unknown", "HTTP 401: user does not exist"),
    ("429", "HTTP 429"),
])
def test_refusals_are_one_line(case: Reviewed, gitea: FakeGitea, pull: GiteaPull, tmp_path: Path, setup: str,
                               expected: str) -> None:
    if setup == "read":
        gitea.tokens[TOKEN] = "read"
    elif setup == "unknown":
        del gitea.tokens[TOKEN]
    else:
        gitea.fail(r"GET .*\.diff$", 429, {"message": "rate limit exceeded"}, {"Retry-After": "7200"})
    assert expected in run(case, gitea, tmp_path)
    assert len(pull.reviews) == 2


def test_not_a_pull_request_run(case: Reviewed, gitea: FakeGitea, tmp_path: Path) -> None:
    push = tmp_path / "push.json"
    push.write_text(json.dumps({"ref": "refs/heads/feature", "before": "0" * 40}))
    line = run(case, gitea, tmp_path, GITHUB_EVENT_PATH=str(push), GITHUB_EVENT_NAME="push")
    assert line == "ocr-hook: publish: nothing published: not a pull request (event push)"
    assert gitea.requests == []


def test_the_other_forges_bot_name_is_an_ordinary_user(case: Reviewed, gitea: FakeGitea, pull: GiteaPull,
                                                      tmp_path: Path) -> None:
    # Issue 41, item 9: on Gitea, `forgejo-actions` is a name anyone may register; its markers count for nothing.
    fps = ",".join(f["fingerprint"] for f in case.report["findings"])
    gitea.add_review(7, f"<!-- ocr-hook review exit=1 status=complete fingerprints={fps} -->", "forgejo-actions")
    assert "4 inline comment(s), 2 finding(s) in the body" in run(case, gitea, tmp_path, GITEA_TOKEN="")


def test_a_report_of_another_commit_publishes_nothing(case: Reviewed, gitea: FakeGitea, pull: GiteaPull,
                                                      tmp_path: Path) -> None:
    # Issue 41, item 1: not this request's verdict, so no review, no comment.
    other = case.variant(tmp_path, "other.json",
                         lambda d: d.update(scope=f"main...HEAD (merge base {case.base[:12]}..{'e' * 12})"))
    line = run(case, gitea, tmp_path, report=other)
    assert line == (f"ocr-hook: publish: nothing published on octo/app#7: the report is of commit {'e' * 12}, not of "
                    f"the head {case.head[:12]}; nothing of it is this request's verdict")
    assert gitea.writes() == []


# --- DESIGN 18: what people did with ocr-hook's comments, as the adapter reads it ----------------------------

def adapter_for(case: Reviewed, gitea: FakeGitea, tmp: Path) -> Any:
    """The Gitea adapter the CLI would open for this run, over real HTTP to the fake, its identity read."""
    import time

    from ocr_hook.publish.forges import Setup, open_adapter

    adapter = open_adapter("gitea", Setup(ci(tmp, gitea, case.head), time.monotonic() + 60, None))
    adapter.identity()
    return adapter


def test_the_adapter_reads_resolver_access_replies_and_reactions(case: Reviewed, gitea: FakeGitea, pull: GiteaPull,
                                                                 tmp_path: Path) -> None:
    run(case, gitea, tmp_path)
    gitea.tokens[TOKEN] = "admin"  # a repository administrator's token: Gitea tells it anyone's permission
    gitea.permissions.update({"maint": "write", "author": "write", "visitor": "read"})
    plain, fixed, context = (gitea.comment_at(7, case.finding(m)["fingerprint"]) for m in (PLAIN, FIXED, CONTEXT))
    gitea.person_comment(7, PATH, 6, "Intended: f3 multiplies on purpose.", "maint")
    gitea.resolve(plain, "maint")
    gitea.resolve(fixed, "author", uid=21)
    gitea.resolve(context, "visitor")
    renamed = gitea.comment_at(7, case.finding(RENAMED)["fingerprint"])
    gitea.react(renamed, "+1", "maint")
    gitea.react(renamed, "+1", "visitor")
    gitea.react(renamed, "-1", "author")
    gitea.react(renamed, "+1", "gitea-actions", uid=-2)  # Gitea's own bot: not a person
    adapter = adapter_for(case, gitea, tmp_path)
    try:
        assert adapter.author() == "author"
        posted = {p.id: p for p in adapter.existing()}
        assert not [q for q in gitea.requests if q.path.endswith("/reactions")]  # publishing needs none
        thumbs = adapter.thumbs(posted[str(renamed["id"])])
    finally:
        adapter.close()
    p = posted[str(plain["id"])]
    assert (p.resolved, p.resolvable, p.resolved_by, p.resolved_by_bot, p.resolved_by_can_write) == (
        True, False, "maint", False, True)
    assert [(r.author, r.body, r.bot) for r in p.replies] == [
        ("maint", "Intended: f3 multiplies on purpose.", False)]
    assert (posted[str(fixed["id"])].resolved_by, posted[str(fixed["id"])].resolved_by_can_write) == ("author", True)
    assert (posted[str(context["id"])].resolved_by, posted[str(context["id"])].resolved_by_can_write) == (
        "visitor", False)  # read access only
    r = posted[str(renamed["id"])]
    assert (r.resolved, r.resolved_by, thumbs, r.replies) == (False, "", (2, 1), ())
    asked = sorted(q.path.rsplit("/", 2)[-2] for q in gitea.requests if q.path.endswith("/permission"))
    assert asked == ["author", "maint", "visitor"]  # each person once


def test_without_an_administrators_token_nobody_counts_as_a_writer(case: Reviewed, gitea: FakeGitea,
                                                                    pull: GiteaPull, tmp_path: Path) -> None:
    run(case, gitea, tmp_path)
    gitea.permissions.update({"maint": "write", "other": "admin"})
    plain, fixed = (gitea.comment_at(7, case.finding(m)["fingerprint"]) for m in (PLAIN, FIXED))
    gitea.resolve(plain, "maint")
    gitea.resolve(fixed, "other")
    adapter = adapter_for(case, gitea, tmp_path)
    try:
        posted = {p.id: p for p in adapter.existing()}
    finally:
        adapter.close()
    assert (posted[str(plain["id"])].resolved_by, posted[str(plain["id"])].resolved_by_can_write) == ("maint", False)
    assert posted[str(fixed["id"])].resolved_by_can_write is False
    assert [q.status for q in gitea.requests if q.path.endswith("/permission")] == [403]  # asked once, not again


def test_a_reply_is_a_comment_on_the_same_line(case: Reviewed, gitea: FakeGitea, pull: GiteaPull,
                                               tmp_path: Path) -> None:
    run(case, gitea, tmp_path)
    plain = gitea.comment_at(7, case.finding(PLAIN)["fingerprint"])
    gitea.person_comment(7, PATH, 6, "Is this right?", "maint")
    adapter = adapter_for(case, gitea, tmp_path)
    try:
        [p] = [p for p in adapter.existing() if p.id == str(plain["id"])]
        adapter.reply(p, "Looks fixed now.")
        [again] = [p for p in adapter.existing() if p.id == str(plain["id"])]
    finally:
        adapter.close()
    post = reviews_posted(gitea)[-1]
    assert post.body == {"commit_id": case.head, "event": "COMMENT", "body": "",
                         "comments": [{"path": PATH, "body": "Looks fixed now.", "new_position": 6, "old_position": 0}]}
    assert [(r.author, r.body) for r in again.replies] == [("maint", "Is this right?"), ("ocr-bot", "Looks fixed now.")]
    assert again.resolved is False and again.resolvable is False  # Gitea's API cannot resolve it


def test_a_fix_is_answered_in_its_thread_since_gitea_cannot_resolve_it(case: Reviewed, gitea: FakeGitea,
                                                                      pull: GiteaPull, tmp_path: Path) -> None:
    run(case, gitea, tmp_path)
    gitea.person_comment(7, PATH, 3, "Why is this wrong?", "maint")  # in the FIXED finding's conversation
    fixed = case.fixed(tmp_path, PLAIN, FIXED)
    line = run(case, gitea, tmp_path, report=fixed)
    assert "2 answered thread(s) told the finding looks fixed" in line and "resolved" not in line
    replies = {c["path"] + f":{c['new_position']}": c["body"] for r in reviews_posted(gitea)[1:]
               for c in r.body["comments"]}
    assert set(replies) == {f"{PATH}:3", f"{PATH}:6"}
    assert replies[f"{PATH}:6"].startswith(f"<!-- ocr-hook fixed fingerprint={case.finding(PLAIN)['fingerprint']} -->")
    assert "cannot resolve the thread" in replies[f"{PATH}:6"] and "has replies" in replies[f"{PATH}:3"]
    assert not [r for r in gitea.requests if "resolve" in r.path]
    assert "answered" not in run(case, gitea, tmp_path, report=fixed)  # said once


def test_a_members_resolve_dismisses_the_finding_for_the_next_review(case: Reviewed, gitea: FakeGitea,
                                                                    pull: GiteaPull, tmp_path: Path) -> None:
    from fake_api import FakeMessagesAPI
    from publish_support import messages_env, ocr_hook, script

    run(case, gitea, tmp_path)
    gitea.tokens[TOKEN] = "admin"  # Gitea tells a repository administrator's token who may write
    gitea.permissions.update({"maint": "write", "author": "admin"})
    plain, fixed = (gitea.comment_at(7, case.finding(m)["fingerprint"]) for m in (PLAIN, FIXED))
    gitea.person_comment(7, PATH, 6, "f3 multiplies on purpose: it scales.", "maint")
    gitea.resolve(plain, "maint")
    gitea.resolve(fixed, "author", uid=21)  # the pull request's own author, an administrator at that
    gitea.react(plain, "+1", "maint")
    gitea.react(plain, "-1", "visitor")
    gitea.react(plain, "+1", "gitea-actions", uid=-2)  # Gitea's own bot: not a person
    out = tmp_path / "again.json"
    cache = {"OCR_HOOK_CACHE_DIR": str(tmp_path / "cache")}  # the job's kept cache: the review history
    with FakeMessagesAPI() as messages:
        script(messages)
        proc = ocr_hook(case.repo, {**ci(tmp_path, gitea, case.head), **messages_env(messages), **cache}, "review",
                        "--base",
                        "main", "--no-cache", "--no-review-filter", "--filter-mode", "nofilter", "-q", "--format",
                        "json", "--json-output", str(out))
    assert "Traceback" not in proc.stderr and TOKEN not in proc.stdout + proc.stderr, proc.stderr
    found = {f["fingerprint"]: f for f in json.loads(out.read_text(encoding="utf-8"))["findings"]}
    dismissed = found[case.finding(PLAIN)["fingerprint"]]
    assert dismissed["suppressed"] == "dismissed", dismissed
    assert "maint" in json.dumps(dismissed) and "f3 multiplies on purpose: it scales." in json.dumps(dismissed)
    assert found[case.finding(FIXED)["fingerprint"]]["suppressed"] is None  # the author's own resolve
    assert proc.returncode == 1  # the other findings still count

    # The review history has the maintainer's dismissal on the forge, the people's 👍/👎 and their reply.
    outcomes = ocr_hook(case.repo, {**ci(tmp_path, gitea, case.head), **cache}, "outcomes", "--format", "json",
                        "--pr", "7")
    assert outcomes.returncode == 0, outcomes.stderr
    doc = json.loads(outcomes.stdout)
    assert doc["dismissed_by"] == {"maint (forge)": 1}
    assert doc["feedback"] == {"thumbs_up": 1, "thumbs_down": 1, "replies": 1}
