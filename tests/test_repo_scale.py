"""Repositories of any size and any file names (issue 55): a name that is not UTF-8, files too big to read,
an unchanged re-scan, the whole run under --timeout. Real repositories, the real SDK, the fake Messages API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_support import filter_keeps_all
from fake_api import FakeMessagesAPI
from gitrepo import commit_all, git, make_repo, run_cli, write

LATIN1 = "caf\udce9.py"  # b"caf\xe9.py": a Latin-1 name, not UTF-8 (surrogateescape)
LATIN1_SHOWN = '"caf\\351.py"'  # as git shows it (core.quotePath's quoting)


def _user_text(body: dict) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


@pytest.fixture(autouse=True)
def _filter_keeps_everything(fake_api: FakeMessagesAPI) -> None:
    filter_keeps_all(fake_api)


def test_a_name_that_is_not_utf8_is_reviewed_and_shown_as_git_shows_it(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                       sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, LATIN1, "def price():\n    return 1\n")
    write(repo, "a.py", "def a():\n    return 2\n")
    commit_all(repo, "first")
    proc = run_cli(repo, "scan", "--format", "json", env=sdk_env)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert sorted(report["coverage"]["reviewed"]) == [LATIN1_SHOWN, "a.py"], report["coverage"]
    bodies = [json.dumps(r.body, ensure_ascii=False) for r in fake_api.requests]
    assert any("def price" in b for b in bodies)
    # The other file's first message lists the name as git shows it, never a replacement character.
    (a_first,) = [r.body for r in fake_api.requests if "def a()" in json.dumps(r.body) and len(r.body["messages"]) == 1]
    assert LATIN1_SHOWN in _user_text(a_first) and "\ufffd" not in _user_text(a_first)
    text = run_cli(repo, "scan", env=sdk_env)  # cached now; progress and the text report show it the same way
    assert text.returncode == 0 and LATIN1_SHOWN in text.stderr + text.stdout, text.stderr

    # Staged: the pre-commit hook's review of such a file works too.
    write(repo, LATIN1, "def price():\n    return 3\n")
    git(repo, "add", "-A")
    staged = run_cli(repo, "review", "--format", "json", env=sdk_env)
    assert staged.returncode == 0, staged.stderr
    assert json.loads(staged.stdout)["coverage"]["reviewed"] == [LATIN1_SHOWN]
