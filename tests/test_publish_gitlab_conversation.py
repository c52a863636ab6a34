"""The merge request as a conversation on GitLab (issue 53, DESIGN.md 18), through the real CLI: `review` in a
GitLab CI merge request pipeline, `publish`, `dismiss --from-forge`, against the fake GitLab API (every request
checked against GitLab's description) and the scripted fake Messages API.

One merge request's life: the first review posts (the low finding in the note: routing); a fix is pushed and
the next review, without memory (a CI job without a cache), no longer raises two findings: publishing resolves
exactly the one nobody answered and replies once in the one a person answered; the request's author resolves a
third finding's thread, which changes nothing; a maintainer resolves it with a reason, and the review after
that passes the gate with the finding dismissed by them in JSON, SARIF and text; the note says so and names
the command that keeps it, which writes the entry.
"""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import forked_cli
import pytest
import yaml
from agent_support import main_opening
from ci_repos import ci_free_env
from fake_api import FakeMessagesAPI, Reply, tool_use
from fake_gitlab import FakeGitLab, MergeRequest
from gitrepo import commit_all, git, make_repo, write
from publish_support import messages_env
from validators import schema_errors

from ocr_hook.reports.sarif import OUR_FINGERPRINT

TOKEN = "glpat-conversationToken0123456789"
PATH = "app.py"
BEFORE = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(1, 11))
BUGGY = (BEFORE.replace("return x + 2\n", "return x - 2\n").replace("return x + 3\n", "return x * 3\n")
         .replace("return x + 5\n", "return x / 5\n").replace("return x + 7\n", "return x + 7  # add seven!\n"))
FIXED = BUGGY.replace("return x - 2\n", "return x + 2\n").replace("return x * 3\n", "return x + 3\n")

SUBTRACTS = "f2 subtracts where every other function adds."
MULTIPLIES = "f3 multiplies where every other function adds."
DIVIDES = "f5 divides: a float where callers expect an int."
NIT = "The comment on f7 shouts."
REASON = "Callers pass multiples of 5 only; api/validate.py checks it."


def comment(content: str, code: str, severity: str, category: str = "bug") -> dict[str, Any]:
    return {"content": content, "existing_code": code, "severity": severity, "category": category}


FIRST = [comment(SUBTRACTS, "    return x - 2", "high"), comment(MULTIPLIES, "    return x * 3", "high"),
         comment(DIVIDES, "    return x / 5", "high"), comment(NIT, "    return x + 7  # add seven!", "low", "style")]
AFTER_FIX = FIRST[2:]


class Life:
    """The repository, the fakes and the CI environment of one merge request."""

    def __init__(self, root: Path, gitlab: FakeGitLab, api: FakeMessagesAPI) -> None:
        self.root, self.gitlab, self.api = root, gitlab, api
        self.repo = make_repo(root / "repo")
        write(self.repo, PATH, BEFORE)
        self.base = commit_all(self.repo, "base")
        git(self.repo, "checkout", "-q", "-b", "feature")
        self.mr: MergeRequest = gitlab.add_mr(3, "", self.base, [])
        self.env = ci_free_env(GITLAB_CI="true", CI_API_V4_URL=gitlab.api, CI_PROJECT_ID="42",
                               CI_PROJECT_PATH="group/app", CI_MERGE_REQUEST_IID="3",
                               CI_PIPELINE_SOURCE="merge_request_event", GITLAB_TOKEN=TOKEN,
                               OCR_HOOK_CACHE_DIR=str(root / "cache"), **messages_env(api))
        # the shipped settings (routing's default included), whatever the shell running the suite sets
        self.env = {k: v for k, v in self.env.items() if not k.startswith("OCR_HOOK_") or k == "OCR_HOOK_CACHE_DIR"}
        self.runs = 0

    def push(self, text: str, comments: list[dict[str, Any]]) -> None:
        """A commit on the feature branch, the MR's head in the fake, and what the model will say of it."""
        write(self.repo, PATH, text)
        head = commit_all(self.repo, "feature")
        diff = git(self.repo, "diff", "main...feature", "--", PATH)
        self.mr.head_sha = head
        self.mr.diffs = [{"old_path": PATH, "new_path": PATH, "diff": diff[diff.index("@@"):], "new_file": False,
                          "renamed_file": False, "deleted_file": False}]
        self.api.script(main_opening(PATH), [Reply([tool_use("code_comment", {"comments": comments})])])

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        proc = forked_cli.run(list(args), cwd=self.repo, env=self.env, timeout=120, errors="replace")
        assert "Traceback" not in proc.stderr and TOKEN not in proc.stdout + proc.stderr, proc.stderr
        return proc

    def review(self, expected_exit: int, *, memory: bool = False) -> tuple[dict[str, Any], dict[str, Any], str]:
        """`review --base main` without cache, and without memory unless `memory` (a CI job that keeps its cache
        directory, where the review history `ocr-hook outcomes` reads is written): JSON, SARIF, text."""
        self.runs += 1
        out = self.root / f"run{self.runs}"
        out.mkdir()
        proc = self.cli("review", "--base", "main", "--no-cache", *(() if memory else ("--no-memory",)),
                        "--no-review-filter",
                        "--filter-mode", "nofilter", "--json-output", str(out / "r.json"), "--sarif-output",
                        str(out / "r.sarif"))
        assert proc.returncode == expected_exit, proc.stdout + proc.stderr
        self.report_path = out / "r.json"
        return (json.loads(self.report_path.read_text()), json.loads((out / "r.sarif").read_text()), proc.stdout)

    def publish(self) -> str:
        proc = self.cli("publish", "--from", str(self.report_path))
        assert proc.returncode == 0 and proc.stdout == "", proc.stderr
        return proc.stderr

    def fp(self, report: dict[str, Any], message: str) -> str:
        return next(f["fingerprint"] for f in report["findings"] if f["message"] == message)

    def note(self) -> str:
        [summary] = [d["notes"][0]["body"] for d in self.mr.discussions
                     if d["notes"][0]["body"].startswith("<!-- ocr-hook review")]
        return summary


@pytest.fixture
def gitlab() -> Any:
    with FakeGitLab() as fake:
        yield fake.fresh(TOKEN)
        fake.assert_conforms()


def writes(gitlab: FakeGitLab, method: str, suffix: str) -> list[Any]:
    return [r for r in gitlab.requests if r.method == method and r.path.endswith(suffix)]


def test_a_merge_requests_life_fixed_threads_resolved_a_maintainers_resolve_dismisses(
        tmp_path: Path, gitlab: FakeGitLab) -> None:
    with FakeMessagesAPI() as api:
        life = Life(tmp_path, gitlab, api)
        gitlab.person("dev", access=40)  # the request's author: a maintainer, and still not their own judge
        gitlab.person("maria", access=40)
        gitlab.person("carol", access=20)  # a reporter: may comment, not push

        # 1. The first review posts: three threads; the low finding goes to the note (routing), never dropped.
        life.push(BUGGY, FIRST)
        first, _sarif, _text = life.review(1)
        line = life.publish()
        assert "3 inline comment(s), 1 finding(s) in the note" in line, line
        assert NIT in life.note() and "below medium: kept out of the diff (setting summary_below)" in life.note()
        assert not any(NIT in d["notes"][0]["body"] for d in life.mr.discussions if d["notes"][0]["position"])
        subtracts, multiplies, divides = (life.fp(first, m) for m in (SUBTRACTS, MULTIPLIES, DIVIDES))
        gitlab.reply_as(3, multiplies, "carol", "Is that not what the spec asks for?")
        gitlab.person("triage-bot", access=40, bot=True)
        gitlab.reply_as(3, subtracts, "triage-bot", "Labelled ~bug.")  # a bot's note is not a person's answer
        # someone else's thread that starts with our marker is not ours to resolve
        gitlab.add_note(3, f"<!-- ocr-hook fingerprint={subtracts} -->\nme too",
                        "mallory", position=gitlab.thread(3, subtracts)["notes"][0]["position"])
        # 👍/👎 (award emoji, a request per thread on GitLab) for the review history; ocr-hook's own counts for none
        gitlab.award(3, divides, "thumbsup", "maria")
        gitlab.award(3, divides, "thumbsdown", "carol")
        gitlab.award(3, divides, "thumbsup", "ocr-bot")

        # 2. A fix is pushed; the next review no longer raises f2's and f3's findings.
        life.push(FIXED, AFTER_FIX)
        second, _sarif, _text = life.review(1)
        assert second["resolved"] == [] and PATH in second["coverage"]["reviewed"]  # no memory: the file's review
        gitlab.reset()
        line = life.publish()
        assert "1 thread(s) resolved" in line and "1 answered thread(s) told the finding looks fixed" in line, line
        [resolved] = [r for r in gitlab.writes() if r.method == "PUT" and "/discussions/" in r.path]
        assert resolved.path.endswith(f"/discussions/{gitlab.thread(3, subtracts)['id']}")
        assert resolved.query == {"resolved": "true"}
        assert gitlab.thread(3, subtracts)["notes"][0]["resolved"] is True
        assert gitlab.thread(3, multiplies)["notes"][0]["resolved"] is False  # carol's words stay in sight
        assert gitlab.thread(3, divides)["notes"][0]["resolved"] is False  # still raised
        mallorys = next(d for d in life.mr.discussions if d["notes"][0]["author"]["username"] == "mallory")
        assert mallorys["notes"][0]["resolved"] is False
        [answer] = writes(gitlab, "POST", f"/discussions/{gitlab.thread(3, multiplies)['id']}/notes")
        assert answer.body["body"].startswith(f"<!-- ocr-hook fixed fingerprint={multiplies} -->")
        assert "looks fixed" in gitlab.thread(3, multiplies)["notes"][-1]["body"]
        gitlab.reset()
        life.publish()  # a re-run says it once only
        assert not [r for r in gitlab.writes() if "/discussions/" in r.path]

        # 3. The request's author resolves the thread of a finding still raised: that dismisses nothing.
        gitlab.reply_as(3, divides, "dev", "Fine as it is.")
        gitlab.resolve_as(3, divides, "dev")
        third, _sarif, _text = life.review(1)
        assert next(f for f in third["findings"] if f["fingerprint"] == divides)["suppressed"] is None

        # 4. A maintainer resolves it, with a reason: the next review passes, the finding dismissed by them.
        gitlab.reply_as(3, divides, "maria", REASON)
        gitlab.resolve_as(3, divides, "maria")
        at = gitlab.thread(3, divides)["notes"][0]["resolved_at"]
        gitlab.reset()
        fourth, sarif, text = life.review(0, memory=True)  # this job keeps its cache: the review history
        ours = [gitlab.thread(3, fp)["notes"][0]["id"] for fp in (subtracts, multiplies, divides)]
        awards = {r.path for r in gitlab.requests if r.path.endswith("/award_emoji")}  # (pages of two)
        assert awards == {f"/api/v4/projects/42/merge_requests/3/notes/{n}/award_emoji" for n in ours}  # ours only
        finding = next(f for f in fourth["findings"] if f["fingerprint"] == divides)
        where = "GitLab merge request group/app!3"
        assert finding["suppressed"] == "dismissed" and finding["suppression_reason"] == REASON
        assert finding["dismissal"] == {"by": "maria", "at": at, "in": where, "reason": REASON}
        [result] = [r for r in sarif["runs"][0]["results"] if r["partialFingerprints"][OUR_FINGERPRINT] == divides]
        [suppression] = result["suppressions"]
        assert suppression["kind"] == "external" and suppression["status"] == "accepted"
        assert suppression["justification"] == f"Dismissed by maria on {where} at {at}: {REASON}"
        assert suppression["properties"] == {"dismissedBy": "maria", "dismissedAt": at, "dismissedIn": where}
        assert schema_errors(sarif) == []
        assert f"dismissed: by maria on {where} at {at}: {REASON}" in text
        assert "keep them with `ocr-hook dismiss --from-forge`" in text

        # 5. The note counts it and names the command that keeps it.
        gitlab.reset()
        life.publish()
        assert "1 finding dismissed on this merge request by a maintainer resolving its thread" in life.note()
        assert "`ocr-hook dismiss --from-forge`" in life.note()
        assert not [r for r in gitlab.requests if r.path.endswith("/award_emoji")]  # publishing needs none

        # The review history has the maintainer's dismissal on the forge and the people's reactions and replies.
        outcomes = life.cli("outcomes", "--format", "json", "--pr", "3")
        assert outcomes.returncode == 0, outcomes.stderr
        doc = json.loads(outcomes.stdout)
        assert doc["dismissed_by"] == {"maria (forge)": 1}
        assert doc["feedback"] == {"thumbs_up": 1, "thumbs_down": 1, "replies": 2}  # dev's and maria's notes

        # 6. That command writes the entry: who, when, their reason, the request.
        gitlab.reset()
        proc = life.cli("dismiss", "--from-forge", "--from", str(life.report_path))
        assert proc.returncode == 0, proc.stderr
        assert f"dismissed {divides[:8]} ({PATH}, high bug): {REASON}" in proc.stdout
        assert "git add .ocr-hook/dismissed.yaml" in proc.stdout
        [entry] = yaml.safe_load((life.repo / ".ocr-hook" / "dismissed.yaml").read_text())["dismissed"]
        assert {k: entry[k] for k in ("fingerprint", "path", "reason", "by", "request")} == {
            "fingerprint": divides, "path": PATH, "reason": REASON, "by": "maria", "request": where}
        assert str(entry["on"]) == at[:10]
        listed = life.cli("dismissed")
        assert listed.returncode == 0 and "by maria" in listed.stdout and f"dismissed on: {where}" in listed.stdout
        assert [r.method for r in gitlab.writes()] == []  # the command only reads the forge

        # 7. Issue 58.11: the fix is undone. f2's discussion, resolved by ocr-hook, is unresolved and says why.
        life.push(BUGGY, FIRST)
        life.review(1)
        gitlab.reset()
        line = life.publish()
        assert "1 thread(s) reopened" in line, line
        [reopened] = [r for r in gitlab.writes() if r.method == "PUT" and "/discussions/" in r.path]
        assert reopened.path.endswith(f"/discussions/{gitlab.thread(3, subtracts)['id']}")
        assert reopened.query == {"resolved": "false"} and gitlab.thread(3, subtracts)["notes"][0]["resolved"] is False
        assert gitlab.thread(3, subtracts)["notes"][-1]["body"].startswith(
            f"<!-- ocr-hook raised fingerprint={subtracts} -->")


def test_a_reporters_token_remembers_each_refused_resolve_and_an_earlier_resolve_dismisses_nothing(
        tmp_path: Path, gitlab: FakeGitLab) -> None:
    """Issue 58.12 and 58.10 on GitLab: a token with the Reporter role may comment but not resolve (403). The fixed
    finding's thread is told so once (the next run asks nothing); a maintainer resolves it as invited; the code
    comes back: that resolve dismisses nothing, the reopen GitLab refuses is said in the thread, the note lists
    the finding."""
    with FakeMessagesAPI() as api:
        life = Life(tmp_path, gitlab, api)
        gitlab.person("ocr-bot", access=20, bot=True)
        gitlab.person("maria", access=40)
        life.push(BUGGY, FIRST)
        first, _sarif, _text = life.review(1)
        life.publish()
        subtracts = life.fp(first, SUBTRACTS)
        life.push(FIXED, AFTER_FIX)
        life.review(1)
        line = life.publish()
        assert "2 answered thread(s) told the finding looks fixed" in line and "GitLab refused to resolve" in line
        assert "may not resolve" in gitlab.thread(3, subtracts)["notes"][-1]["body"], line
        assert not any(d["notes"][0]["resolved"] for d in life.mr.discussions)
        assert "resolved since" not in life.note()
        gitlab.reset()
        assert "nothing new to publish" in life.publish()
        assert gitlab.writes() == []  # remembered in the thread: no resolve asked again, nothing said again

        gitlab.resolve_as(3, subtracts, "maria")  # as the reply invites
        life.push(BUGGY, FIRST)
        back, _sarif, _text = life.review(1)
        assert next(f for f in back["findings"] if f["fingerprint"] == subtracts)["suppressed"] is None
        line = life.publish()
        assert "1 thread(s) told the finding is raised again" in line and "refused to reopen" in line, line
        assert gitlab.thread(3, subtracts)["notes"][-1]["body"].startswith(
            f"<!-- ocr-hook raised fingerprint={subtracts} kept=resolved -->")
        assert SUBTRACTS in life.note() and "raised again, and its thread is resolved" in life.note()


def test_an_outage_while_reading_the_threads_is_a_note_and_changes_nothing(tmp_path: Path,
                                                                          gitlab: FakeGitLab) -> None:
    with FakeMessagesAPI() as api:
        life = Life(tmp_path, gitlab, api)
        gitlab.person("maria", access=40)
        life.push(BUGGY, FIRST)
        first, _sarif, _text = life.review(1)
        life.publish()
        gitlab.resolve_as(3, life.fp(first, DIVIDES), "maria")
        gitlab.fail(r"GET .*/discussions$", 500, {"message": "500 Internal Server Error"})
        report, _sarif, _text = life.review(1)
        assert all(f["suppressed"] is None for f in report["findings"])
        [note] = [n for n in report["notes"] if "dismissals on" in n]
        assert note == ("dismissals on GitLab merge request group/app!3 not read: HTTP 500: 500 Internal Server "
                        "Error; every finding counts")


@pytest.mark.parametrize(("args", "env", "expected"), [
    ((), {}, "name the findings to dismiss (their ids), or keep a pull request's with --from-forge"),
    (("--from-forge", "--reason", "x"), {}, "--reason and --from-forge: with --from-forge each dismissal keeps"),
    (("--from-forge",), {}, "--from-forge: this is not a CI run of a known forge; name the forge (--from-forge "
                            "github|gitlab|bitbucket|azure|gitea)"),
    (("--from-forge", "gitlab"), {"CI_MERGE_REQUEST_IID": "3", "CI_PROJECT_ID": "42"},
     "no pull request to read (42!3): no GITLAB_TOKEN"),
    (("--from-forge",), {"GITLAB_CI": "true", "CI_MERGE_REQUEST_IID": "3", "CI_PROJECT_ID": "42",
                         "GITLAB_TOKEN": TOKEN, "CI_API_V4_URL": "http://127.0.0.1:{port}/api/v4"},
     "dismissals on GitLab merge request 42!3 not read: cannot reach http://127.0.0.1:{port}/api/v4"),
])
def test_dismiss_from_the_forge_refuses_in_one_line_and_writes_nothing(tmp_path: Path, args: tuple[str, ...],
                                                                       env: dict[str, str], expected: str) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    env = {k: v.replace("{port}", port) for k, v in env.items()}
    expected = expected.replace("{port}", port)
    repo = make_repo(tmp_path / "repo")
    write(repo, PATH, BEFORE)
    commit_all(repo, "base")
    proc = forked_cli.run(["dismiss", *args], cwd=repo, env=ci_free_env(NO_PROXY="127.0.0.1,localhost", **env),
                          timeout=60, errors="replace")
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr.count("\n") == 1 and expected in proc.stderr, proc.stderr
    assert TOKEN not in proc.stderr and not (repo / ".ocr-hook").exists()


def test_the_deadline_among_the_reactions_leaves_them_partial_and_the_dismissals_standing(gitlab: FakeGitLab) -> None:
    """GitLab's 👍/👎 take a request per thread and come last: a server that stalls on them until the review's
    deadline costs the rest of the reactions, never the dismissals, and is no error."""
    import time

    from ocr_hook.publish.forge_dismissals import read

    gitlab.add_mr(3, "h" * 40, "b" * 40, [])
    gitlab.person("maria", access=40)
    first, second = "a1" * 8, "b2" * 8
    for fp in (first, second):
        gitlab.add_note(3, f"<!-- ocr-hook fingerprint={fp} -->\n{DIVIDES}", "ocr-bot",
                        position={"position_type": "text", "new_path": PATH, "new_line": 9})
        gitlab.award(3, fp, "thumbsdown", "maria")
    gitlab.resolve_as(3, second, "maria")
    gate = gitlab.hold(rf"GET .*/notes/{gitlab.thread(3, second)['notes'][0]['id']}/award_emoji$")
    env = {"GITLAB_CI": "true", "CI_API_V4_URL": gitlab.api, "CI_PROJECT_ID": "42", "CI_PROJECT_PATH": "group/app",
           "CI_MERGE_REQUEST_IID": "3", "GITLAB_TOKEN": TOKEN}
    try:
        got = read(env, time.monotonic() + 2.0, None)  # the stalled request is cut at this deadline
    finally:
        gate.set()
    assert gitlab.held.is_set()
    assert got.note is None and set(got.found) == {second} and got.found[second].by == "maria"
    assert got.feedback == {first: {"thumbs_up": 0, "thumbs_down": 1, "replies": 0}}
