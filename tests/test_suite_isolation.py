"""The suite itself: a skip off the allow-list fails the run (with and without xdist), and a test sees none of
what the process that started the suite inherited (home, git identity, an ignored SIGINT)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hermetic import INHERITED_ENV, terminal_signals
from skip_allowlist import ALLOWED_SKIPS, MULTITOOL_NO_NPM

TESTS_DIR = Path(__file__).resolve().parent

PROBE = textwrap.dedent(f"""
    import pytest

    def test_passes():
        pass

    def test_allowed():
        pytest.skip({MULTITOOL_NO_NPM!r} + " (here)")

    def test_not_allowed():
        pytest.skip("the schema file is absent")

    @pytest.mark.xfail(reason="a known bug", strict=True)
    def test_expected_failure():
        assert False
""")
MODULE_SKIP = "import pytest\npytest.skip('no reason given', allow_module_level=True)\n"


def _pytest(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A separate pytest run over `directory` with only the skip guard from this suite (and no plugins the probe
    does not need: each costs start-up time)."""
    env = {**os.environ, "PYTHONPATH": str(TESTS_DIR), "PYTEST_ADDOPTS": ""}
    command = [sys.executable, "-m", "pytest", "-p", "skip_guard", "-p", "no:cacheprovider",
               "-p", "no:hypothesispytest", "-p", "no:anyio", *args, str(directory)]
    return subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_skip_off_the_allow_list_fails_the_run(tmp_path: Path, workers: list[str]) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "test_module_skipped.py").write_text(MODULE_SKIP)
    proc = _pytest(tmp_path, "-rs", *workers)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    section = out[out.index("skips not on the allow-list"):]
    assert "test_probe.py::test_not_allowed: the schema file is absent" in section
    assert "test_module_skipped.py: no reason given" in section
    assert "test_allowed" not in section and "test_expected_failure" not in section
    assert "1 passed" in out and "1 xfailed" in out


def test_allowed_skips_pass(tmp_path: Path) -> None:
    probe = "\n".join(line for line in PROBE.splitlines() if "absent" not in line and "not_allowed" not in line)
    (tmp_path / "test_probe.py").write_text(probe)
    proc = _pytest(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 1 skipped, 1 xfailed" in proc.stdout
    assert "allow-list" not in proc.stdout


def test_every_allowed_reason_is_justified() -> None:
    assert 0 < len(ALLOWED_SKIPS) <= 5
    assert all(len(why) > 40 for why in ALLOWED_SKIPS.values())


def test_a_test_has_an_empty_home_of_its_own(tmp_path_factory: pytest.TempPathFactory) -> None:
    home = Path(os.environ["HOME"])
    assert home != Path(INHERITED_ENV.get("HOME", "/nonexistent"))
    assert [p.name for p in home.iterdir()] == [".cache"] and not any((home / ".cache").iterdir())
    assert home.is_relative_to(tmp_path_factory.getbasetemp())
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        assert Path(os.environ[name]).is_relative_to(home), name


def test_git_sees_no_user_configuration(tmp_path: Path) -> None:
    (Path(os.environ["HOME"]) / ".gitconfig").write_text("[user]\n\tname = Someone Else\n")
    proc = subprocess.run(["git", "config", "--show-origin", "--list"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert "Someone Else" not in proc.stdout and "user.name" not in proc.stdout
    author = subprocess.run(["git", "var", "GIT_AUTHOR_IDENT"], cwd=tmp_path, capture_output=True, text=True)
    assert author.stdout.startswith("Test Author <author@example.com>"), author


_REPORT_SIGINT = "import signal; print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)"


def test_a_child_started_for_signals_hears_sigint_even_when_the_suite_ignores_it() -> None:
    """A shell starts a background job with SIGINT ignored, and children inherit that across exec."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with terminal_signals():
            child = subprocess.run([sys.executable, "-c", _REPORT_SIGINT], capture_output=True, text=True)
        plain = subprocess.run([sys.executable, "-c", _REPORT_SIGINT], capture_output=True, text=True)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # the suite's own disposition is back
    finally:
        signal.signal(signal.SIGINT, previous)
    assert plain.stdout.strip() == "True", "the control case: an ignored SIGINT is inherited"
    assert child.stdout.strip() == "False"
