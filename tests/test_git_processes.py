"""How many git processes the light paths of `ocr-hook review` start (a hook runs them on every commit).

A shim named `git` first on PATH logs every call and runs the real git, so each number below is counted,
not assumed. Nothing staged: `rev-parse` (top and HEAD) and one `diff`. An unchanged re-run answered from
the cache: the same two (the raw listing and the patch come from one `diff`), one `rev-parse` for review
memory's repository and branch, one `cat-file --batch` for every blob (the staged diff names the index's
objects, so no `ls-files`), and the guidance listing at the trusted revision (`ls-tree`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from agent_support import filter_keeps_all
from fake_api import FakeMessagesAPI, Reply, task_done, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write


def shimmed(tmp_path: Path, env: dict[str, str]) -> tuple[dict[str, str], Path]:
    real = shutil.which("git")
    assert real is not None
    shim_dir, log = tmp_path / "shim", tmp_path / "git-calls.log"
    shim_dir.mkdir()
    script = shim_dir / "git"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    path = env.get("PATH") or __import__("os").environ.get("PATH", "")
    return {**env, "PATH": f"{shim_dir}:{path}"}, log


def subcommands(log: Path) -> list[str]:
    """Each logged call's subcommand: the first word after git's own options (`--no-pager`, `-c NAME=VALUE`)."""
    found = []
    for line in log.read_text(encoding="utf-8").splitlines() if log.exists() else []:
        words, i = line.split(" "), 0
        while i < len(words) and words[i].startswith("-"):
            i += 2 if words[i] == "-c" else 1
        found.append(words[i] if i < len(words) else "")
    log.unlink(missing_ok=True)
    return found


def test_the_light_paths_start_two_and_six_git_processes(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                          sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "calc.py", "def add(a, b):\n    return a + b\n")
    commit_all(repo, "initial")
    env, log = shimmed(tmp_path, sdk_env)

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
    # The context pack is part of the result-cache key (DESIGN.md 12), so a cached run builds it too: one
    # listing of the snapshot's files to resolve imports against.
    assert subcommands(log) == ["rev-parse", "diff", "rev-parse", "cat-file", "ls-tree", "ls-files"]
