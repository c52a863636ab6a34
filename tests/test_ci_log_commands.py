"""Nothing ocr-hook prints in a CI log can act as a GitHub Actions workflow command (issue 33, items 4 and 5).

The runner reads `::name::` at a line's start and the legacy `##[name]` anywhere in a line, on standard output
and standard error alike: a file name, a model's text or a server's error message that reaches a printed line
must come out inert. And the SARIF upload's error line never shows the token, whatever GitHub echoes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e_support import CALC_BEFORE, assert_clean_stderr
from fake_api import FakeMessagesAPI
from fake_github import FakeGitHub
from gitrepo import commit_all, git, make_repo, run_cli, write

ROOT = Path(__file__).resolve().parent.parent
HOSTILE_NAME = "##[stop-commands]halt##[error]x.py"


def live_commands(text: str) -> list[str]:
    """Lines the Actions runner would read as a command: `::` first on the line, or `##[` anywhere."""
    return [line for line in text.splitlines() if line.lstrip().startswith("::") or "##[" in line]


def test_progress_and_error_lines_print_no_live_workflow_command(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                 sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "base.py", CALC_BEFORE)
    commit_all(repo, "base")
    write(repo, HOSTILE_NAME, "x = 1\n")
    git(repo, "add", "--", HOSTILE_NAME)

    proc = run_cli(repo, "review", "--no-cache", "--format", "json", env=sdk_env)

    assert_clean_stderr(proc)
    assert proc.returncode == 0, proc.stderr
    assert "reviewing" in proc.stderr and "stop-commands" in proc.stderr  # the progress lines name the file
    assert live_commands(proc.stderr) == [], proc.stderr
    # A one-line error naming a path: a newline in it cannot start a `::` line, `##[` in it is inert.
    bad = str(tmp_path / "no-such-dir" / "r\n::error::boom##[error]x.json")
    failed = run_cli(repo, "review", "--json-output", bad, env=sdk_env)
    assert failed.returncode == 2, failed.stderr
    assert len(failed.stderr.splitlines()) == 1 and "no-such-dir" in failed.stderr, failed.stderr
    assert live_commands(failed.stderr + failed.stdout) == [], failed.stderr


class EchoingGitHub(FakeGitHub):
    """A GitHub whose 401 echoes the request's Authorization header in its message (as some proxies do)."""

    def _route(self, rec: Any) -> tuple[int, Any, dict[str, str]]:
        return 401, {"message": f"Bad credentials for {rec.headers.get('authorization', '')}"}, {}


class PaddedEchoingGitHub(FakeGitHub):
    """Echoes the token so that it starts 15 characters before the 400th of the message (issue 41 item 2):
    cut first, then masked, "ghs_SecretToken" would be printed."""

    def _route(self, rec: Any) -> tuple[int, Any, dict[str, str]]:
        return 401, {"message": "x" * 378 + rec.headers.get("authorization", "") + " was refused"}, {}


@pytest.mark.parametrize("server", [EchoingGitHub, PaddedEchoingGitHub])
def test_sarif_upload_failure_masks_the_token(tmp_path: Path, server: type[FakeGitHub]) -> None:
    token = "ghs_SecretTokenValue1234567890abcdef"
    sarif = tmp_path / "report.sarif"
    sarif.write_text(json.dumps({"version": "2.1.0", "runs": []}))
    with server() as github:
        env = {"PATH": "/usr/bin:/bin", "INPUT_UPLOAD_SARIF": "true", "OCR_ACTION_SARIF_FILE": str(sarif),
               "OCR_ACTION_GITHUB_TOKEN": token, "GITHUB_REPOSITORY": "octo/app", "GITHUB_API_URL": github.url,
               "OCR_ACTION_COMMIT": "a" * 40, "OCR_ACTION_REF": "refs/heads/main", "NO_PROXY": "127.0.0.1"}
        proc = subprocess.run([sys.executable, str(ROOT / "action" / "support.py"), "upload-sarif"], env=env,
                              capture_output=True, text=True, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    said = "Bad credentials" if server is EchoingGitHub else "x" * 378 + "Bearer ***"
    assert re.search(rf"^::error title=ocr-hook SARIF upload::SARIF upload failed: .*{re.escape(said)}", proc.stdout,
                     re.M), out
    assert token[:8] not in out and "***" in out, out
