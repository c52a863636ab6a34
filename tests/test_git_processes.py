"""How many git processes the light paths of `ocr-hook review` start (a hook runs them on every commit).

A shim named `git` first on PATH logs every call and runs the real git, so each number below is counted,
not assumed. Nothing staged: `rev-parse` (top and HEAD, and review memory's repository and branch) and one
`diff` (the raw listing: empty). An unchanged re-run answered from the cache: the same two, the blobs' sizes
(`cat-file --batch-command`'s `info`, no content) and the patch of the files within max_file_bytes (a second
`diff`), then, started right after the diff (git.prefetch), the guidance listing at the trusted revision
(`ls-tree`); the blobs are read by the same cat-file (`contents`: issue 62.9). Where git is older than 2.36 and
refuses --batch-command, `cat-file --batch-check` and `cat-file --batch` answer as before. The index's listing
(`ls-files`, the pack memo's key) is started only once the cache lookups find a file to review (a pack to build):
here none. No `git grep`: a context pack would come from the pack memo.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from agent_support import filter_keeps_all
from fake_api import FakeMessagesAPI, Reply, task_done, tool_use
from gitrepo import commit_all, git, logging_git, make_repo, run_cli, subcommands, write

from ocr_hook.changes import git as changes_git
from ocr_hook.changes.snapshot import GitSnapshot


def test_the_light_paths_start_two_and_five_git_processes(tmp_path: Path, fake_api: FakeMessagesAPI,
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
    # Sizes first (issue 55.3): the raw listing, the blobs' sizes (`info` lines, no content), then the patch of
    # the files within max_file_bytes: a staged 1 GB file is never read. The sizes' cat-file reads the blobs too.
    calls = log.read_text(encoding="utf-8")
    assert subcommands(log) == ["rev-parse", "diff", "cat-file", "diff", "ls-tree"]
    assert "cat-file --batch-command" in calls


def refusing_git(tmp_path: Path) -> Path:
    """A directory with a `git` that refuses --batch-command as git before 2.36 does (a usage error, exit 129) and
    runs the real git for everything else."""
    real = shutil.which("git")
    assert real is not None
    shim = tmp_path / "old-git"
    shim.mkdir()
    (shim / "git").write_text(
        '#!/bin/sh\nfor a in "$@"; do if [ "$a" = "--batch-command" ]; then\n'
        "  echo \"error: unknown option \\`batch-command'\" >&2; exit 129\nfi; done\n"
        f'exec "{real}" "$@"\n', encoding="utf-8")
    (shim / "git").chmod(0o755)
    return shim


@pytest.mark.parametrize("old_git", [False, True], ids=["git-2.36+", "git-before-2.36"])
def test_the_sizes_cat_file_reads_the_blobs_or_both_come_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  old_git: bool) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "a.py", "x = 1\n")
    write(repo, "big.bin", "y" * 5000)
    commit_all(repo, "initial")
    ids = {line.split()[3]: line.split()[1] for line in git(repo, "ls-files", "-s").splitlines()}
    if old_git:
        monkeypatch.setenv("PATH", f"{refusing_git(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(changes_git, "_no_batch_command", [])  # (what an earlier test's git taught this process)
    root = str(repo)
    with changes_git.prefetching():
        sizes = changes_git.blob_sizes(root, [ids["a.py"], ids["big.bin"], "0" * 40])
        assert sizes == {ids["a.py"]: 6, ids["big.bin"]: 5000}
        assert changes_git._no_batch_command == ([True] if old_git else [])
        snapshot = GitSnapshot(root, None, max_bytes=1000)
        try:
            assert snapshot.read_bytes("a.py") == b"x = 1\n"
            # Read by the process that gave the sizes (left in the run's scope), else by a --batch of its own.
            assert snapshot._ask == (b"" if old_git else b"contents ")
            assert changes_git.take_object_reader(root) is None
            assert snapshot.read_bytes("big.bin") is None and snapshot.oversize("big.bin") == 5000  # never read
            assert snapshot.read_text("a.py") == "x = 1\n"
        finally:
            snapshot.close()
