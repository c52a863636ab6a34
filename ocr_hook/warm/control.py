"""`ocr-hook warm status|start|stop`: ask this user's workers what they are, start one now, stop them all.

Every worker of the user is listed and stopped, whichever installation started it (each installation has a
socket of its own in the same directory); `start` starts this installation's.
"""

from __future__ import annotations

import json
import os
import select
import socket
import sys
import time
from collections.abc import Mapping
from typing import Any

from ocr_hook.warm import client, protocol

_ASK_TIMEOUT = 2.0  # a status or stop answer; longer than a run's hello, this is a person waiting
_GONE_TIMEOUT = 10.0


def ask(path: str, op: str, timeout: float = _ASK_TIMEOUT) -> dict[str, Any] | None:
    """A worker's answer to `op` (status or stop), or None when nobody of this user answers on `path`."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
        if protocol.peer_uid(sock) != os.getuid():
            return None
        chan = protocol.Channel(sock)
        chan.send({"op": op})
        return chan.receive()[0]
    except (OSError, ValueError):
        return None
    finally:
        sock.close()


def wait_gone(pid: int, timeout: float = _GONE_TIMEOUT) -> bool:
    """Wait until process `pid` has exited (a pidfd where the system has one, else a short poll)."""
    if hasattr(os, "pidfd_open"):
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return True
        try:
            return bool(select.select([fd], [], [], timeout)[0])
        finally:
            os.close(fd)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def workers(environ: Mapping[str, str]) -> list[tuple[str, dict[str, Any] | None]]:
    """Each socket in this user's directory with its worker's status (None: stale, nobody answers)."""
    return [(path, ask(path, "status")) for path in protocol.sockets_in(protocol.socket_dir(environ))]


def _describe(path: str, status: dict[str, Any] | None) -> str:
    if status is None:
        return f"stale socket {path} (no worker answers; the next review replaces it)"
    busy = f"{status['connections']} connection(s) open" if status["connections"] else f"idle {status['idle']:g} s"
    return (f"worker pid {status['pid']}, ocr-hook {status['version']}, {busy} (exits after "
            f"{status['warm_idle']:g} s idle), socket {path}")


def status(fmt: str, environ: Mapping[str, str] = os.environ) -> int:
    found = workers(environ)
    if fmt == "json":
        sys.stdout.write(json.dumps({"socket_dir": protocol.socket_dir(environ),
                                     "workers": [{"socket": p, "status": s} for p, s in found]}, indent=2) + "\n")
    elif not found:
        sys.stdout.write(f"no warm worker (sockets live in {protocol.socket_dir(environ)})\n")
    for path, answer in found if fmt == "text" else ():
        sys.stdout.write(_describe(path, answer) + "\n")
    return 0


def stop(environ: Mapping[str, str] = os.environ) -> int:
    """Stop every worker of this user and wait until each has exited; remove stale sockets. Runs in flight
    finish (their handlers do not depend on the worker)."""
    stopped = 0
    _wait_for_starting(environ)
    for path, _ in workers(environ):
        answer = ask(path, "stop")
        if answer is None:
            try:
                os.unlink(path)
            except OSError:
                pass
            continue
        if not wait_gone(int(answer["pid"])):
            sys.stderr.write(f"ocr-hook: error: worker pid {answer['pid']} did not exit\n")
            return 1
        stopped += 1
    sys.stdout.write(f"stopped {stopped} warm worker(s)\n")
    return 0


def _wait_for_starting(environ: Mapping[str, str]) -> None:
    """Until a worker being started (by a review, or `start`) listens or has failed: it holds the spawn lock
    until then, and would otherwise be missed by `stop` and serve for warm_idle."""
    import fcntl

    try:
        lock = os.open(os.path.join(protocol.socket_dir(environ), "spawn.lock"), os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return  # no directory or no lock file: nothing was ever started here
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
    finally:
        os.close(lock)


def start(environ: Mapping[str, str] = os.environ) -> int:
    """Start this installation's worker unless it runs, and return once it listens (or has failed)."""
    import fcntl

    chosen = client.settings([], environ)
    if chosen is None:
        from ocr_hook.hookenv.program import program

        sys.stderr.write(f"ocr-hook: error: invalid warm or warm_idle setting (see `{program(environ)} doctor`)\n")
        return 2
    directory = protocol.socket_dir(environ)
    if sys.platform not in ("linux", "darwin") or not protocol.private_dir(directory, create=True):
        sys.stderr.write(f"ocr-hook: error: no private socket directory ({directory}) on this system\n")
        return 2
    path = protocol.socket_path(directory)
    lock_path = os.path.join(directory, "spawn.lock")
    lock = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a worker being started by a review holds it until it listens
        if ask(path, "status") is None:
            if client.spawn(path, chosen[1], environ, lock_fd=lock) is None:
                sys.stderr.write("ocr-hook: error: could not start the worker\n")
                return 1
            os.close(lock)
            lock = os.open(lock_path, os.O_RDWR)
            fcntl.flock(lock, fcntl.LOCK_EX)  # released by the worker once it listens, or by its exit
    finally:
        os.close(lock)
    answer = ask(path, "status")
    if answer is None:
        sys.stderr.write(f"ocr-hook: error: the worker did not start (see {protocol.cache_dir(environ)}/warm.log)\n")
        return 1
    sys.stdout.write(_describe(path, answer) + "\n")
    return 0
