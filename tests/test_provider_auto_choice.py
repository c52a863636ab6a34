"""Issue 58 item 24: what `provider: auto` says, through the real CLI.

* An API key beside a Claude Code credential: the run's notes and `doctor` say the Claude credential was passed
  over (tests/test_provider_auto.py::test_a_key_is_used_as_before).
* A Claude credential without the claude-code extra: the three ways in give this installation's own command for
  the extra (install_command), in the review and in `doctor`.
* `claude_code_path` without the SDK: `doctor` fails it and a review stops before any file (it was an internal
  error per file).
* No usable temporary directory for Claude Code's private files: said as such, not "upgrade the CLI" (run in a
  mount namespace where every temporary directory is read-only; skipped where one cannot be made).

A child Python without the extra (WITHOUT_EXTRA, as tests/test_claude_code_failures.py does it) plays an
installation that lacks it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e_support import calc_repo
from test_claude_code_failures import WITHOUT_EXTRA

from ocr_hook.install_command import add_extra_hint

TOKEN = "sk-ant-oat01-test"


def _checks(proc: subprocess.CompletedProcess[str]) -> dict[str, list[dict[str, str]]]:
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    found: dict[str, list[dict[str, str]]] = {}
    for check in json.loads(proc.stdout)["checks"]:
        found.setdefault(check["name"], []).append(check)
    return found


def _without_extra(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_EXTRA, *args], cwd=repo, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)


def test_a_claude_credential_without_the_extra_gets_this_installations_command(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path / "repo")
    env: dict[str, Any] = {"ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": "", "CLAUDE_CODE_OAUTH_TOKEN": TOKEN}
    review = _without_extra(repo, env, "review")
    assert review.returncode == 2, review.stderr
    assert add_extra_hint("claude-code") in review.stderr and "Traceback" not in review.stderr, review.stderr


def test_claude_code_path_without_the_sdk_fails_in_doctor_and_before_any_file(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path / "repo")
    claude = tmp_path / "claude"
    claude.write_text("#!/bin/sh\necho '9.9.9 (Claude Code)'\n")
    claude.chmod(0o755)
    env = {"ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": "", "CLAUDE_CODE_OAUTH_TOKEN": TOKEN,
           "OCR_HOOK_PROVIDER": "claude-code", "OCR_HOOK_CLAUDE_CODE_PATH": str(claude)}
    [check] = _checks(_without_extra(repo, env, "doctor", "--format", "json"))["claude-code"]
    assert check["status"] == "FAIL" and add_extra_hint("claude-code") in check["fix"], check
    review = _without_extra(repo, env, "review", "--format", "json")
    assert review.returncode == 2 and review.stdout == "", (review.stdout, review.stderr)
    [line] = review.stderr.splitlines()
    assert add_extra_hint("claude-code") in line and "internal error" not in line, line


def _read_only_temporaries() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "-m", "--propagation", "private", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(sys.platform != "linux" or not _read_only_temporaries(), reason="needs a mount namespace")
def test_no_usable_temporary_directory_is_said_as_such(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path / "repo")
    claude = tmp_path / "claude"
    claude.write_text("#!/bin/sh\necho '9.9.9 (Claude Code)'\n")
    claude.chmod(0o755)
    env = {**os.environ, "ANTHROPIC_API_KEY": "", "CLAUDE_CODE_OAUTH_TOKEN": TOKEN, "OCR_HOOK_PROVIDER": "claude-code",
           "OCR_HOOK_CLAUDE_CODE_PATH": str(claude), "TMPDIR": str(tmp_path / "tmp")}
    # Every place Python looks for a temporary directory read-only (TMPDIR, /tmp, /var/tmp, and the repository,
    # which is under /tmp, as the current directory), in this command's own mount namespace only.
    readonly = " && ".join(f"mount --bind {d} {d} && mount -o remount,ro,bind {d}"
                           for d in ("/tmp", "/var/tmp") if os.path.isdir(d))
    command = f'{readonly} && exec "$@"'
    doctor = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", command, "sh", sys.executable,
                             "-m", "ocr_hook", "doctor", "--format", "json"],
                            cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    [check] = _checks(doctor)["claude-code"]
    assert check["status"] == "FAIL" and "no usable temporary directory" in check["message"], check
    assert "TMPDIR" in check["fix"] and "upgrade" not in check["fix"] + check["message"], check
