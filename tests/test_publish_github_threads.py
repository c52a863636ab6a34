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
from agent_support import main_opening
from fake_api import FakeMessagesAPI, Reply, tool_use
from fake_github import FakeGitHub, Pull
from publish_support import (
    APP_COMMENTS,
    CONTEXT,
    FIXED,
    LIB_COMMENTS,
    NEW_NAME,
    OLD_NAME,
    PATH,
    PLAIN,
    RENAMED,
    Reviewed,
    messages_env,
    ocr_hook,
    script,
)

from ocr_hook.findings.model import fingerprint
from ocr_hook.publish.plan import fixed_reply_body

TOKEN = "ghs_fakeThreadsToken0123456789abcdefABCD"  # an Actions token: it writes as github-actions[bot]
BOT = "github-actions[bot]"
APP_TOKEN = "ghs_fakeAppInstallToken0123456789abcdefABCD"  # a GitHub App's installation token


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


def opening(github: FakeGitHub, case: Reviewed, message: str, by: str = BOT) -> dict[str, Any]:
    """The comment ocr-hook opened the finding's thread with."""
    comment = github.comment_starting(7, f"<!-- ocr-hook fingerprint={case.finding(message)['fingerprint']} -->")
    assert comment["user"]["login"] == by
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


def test_least_privilege_remembers_a_refused_resolve_and_a_resolve_before_the_code_came_back_dismisses_nothing(
        case: Reviewed, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    """Issue 58.12 and 58.10 with `contents: read` over a pull request's life: the fixed finding whose resolve
    GitHub refuses is told so once in its thread (remembered there for every later CI run, no cache needed), the
    one a maintainer resolved once the fix was pushed is told it looks fixed, and the one the author answered is
    told so too, whatever the refused resolve; no review claims a resolve; the maintainer resolves the
    first as invited; the code comes back: neither resolve dismisses it (the gate fails), the reopen GitHub
    refuses is said once in each thread, and a run after that still counts both and posts nothing."""
    github.no_contents_write.add(TOKEN)  # `pull-requests: write` only: GitHub answers FORBIDDEN to resolving
    publish(case, github, tmp_path)
    high, plain = opening(github, case, FIXED)["id"], opening(github, case, PLAIN)["id"]
    github.resolve_thread(7, plain, "maint")  # resolved by a maintainer once the fix is pushed, before CI publishes
    answered = opening(github, case, CONTEXT)["id"]
    github.reply_in_thread(7, answered, "I will rename it in this pull request.", "contributor")
    fixed = case.fixed(tmp_path, FIXED, PLAIN, CONTEXT)
    line = publish(case, github, tmp_path, fixed, command="github-review")
    assert "3 answered thread(s) told the finding looks fixed" in line and "resolved," not in line, line
    assert ("(GitHub refused to resolve the fixed findings' threads: HTTP 403: Resource not accessible by "
            "integration (FORBIDDEN) (resolving a review thread needs `permissions: contents: write`") in line, line
    said = {c["in_reply_to_id"]: c["body"] for c in pull.comments
            if c.get("in_reply_to_id") and c["user"]["login"] == BOT}
    assert "has replies" in said[answered]  # the reply in the answered thread goes out whatever the resolve
    assert said[high].startswith(f"<!-- ocr-hook fixed fingerprint={case.finding(FIXED)['fingerprint']} -->")
    assert "may not resolve" in said[high], said[high]
    assert said[plain].startswith(f"<!-- ocr-hook fixed fingerprint={case.finding(PLAIN)['fingerprint']} -->")
    assert not any("resolved since" in r["body"] for r in pull.reviews)  # the summary claims no resolve
    before = len(github.writes())
    again = publish(case, github, tmp_path, fixed)  # remembered: no resolve asked again, nothing said twice
    assert "nothing new to publish" in again and "refused" not in again, again
    assert len(github.writes()) == before

    github.resolve_thread(7, high, "maint")  # as the reply invites
    report = tmp_path / "back.json"
    with FakeMessagesAPI() as messages:  # the next push brings the code back: the same findings
        script(messages)
        proc = ocr_hook(case.repo, {**ci(github, tmp_path), **messages_env(messages)}, "review", "--base", "main",
                        "--no-cache", "--no-review-filter", "--filter-mode", "nofilter", "-q", "--format", "json",
                        "--json-output", str(report))
    assert proc.returncode == 1, proc.stderr  # no resolve made after the fix dismisses the finding that came back
    findings = {f["message"]: f for f in json.loads(report.read_text(encoding="utf-8"))["findings"]}
    assert findings[FIXED]["suppressed"] is None and findings[PLAIN]["suppressed"] is None

    back = publish(case, github, tmp_path, report)
    assert "2 thread(s) told the finding is raised again" in back and "reopened" not in back, back
    assert "refused to reopen" in back and github.unresolved == [], back
    body = pull.reviews[-1]["body"]
    assert FIXED in body and PLAIN.split(";")[0] in body and "raised again, and its thread is resolved" in body
    kept = [c["body"] for c in pull.comments if c.get("in_reply_to_id") in (high, plain)][-2:]
    assert all(b.startswith("<!-- ocr-hook raised fingerprint=") and " kept=resolved -->" in b for b in kept), kept
    before = len(github.writes())
    assert "nothing new to publish" in publish(case, github, tmp_path, report)  # no reopen asked again
    assert len(github.writes()) == before
    dismissals = ocr_hook(case.repo, ci(github, tmp_path), "dismiss", "--from-forge", "--from", str(report))
    assert dismissals.returncode == 0, dismissals.stderr  # the resolves from before the raise still dismiss nothing
    assert dismissals.stdout.startswith("no finding was dismissed on the pull request"), dismissals.stdout


def test_a_github_apps_token_is_known_by_the_name_github_gives_it(
        case: Reviewed, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    """Issue 58.13: an App's installation token (`ghs_…`) writes as `<app>[bot]`, not github-actions[bot]."""
    github.tokens[APP_TOKEN] = "write"
    github.logins[APP_TOKEN] = "ocr-app[bot]"
    env = {**ci(github, tmp_path), "GITHUB_TOKEN": APP_TOKEN}
    first = one_line(ocr_hook(case.repo, env, "publish", "--from", str(case.report_path)))
    assert "published a review on octo/app#7: 4 inline comment(s)" in first
    assert pull.reviews[-1]["user"]["login"] == "ocr-app[bot]"
    again = one_line(ocr_hook(case.repo, env, "publish", "--from", str(case.report_path)))
    assert "nothing new to publish on octo/app#7: 6 finding(s) already posted" in again, again
    assert len(pull.reviews) == 1 and len(pull.comments) == 4
    # and what it posted is its own: a fixed finding's thread is resolved
    line = one_line(ocr_hook(case.repo, env, "publish", "--from", str(case.fixed(tmp_path, FIXED))))
    assert "1 thread(s) resolved" in line
    assert github.resolved == [(7, opening(github, case, FIXED, "ocr-app[bot]")["id"])]


def test_a_finding_that_comes_back_reopens_the_thread_ocr_hook_resolved(
        case: Reviewed, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    """Issue 58.11: the fixed finding's thread was resolved by ocr-hook; the next push brings the code back."""
    publish(case, github, tmp_path)
    fixed = opening(github, case, FIXED)["id"]
    assert "1 thread(s) resolved" in publish(case, github, tmp_path, case.fixed(tmp_path, FIXED))
    assert pull.threads[fixed].resolved

    line = publish(case, github, tmp_path)  # the first report again: the finding is raised again
    assert "1 thread(s) reopened" in line and "1 thread(s) told the finding is raised again" in line, line
    assert github.unresolved == [(7, fixed)] and not pull.threads[fixed].resolved
    said = [c for c in pull.comments if c.get("in_reply_to_id") == fixed]
    marker = f"<!-- ocr-hook raised fingerprint={case.finding(FIXED)['fingerprint']}"
    assert [c["body"].split(" -->")[0] for c in said] == [marker]
    body = pull.reviews[-1]["body"]  # and the summary lists it
    assert FIXED in body and "raised again, and its thread is resolved" in body

    before = len(github.writes())
    assert "nothing new to publish" in publish(case, github, tmp_path)
    assert len(github.writes()) == before


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


CRITICAL = "f3 now runs its input through eval(): anyone who controls x runs code."


def test_a_resolve_dismisses_only_the_raised_finding_it_was_about(
        case: Reviewed, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    """Issue 58.10, 58.15 and 58.16 in one review in CI, each on its own thread (and its own finding):
    10: FIXED's thread was resolved by a maintainer after ocr-hook said the finding looked fixed; the code is back.
    15: RENAMED's thread was opened before `git mv` (its marker carries the old path's fingerprint) and a
        maintainer dismissed it: the dismissal holds after the rename.
    16: PLAIN's thread was dismissed by a maintainer; this review raises a critical finding on the same code."""
    publish(case, github, tmp_path)
    high = opening(github, case, FIXED)["id"]
    github.reply_in_thread(7, high, fixed_reply_body(case.finding(FIXED)["fingerprint"]), BOT)
    github.resolve_thread(7, high, "maint")
    plain = opening(github, case, PLAIN)["id"]
    github.reply_in_thread(7, plain, "Multiplying is what f3 is for.", "maint")
    github.resolve_thread(7, plain, "maint")
    before_mv = fingerprint(OLD_NAME, "bug", "VALUE_6 = 60")
    github.add_comment(7, NEW_NAME, 6, f"<!-- ocr-hook fingerprint={before_mv} -->\n**ocr-hook** · medium · bug\n\n"
                                       f"{RENAMED}", BOT)
    moved = github.comment_starting(7, f"<!-- ocr-hook fingerprint={before_mv} -->")["id"]
    github.reply_in_thread(7, moved, "Sixty is the new limit.", "maint")
    github.resolve_thread(7, moved, "maint")

    report = tmp_path / "again.json"
    with FakeMessagesAPI() as messages:
        critical = {"content": CRITICAL, "existing_code": "return x * 3", "severity": "critical", "category": "bug"}
        app = [*APP_COMMENTS, critical]
        messages.script(main_opening(PATH), [Reply([tool_use("code_comment", {"comments": app})])])
        messages.script(main_opening(NEW_NAME), [Reply([tool_use("code_comment", {"comments": LIB_COMMENTS})])])
        proc = ocr_hook(case.repo, {**ci(github, tmp_path), **messages_env(messages)}, "review", "--base", "main",
                        "--no-cache", "--no-review-filter", "--filter-mode", "nofilter", "-q", "--format", "json",
                        "--json-output", str(report))
    assert proc.returncode == 1, proc.stderr
    findings = {f["message"]: f for f in json.loads(report.read_text(encoding="utf-8"))["findings"]}
    assert findings[FIXED]["suppressed"] is None  # 10: agreeing it was fixed is no dismissal of it coming back
    assert findings[CRITICAL]["suppressed"] is None and findings[CRITICAL]["severity"] == "critical"  # 16
    assert findings[CRITICAL]["fingerprint"] == case.finding(PLAIN)["fingerprint"]  # (the same fingerprint)
    renamed = findings[RENAMED]  # 15
    assert renamed["suppressed"] == "dismissed" and renamed["dismissal"]["by"] == "maint"
    assert renamed["suppression_reason"] == "Sixty is the new limit."

    # Publishing that report: the critical finding is listed (its fingerprint's only thread is resolved), and
    # FIXED's thread, resolved after ocr-hook said it looked fixed, is reopened.
    line = publish(case, github, tmp_path, report)
    assert "1 thread(s) reopened" in line and github.unresolved == [(7, high)], line
    body = pull.reviews[-1]["body"]
    assert CRITICAL.split(":")[0] in body and FIXED in body and "raised again, and its thread is resolved" in body
    assert pull.threads[plain].resolved  # the maintainer's dismissal stands


def test_a_forge_dismissal_covers_the_one_finding_it_was_about() -> None:
    """Issue 58.16, where two findings of one fingerprint quote the same code at two places: the dismissal
    covers the one whose message its comment carries, never a more severe one."""
    from ocr_hook.findings import Finding
    from ocr_hook.findings.dismissals import ForgeDismissal, apply_forge
    from ocr_hook.findings.model import Category, Severity

    def found(message: str, line: int, severity: Severity) -> Finding:
        return Finding(path="app.py", start_line=line, end_line=line, severity=severity, category=Category.BUG,
                       message=message, suggestion=None, existing_code="eval(x)", fingerprint="a" * 32,
                       anchored=True)

    said = "Evaluating x here is\u200b safe: x is a constant.\n\n```suggestion\nx\n```"
    d = ForgeDismissal("a" * 32, "maint", "", "constant", "GitHub pull request octo/app#7", "medium", said)
    first, second = found("Evaluating x here is safe: x is a constant.", 3, Severity.MEDIUM), \
        found("Evaluating user input.", 9, Severity.MEDIUM)
    out = apply_forge([first, second], {"a" * 32: d})
    assert [f.suppressed for f in out] == ["dismissed", None]
    alone = apply_forge([found("Reworded by the model this time.", 3, Severity.MEDIUM)], {"a" * 32: d})
    assert alone[0].suppressed == "dismissed"  # the only finding of that fingerprint: the model's wording varies
    worse = apply_forge([found("Evaluating x here is safe: x is a constant.", 3, Severity.CRITICAL)], {"a" * 32: d})
    assert worse[0].suppressed is None


def test_rate_limits_are_waited_out_within_the_timeout(case: Reviewed, github: FakeGitHub, pull: Pull,
                                                       tmp_path: Path) -> None:
    """Issue 58.14: GitHub's secondary rate limit (403 with Retry-After) and GraphQL's RATE_LIMITED are waited
    out, as docs/recipes/publish.md promises (the fake asks for 0 s: the client's shortest pause)."""
    github.limits += [("graphql",), ("rest", "POST", "/repos/octo/app/pulls/7/reviews")]
    line = publish(case, github, tmp_path)
    assert "published a review on octo/app#7: 4 inline comment(s)" in line, line
    assert [(r.path, r.status) for r in github.limited] == [("/graphql", 200), ("/repos/octo/app/pulls/7/reviews", 403)]
    assert len(pull.reviews) == 1 and github.limits == []
    # a limit that outlasts the --timeout is the refusal, in its own words (not "the token may not write")
    github.retry_after = "3600"
    github.limits.append(("rest", "POST", "/repos/octo/app/pulls/7/reviews"))
    refused = publish(case, github, tmp_path, case.fixed(tmp_path, PLAIN))
    assert "secondary rate limit" in refused and "(rate limited; retrying would pass the publishing deadline)" \
        in refused and "may not write" not in refused, refused


def test_a_graphql_outage_or_elsewhere_still_publishes_from_rests_markers(case: Reviewed, github: FakeGitHub,
                                                                           pull: Pull, tmp_path: Path) -> None:
    """Issue 58.14: GraphQL failing while the threads are read stops nothing but the resolves (one note);
    GITHUB_GRAPHQL_URL names where it is; a 404 there is said as such, not as "no such pull request"."""
    github.graphql_down = 1_000
    line = publish(case, github, tmp_path)
    assert "published a review on octo/app#7: 4 inline comment(s)" in line, line
    assert line.endswith("(review threads not read (HTTP 502: Server Error): no thread resolved or reopened, no "
                         "dismissal on the pull request counted)"), line
    again = publish(case, github, tmp_path, case.fixed(tmp_path, FIXED))  # REST's markers: nothing twice
    assert "nothing new to publish on octo/app#7" in again and "review threads not read" in again, again
    assert len(pull.reviews) == 1 and github.resolved == []

    github.graphql_down, github.graphql_path = 0, "/proxy/graphql"
    elsewhere = ci(github, tmp_path, GITHUB_GRAPHQL_URL=f"{github.url}/proxy/graphql")
    resolved = one_line(ocr_hook(case.repo, elsewhere, "publish", "--from", str(case.fixed(tmp_path, FIXED))))
    assert "1 thread(s) resolved" in resolved and "not read" not in resolved, resolved
    missing = publish(case, github, tmp_path, case.fixed(tmp_path, FIXED, PLAIN))
    assert (f"review threads not read (no GraphQL endpoint at {github.url}/graphql (HTTP 404; GITHUB_API_URL names "
            "it))") in missing and "no such pull request" not in missing, missing
