"""`ocr-hook apply [ID...]` (issue 54, items 1-2): the last review's suggested fixes applied to the work tree and
the index from review memory, with no model request, and refused on a file that changed since that review.

The real CLI (forked), real repositories, the real SDK against the fake Messages API for the review that is
applied; the blocked commit's hint under real pre-commit is in test_precommit_hook.
"""

from __future__ import annotations

from pathlib import Path

from fake_api import FakeMessagesAPI, Reply, tool_use
from gitrepo import commit_all, git, make_repo, repo_state, run_cli, write

BEFORE = "def add(a, b):\n    return a + b\n\n\ndef label(name):\n    return name\n"
AFTER = "def add(a, b):\n    return a - b\n\n\ndef label(name):\n    return 'Item: ' + name\n"
SUBTRACT = {"content": "add() subtracts.", "existing_code": "return a - b", "suggestion_code": "return a + b",
            "severity": "high", "category": "bug"}
CONCAT = {"content": "Use an f-string.", "existing_code": "return 'Item: ' + name",
          "suggestion_code": "return f'Item: {name}'", "severity": "low", "category": "style"}


def reviewed(tmp_path: Path, fake_api: FakeMessagesAPI, env: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """A staged change reviewed (blocked) with two suggested fixes; the short id of each finding by message."""
    repo = make_repo(tmp_path / "repo")
    write(repo, "app.py", BEFORE)
    commit_all(repo, "base")
    write(repo, "app.py", AFTER)
    git(repo, "add", "app.py")
    fake_api.script("app.py", [Reply([tool_use("code_comment", {"comments": [SUBTRACT, CONCAT]})]),
                               Reply([tool_use("task_done", {"state": "DONE"})])])
    proc = run_cli(repo, "review", "-q", "--no-review-filter", env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ocr-hook apply" in proc.stdout  # the hint names the command
    # The header line of each finding ends with its short id; its message follows on the next line.
    lines = proc.stdout.splitlines()
    found = {lines[i + 1].strip(): lines[i].split()[-1] for i, line in enumerate(lines[:-1])
             if line.startswith("app.py:")}
    return repo, {"subtract": found[SUBTRACT["content"]], "concat": found[CONCAT["content"]]}


def test_apply_one_finding_by_its_id_without_a_request(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                       sdk_env: dict[str, str]) -> None:
    repo, ids = reviewed(tmp_path, fake_api, sdk_env)
    requests = len(fake_api.requests)
    proc = run_cli(repo, "apply", ids["subtract"], env=sdk_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(fake_api.requests) == requests  # from what the review produced: no model asked
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("applied 1 fix to the work tree and the index (git apply --index), from the review "
                               "of staged changes") and lines[0].endswith(":")
    assert lines[1].startswith(f"  app.py:2 [HIGH] bug {ids['subtract']}") and lines[1].endswith("add() subtracts.")
    fixed = AFTER.replace("a - b", "a + b")
    assert (repo / "app.py").read_text() == fixed
    assert git(repo, "show", ":app.py") == fixed  # the index too: the next commit takes it
    # Issue 58 item 22: after a partial apply, the rest still applies (the file's new text is what they fit, their
    # lines moved), and the fix applied already is said to be, not refused as a changed file.
    again = run_cli(repo, "apply", ids["subtract"], env=sdk_env)
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr == f"ocr-hook: error: finding {ids['subtract']} (app.py): its fix is applied already (by an " \
        "earlier ocr-hook apply): nothing applied\n"
    rest = run_cli(repo, "apply", env=sdk_env)
    assert rest.returncode == 0, rest.stdout + rest.stderr
    assert rest.stdout.splitlines()[1].startswith(f"  app.py:6 [LOW] style {ids['concat']}")
    both = AFTER.replace("a - b", "a + b").replace("'Item: ' + name", "f'Item: {name}'")
    assert git(repo, "show", ":app.py") == (repo / "app.py").read_text() == both
    done = run_cli(repo, "apply", env=sdk_env)
    assert done.returncode == 0 and done.stdout.startswith("every fix of the last review is applied already")


def test_apply_all_refuses_a_file_changed_since_the_review_and_changes_nothing(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo, _ids = reviewed(tmp_path, fake_api, sdk_env)
    write(repo, "app.py", AFTER + "# edited after the review\n")  # the work tree only: the index is as reviewed
    before = repo_state(repo)
    proc = run_cli(repo, "apply", env=sdk_env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "app.py changed since the last review" in proc.stderr
    assert "nothing applied" in proc.stderr
    assert repo_state(repo) == before
    write(repo, "app.py", AFTER)  # back to what was reviewed: both fixes apply
    proc = run_cli(repo, "apply", env=sdk_env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("applied 2 fixes to the work tree and the index")
    assert git(repo, "show", ":app.py") == (repo / "app.py").read_text() == \
        AFTER.replace("a - b", "a + b").replace("'Item: ' + name", "f'Item: {name}'")


def test_apply_without_a_remembered_review_says_what_to_run(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "app.py", BEFORE)
    commit_all(repo, "base")
    proc = run_cli(repo, "apply", env=sdk_env)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("ocr-hook: error: no review of this repository is remembered")
    bad = run_cli(repo, "apply", "xyz", env=sdk_env)
    assert bad.returncode == 2 and "finding id 'xyz'" in bad.stderr
