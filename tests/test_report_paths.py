"""Issue 58, items 6 and 7: where reports are written, and that writing one never destroys what is there,
through the real CLI in real repositories. No review is paid for: a staged review with nothing staged writes
its (empty) reports, and a run that stops on its settings or its missing key is the exit-2 case.

6. A repository's own `.ocr-hook.yaml` (a pull request writes it) may not name report paths: it made a review,
   `scan` and `delegate finish` overwrite `../victim` and delete it on exit 2.
7. A report path that is a FIFO, a device or a link to one is written through, never unlinked or replaced; a
   link to a file is refused with one line. /dev/null is only ever written to (the test is run as root too:
   the code before deleted it), and it is named only after the FIFO and the links have shown the new behaviour.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gitrepo import commit_all, make_repo, run_cli, write

PRECIOUS = "precious: not ocr-hook's\n"
NO_KEY = {"ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": ""}


def one_line(proc: object, code: int) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr)  # type: ignore[attr-defined]
    lines = proc.stderr.splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 1 and lines[0].startswith("ocr-hook: ") and "Traceback" not in proc.stderr, lines  # type: ignore[attr-defined]
    return lines[0]


def test_a_repository_settings_file_cannot_name_where_reports_go(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    victims = {key: tmp_path / f"victim-{key}" for key in ("json_output", "sarif_output", "gitlab_output",
                                                            "patch_output")}
    for victim in victims.values():
        victim.write_text(PRECIOUS)
    settings = {key: f"../{path.name}" for key, path in victims.items()}
    settings["sarif_output"] = str(victims["sarif_output"])  # an absolute path alike
    write(repo, ".ocr-hook.yaml", "".join(f"{key}: {value}\n" for key, value in settings.items()))
    write(repo, "app.py", "def f(x):\n    return x + 1\n")
    commit_all(repo, "a repository whose settings file names report paths")

    staged = run_cli(repo, "review", "--format", "json")  # nothing staged: a complete, empty review
    assert staged.returncode == 0, staged.stderr
    notes = json.loads(staged.stdout)["notes"]
    for key in victims:
        assert any(f"'{key}' ignored" in note and "cannot choose it" in note for note in notes), (key, notes)
    started = run_cli(repo, "delegate", "start")  # delegate mode: the session fixes the settings at its start
    assert started.returncode == 0, started.stderr
    finished = run_cli(repo, "delegate", "finish", json.loads(started.stdout)["session"], "--format", "json")
    assert finished.returncode == 0, finished.stderr
    scan = run_cli(repo, "scan", "app.py", env=NO_KEY)  # stops for want of a key: the exit-2 cleanup's case
    assert scan.returncode == 2, scan.stderr
    assert {key: path.read_text() for key, path in victims.items()} == dict.fromkeys(victims, PRECIOUS)

    doctor = run_cli(repo, "doctor", env=NO_KEY)
    warned = [line for line in doctor.stdout.splitlines() if line.lstrip().startswith("WARN  settings")]
    assert any("'json_output' ignored" in line for line in warned), doctor.stdout
    # The user's own flag still chooses: the report goes where it says.
    mine = tmp_path / "mine.json"
    assert run_cli(repo, "review", "-q", "--json-output", str(mine)).returncode == 0
    assert json.loads(mine.read_text())["status"] == "complete"


@contextmanager
def fifo_reader(path: Path) -> Iterator[list[bytes]]:
    """A FIFO at `path` with a reader thread collecting what is written into it. The test holds a write end
    open for the whole block, so the reader sees the end of the data only when the block ends (an event, not a
    clock), and a writer's open never waits."""
    os.mkfifo(path)
    read_end = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    hold = os.open(path, os.O_WRONLY)
    os.set_blocking(read_end, True)
    received: list[bytes] = []

    def read() -> None:
        while chunk := os.read(read_end, 65536):
            received.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield received
    finally:
        os.close(hold)
        reader.join(timeout=30)
        os.close(read_end)
        assert not reader.is_alive()


def is_char_device(path: str) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


def test_a_fifo_a_device_and_a_link_are_written_through_never_replaced(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "app.py", "def f(x):\n    return x + 1\n")
    commit_all(repo, "base")
    fifo, to_null = tmp_path / "report.fifo", tmp_path / "report.sarif"
    to_null.symlink_to(os.devnull)
    with fifo_reader(fifo) as received:
        proc = run_cli(repo, "review", "-q", "--json-output", str(fifo), "--sarif-output", str(to_null))
        assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and to_null.is_symlink() and str(to_null.readlink()) == os.devnull
    assert json.loads(b"".join(received))["status"] == "complete"

    # A link to a file is refused before any work, with one line; the link and its file stay as they were.
    target, link = tmp_path / "elsewhere.json", tmp_path / "link.json"
    target.write_text(PRECIOUS)
    link.symlink_to(target)
    line = one_line(run_cli(repo, "review", "--json-output", str(link)), 2)
    assert "symbolic link to a file" in line, line
    assert link.is_symlink() and target.read_text() == PRECIOUS

    # `outcomes -o` likewise: through a FIFO and a link to /dev/null; a link to a file refused.
    fifo.unlink()
    with fifo_reader(fifo) as received:
        assert run_cli(repo, "outcomes", "--format", "json", "-o", str(fifo)).returncode == 0
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and json.loads(b"".join(received))
    assert run_cli(repo, "outcomes", "-o", str(to_null)).returncode == 0 and to_null.is_symlink()
    assert "symbolic link to a file" in one_line(run_cli(repo, "outcomes", "-o", str(link)), 2)
    assert link.is_symlink() and target.read_text() == PRECIOUS

    # /dev/null itself, on a complete run and on one that stops with exit 2: written to, never removed.
    assert run_cli(repo, "review", "-q", "--json-output", os.devnull, "--gitlab-output", os.devnull).returncode == 0
    assert is_char_device(os.devnull)
    stopped = run_cli(repo, "review", "--json-output", os.devnull, env={"OCR_HOOK_NO_SUCH_SETTING": "1"})
    assert stopped.returncode == 2 and "no_such_setting" in stopped.stderr, stopped.stderr
    assert is_char_device(os.devnull)
    assert run_cli(repo, "outcomes", "-o", os.devnull).returncode == 0 and is_char_device(os.devnull)
