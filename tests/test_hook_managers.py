"""Every hook manager runs the commit-time review (issue 44): the recipes of docs/hook-managers.md, run as
written with the real pre-commit, prek, lefthook, husky (npm, tests/install_husky.sh) and a plain hook, in real
repositories with a bare remote, against the fake Messages API with a model that could think.

One repository per manager for the module (installing a manager is the slow part); each test leaves it as it
found it (nothing committed to main, the index reset).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from agent_support import is_filter
from e2e_support import CALC_AFTER, CALC_BEFORE, CALC_PATH, comment, comment_turn
from fake_api import Reply, task_done, text, thinking_on
from gitrepo import commit_all, git, make_repo, run_cli, write

from ocr_hook.commands import doctor
from ocr_hook.hookenv import PushInputError, commit_time, pushed_refs

PROJECT = Path(__file__).resolve().parent.parent
DOC = PROJECT / "docs" / "hook-managers.md"
SECTION = {"pre-commit": "pre-commit", "prek": "prek", "lefthook": "lefthook", "husky": "husky",
           "plain": "Plain git hooks"}
SKIP_LINE = {"pre-commit": "SKIP=ocr-hook git commit", "prek": "SKIP=ocr-hook git commit",
             "lefthook": "LEFTHOOK_EXCLUDE=ocr-hook git commit", "husky": "HUSKY=0 git commit",
             "plain": "git commit --no-verify"}
CLEAN = "clean.py"
MODEL = "claude-sonnet-5-5"  # the default model; registered with thinking and every effort
_FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def recipe(section: str) -> tuple[dict[str, str], list[str]]:
    """The files (fenced blocks with a title) and the shell commands (untitled `sh` blocks) of a heading."""
    text_ = DOC.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## |\Z)", text_, re.MULTILINE | re.DOTALL)
    assert match, f"no section {section!r} in {DOC}"
    files, commands = {}, []
    for _lang, info, body in _FENCE.findall(match.group(1)):
        title = re.search(r'title="([^"]+)"', info)
        if title:
            files[title.group(1)] = body
        else:
            commands.append(body)
    return files, commands


def hook_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment (the fake API's, once a test has sdk_env) with this interpreter's scripts first on
    PATH: ocr-hook, pre-commit, prek and lefthook are installed there."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **(extra or {})}


def _husky_modules() -> Path:
    proc = subprocess.run(["bash", str(PROJECT / "tests" / "install_husky.sh")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return PROJECT / ".test-tools" / "husky" / "node_modules"


def _setup(manager: str, root: Path) -> Path:
    remote = root / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo = make_repo(root / "repo")
    write(repo, CALC_PATH, CALC_BEFORE)
    commit_all(repo, "base")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    files, commands = recipe("pre-commit" if manager == "prek" else SECTION[manager])
    if manager == "prek":
        commands = recipe("prek")[1]
    if manager == "husky":
        (repo / "node_modules").symlink_to(_husky_modules())  # what `npm install --save-dev husky` leaves
    for name, body in files.items():
        write(repo, name, body)
    for command in commands:
        proc = subprocess.run(["sh", "-ec", command], cwd=repo, env=hook_env(), capture_output=True, text=True)
        assert proc.returncode == 0, f"{command}: {proc.stdout}{proc.stderr}"
    return repo


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {m: _setup(m, tmp_path_factory.mktemp(m.replace("-", ""))) for m in SECTION}


@pytest.fixture
def fake(fake_api, sdk_env):
    fake_api.models.register(MODEL)
    fake_api.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
    fake_api.script(_opening(CALC_PATH), [comment_turn(comment(severity="high")), task_done()])
    fake_api.script(_opening(CLEAN), [task_done()])
    return fake_api


def _commit(repo: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-q", *args], cwd=repo, env=hook_env(extra), capture_output=True,
                          text=True, timeout=120)


def _opening(path: str) -> str:
    return f"Review the change to `{path}`"


@pytest.mark.parametrize("manager", list(SECTION))
def test_a_commit_under_each_manager_is_a_commit_time_review(manager: str, repos: dict[str, Path], fake) -> None:
    repo = repos[manager]
    write(repo, CLEAN, "def double(x):\n    return 2 * x\n")
    write(repo, CALC_PATH, CALC_AFTER)
    git(repo, "add", CLEAN, CALC_PATH)
    before = git(repo, "rev-parse", "HEAD")
    try:
        proc = _commit(repo, "-m", "two files")
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0, out
        assert git(repo, "rev-parse", "HEAD") == before  # blocked: nothing committed
        assert "Subtraction in add()" in out and f"skip this hook once: {SKIP_LINE[manager]}" in out, out
        reviews = [r for r in fake.requests if not is_filter(r.body)]
        clean = [r for r in reviews if fake_script_of(r) == CLEAN]
        assert len(clean) == 1, [r.first_user_text[:200] for r in reviews]  # one turn: one request
        assert not any(thinking_on(r.body) for r in reviews)  # the quick profile: no thinking
    finally:
        git(repo, "reset", "-q", "--hard", before.strip())
        (repo / CLEAN).unlink(missing_ok=True)


def fake_script_of(request) -> str:
    """Which of the two files a review request is about (the first user message names the file reviewed)."""
    return next((p for p in (CLEAN, CALC_PATH) if _opening(p) in request.first_user_text), "")


def _push(repo: Path, *refs: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "push", "-q", "origin", *refs], cwd=repo, env=hook_env(), capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("manager", ["husky", "lefthook"])
def test_a_push_of_another_branch_with_a_high_finding_is_refused(manager: str, repos: dict[str, Path],
                                                                  fake) -> None:
    repo = repos[manager]
    git(repo, "switch", "-q", "-c", f"feat-{manager}")
    write(repo, CALC_PATH, CALC_AFTER)
    git(repo, "commit", "-q", "--no-verify", "-am", "subtract")
    git(repo, "switch", "-q", "main")
    proc = _push(repo, f"feat-{manager}")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Subtraction in add()" in out, out
    assert _on_remote(repo) == ""  # the remote did not get it


def _on_remote(repo: Path) -> str:
    return git(repo.parent / "remote.git", "branch", "--list", "feat-*", "two-*")


def test_a_plain_pre_push_of_two_other_branches_reviews_both_and_refuses_the_push(repos: dict[str, Path],
                                                                                 fake) -> None:
    repo = repos["plain"]
    for branch, path, body in (("two-a", CALC_PATH, CALC_AFTER), ("two-b", CLEAN, "def one():\n    return 1\n")):
        git(repo, "switch", "-q", "-c", branch, "main")
        write(repo, path, body)
        git(repo, "add", path)
        git(repo, "commit", "-q", "--no-verify", "-m", branch)
    git(repo, "switch", "-q", "main")
    proc = _push(repo, "two-a", "two-b")  # from main: neither is the current branch
    assert proc.returncode != 0 and "Subtraction in add()" in proc.stderr + proc.stdout, proc.stderr
    reviewed = {fake_script_of(r) for r in fake.requests if not is_filter(r.body)}
    assert reviewed == {CALC_PATH, CLEAN}
    assert _on_remote(repo) == ""


def test_review_push_with_no_range_says_so_and_exits_2(repos: dict[str, Path], sdk_env) -> None:
    proc = subprocess.run([sys.executable, "-m", "ocr_hook", "review", "--push"], cwd=repos["plain"],
                          env=hook_env(), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "no range to review" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_doctor_names_the_manager_of_each_hook(repos: dict[str, Path]) -> None:
    for manager, repo in repos.items():
        checks = doctor.check_pre_commit(doctor._Context(str(repo), hook_env(), None, root=str(repo)))
        lines = [f"{c.name}: {c.status}: {c.message}" for c in checks]
        if manager == "pre-commit":
            assert any("ocr-hook (pre-commit) configured and installed" in line for line in lines), lines
        else:
            assert f"hooks: {doctor.OK}: pre-commit: installed by {manager}, runs ocr-hook" in lines[0], lines
        if manager in ("husky", "plain", "lefthook"):
            assert f"pre-push: installed by {manager}, runs ocr-hook" in lines[1], lines


def test_doctor_fixes_name_the_managers_own_commands(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "bare-lefthook")
    write(repo, "lefthook.yml", "pre-commit:\n  commands:\n    lint:\n      run: true\n")
    proc = subprocess.run(["lefthook", "install"], cwd=repo, env=hook_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    (check,) = doctor.check_pre_commit(doctor._Context(str(repo), hook_env(), None, root=str(repo)))
    assert check.status == doctor.WARN and "installed by lefthook, which does not run ocr-hook" in check.message
    assert "lefthook install" in check.fix and "pre-commit install" not in check.fix


def test_push_given_to_the_ocr_hook_id_names_ocr_hook_push(repos: dict[str, Path]) -> None:
    proc = run_cli(repos["plain"], "review", "--staged", "--push")  # the `ocr-hook` id's entry, plus args: [--push]
    assert proc.returncode == 2 and "use the hook id `ocr-hook-push`" in proc.stderr, proc.stderr


def test_the_pre_push_lines() -> None:
    new, old, zero = "a" * 40, "b" * 40, "0" * 40
    lines = (f"refs/heads/feat {new} refs/heads/feat {zero}\n"  # a new branch
             f"refs/heads/main {new} refs/heads/main {old}\n"
             f"(delete) {zero} refs/heads/gone {old}\n")
    refs = pushed_refs(lines)
    assert [(r.local_ref, r.new) for r in refs] == [("refs/heads/feat", True), ("refs/heads/main", False)]
    assert pushed_refs("") == []
    with pytest.raises(PushInputError, match="line 1 is not a pre-push line"):
        pushed_refs("refs/heads/feat HEAD\n")


def test_commit_time_is_what_git_or_the_manager_says() -> None:
    in_hook = {"GIT_INDEX_FILE": ".git/index", "GIT_EXEC_PATH": "/usr/lib/git-core"}
    assert commit_time(in_hook) and commit_time({"PRE_COMMIT": "1"})
    assert not commit_time({}) and not commit_time({"GIT_INDEX_FILE": "/tmp/index"})  # a script's own index
    assert not commit_time({**in_hook, "OCR_HOOK_COMMIT_TIME": "0"}) and commit_time({"OCR_HOOK_COMMIT_TIME": "1"})
