"""How many git processes the light paths of `ocr-hook review` start (a hook runs them on every commit).

A shim named `git` first on PATH logs every call and runs the real git, so each number below is counted,
not assumed. Nothing staged: `rev-parse` (top and HEAD, and review memory's repository and branch) and one
`diff` (the raw listing: empty). An unchanged re-run answered from the cache: the same two, the blobs' sizes
(`cat-file --batch-check`, no content) and the patch of the files within max_file_bytes (a second `diff`),
then, started right after the diff (git.prefetch), the guidance listing at the trusted revision (`ls-tree`),
and one `cat-file --batch` for every blob. The index's listing (`ls-files`, the pack memo's key) is started
only once the cache lookups find a file to review (a pack to build): here none. No
`git grep`: a context pack would come from the pack memo.
"""

from __future__ import annotations

import json
from pathlib import Path

from agent_support import filter_keeps_all
from fake_api import FakeMessagesAPI, Reply, task_done, tool_use
from gitrepo import commit_all, git, logging_git, make_repo, run_cli, subcommands, write


def test_the_light_paths_start_two_and_six_git_processes(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                        sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "calc.py", "def add(a, b):\n    return a + b\n")
    commit_all(repo, "initial")
    env, log = logging_git(tmp_path, sdk_env)

    idle = run_cli(repo, "review", "-q", "--format", "json", env=env)
    assert idle.returncode == 0, idle.stderr
    assert subcommands(log) == ["rev-parse", "diff"]

    write(repo, "calc.py", "def add(a, b):\n    return a - b\n")
    git(repo, "add", "calc.py")
    filter_keeps_all(fake_api)
    fake_api.script("calc.py", [Reply([tool_use("code_comment", {"comments": [{
        "content": "Subtracts.", "existing_code": "return a - b", "severity": "low", "category": "bug"}]})]),
        task_done()])
    first = run_cli(repo, "review", "-q", "--format", "json", env=sdk_env)
    assert first.returncode == 0, first.stderr
    sent = len(fake_api.requests)

    cached = run_cli(repo, "review", "-q", "--format", "json", env=env)
    assert cached.returncode == 0, cached.stderr
    assert json.loads(cached.stdout)["coverage"]["cached"] == ["calc.py"] and len(fake_api.requests) == sent
    # calc.py's entry was reviewed without a pack (nothing it uses is defined elsewhere): the pack memo, keyed by
    # the index's whole listing, is not asked, and no `ls-files` runs. The listing and cat-file start within a
    # moment of each other, so the shim may log them in either order.
    # Sizes first (issue 55.3): the raw listing, the blobs' sizes (`cat-file --batch-check`, no content), then
    # the patch of the files within max_file_bytes: a staged 1 GB file is never read.
    calls = subcommands(log)
    assert calls[:4] == ["rev-parse", "diff", "cat-file", "diff"]
    assert sorted(calls[4:]) == ["cat-file", "ls-tree"]
