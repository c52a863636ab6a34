"""tests/forked_cli.py runs the CLI the way a real process does: same output, exit code, environment and
working directory per run, a timeout that kills. Compared here against real `python -m ocr_hook` runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import forked_cli
import pytest
from agent_support import main_opening
from e2e_support import CALC_PATH, calc_repo, comment, comment_turn
from fake_api import FakeMessagesAPI, Reply, task_done


def _real(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ocr_hook", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=120)


def _forked(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return forked_cli.run(args, cwd=repo, env=env, timeout=120)


def _same(a: subprocess.CompletedProcess[str], b: subprocess.CompletedProcess[str]) -> None:
    assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


@pytest.mark.parametrize("args", [
    ("--version",),
    ("review", "--no-such-option"),  # a usage error: exit 2, one line
    ("preview",),
    ("preview", "--format", "json"),
    ("rules", "--format", "json"),
])
def test_a_forked_run_prints_what_a_real_run_prints(args: tuple[str, ...], tmp_path: Path,
                                                     sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    forked, real = _forked(repo, sdk_env, *args), _real(repo, sdk_env, *args)
    _same(forked, real)
    assert forked.stdout or forked.stderr  # something to compare


def test_a_forked_review_reaches_the_fake_like_a_real_one(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                          sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    reports = []
    for run in (_forked, _real):
        fake_api.script(main_opening(CALC_PATH), [comment_turn(comment()), task_done()])
        proc = run(repo, sdk_env, "review", "--no-cache", "--fail-on", "low", "--format", "json")
        assert proc.returncode == 1, proc.stderr
        report = json.loads(proc.stdout)
        reports.append([(f["path"], f["start_line"], f["message"]) for f in report["findings"]])
    assert reports[0] == reports[1] and reports[0]


def test_each_run_has_its_own_environment_and_directory(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    bad = _forked(repo, {**sdk_env, "OCR_HOOK_EFFORT": "fast"}, "preview")
    assert bad.returncode == 2 and "OCR_HOOK_EFFORT" in bad.stderr
    assert _forked(repo, sdk_env, "preview").returncode == 0  # nothing of the last run's environment is left
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    elsewhere = _forked(outside, sdk_env, "preview")
    assert elsewhere.returncode == 2 and "not a git repository" in elsewhere.stderr


def test_a_timeout_kills_the_run(tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    held = threading.Event()  # never set: the reply waits until the client goes away
    fake_api.script(main_opening(CALC_PATH), [Reply(task_done().blocks, hold=held)])
    with pytest.raises(subprocess.TimeoutExpired) as expired:
        forked_cli.run(["review", "--no-cache"], cwd=repo, env=sdk_env, timeout=3)
    held.set()
    if not forked_cli.real_processes():  # (subprocess.run kills and reaps its own child)
        with pytest.raises(ProcessLookupError):  # gone, and reaped by the server's handler
            os.kill(expired.value.pid, 0)  # type: ignore[attr-defined]


def test_a_forked_run_takes_its_streams_encoding_like_a_real_one(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    """PYTHONIOENCODING is applied by the forked run itself (tests/test_portability.py relies on it)."""
    repo = calc_repo(tmp_path / "repo")
    env = {**sdk_env, "PYTHONIOENCODING": "cp1252"}  # (click writes UTF-8 where it finds plain ASCII)
    args = ("preview", "--config", "no-such-file — ✓.yaml")  # an error naming a path the stream cannot show
    forked = forked_cli.run(args, cwd=repo, env=env, timeout=120, text=False)
    real = subprocess.run([sys.executable, "-m", "ocr_hook", *args], cwd=repo, env=env, capture_output=True,
                          timeout=120)
    assert (forked.returncode, forked.stdout, forked.stderr) == (real.returncode, real.stdout, real.stderr)
    assert real.returncode == 2 and b"no-such-file \x97 ok.yaml" in real.stderr
