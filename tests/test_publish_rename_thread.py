"""A finding's thread survives `git mv` of its file (issue 58.15, DESIGN 18): through the real CLI, a review of a
pull request's branch (the fake Messages API) published to the fake GitHub; then the file is moved in a new
commit, reviewed and published again. The JSON report carries the finding's earlier fingerprint (its path
before the rename) and publish matches the earlier thread by it: no second thread, nothing new posted.
"""

from __future__ import annotations

import json
from pathlib import Path

from agent_support import main_opening
from ci_repos import ci_free_env
from fake_api import FakeMessagesAPI, Reply, tool_use
from fake_github import FakeGitHub
from gitrepo import commit_all, git, make_repo, run_cli, write
from publish_support import AFTER, BEFORE, PLAIN, comment, messages_env, ocr_hook

TOKEN = "ghs_fakeRenameThreadToken0123456789abcdefAB"
OLD, NEW = "app.py", "src/app.py"


def review(repo: Path, path: str, report: Path) -> dict:
    with FakeMessagesAPI() as fake:
        fake.script(main_opening(path), [Reply([tool_use("code_comment", {"comments": [
            comment(PLAIN, "return x * 3", "high")]})])])
        env = {k: v for k, v in ci_free_env().items() if not k.startswith("ANTHROPIC_")}
        env.update(messages_env(fake))
        proc = run_cli(repo, "review", "--base", "main", "--no-cache", "--no-review-filter", "--filter-mode",
                       "nofilter", "-q", "--format", "json", "--json-output", str(report), env=env)
    assert proc.returncode == 1, proc.stderr
    return json.loads(report.read_text(encoding="utf-8"))


def publish(repo: Path, github: FakeGitHub, report: Path, tmp: Path) -> str:
    event = tmp / "event.json"
    event.write_text(json.dumps({"number": 7, "pull_request": {"number": 7, "head": {"sha": github.pulls[7].head_sha},
                                                               "base": {"ref": "main"}}}), encoding="utf-8")
    proc = ocr_hook(repo, {"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "octo/app",
                           "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
                           "GITHUB_API_URL": github.url, "GITHUB_TOKEN": TOKEN}, "publish", "--from", str(report))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


def patch(repo: Path, *paths: str) -> str:
    diff = git(repo, "diff", "-M", "main...feature", "--", *paths)
    return diff[diff.index("@@"):]


def test_a_moved_files_finding_keeps_its_thread(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, OLD, BEFORE)
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, OLD, AFTER)
    first_head = commit_all(repo, "feature")
    first = review(repo, OLD, tmp_path / "first.json")
    [finding] = first["findings"]

    with FakeGitHub() as github:
        github.tokens[TOKEN] = "write"
        pull = github.add_pull(7, first_head, {OLD: patch(repo, OLD)})
        assert "1 inline comment(s)" in publish(repo, github, tmp_path / "first.json", tmp_path)
        github.comment_starting(7, f"<!-- ocr-hook fingerprint={finding['fingerprint']} -->")

        (repo / "src").mkdir()
        git(repo, "mv", OLD, NEW)
        second_head = commit_all(repo, "move app.py under src/")
        second = review(repo, NEW, tmp_path / "second.json")
        [moved] = second["findings"]
        assert moved["fingerprint"] != finding["fingerprint"]
        assert finding["fingerprint"] in moved["fingerprint_aliases"]  # the report names the earlier thread's

        pull.older[first_head], pull.files, pull.head_sha = pull.files, {NEW: patch(repo, OLD, NEW)}, second_head
        before = len(github.writes())
        line = publish(repo, github, tmp_path / "second.json", tmp_path)
        assert "nothing new to publish" in line, line
        assert len(github.writes()) == before  # no second thread, no review listing the finding as new
        assert len(github.thread_roots(pull)) == 1
        assert github.violations == []
