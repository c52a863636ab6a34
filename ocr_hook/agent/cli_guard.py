"""Runs one Claude Code CLI so that it cannot outlive the ocr-hook that started it (DESIGN.md 15), however ocr-hook
ends: SIGKILL and a crash included, where no handler of ocr-hook's runs.

    python -I -S cli_guard.py LIFELINE_FD SCRATCH_DIR CLI [ARGS...]
    python -I -S cli_guard.py --clean GROUP SCRATCH_DIR      (the cleaner the guard starts, see below)

ocr-hook starts this in a session of its own (so its process group is this guard's) and keeps the write end of a
pipe whose read end is LIFELINE_FD; it never writes to it. The guard starts the CLI in the same process group, with
the guard's standard streams, and exits with the CLI's status. When the pipe reaches end-of-file while the CLI runs,
every holder of the write end is gone, so ocr-hook is: the guard has SCRATCH_DIR (the CLI's private configuration
and temporary directory) removed once the group is gone, and kills the whole group, itself and whatever the CLI
forked included. ocr-hook's own ends of a step (done, budget, timeout, Ctrl-C) kill the same group at once.

Standard library only, and nothing from ocr_hook: it runs under `python -I -S` to start in a few milliseconds.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time

_GONE_WAIT_S = 10.0  # how long the cleaner waits for the killed group to be reaped before removing its files


def _clean_after(group: int, scratch: str) -> None:
    """In a process outside the group: wait until no process of it is left, then remove the scratch directory."""
    deadline = time.monotonic() + _GONE_WAIT_S
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            break
        except PermissionError:
            pass
        time.sleep(0.02)
    shutil.rmtree(scratch, ignore_errors=True)


def _watch(lifeline: int, scratch: str) -> None:
    try:
        while os.read(lifeline, 4096):
            pass
    except OSError:
        pass
    group = os.getpgrp()
    # The cleaner must not be in the group it waits on: a process of its own, in a session of its own.
    try:
        subprocess.Popen([sys.executable, "-I", "-S", __file__, "--clean", str(group), scratch],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
    finally:
        os.killpg(group, signal.SIGKILL)


def main(argv: list[str]) -> int:
    if argv[1] == "--clean":
        _clean_after(int(argv[2]), argv[3])
        return 0
    lifeline, scratch, command = int(argv[1]), argv[2], argv[3:]
    try:
        cli = subprocess.Popen(command)
    except OSError as exc:
        print(f"cannot start {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    # The CLI has its own copies of the pipes: with the guard's closed, ocr-hook sees end-of-file when the CLI ends.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    threading.Thread(target=_watch, args=(lifeline, scratch), daemon=True).start()
    status = cli.wait()
    return 128 - status if status < 0 else status  # a signal: 128 + its number, as a shell reports it


if __name__ == "__main__":
    sys.exit(main(sys.argv))
