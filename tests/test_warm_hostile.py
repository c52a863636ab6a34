"""The warm worker against hostile cases (issue 41, items 12-15) and `warm stop` of a worker still starting
(issue 44): real clients (`python -m ocr_hook`), real workers, another user's directory made with os.chown.

One worker serves the module, started the way a developer's first commit starts one, by a review in an
environment with no locale at all (item 14: it must then serve the next review). The suite's helpers for
warm tests come from test_warm.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import forked_cli
import pytest
from agent_support import is_filter
from ci_repos import without_ci
from e2e_support import calc_repo, comment, comment_turn
from fake_api import FakeMessagesAPI, Reply, text
from gitrepo import commit_all, make_repo, run_cli
from test_warm import REVIEW, SERVED, _short_dir, leftovers, popen_cli, real_cli

from ocr_hook.warm import client, control, protocol

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the warm worker's process checks read /proc")


def no_locale(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not (k == "LANG" or k.startswith("LC_") or k == "PYTHONUTF8")}


def commit_env(runtime: Path, env: dict[str, str], **more: str) -> dict[str, str]:
    return {**no_locale(without_ci(env)), "PRE_COMMIT": "1", "OCR_HOOK_WARM": "auto",
            "XDG_RUNTIME_DIR": str(runtime), "NO_COLOR": "1", **more}


def _wait_for_listen(runtime: Path) -> None:
    lock = os.open(runtime / "ocr-hook" / "spawn.lock", os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the worker holds it until it listens
    finally:
        os.close(lock)


def _kill_leftovers(where: Path) -> list[str]:
    found = leftovers(where)
    for line in found:
        os.kill(int(line.split()[0]), signal.SIGKILL)
    return found


@pytest.fixture(scope="module")
def runtime() -> Iterator[Path]:
    path = _short_dir()
    yield path
    run_cli(path, "warm", "stop", env={"XDG_RUNTIME_DIR": str(path)})
    assert _kill_leftovers(path) == []
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def worker(runtime: Path, tmp_path_factory: pytest.TempPathFactory) -> int:
    """Started by a review with no locale set (a minimal container): the client is in UTF-8 mode by
    coercion, and so must the worker be."""
    repo = make_repo(tmp_path_factory.mktemp("idle"))
    commit_all(repo, "empty")
    first = real_cli(repo, commit_env(runtime, dict(os.environ)), "review", "--verbose")
    assert first.returncode == 0 and "started a worker (pid " in first.stderr, first.stderr
    _wait_for_listen(runtime)
    return int(first.stderr.split("started a worker (pid ")[1].split(")")[0])


def test_with_no_locale_the_worker_serves_the_next_review(worker: int, runtime: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "idle")
    commit_all(repo, "empty")
    proc = real_cli(repo, commit_env(runtime, dict(os.environ)), "review", "--verbose")
    assert proc.returncode == 0 and f"{SERVED} (pid {worker})" in proc.stderr, proc.stderr


def test_a_closed_standard_error_is_no_verdict(worker: int, runtime: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "idle")
    commit_all(repo, "empty")
    proc = subprocess.run(["sh", "-c", 'exec "$@" 2>&-', "sh", sys.executable, "-m", "ocr_hook", "review", "--verbose"],
                          cwd=repo, env=commit_env(runtime, dict(os.environ)), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0 and "PASSED" in proc.stdout, (proc.returncode, proc.stdout)


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_a_handler_that_dies_mid_run_is_reported_not_run_again_cold(worker: int, runtime: Path, tmp_path: Path,
                                                                     fake_api: FakeMessagesAPI,
                                                                     sdk_env: dict[str, str]) -> None:
    held, calls = threading.Event(), []

    def respond(body: dict) -> Reply:
        calls.append(body)
        return Reply(comment_turn(comment(severity="high")).blocks, hold=held if len(calls) == 1 else None)

    fake_api.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
    fake_api.default(respond)
    repo = calc_repo(tmp_path / "calc")
    proc = popen_cli(repo, commit_env(runtime, sdk_env), *REVIEW)
    runs: list[int] = []
    try:
        assert fake_api.wait_for_requests(1, timeout=60)
        handlers = _children(worker)
        runs = [run for handler in handlers for run in _children(handler)]
        for handler in handlers:
            os.kill(handler, signal.SIGKILL)
        code = proc.wait(timeout=60)
        starts = [body for body in calls if len(body["messages"]) == 1]
        held.set()  # the orphaned run goes on, and ends (it holds the client's stdout and stderr until then)
        _, stderr = proc.communicate(timeout=60)
    finally:
        held.set()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert code == 3 and "the warm worker lost this run" in stderr, stderr
    assert len(starts) == 1  # no cold run after it: the review's first request was paid once
    assert runs and all(control.wait_gone(run) for run in runs)


def test_a_cache_root_another_user_made_is_not_used(tmp_path: Path) -> None:
    """No HOME: the fallback cache root is <TMPDIR>/ocr-hook-<uid>, which another user made first, with
    warm.log a link to the victim's file."""
    shared = _short_dir()
    try:
        shared.chmod(0o1777)
        planted = shared / f"ocr-hook-{os.getuid()}"
        planted.mkdir(mode=0o755)
        victim = tmp_path / "victim.txt"
        victim.write_text("")
        (planted / "warm.log").symlink_to(victim)
        os.chown(planted, 12345, 12345)  # the other user's
        repo = make_repo(tmp_path / "idle")
        commit_all(repo, "empty")
        env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR")}
        env = {**without_ci(env), "TMPDIR": str(shared), "PRE_COMMIT": "1", "OCR_HOOK_WARM": "auto"}
        proc = real_cli(repo, env, "review", "--verbose")
        assert proc.returncode == 0, proc.stderr
        assert "is not a private directory of this user; running cold" in proc.stderr, proc.stderr
        assert "started a worker" not in proc.stderr
        assert victim.read_text() == "" and not (planted / "warm").exists()
    finally:
        _kill_leftovers(shared)
        shutil.rmtree(shared, ignore_errors=True)


def test_warm_log_is_never_opened_through_a_link(tmp_path: Path) -> None:
    """The user's own cache directory with warm.log a link to another file: the commit's review runs cold
    and starts no worker, rather than have one append to whatever the link names."""
    cache = _short_dir()
    try:
        victim = tmp_path / "victim.txt"
        victim.write_text("")
        (cache / "ocr-hook").mkdir(mode=0o700)
        (cache / "ocr-hook" / "warm.log").symlink_to(victim)
        repo = make_repo(tmp_path / "idle")
        commit_all(repo, "empty")
        proc = real_cli(repo, commit_env(cache, dict(os.environ), XDG_CACHE_HOME=str(cache)), "review", "--verbose")
        assert proc.returncode == 0 and "running cold" in proc.stderr, proc.stderr
        assert "started a worker" not in proc.stderr, proc.stderr
        assert victim.read_text() == "" and (cache / "ocr-hook" / "warm.log").is_symlink()
    finally:
        left = _kill_leftovers(cache)
        shutil.rmtree(cache, ignore_errors=True)
    assert left == []


def test_warm_stop_stops_a_worker_that_is_still_starting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    place = _short_dir()
    try:
        env = {**no_locale(without_ci(dict(os.environ))), "XDG_RUNTIME_DIR": str(place)}
        directory = protocol.socket_dir(env)
        assert protocol.private_dir(directory, create=True)
        pid = client.spawn(protocol.socket_path(directory), 900.0, env)  # as the first commit's review does
        assert pid is not None
        assert control.stop(env) == 0  # at once: the worker is still importing
        assert "stopped 1 warm worker(s)" in capsys.readouterr().out
        assert control.wait_gone(pid, timeout=0.5)
    finally:
        left = _kill_leftovers(place)
        shutil.rmtree(place, ignore_errors=True)
    assert left == []


def test_a_review_refuses_a_cache_root_another_user_made(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                         sdk_env: dict[str, str]) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir(mode=0o1777)
    planted = shared / f"ocr-hook-{os.getuid()}"
    planted.mkdir(mode=0o755)
    os.chown(planted, 12345, 12345)
    repo = calc_repo(tmp_path / "calc")
    env = {k: v for k, v in sdk_env.items() if k not in ("HOME", "XDG_CACHE_HOME")}
    proc = forked_cli.run(("review",), cwd=repo, env={**env, "TMPDIR": str(shared)}, timeout=60, errors="replace")
    assert proc.returncode == 2, proc.stderr
    assert f"the cache directory {planted} is not this user's own" in proc.stderr
    assert list(planted.iterdir()) == [] and fake_api.requests == []  # nothing written there, nothing sent
