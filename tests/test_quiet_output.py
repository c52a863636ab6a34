"""What a run prints where it runs (issue 54, items 9-11): at commit time a pass says nothing that did not happen
(a passing pre-push is one line); in a CI job the hint fits CI; what the filter mode dropped is said in words.

The real CLI (forked), real repositories, the real SDK against the fake Messages API.
"""

from __future__ import annotations

import json
from pathlib import Path

from fake_api import FakeMessagesAPI, Reply, tool_use
from gitrepo import commit_all, git, head, make_repo, run_cli, write

HOOK = {"PRE_COMMIT": "1", "NO_COLOR": "1"}  # as pre-commit runs a hook


def test_a_passing_pre_push_after_reviewed_commits_is_one_line(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                             sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    for name in ("a.py", "b.py", "c.py"):
        write(repo, name, f"def {name[0]}():\n    return 1\n")
    commit_all(repo, "base")
    base = head(repo)
    env = {**sdk_env, **HOOK}
    for version in (2, 3):  # two commits, each reviewed by the commit hook (review memory records them)
        for name in ("a.py", "b.py", "c.py"):
            write(repo, name, f"def {name[0]}():\n    return {version}\n")
        git(repo, "add", "-A")
        committed = run_cli(repo, "review", "--staged", env=env)
        assert committed.returncode == 0, committed.stdout + committed.stderr
        git(repo, "commit", "-q", "-m", f"version {version}")
    requests = len(fake_api.requests)
    pushed = run_cli(repo, "review", "--push", env={**env, "PRE_COMMIT_FROM_REF": base,
                                                    "PRE_COMMIT_TO_REF": head(repo)})
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert len(fake_api.requests) > requests  # the pushed range was reviewed (through review memory)
    [line] = pushed.stdout.splitlines()
    assert line.startswith("ocr-hook: PASSED — review complete") and "3 files reviewed" in line
    # The note is still in the full reports: the JSON of the same run keeps it.
    full = run_cli(repo, "review", "--push", "--no-cache", "--format", "json",
                   env={**env, "PRE_COMMIT_FROM_REF": base, "PRE_COMMIT_TO_REF": head(repo)})
    assert full.returncode == 0, full.stdout + full.stderr
    assert sum("re-reviewed against the last review" in n for n in json.loads(full.stdout)["notes"]) == 3


def _blocked_in_ci(tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str], ci: dict[str, str]) -> str:
    repo = make_repo(tmp_path / "repo")
    write(repo, "app.py", "def add(a, b):\n    return a + b\n")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "app.py", "def add(a, b):\n    return a - b\n")
    commit_all(repo, "subtract")
    fake_api.script("app.py", [Reply([tool_use("code_comment", {"comments": [{
        "content": "add() subtracts.", "existing_code": "return a - b", "suggestion_code": "return a + b",
        "severity": "high", "category": "bug"}]})]), Reply([tool_use("task_done", {"state": "DONE"})])])
    proc = run_cli(repo, "review", "--base", "main", "--no-review-filter", "--json-output", "report.json",
                   env={**sdk_env, "NO_COLOR": "1", **ci})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return proc.stdout[proc.stdout.index("What to do next:"):]


def test_in_a_gitlab_job_the_hint_fits_ci(tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    hint = _blocked_in_ci(tmp_path, fake_api, sdk_env, {"GITLAB_CI": "true", "CI": "true"})
    assert "--patch-output" not in hint and "ocr-hook apply" not in hint and "SKIP=" not in hint
    assert "fix the findings on your branch and push again" in hint
    dismiss = [line.strip() for line in hint.splitlines() if line.strip().startswith("ocr-hook dismiss ")]
    assert dismiss and all(" --from REPORT.json " in line for line in dismiss), hint
    assert "this job's JSON report (report.json)" in hint


def test_outside_ci_the_same_block_names_the_local_steps(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                          sdk_env: dict[str, str]) -> None:
    hint = _blocked_in_ci(tmp_path, fake_api, sdk_env, {})
    assert "apply the suggested fixes (the work tree and the index; no new review): ocr-hook apply" in hint
    assert "ocr-hook dismiss " in hint and "push again" not in hint


def test_a_comment_the_filter_mode_drops_is_said_in_words(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                          sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    body = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(10))
    write(repo, "app.py", body)
    commit_all(repo, "base")
    write(repo, "app.py", body.replace("return 0\n", "return -1\n"))
    git(repo, "add", "app.py")
    fake_api.script("app.py", [Reply([tool_use("code_comment", {"comments": [{
        "content": "f9 returns a magic number.", "existing_code": "return 9", "severity": "high",
        "category": "maintainability"}]})]), Reply([tool_use("task_done", {"state": "DONE"})])])
    proc = run_cli(repo, "review", "--no-review-filter", env={**sdk_env, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [line] = [x for x in proc.stdout.splitlines() if x.startswith("Comments dropped:")]
    assert line == "Comments dropped: 1 on lines outside this change's hunks (filter_mode diff_context)"
