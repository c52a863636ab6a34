"""Every command the output prints works in the environment that printed it (issue 58 item 20), for the messages
outside the review's report (test_precommit_hook runs the report's under the real pre-commit): under pre-commit,
with no ocr-hook on the user's PATH, `warm start`'s pointer to `doctor` names this installation's own script, and
pasted into that shell it runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ocr_hook.warm import control


def _without_this_installation(environ: dict[str, str]) -> dict[str, str]:
    own = os.path.realpath(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in environ.get("PATH", "").split(os.pathsep) if p and os.path.realpath(p) != own)
    assert shutil.which("ocr-hook", path=path) is None
    return {**environ, "PATH": path}


def test_warm_starts_pointer_to_doctor_works_pasted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = _without_this_installation({**os.environ, "PRE_COMMIT": "1", "OCR_HOOK_WARM": "sometimes",
                                      "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert control.start(env) == 2
    printed = capsys.readouterr().err
    command = re.fullmatch(r"ocr-hook: error: invalid warm or warm_idle setting \(see `([^`]+)`\)\n", printed)
    assert command and command.group(1).endswith("/bin/ocr-hook doctor"), printed
    ran = subprocess.run(command.group(1), shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert "command not found" not in ran.stderr and ran.returncode != 127, ran.stderr
    assert "warm" in ran.stdout + ran.stderr  # doctor itself, naming the setting
