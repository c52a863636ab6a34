"""The real pre-commit runs our hooks from a committed copy of this repository, pinned by repository and
commit the way a user's .pre-commit-config.yaml pins them.

pre-commit builds the hook's environment (a virtualenv with ocr-hook and its dependencies) once per store and
commit. `pre-commit try-repo` would build it again for every call, in a store of its own (about 30 s each);
a configuration and a module-wide PRE_COMMIT_HOME build it once for all the tests here (xdist runs a
module on one worker: `--dist loadfile` in pyproject.toml).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import forked_cli
import pytest
import yaml
from agent_support import is_filter
from fake_api import Reply, first_user_text, text, tool_use
from gitrepo import commit_all, git, head, make_repo, repo_state, write

PROJECT = Path(__file__).resolve().parent.parent
PRE_COMMIT = [sys.executable, "-m", "pre_commit"]


@pytest.fixture(scope="module")
def hook_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This project's tracked files, committed in a scratch repository pre-commit can clone."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT, capture_output=True, check=True).stdout
    dest = tmp_path_factory.mktemp("hook-src")
    for rel in filter(None, listed.decode().split("\0")):
        src = PROJECT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    make_repo(dest)
    commit_all(dest, "snapshot of ocr-hook for try-repo")
    return dest


@pytest.fixture(autouse=True)
def filter_answers(fake_api) -> dict[str, object]:
    """The review filter keeps every comment, unless a test puts another answer under a text its request holds."""
    answers: dict[str, object] = {}

    def respond(body):
        opening = first_user_text(body)
        return next((turn for match, turn in answers.items() if match in opening), Reply([text('{"wrong": []}')]))

    fake_api.handle(is_filter, respond)
    return answers


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture(scope="module")
def hook_config(hook_source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """docs/recipes/pre-commit.md's configuration (the README's quickstart), pointed at the committed copy,
    outside the target repository (as try-repo keeps its own)."""
    page = (PROJECT / "docs" / "recipes" / "pre-commit.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(repos:.*?)```", page, re.S)
    assert block, "docs/recipes/pre-commit.md has no .pre-commit-config.yaml"
    recipe = yaml.safe_load(block.group(1))
    [repo] = recipe["repos"]
    assert [h["id"] for h in repo["hooks"]] == ["ocr-hook", "ocr-hook-push"], repo
    repo.update(repo=str(hook_source), rev=git(hook_source, "rev-parse", "HEAD").strip())
    config = tmp_path_factory.mktemp("pre-commit-config") / ".pre-commit-config.yaml"
    config.write_text(yaml.safe_dump(recipe))
    return config


def _run_hook(target: Path, config: Path, home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **env, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run([*PRE_COMMIT, "run", "--config", str(config), *args, "--verbose"], cwd=target,
                          env=full_env, capture_output=True, text=True, timeout=600)


def _target_repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "target")
    write(repo, "app.py", b"def add(a, b):\n    return a + b\n")
    commit_all(repo, "initial")
    write(repo, "app.py", b"def add(a, b):\n    return a - b\n")
    git(repo, "add", "app.py")
    return repo


def test_commit_hook_blocks_on_a_high_finding_and_changes_nothing(
        tmp_path, hook_config, pre_commit_home, fake_api, sdk_env):
    repo = _target_repo(tmp_path)
    fake_api.script("app.py", [
        Reply([tool_use("code_comment", {"comments": [{
            "content": "Subtraction where the function name promises addition.",
            "existing_code": "return a - b", "suggestion_code": "return a + b",
            "severity": "high", "category": "bug"}]})]),
        Reply([tool_use("task_done", {"state": "DONE"})]),
    ])
    fake_api.models.register("claude-sonnet-5-5")  # a model that could think, and take any effort
    before = repo_state(repo)
    proc = _run_hook(repo, hook_config, pre_commit_home, sdk_env, "ocr-hook")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Failed" in proc.stdout
    assert "app.py:2" in proc.stdout
    assert any(r.path.endswith("/messages") for r in fake_api.requests)
    assert repo_state(repo) == before
    # pre-commit sets PRE_COMMIT=1, so effort auto is quick: no thinking, effort low (DESIGN.md section 8).
    main = [r.body for r in fake_api.requests if "Review the change to `app.py`" in r.first_user_text]
    assert main and all("thinking" not in b and b["output_config"] == {"effort": "low"} for b in main)
    assert "(1 quick)" in proc.stdout


def test_commit_hook_fails_with_exit_2_without_a_key(tmp_path, hook_config, pre_commit_home,
                                                     sdk_env_without_key):
    repo = _target_repo(tmp_path)
    # no ocr-hook on the user's PATH: the delegate command it prints must still work pasted (issue 58 item 20)
    own = os.path.realpath(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p and os.path.realpath(p) != own)
    env = {**sdk_env_without_key, "PATH": path}
    proc = _run_hook(repo, hook_config, pre_commit_home, env, "ocr-hook")
    assert proc.returncode == 1  # pre-commit reports any non-zero hook exit as its own 1
    assert "exit code: 2" in proc.stdout
    assert "ANTHROPIC_API_KEY" in proc.stdout
    assert "Traceback" not in proc.stdout
    command = re.search(r"as the reviewer, no key: (.+); see docs/delegate\.md$", proc.stdout, re.M).group(1)
    assert command.startswith(str(pre_commit_home)) and command.endswith("/bin/ocr-hook delegate start"), command
    started = subprocess.run(command, shell=True, cwd=repo, env={**os.environ, **env},
                             capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stdout + started.stderr
    assert "app.py" in [f["path"] for f in json.loads(started.stdout)["files"]]


def test_push_hook_reviews_the_pushed_range(tmp_path, hook_config, pre_commit_home, fake_api, sdk_env):
    repo = _target_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD").strip()
    commit_all(repo, "subtract")
    head = git(repo, "rev-parse", "HEAD").strip()
    fake_api.script("app.py", [
        Reply([tool_use("code_comment", {"comments": [{
            "content": "Subtraction where the function name promises addition.",
            "existing_code": "return a - b", "severity": "critical", "category": "bug"}]})]),
    ])
    proc = _run_hook(repo, hook_config, pre_commit_home, sdk_env, "ocr-hook-push", "--hook-stage", "pre-push",
                     "--from-ref", base, "--to-ref", head)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "app.py:2" in proc.stdout


# --- through `git commit` (issue 21): what a developer sees, without pre-commit's --verbose flag ----------------

LOW = "Subtraction where the function name promises addition."


def _installed(target: Path, config: Path, home: Path, env: dict[str, str]) -> dict[str, str]:
    """pre-commit installed as the repository's pre-commit hook (as `pre-commit install` does for a user)."""
    full_env = {**os.environ, **env, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    subprocess.run([*PRE_COMMIT, "install", "--config", str(config)], cwd=target, env=full_env, check=True,
                   capture_output=True, timeout=120)
    return full_env


def _commit(target: Path, env: dict[str, str], **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "commit", "-m", "change"], cwd=target, env={**env, **extra}, capture_output=True,
                          text=True, timeout=600)


def _hook_output(proc: subprocess.CompletedProcess) -> list[str]:
    """The lines our hook printed: pre-commit shows them after its `- duration:` line."""
    out = (proc.stdout + proc.stderr).splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("- duration:")) + 1
    return [line for line in out[start:] if line.strip()]


def _script(fake_api, severity: str, suggestion: str | None = "return a + b") -> None:
    entry = {"content": LOW, "existing_code": "return a - b", "severity": severity, "category": "bug"}
    if suggestion:
        entry["suggestion_code"] = suggestion
    fake_api.script("app.py", [Reply([tool_use("code_comment", {"comments": [entry]})]),
                               Reply([tool_use("task_done", {"state": "DONE"})])])


def test_a_commit_with_a_low_finding_passes_and_shows_it_briefly(tmp_path, hook_config, pre_commit_home, fake_api,
                                                                 sdk_env):
    repo = _target_repo(tmp_path)
    _script(fake_api, "low")
    env = _installed(repo, hook_config, pre_commit_home, sdk_env)
    before = head(repo)
    proc = _commit(repo, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert head(repo) != before
    lines = _hook_output(proc)
    assert len(lines) == 2, lines  # a line per finding, then the verdict with the summary
    assert lines[0].startswith("app.py:2 [LOW] bug ") and lines[0].endswith(LOW)
    assert lines[1].startswith("ocr-hook: PASSED — review complete") and "1 file reviewed" in lines[1]


def test_a_clean_commit_shows_one_line(tmp_path, hook_config, pre_commit_home, fake_api, sdk_env):
    repo = _target_repo(tmp_path)
    env = _installed(repo, hook_config, pre_commit_home, sdk_env)
    proc = _commit(repo, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout + proc.stderr  # pre-commit's own verdict on the hook
    [line] = _hook_output(proc)
    assert line.startswith("ocr-hook: PASSED — review complete") and "no findings" in line


def test_a_blocked_commit_says_what_to_do_and_each_way_out_works(tmp_path, hook_config, pre_commit_home, fake_api,
                                                                  sdk_env):
    repo = _target_repo(tmp_path)
    _script(fake_api, "high")
    env = _installed(repo, hook_config, pre_commit_home, sdk_env)
    before = head(repo)
    proc = _commit(repo, env)
    assert proc.returncode == 1 and head(repo) == before
    out = "\n".join(_hook_output(proc))
    # The CLI's report, from a cache directory of its own: the dismiss below finds the finding only in what the
    # hook's review left.
    report = json.loads(forked_cli.run(["review", "-q", "--format", "json", "--cache-dir", str(tmp_path / "cli-cache")],
                                       cwd=repo, env=env, timeout=120).stdout)
    short = report["findings"][0]["fingerprint"][:8]
    assert f"[HIGH] bug  {short}" in out
    hint = out[out.index("What to do next:"):]
    assert "apply the suggested fixes (the work tree and the index; no new review): ocr-hook apply" in hint
    assert f'ocr-hook dismiss {short} --reason "..."' in hint
    assert "SKIP=ocr-hook git commit ..." in hint
    # The id as the developer reads it in the blocked commit's output.
    assert re.search(r"ocr-hook dismiss ([0-9a-f]{8}) ", proc.stdout + proc.stderr).group(1) == short
    # The skip the hint names works with the real pre-commit: the hook is skipped, the commit made.
    skipped = _commit(repo, env, SKIP="ocr-hook")
    assert skipped.returncode == 0 and "Skipped" in skipped.stdout + skipped.stderr
    assert head(repo) != before

    # Back to the blocked state (the change staged again, the skipped commit undone; nothing ran in between):
    # dismiss by the short id finds it in the hook's review memory, and the commit then passes.
    git(repo, "reset", "-q", "--soft", before)
    assert git(repo, "diff", "--cached", "--name-only").split() == ["app.py"]
    reason = "subtraction on purpose: add() receives negated amounts"
    dismissed = forked_cli.run(["dismiss", short, "--reason", reason], cwd=repo, env=env, timeout=120)
    assert dismissed.returncode == 0, dismissed.stderr
    assert "git add .ocr-hook/dismissed.yaml" in dismissed.stdout
    git(repo, "add", ".ocr-hook/dismissed.yaml")
    passed = _commit(repo, env)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    lines = _hook_output(passed)
    assert any(line.startswith("app.py:2 [HIGH] bug ") and line.endswith(f"dismissed: {reason}") for line in lines)
    assert any("dismissal(s) that the trusted revision" in line for line in lines)  # named: it is in this commit


def _draft_sub_staged(tmp_path: Path) -> Path:
    """A repository with `sub()` staged as a draft that adds instead of subtracting (`# draft` on its line)."""
    repo = make_repo(tmp_path / "target")
    write(repo, "app.py", "def add(a, b):\n    return a + b\n")
    commit_all(repo, "initial")
    write(repo, "app.py", "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b  # draft\n")
    git(repo, "add", "app.py")
    return repo


def test_the_printed_fix_step_applies_and_the_next_commit_is_a_quick_re_review(tmp_path, hook_config,
                                                                              pre_commit_home, fake_api, sdk_env):
    """Issue 54 items 1-2: the blocked commit's next step, run as printed in a shell, applies the fix to the
    index with no request; the commit after it passes through review memory at quick effort, never a second
    full review."""
    repo = _draft_sub_staged(tmp_path)
    first = {"content": "sub() adds instead of subtracting.", "existing_code": "return a + b  # draft",
             "suggestion_code": "return a - b", "severity": "high", "category": "bug"}
    fake_api.script("+    return a + b  # draft", [Reply([tool_use("code_comment", {"comments": [first]})]),
                                                   Reply([tool_use("task_done", {"state": "DONE"})])])
    fake_api.script("+    return a - b", [Reply([tool_use("task_done", {"state": "DONE"})])])
    fake_api.models.register("claude-sonnet-5-5")  # a model that takes an effort: quick shows as effort low
    env = _installed(repo, hook_config, pre_commit_home, sdk_env)
    # A pre-commit user who never installed ocr-hook: no ocr-hook on PATH but the one pre-commit's environment
    # puts there for the hook (issue 58 item 20).
    own = os.path.realpath(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p and os.path.realpath(p) != own)
    assert shutil.which("ocr-hook", path=env["PATH"]) is None
    before = head(repo)
    blocked = _commit(repo, env)
    assert blocked.returncode == 1 and head(repo) == before
    out = "\n".join(_hook_output(blocked))
    step = re.search(r"^  - apply the suggested fixes.*?: (.+)$", out, re.M).group(1)
    # The step names the script in pre-commit's own environment: it works from the user's shell.
    assert step.startswith(str(pre_commit_home)) and step.endswith("/bin/ocr-hook apply"), step
    requests = len(fake_api.requests)
    # As printed, in that user's shell.
    applied = subprocess.run(step, shell=True, cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "applied 1 fix to the work tree and the index" in applied.stdout
    assert len(fake_api.requests) == requests  # no model request
    fixed = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    assert git(repo, "show", ":app.py") == fixed == (repo / "app.py").read_text()  # the index, for the commit

    proc = _commit(repo, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert head(repo) != before
    lines = _hook_output(proc)
    assert any(line.startswith("resolved since the last review: app.py:6 [HIGH] bug") for line in lines), lines
    second = [r.body for r in fake_api.requests[requests:] if r.path.endswith("/messages") and not is_filter(r.body)]
    assert second, "the commit after the fix was not reviewed"
    # One conversation, the re-review (its first message is the interdiff's focus), at the quick profile.
    assert all("FOCUS OF THIS REVIEW" in first_user_text(b) for b in second), [first_user_text(b)[:200] for b in second]
    assert all("thinking" not in b and b["output_config"] == {"effort": "low"} for b in second)
    assert "(1 quick)" in lines[-1]


def test_every_command_a_blocked_commit_prints_works_pasted_without_ocr_hook_on_path(
        tmp_path, hook_config, pre_commit_home, fake_api, sdk_env):
    """Issue 58 item 20: a pre-commit user who never installed ocr-hook. Beside the fix and dismiss steps, the
    text report's "see `ocr-hook dismissed`" names pre-commit's own script, and pasted into that user's shell it
    lists the dismissal (a bare `ocr-hook` there is "command not found")."""
    from ocr_hook.findings.model import fingerprint

    repo = make_repo(tmp_path / "target")
    write(repo, "app.py", b"def add(a, b):\n    return a + b\n")
    write(repo, "lib.py", b"def half(x):\n    return x / 2\n")
    write(repo, ".ocr-hook/dismissed.yaml",
          f"dismissed:\n- fingerprint: {fingerprint('lib.py', 'bug', 'return x // 2')}\n  path: lib.py\n"
          "  category: bug\n  severity: high\n  message: Floor division drops the remainder.\n"
          "  reason: whole units on purpose\n  on: 2026-12-01\n")
    commit_all(repo, "initial")
    write(repo, "app.py", b"def add(a, b):\n    return a - b\n")
    write(repo, "lib.py", b"def half(x):\n    return x // 2\n")
    git(repo, "add", "app.py", "lib.py")
    _script(fake_api, "high")
    fake_api.script("Review the change to `lib.py`", [
        Reply([tool_use("code_comment", {"comments": [{"content": "Floor division drops the remainder.",
                                                       "existing_code": "return x // 2", "severity": "high",
                                                       "category": "bug"}]})]),
        Reply([tool_use("task_done", {"state": "DONE"})])])
    env = _installed(repo, hook_config, pre_commit_home, sdk_env)
    own = os.path.realpath(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p and os.path.realpath(p) != own)
    assert shutil.which("ocr-hook", path=env["PATH"]) is None
    blocked = _commit(repo, env)
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    out = "\n".join(_hook_output(blocked))
    command = re.search(r"^Dismissed \(never blocking; see `([^`]+)`\):$", out, re.M).group(1)
    assert command.startswith(str(pre_commit_home)) and command.endswith("/bin/ocr-hook dismissed"), command
    listed = subprocess.run(command, shell=True, cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "whole units on purpose" in listed.stdout, listed.stdout


def test_fix_and_commit_again_passes_even_when_the_filter_cannot_be_read(tmp_path, hook_config, pre_commit_home,
                                                                        fake_api, sdk_env, filter_answers):
    """Issue 28 under the real pre-commit: blocked, fix, `git add`, commit again → passed, the fix resolved,
    although the re-review's filter (a local model answering prose) could not be read."""
    repo = _draft_sub_staged(tmp_path)
    wrong = {"content": "sub() adds instead of subtracting.", "existing_code": "return a + b  # draft",
             "severity": "high", "category": "bug"}
    late = {"content": "add() does not check its types.", "existing_code": "    return a + b",
            "severity": "high", "category": "bug"}
    fake_api.script("+    return a + b  # draft", [Reply([tool_use("code_comment", {"comments": [wrong]})])])
    fake_api.script("+    return a - b  # fixed", [Reply([tool_use("code_comment", {"comments": [late]})])])
    filter_answers["+    return a - b  # fixed"] = Reply([text("Both comments look right to me.")])
    env = _installed(repo, hook_config, pre_commit_home, sdk_env)
    before = head(repo)
    assert _commit(repo, env).returncode == 1 and head(repo) == before

    write(repo, "app.py", "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b  # fixed\n")
    git(repo, "add", "app.py")
    proc = _commit(repo, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert head(repo) != before
    out = "\n".join(_hook_output(proc))
    assert "resolved since the last review: app.py:6 [HIGH] bug: sub() adds instead of subtracting." in out
    assert "the review filter's answer could not be read" in out
    assert any(is_filter(r.body) and "+    return a - b  # fixed" in r.first_user_text for r in fake_api.requests)


# --- the warm worker under real pre-commit (issue 31) -----------------------------------------------------------

def test_a_second_commit_is_served_by_the_worker_the_first_one_started(
        tmp_path, hook_source, hook_config, pre_commit_home, fake_api, sdk_env):
    """The hook's own environment (pre-commit's virtualenv) starts the worker and serves the next run from it;
    the output is the cold run's. `ocr-hook warm stop` of this checkout stops it too (every worker of the
    user in the directory), so nothing is left running."""
    import fcntl
    import tempfile

    config = tmp_path / "verbose-hook.yaml"  # the same repository and rev: pre-commit reuses the environment
    rev = git(hook_source, "rev-parse", "HEAD").strip()
    config.write_text(yaml.safe_dump({"repos": [{"repo": str(hook_source), "rev": rev, "hooks": [
        {"id": "ocr-hook", "args": ["--verbose", "--no-cache", "--no-memory"]}]}]}))
    runtime = Path(tempfile.mkdtemp(prefix="ocr-w-"))  # short: a socket path is limited to about 100 bytes
    # A laptop, not CI (the suite may run in CI, where `warm: auto` is off by design).
    env = {**sdk_env, "CI": "", "OCR_HOOK_WARM": "auto", "XDG_RUNTIME_DIR": str(runtime)}
    repo = _target_repo(tmp_path)
    try:
        first = _run_hook(repo, config, pre_commit_home, env, "ocr-hook")
        assert first.returncode == 0, first.stdout + first.stderr
        assert "ocr-hook: warm: no worker; running cold, started a worker (pid " in first.stdout
        lock = os.open(runtime / "ocr-hook" / "spawn.lock", os.O_RDWR)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # held by the starting worker until it listens
        finally:
            os.close(lock)
        fake_api.cache.clear()  # the fake's prompt cache as cold for the second run as for the first
        second = _run_hook(repo, config, pre_commit_home, env, "ocr-hook")
        assert second.returncode == 0, second.stdout + second.stderr
        assert "ocr-hook: warm: served by the worker (pid " in second.stdout
        # Not pre-commit's own lines (the first run builds the environment) nor the durations.
        strip = re.compile(r"^ocr-hook: warm: .*\n|^\[INFO\] .*\n|- duration: .*\n| · [0-9.]+s$", re.MULTILINE)
        assert strip.sub("", second.stdout) == strip.sub("", first.stdout)
    finally:
        stop = subprocess.run([sys.executable, "-m", "ocr_hook", "warm", "stop"], capture_output=True, text=True,
                              env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)}, timeout=60)
        left = subprocess.run(["pgrep", "-af", str(runtime)], capture_output=True, text=True).stdout
        shutil.rmtree(runtime, ignore_errors=True)
    assert stop.stdout == "stopped 1 warm worker(s)\n", stop.stdout + stop.stderr
    assert left == ""
