"""Issue 2's bad inputs through the real command line: a one-line error and exit 2, or a correct
result, never a traceback, and the repository exactly as it was."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from gitrepo import commit_all, git, head, make_repo, repo_state, run_cli, write


def assert_one_line_error(proc, *needles: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def preview_json(repo: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    before = repo_state(repo, exact_index=True)
    proc = run_cli(repo, "preview", "--format", "json", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert repo_state(repo, exact_index=True) == before
    return json.loads(proc.stdout)


def files_of(doc: dict) -> dict[str, tuple[str, str, int, int]]:
    return {f["path"]: (f["status"], f["action"], f["added"], f["removed"]) for f in doc["files"]}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    write(repo, "app.py", "def add(a, b):\n    return a + b\n")
    write(repo, "lib.py", "".join(f"line {i}\n" for i in range(30)))
    commit_all(repo, "initial")
    return repo


def _stage_varied_change(repo: Path) -> None:
    write(repo, "app.py", "def add(a, b):\n    return a - b\n")
    git(repo, "mv", "lib.py", "library.py")
    write(repo, "library.py", "".join(f"line {i}\n" for i in range(29)) + "changed\n")
    write(repo, "notes.txt", "note\n")
    git(repo, "add", "-A")


# --- errors: exit 2, one line --------------------------------------------------------------------


def test_not_a_git_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "f.txt").write_text("x\n")
    proc = run_cli(plain, "preview")
    assert_one_line_error(proc, "not a git repository")
    assert [p.name for p in plain.iterdir()] == ["f.txt"]


@pytest.mark.parametrize("args", [
    ("--base", "no-such-branch"),
    ("--commit", "no-such-branch"),
    ("--from", "HEAD", "--to", "no-such-branch"),
])
def test_unknown_ref(repo: Path, args: tuple[str, ...]) -> None:
    before = repo_state(repo, exact_index=True)
    assert_one_line_error(run_cli(repo, "preview", *args), "unknown ref 'no-such-branch'")
    assert repo_state(repo, exact_index=True) == before


def test_shallow_clone_without_the_merge_base(tmp_path: Path) -> None:
    origin = make_repo(tmp_path / "origin")
    write(origin, "f.txt", "a\n")
    commit_all(origin, "A")
    git(origin, "checkout", "-q", "-b", "feature")
    write(origin, "g.txt", "c\n")
    commit_all(origin, "C")
    git(origin, "checkout", "-q", "main")
    write(origin, "f.txt", "b\n")
    commit_all(origin, "B")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", "--no-single-branch", "--branch", "feature",
        f"file://{origin}", str(clone))
    before = repo_state(clone, exact_index=True)
    proc = run_cli(clone, "preview", "--base", "origin/main")
    assert_one_line_error(proc, "shallow", "git fetch --unshallow", "git fetch --deepen")
    assert repo_state(clone, exact_index=True) == before


def test_merge_conflict_in_progress(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    write(repo, "app.py", "other\n")
    commit_all(repo, "other")
    git(repo, "checkout", "-q", "main")
    write(repo, "app.py", "main\n")
    commit_all(repo, "main")
    git(repo, "merge", "-q", "other", check=False)
    before = repo_state(repo, exact_index=True)
    assert_one_line_error(run_cli(repo, "preview"), "merge conflict in progress", "app.py")
    assert repo_state(repo, exact_index=True) == before


def test_path_outside_the_repository(repo: Path, tmp_path: Path) -> None:
    assert_one_line_error(run_cli(repo, "preview", str(tmp_path)), "outside the repository")


# --- inputs that must simply work ----------------------------------------------------------------


EXPECTED_VARIED = {
    "app.py": ("modified", "review", 1, 1),
    "library.py": ("renamed", "review", 1, 1),
    "notes.txt": ("added", "review", 1, 0),
}


def test_user_git_config_cannot_change_what_we_parse(repo: Path, tmp_path: Path) -> None:
    _stage_varied_change(repo)
    plain = files_of(preview_json(repo))
    assert plain == EXPECTED_VARIED
    marker = tmp_path / "external-diff-ran"
    script = tmp_path / "ext-diff.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\necho EXTERNAL\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    user_config = tmp_path / "hostile.gitconfig"
    user_config.write_text(
        "[color]\n\tdiff = always\n\tui = always\n"
        "[diff]\n\tnoprefix = true\n\tmnemonicPrefix = true\n\trenames = false\n"
        f"\texternal = {script}\n\tcontext = 0\n\tsuppressBlankEmpty = true\n\trelative = true\n"
        "[core]\n\tquotePath = true\n"
        "[grep]\n\tcolumn = true\n"
    )
    for env in ({"GIT_CONFIG_GLOBAL": str(user_config)}, {"GIT_EXTERNAL_DIFF": str(script)}):
        assert files_of(preview_json(repo, env=env)) == plain
    assert not marker.exists()


def test_detached_head(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    _stage_varied_change(repo)
    assert files_of(preview_json(repo)) == EXPECTED_VARIED
    commit_all(repo, "on a detached head")
    doc = preview_json(repo, "--commit", "HEAD")
    assert files_of(doc) == EXPECTED_VARIED
    assert files_of(preview_json(repo, "--base", "main")) == EXPECTED_VARIED


NAMES = ["with space.py", 'double"quote.py', "single'quote.py", "tab\there.py", "ünïcødé.py", "文件.py",
         "new\nline.py", "x b/y.py", "-dash.py"]


def test_awkward_file_names(repo: Path) -> None:
    for name in NAMES:
        write(repo, name, "value = 1\n")
    git(repo, "add", "-A")
    doc = files_of(preview_json(repo))
    assert doc == {name: ("added", "review", 1, 0) for name in NAMES}
    commit_all(repo, "names")
    for name in NAMES:
        write(repo, name, "value = 2\n")
    git(repo, "add", "-A")
    assert files_of(preview_json(repo)) == {name: ("modified", "review", 1, 1) for name in NAMES}
    assert files_of(preview_json(repo, "--commit", "HEAD")) == {name: ("added", "review", 1, 0) for name in NAMES}


def test_non_utf8_and_crlf_content(repo: Path) -> None:
    write(repo, "latin1.txt", b"caf\xe9\n\xff\xfe\n")
    write(repo, "dos.txt", b"one\r\ntwo\r\n")
    (repo / os.fsdecode(b"name\xe9.txt")).write_bytes(b"x\n")
    git(repo, "add", "-A")
    doc = files_of(preview_json(repo))
    assert doc == {"latin1.txt": ("added", "review", 2, 0), "dos.txt": ("added", "review", 2, 0),
                   '"name\\351.txt"': ("added", "review", 1, 0)}  # as git shows the name (issue 55.1)
    assert run_cli(repo, "preview").returncode == 0


def test_empty_repository_with_only_staged_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "empty")
    write(repo, "first.py", "x = 1\n")
    write(repo, "second.py", "y = 2\n")
    write(repo, "unstaged.py", "z = 3\n")
    git(repo, "add", "first.py", "second.py")
    doc = preview_json(repo)
    assert files_of(doc) == {"first.py": ("added", "review", 1, 0), "second.py": ("added", "review", 1, 0)}
    assert "empty tree" in doc["scope"]


def test_thousand_staged_files(repo: Path) -> None:
    for i in range(1000):
        write(repo, f"pkg/m{i:04}.py", f"def f{i}():\n    return {i}\n")
    git(repo, "add", "-A")
    doc = preview_json(repo)
    assert len(doc["files"]) == 1000
    reviewed = [f for f in doc["files"] if f["action"] == "review"]
    assert len(reviewed) == 200  # max_files default
    over = [f for f in doc["files"] if f["action"] == "skip"]
    assert all("max_files" in f["reason"] and f["incomplete"] for f in over)


def test_push_scope_without_pre_commit_refs(repo: Path) -> None:
    write(repo, "app.py", "pushed\n")
    commit_all(repo, "second")
    doc = preview_json(repo, "--push")
    assert "root commit" in doc["scope"]
    assert set(files_of(doc)) == {"app.py", "lib.py"}
    env = {"PRE_COMMIT_FROM_REF": "HEAD~1", "PRE_COMMIT_TO_REF": head(repo)}
    assert files_of(preview_json(repo, "--push", env=env)) == {"app.py": ("modified", "review", 1, 2)}
