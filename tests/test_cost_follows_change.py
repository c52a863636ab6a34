"""The cost follows what changed (issue 62 items 1 and 2): a second push to a pull request, a commit after a
scan and a definition that only moved send requests for the files they touched, nothing more. The forked CLI
on real git repositories, the real SDK against the fake Messages API; each run's requests are counted by the
file their first message reviews."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fake_api import FakeMessagesAPI
from gitrepo import commit_all, git, make_repo, run_cli, write

_REVIEWED = re.compile(r"`([^`]+)`")


def _files_sent(fake_api: FakeMessagesAPI, since: int) -> set[str]:
    """The files the Messages API requests after the first `since` were about (by their first message)."""
    found = set()
    for request in fake_api.requests[since:]:
        if request.path.endswith("/messages"):
            match = _REVIEWED.search(request.first_user_text)
            assert match is not None, request.first_user_text[:200]
            found.add(match.group(1))
    return found


def _module(i: int, version: int) -> str:
    return f"def value_{i}(x):\n    \"\"\"Version {version}.\"\"\"\n    return x + {i * 10 + version}\n"


def test_a_second_push_to_a_pull_request_sends_only_the_file_it_touched(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    for i in range(10):
        write(repo, f"pkg/mod{i}.py", _module(i, 0))
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "topic")
    for i in range(10):
        write(repo, f"pkg/mod{i}.py", _module(i, 1))
    commit_all(repo, "Bump every module's value")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"title": "Bump values", "body": "All ten modules."}}))
    github = {**sdk_env, "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request",
              "GITHUB_EVENT_PATH": str(event)}
    first = run_cli(repo, "review", "--base", "main", "--format", "json", env=github)
    assert first.returncode == 0, first.stderr
    assert _files_sent(fake_api, 0) == {f"pkg/mod{i}.py" for i in range(10)}

    # The second push: one file, a new commit message in the range, and an edited description.
    sent = len(fake_api.requests)
    write(repo, "pkg/mod3.py", _module(3, 2))
    commit_all(repo, "Fix the third module's value")
    event.write_text(json.dumps({"pull_request": {"title": "Bump values", "body": "All ten, one fixed."}}))
    second = run_cli(repo, "review", "--base", "main", "--format", "json", env=github)
    assert second.returncode == 0, second.stderr
    assert _files_sent(fake_api, sent) == {"pkg/mod3.py"}
    coverage = json.loads(second.stdout)["coverage"]
    assert sorted(coverage["cached"]) == sorted(f"pkg/mod{i}.py" for i in range(10) if i != 3)
    # The file the push changed is reviewed with today's intent: the new description and the new commit.
    today = [r.first_user_text for r in fake_api.requests[sent:] if "pkg/mod3.py" in r.first_user_text]
    assert any("All ten, one fixed." in t and "Fix the third module's value" in t for t in today), today


# A scan's tree: calls.py, the largest file, is reviewed first; alpha.py among the first 64 files (the first batch
# whose packs are prepared together), beta.py after them (it and the template are the smallest). calls.py calls
# run_alpha 6 times around 997 calls of run_beta: searched together (the next run's lookup prepares every pack
# at once) the names fill the 1,000 lines a file one search keeps before the qualified calls of run_alpha, the
# surest sites (200 lines before issue 62.2).
ALPHA = "def run_alpha(x):\n    \"\"\"Twice x.\"\"\"\n    return 2 * x\n"
CALLS = ("import alpha\nfrom alpha import run_alpha\nfrom beta import run_beta\n\n\ndef use():\n"
         + "".join(f"    run_alpha({i})\n" for i in range(3))
         + "    run_beta(0)\n" * 997
         + "".join(f"    alpha.run_alpha({i})\n" for i in range(3, 6)))


def test_a_commit_after_a_scan_sends_only_the_file_it_touched(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "calls.py", CALLS)
    write(repo, "alpha.py", ALPHA)
    write(repo, "beta.py", "def run_beta(x): return x\n")
    for i in range(66):
        write(repo, f"settings/v{i:02}.py", f"VALUE = {i}\nNAME = 'v{i}'\n")
    write(repo, "templates/page.html", "<p>{{ title }}</p>\n")
    commit_all(repo, "base")
    first = run_cli(repo, "scan", "--format", "json", env=sdk_env)
    assert first.returncode == 0, first.stderr
    assert len(_files_sent(fake_api, 0)) == 70
    alpha_first = next(r.first_user_text for r in fake_api.requests if r.first_user_text.startswith(
        "Review the change to `alpha.py`"))
    assert "alpha.run_alpha(3)" in alpha_first  # the surest call sites, from a search of run_alpha's batch

    # One line of a template: nothing else is sent, though every pack is now prepared at once.
    sent = len(fake_api.requests)
    write(repo, "templates/page.html", "<p>{{ title }}</p>\n<p>{{ body }}</p>\n")
    commit_all(repo, "Show the body")
    second = run_cli(repo, "scan", "--format", "json", env=sdk_env)
    assert second.returncode == 0, second.stderr
    assert _files_sent(fake_api, sent) == {"templates/page.html"}
    assert len(json.loads(second.stdout)["coverage"]["cached"]) == 69

    # A comment above run_alpha moves it: calls.py's pack quotes it at other line numbers, and is no other.
    sent = len(fake_api.requests)
    write(repo, "alpha.py", "# Arithmetic helpers.\n" + ALPHA)
    commit_all(repo, "Say what alpha is for")
    third = run_cli(repo, "scan", "--format", "json", env=sdk_env)
    assert third.returncode == 0, third.stderr
    assert _files_sent(fake_api, sent) == {"alpha.py"}
    assert len(json.loads(third.stdout)["coverage"]["cached"]) == 69
