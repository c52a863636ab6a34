"""Every hook manager runs the commit-time review (issue 44): the recipes of docs/hook-managers.md, run as
written with the real pre-commit, prek, lefthook, husky (npm, tests/install_husky.sh) and a plain hook, in real
repositories with a bare remote, against the fake Messages API with a model that could think.

One repository per manager for the module (installing a manager is the slow part); each test leaves it as it
found it (nothing committed to main, the index reset). The commits' reviews are served by one warm worker for
the module, as on a developer's machine (half the module's time without it).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_support import is_filter
from ci_repos import without_ci
from e2e_support import CALC_AFTER, CALC_BEFORE, CALC_PATH, comment, comment_turn
from fake_api import Reply, task_done, text, thinking_on
from gitrepo import commit_all, git, make_repo, run_cli, write

from ocr_hook.commands import doctor
from ocr_hook.commands.doctor_hooks import running_manager
from ocr_hook.hookenv import PushInputError, commit_time, pushed_refs, skip_hint

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


_WARM: dict[str, str] = {}  # the module's warm worker (see `warm`), once it has one


def hook_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment (the fake API's, once a test has sdk_env) with this interpreter's scripts first on
    PATH: ocr-hook, pre-commit, prek and lefthook are installed there."""
    env = {**without_ci(dict(os.environ)), **_WARM}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **(extra or {})}


@pytest.fixture(scope="module", autouse=True)
def warm() -> Iterator[None]:
    """The hooks' reviews served by a warm worker, as on a developer's machine: the first commit of the module
    starts it, and every later hook run (whichever manager, the same installed ocr-hook) hands it its review
    instead of importing the SDK again. Stopped, and nothing left running, at the end."""
    runtime = Path(tempfile.mkdtemp(prefix="ocr-w-"))  # short: a socket path's limit
    runtime.chmod(0o700)
    _WARM.update({"OCR_HOOK_WARM": "auto", "XDG_RUNTIME_DIR": str(runtime)})
    try:
        yield
    finally:
        subprocess.run([sys.executable, "-m", "ocr_hook", "warm", "stop"], env=hook_env(), capture_output=True,
                       timeout=60)
        _WARM.clear()
        shutil.rmtree(runtime, ignore_errors=True)


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
    # As after `git clone`: lefthook finds the files a pre-push *command* would see from origin/HEAD, and with it
    # set skips one for a push of another branch (the recipe's script must not be).
    git(repo, "remote", "set-head", "origin", "main")
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


def _skipping(line: str) -> tuple[dict[str, str], list[str]]:
    """The variables and options a skip hint (`SKIP=ocr-hook git commit ...`) sets, to run it as written."""
    words = line.replace("...", "").split()
    return (dict(w.split("=", 1) for w in words[:words.index("git")]),
            [w for w in words if w.startswith("--")])


def _ours(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """What ocr-hook printed, among the manager's lines (prek indents a hook's output)."""
    return [line.strip() for line in (proc.stdout + proc.stderr).splitlines() if line.strip().startswith("ocr-hook:")]


@pytest.mark.parametrize("manager", list(SECTION))
def test_a_commit_under_each_manager_is_a_commit_time_review(manager: str, repos: dict[str, Path], fake) -> None:
    repo = repos[manager]
    before = git(repo, "rev-parse", "HEAD").strip()
    try:
        write(repo, CLEAN, "def double(x):\n    return 2 * x\n")
        git(repo, "add", CLEAN)
        proc = _commit(repo, "-m", "clean")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        (request,) = fake.requests  # one turn: one request, and no filter for a clean file
        assert fake_script_of(request) == CLEAN  # the quick profile, though the model could think:
        assert not thinking_on(request.body) and request.body["output_config"] == {"effort": "low"}
        (line,) = _ours(proc)  # brief: the verdict alone
        assert line.startswith("ocr-hook: PASSED") and "no findings" in line, proc.stdout + proc.stderr

        clean_tip = git(repo, "rev-parse", "HEAD")
        write(repo, CALC_PATH, CALC_AFTER)
        git(repo, "add", CALC_PATH)
        proc = _commit(repo, "-m", "subtract")
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0, out
        assert git(repo, "rev-parse", "HEAD") == clean_tip  # blocked: nothing committed
        assert "Subtraction in add()" in out and f"skip this hook once: {SKIP_LINE[manager]} ..." in out, out
        assert not any(thinking_on(r.body) for r in fake.requests)
        # The hint, run as written with the real manager: the hook is skipped, the commit made, nothing sent.
        sent = len(fake.requests)
        variables, options = _skipping(SKIP_LINE[manager])
        proc = _commit(repo, *options, "-m", "subtract", **variables)
        assert proc.returncode == 0 and git(repo, "rev-parse", "HEAD") != clean_tip, proc.stdout + proc.stderr
        assert len(fake.requests) == sent
    finally:
        git(repo, "reset", "-q", "--hard", before)
        (repo / CLEAN).unlink(missing_ok=True)


def test_a_commit_under_a_plain_hook_starts_the_warm_worker(repos: dict[str, Path], fake) -> None:
    """`warm: auto` at commit time, with no PRE_COMMIT: the plain hook's review leaves a worker behind."""
    repo, runtime = repos["plain"], Path(tempfile.mkdtemp(prefix="ocr-w-"))  # short: a socket path's limit
    runtime.chmod(0o700)
    env = {**without_ci(hook_env()), "OCR_HOOK_WARM": "auto", "XDG_RUNTIME_DIR": str(runtime)}
    before = git(repo, "rev-parse", "HEAD").strip()
    try:
        write(repo, CLEAN, "def double(x):\n    return 2 * x\n")
        git(repo, "add", CLEAN)
        proc = subprocess.run(["git", "commit", "-q", "-m", "clean"], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        lock = os.open(runtime / "ocr-hook" / "spawn.lock", os.O_RDWR)  # absent: no worker was started
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the starting worker holds it until it listens
        finally:
            os.close(lock)
    finally:
        stop = subprocess.run([sys.executable, "-m", "ocr_hook", "warm", "stop"], env=env, capture_output=True,
                              text=True, timeout=60)
        git(repo, "reset", "-q", "--hard", before)
        (repo / CLEAN).unlink(missing_ok=True)
        shutil.rmtree(runtime, ignore_errors=True)
    assert stop.stdout == "stopped 1 warm worker(s)\n", stop.stdout + stop.stderr


def fake_script_of(request) -> str:
    """Which of the two files a review request is about (the first user message names the file reviewed)."""
    return next((p for p in (CLEAN, CALC_PATH) if _opening(p) in request.first_user_text), "")


def _push(repo: Path, *refs: str, options: tuple[str, ...] = (), **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "push", "-q", *options, "origin", *refs], cwd=repo, env=hook_env(extra),
                          capture_output=True, text=True, timeout=120)


PUSH_SKIP = {"husky": "HUSKY=0 git push", "lefthook": "LEFTHOOK=0 git push", "plain": "git push --no-verify"}


def _reviews(fake) -> dict[str, int]:
    """Review requests (not the filter's) per file."""
    found: dict[str, int] = {}
    for request in fake.requests:
        if not is_filter(request.body):
            found[fake_script_of(request)] = found.get(fake_script_of(request), 0) + 1
    return found


@pytest.mark.parametrize("manager", list(PUSH_SKIP))
def test_a_pre_push_reviews_every_pushed_branch_against_what_the_remote_has(manager: str, repos: dict[str, Path],
                                                                           fake) -> None:
    """From main, `git push origin feat two` with a high finding on feat: refused, both new branches reviewed
    (only their own commits), nothing reaches the remote; the skip hint pushes them; a later push of one branch
    reviews only what the remote lacks, beside a deletion, which is skipped."""
    repo = repos[manager]
    feat, two = f"feat-{manager}", f"two-{manager}"
    for branch, path, body in ((feat, CALC_PATH, CALC_AFTER), (two, CLEAN, "def one():\n    return 1\n")):
        git(repo, "switch", "-q", "-c", branch, "main")
        write(repo, path, body)
        git(repo, "add", path)
        git(repo, "commit", "-q", "--no-verify", "-m", branch)
    git(repo, "switch", "-q", "main")
    proc = _push(repo, feat, two)  # neither is the current branch
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Subtraction in add()" in out, out
    assert f"skip this hook once: {PUSH_SKIP[manager]} ..." in out, out
    # Two turns for calc.py (the comment, then task_done), one for clean.py; calc.py unchanged on `two` is not
    # reviewed: a new branch is reviewed against what the remote has, not from the root.
    assert _reviews(fake) == {CALC_PATH: 2, CLEAN: 1}
    assert _on_remote(repo) == ""

    sent = len(fake.requests)
    variables, options = _skipping(PUSH_SKIP[manager])
    proc = _push(repo, feat, two, options=tuple(options), **variables)
    assert proc.returncode == 0 and len(fake.requests) == sent, proc.stdout + proc.stderr
    assert _on_remote(repo).split() == [feat, two]

    git(repo, "switch", "-q", two)
    write(repo, CLEAN, "def one():\n    return 1 * 1\n")
    git(repo, "commit", "-q", "--no-verify", "-am", "again")
    git(repo, "switch", "-q", "main")
    proc = _push(repo, two, f":{feat}")  # an existing branch (from the remote's tip) and a deletion (skipped)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _reviews(fake) == {CALC_PATH: 2, CLEAN: 2} and _on_remote(repo).split() == [two]

    # A push that only deletes runs the hook, which lets it through; once is enough (the lines are git's).
    sent = len(fake.requests)
    proc = _push(repo, f":{two}", options=() if manager == "plain" else ("--no-verify",))
    assert proc.returncode == 0 and len(fake.requests) == sent, proc.stdout + proc.stderr
    assert manager != "plain" or "the push only deletes refs: nothing to review" in proc.stderr, proc.stderr
    assert _on_remote(repo) == ""
    # Everything up to date: git runs the hook with no line at all, which is no reason to fail the push.
    proc = _push(repo, "main")
    assert proc.returncode == 0 and "the push sends nothing" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert len(fake.requests) == sent


def _on_remote(repo: Path) -> str:
    return git(repo.parent / "remote.git", "for-each-ref", "--format=%(refname:short)", "refs/heads/feat-*",
               "refs/heads/two-*")


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


_PUSH_HOOK = """\
      - id: ocr-hook-push
        name: ocr-hook push
        entry: ocr-hook review --push
        language: system
        pass_filenames: false
        stages: [pre-push]
"""


def _hook_checks(repo: Path, install: list[str]) -> list[tuple[str, str, str]]:
    proc = subprocess.run(install, cwd=repo, env=hook_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return [(c.status, c.message, c.fix)
            for c in doctor.check_pre_commit(doctor._Context(str(repo), hook_env(), None, root=str(repo)))]


def test_doctor_fixes_name_the_managers_own_commands(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "no-ocr-hook")
    write(repo, "lefthook.yml", "pre-commit:\n  commands:\n    lint:\n      run: true\n")
    ((status, message, fix),) = _hook_checks(repo, ["lefthook", "install"])
    assert status == doctor.WARN and "installed by lefthook, which does not run ocr-hook" in message
    assert "lefthook install" in fix and "pre-commit install" not in fix

    repo = make_repo(tmp_path / "plain-other")
    write(repo, ".git/hooks/pre-commit", "#!/bin/sh\nexec make lint\n")
    ((status, message, fix),) = _hook_checks(repo, ["chmod", "+x", ".git/hooks/pre-commit"])
    assert (status, message) == (doctor.WARN, "pre-commit: installed by plain, which does not run ocr-hook")
    assert fix == "add `ocr-hook review --staged` to the pre-commit hook (docs/hook-managers.md, plain git hooks)"

    repo = make_repo(tmp_path / "husky-other")
    (repo / "node_modules").symlink_to(_husky_modules())
    write(repo, ".husky/pre-push", "npm test\n")
    _commit_row, (status, message, fix) = _hook_checks(repo, ["npx", "--no-install", "husky"])  # husky 9: every hook
    assert (status, message) == (doctor.WARN, "pre-push: installed by husky, which does not run ocr-hook "
                                              "(.husky/pre-push)")
    assert fix == "add the line `ocr-hook review --push` to .husky/pre-push (docs/hook-managers.md, husky)"

    # prek installs the commit hook only (its default), while the configuration also reviews pushes.
    repo = make_repo(tmp_path / "prek-half")
    files, _ = recipe("pre-commit")
    write(repo, ".pre-commit-config.yaml", files[".pre-commit-config.yaml"] + _PUSH_HOOK)
    commit_row, push_row = _hook_checks(repo, ["prek", "install"])
    assert commit_row[:2] == (doctor.OK, "pre-commit: installed by prek, runs ocr-hook (.pre-commit-config.yaml)")
    assert push_row == (doctor.WARN, "pre-push: ocr-hook configured for it, but prek did not install it",
                        "prek install --hook-type pre-push")


def test_doctor_reads_each_lefthook_hook_on_its_own(tmp_path: Path) -> None:
    """ocr-hook in lefthook's pre-commit section says nothing of its pre-push; a pre-push *command* (skipped when
    the checked-out branch has nothing to push) or a script without use_stdin does not review a push."""
    commit = "pre-commit:\n  commands:\n    ocr-hook:\n      run: ocr-hook review --staged\n"
    cases = {
        "pre-push:\n  commands:\n    test:\n      run: make test\n": "which does not run ocr-hook",
        "pre-push:\n  commands:\n    ocr-hook-push:\n      run: ocr-hook review --push\n      use_stdin: true\n":
            "runs ocr-hook as the command 'ocr-hook-push', which lefthook skips",
        "pre-push:\n  scripts:\n    \"ocr-hook-push.sh\":\n      runner: sh\n":
            "without `use_stdin: true`: every push fails (exit 2)",
    }
    for number, (push, problem) in enumerate(cases.items()):
        repo = make_repo(tmp_path / f"lefthook-{number}")
        write(repo, "lefthook.yml", commit + push)
        write(repo, ".lefthook/pre-push/ocr-hook-push.sh", "exec ocr-hook review --push\n")
        commit_row, push_row = _hook_checks(repo, ["lefthook", "install"])
        assert commit_row[0] == doctor.OK
        assert push_row[0] == doctor.WARN and problem in push_row[1], push_row
        assert "a script (with `use_stdin: true`)" in push_row[2] and "lefthook install" in push_row[2]
    # The script without use_stdin, pushed: lefthook hands it an empty pipe, which is no pass.
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "remote.git")], check=True)
    commit_all(repo, "base")
    proc = subprocess.run(["git", "push", "-q", str(tmp_path / "remote.git"), "main"], cwd=repo, env=hook_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "no range to review" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


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


def test_pre_commit_forced_under_lefthook_still_names_lefthooks_skip(repos: dict[str, Path]) -> None:
    forced = {"PRE_COMMIT": "1"}  # what a user may export by hand; lefthook ignores SKIP=
    assert skip_hint(running_manager(str(repos["lefthook"]), "staged", forced), "staged", forced) == \
        "LEFTHOOK_EXCLUDE=ocr-hook git commit ..."
    assert running_manager(str(repos["prek"]), "staged", {}) is None  # prek's hook, but a run in a terminal


def test_commit_time_is_what_git_or_the_manager_says() -> None:
    in_hook = {"GIT_INDEX_FILE": ".git/index", "GIT_EXEC_PATH": "/usr/lib/git-core"}
    assert commit_time(in_hook) and commit_time({"PRE_COMMIT": "1"})
    assert not commit_time({}) and not commit_time({"GIT_INDEX_FILE": "/tmp/index"})  # a script's own index
    assert not commit_time({**in_hook, "OCR_HOOK_COMMIT_TIME": "0"}) and commit_time({"OCR_HOOK_COMMIT_TIME": "1"})
