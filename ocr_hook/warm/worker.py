"""The warm worker: a background process that has imported ocr-hook and the SDK once and forks a fresh copy
of itself for every review a client hands over (DESIGN.md 14).

Started detached by the first review that finds none (ocr_hook.warm.client.spawn): its own session, stdio on
/dev/null, standard error in a log file. It keeps no run's data: it is started with an environment without
the key or any setting, never loads settings or opens a repository, and each run's state lives and dies in
the run's own process. It forks only while it has a single thread (forking a threaded process can copy a
lock another thread holds).

Each connection is served by a forked handler, so the worker's loop never waits on a client and two commits
at once get two runs. The handler answers the client's hello (version, installed files, start-up), then
forks the run with the client's standard streams, working directory, environment and argv, relays the
signals the client forwards, kills the run if the client goes away, and reports the run's exit status.

The worker exits after `warm_idle` seconds without a run, when its socket is removed or replaced, when the
installed files change (checked every few seconds and by each hello), and on `ocr-hook warm stop`
(SIGTERM). Runs in flight finish: their handlers do not depend on the worker.
"""

from __future__ import annotations

import atexit
import gc
import os
import selectors
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from ocr_hook.warm import protocol

_IDENTITY_EVERY = 5.0  # seconds between checks that the installed files are still the ones imported
_KILL_GRACE = 5.0  # after its client went away, a run gets this long to end on SIGTERM before SIGKILL
_SERVED, _CONTROL = 0, 3  # handler exit codes: a run (counts as activity) or a status/stop/refusal


def _log(message: str) -> None:
    sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} pid {os.getpid()}: {message}\n")
    sys.stderr.flush()


# Never run by a worker's review (only `review` is served warm), and the costliest import (the MCP SDK, about a
# fifth of start-up): left out, the worker listens that much sooner after the commit that started it.
NOT_SERVED = ("ocr_hook.mcp_server",)


def preload(skip: tuple[str, ...] = ()) -> None:
    """Import what a review imports, lazily or not, and do what its first request would do once
    (ocr_hook.agent.warm_up), so that each forked run starts warm. `skip`: packages left out."""
    import importlib
    import pkgutil

    import ocr_hook
    from ocr_hook.agent.warm_up import warm_up

    warm_up()
    for module in pkgutil.walk_packages(ocr_hook.__path__, "ocr_hook."):
        if module.name == "ocr_hook.__main__" or module.name.startswith(skip):
            continue
        try:
            importlib.import_module(module.name)
        except ImportError:  # an optional extra that is not installed (the MCP server's SDK)
            pass


class _State:
    def __init__(self, path: str, idle: float) -> None:
        self.path = path
        self.idle = idle
        self.started = time.time()
        self.last_run = time.monotonic()
        self.handlers: set[int] = set()
        self.inode = 0
        self.stop = ""
        self.search_path = list(sys.path)
        self.identity = protocol.identity(self.search_path)
        self.start_up = protocol.start_up(os.environ)


# What a forked run runs: the CLI's entry point, handed over by ocr_hook.__main__ (the worker sits below the CLI
# in the house; the top floor joins the two).
_run_cli: Callable[[list[str]], None] | None = None


def main(argv: list[str], run_cli: Callable[[list[str]], None]) -> None:
    global _run_cli
    _run_cli = run_cli
    path, idle, lock_fd = argv[0], float(argv[1]), int(argv[2])
    preload(NOT_SERVED)
    # What preload created lives as long as the worker: frozen, no collection in the worker or in a forked run
    # walks it again, and a run's collections never write to (and so unshare) the pages it inherited.
    gc.freeze()
    if threading.active_count() != 1:
        _log(f"not serving: an import started a thread ({threading.enumerate()})")
        sys.exit(1)
    state = _State(path, idle)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    temporary = f"{path}.{os.getpid()}.new"
    try:
        listener.bind(temporary)
        listener.listen(64)
        os.rename(temporary, path)  # atomically replaces a stale socket left by a killed worker
        state.inode = os.stat(path).st_ino
    except OSError as exc:
        _log(f"cannot listen on {path}: {exc}")
        sys.exit(1)
    if lock_fd >= 0:
        os.close(lock_fd)  # the spawn lock: whoever waits on it may now connect
    _log(f"serving ocr-hook {state.identity['version']} on {path} (warm_idle {idle:g} s)")
    reason = _serve(listener, state)
    if _still_ours(state):
        os.unlink(path)
    _log(f"exiting: {reason}")


def _still_ours(state: _State) -> bool:
    try:
        return os.stat(state.path).st_ino == state.inode
    except OSError:
        return False


def _serve(listener: socket.socket, state: _State) -> str:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler ended: the wakeup fd breaks the select
    signal.signal(signal.SIGTERM, lambda *_: setattr(state, "stop", "stopped (SIGTERM or warm stop)"))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    next_identity = time.monotonic() + _IDENTITY_EVERY
    while not state.stop:
        left = state.idle - (time.monotonic() - state.last_run)
        ready = [key.fileobj for key, _ in sel.select(min(1.0, max(left, 0.0)) if not state.handlers else 1.0)]
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        _reap(state)  # before a status is forked off: it counts the handlers still running
        if listener in ready:
            _accept(listener, state, (wake_r, wake_w))
        now = time.monotonic()
        if state.stop:
            break
        if not state.handlers and now - state.last_run >= state.idle:
            return f"no run for {state.idle:g} s (warm_idle)"
        if not _still_ours(state):
            return f"its socket {state.path} was removed or replaced"
        if now >= next_identity:
            next_identity = now + _IDENTITY_EVERY
            if protocol.identity(state.search_path) != state.identity:
                return "the installed ocr-hook changed"
    return state.stop


def _reap(state: _State) -> None:
    while state.handlers:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            state.handlers.clear()
            return
        if pid == 0:
            return
        state.handlers.discard(pid)
        if os.waitstatus_to_exitcode(status) == _SERVED:
            state.last_run = time.monotonic()


def _accept(listener: socket.socket, state: _State, wake: tuple[int, int]) -> None:
    try:
        conn, _addr = listener.accept()
    except OSError:
        return
    try:
        if protocol.peer_uid(conn) != os.getuid():
            _log("refused a connection from another user")
            return
        pid = os.fork()
        if pid == 0:
            listener.close()
            for fd in wake:
                os.close(fd)
            _handle(conn, state)  # does not return
        state.handlers.add(pid)
    finally:
        conn.close()


# --- a handler: one connection ------------------------------------------------------------------------------

def _handle(conn: socket.socket, state: _State) -> None:
    code = _CONTROL
    try:
        code = _converse(protocol.Channel(conn), state)
    except Exception as exc:  # a broken client must not leave a traceback in the log for each attempt
        import traceback

        _log(f"a connection failed: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    finally:
        os._exit(code)


def _status(state: _State) -> dict[str, Any]:
    others = len(state.handlers)  # as it was when this handler was forked: connections then open
    return {"pid": os.getppid(), "version": state.identity["version"], "socket": state.path,
            "started": state.started, "connections": others,
            "idle": 0.0 if others else round(time.monotonic() - state.last_run, 1), "warm_idle": state.idle}


def _converse(chan: protocol.Channel, state: _State) -> int:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    chan.sock.settimeout(10)  # a client that connects and says nothing does not keep a handler forever
    hello, fds = chan.receive()
    for fd in fds:
        os.close(fd)
    if hello is None:
        return _CONTROL
    op = hello.get("op")
    if op == "status":
        chan.send(_status(state))
        return _CONTROL
    if op == "stop":
        chan.send(_status(state))
        os.kill(os.getppid(), signal.SIGTERM)
        return _CONTROL
    current = protocol.identity(state.search_path)
    ok = (current == state.identity and hello.get("identity") == current
          and hello.get("start_up") == state.start_up)
    chan.send({"identity": state.identity, "start_up": state.start_up, "pid": os.getppid(), "ok": ok})
    if current != state.identity:
        os.kill(os.getppid(), signal.SIGTERM)  # an upgrade under a running worker: make way for a new one
    if not ok:
        return _CONTROL
    chan.sock.settimeout(None)
    request, fds = chan.receive()
    if request is None or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return _CONTROL  # the client gave up between hello and run
    return _supervise(chan, request, fds)


def _supervise(chan: protocol.Channel, request: dict[str, Any], fds: list[int]) -> int:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    pid = os.fork()
    if pid == 0:
        os.close(wake_r)
        os.close(wake_w)
        _run(chan, request, fds)  # does not return
    for fd in fds:
        os.close(fd)
    sel = selectors.DefaultSelector()
    sel.register(chan.sock, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    kill_at: float | None = None
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if kill_at is not None and time.monotonic() >= kill_at:
            os.kill(pid, signal.SIGKILL)
            kill_at = None
        for key, _ in sel.select(1.0):
            if key.fileobj is wake_r:
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
                continue
            try:
                message, extra = chan.receive()
                for fd in extra:
                    os.close(fd)
                while message is not None:
                    number = message.get("signal")
                    if number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                        os.kill(pid, number)  # Ctrl-C or SIGTERM the client got: the run gets it
                    if not chan.has_buffered():
                        break
                    message, extra = chan.receive()
            except (OSError, ValueError):
                message = None
            if message is None:
                # The client is gone (killed, or its terminal closed): no run may outlive it.
                sel.unregister(chan.sock)
                os.kill(pid, signal.SIGTERM)
                kill_at = time.monotonic() + _KILL_GRACE
    try:
        chan.send({"exit": os.waitstatus_to_exitcode(status)})
    except OSError:
        pass
    return _SERVED


# --- the run: a fresh copy, as `ocr-hook ARGS` would have started ----------------------------------------

def _run(chan: protocol.Channel, request: dict[str, Any], fds: list[int]) -> None:
    import random
    import tempfile
    import traceback

    chan.sock.close()
    signal.set_wakeup_fd(-1)
    for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN if request.get("sigint_ignored") else signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    code = 1
    try:
        os.chdir(request["cwd"])
        os.umask(int(request["umask"]))
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # gettempdir() caches its answer: let this run's TMPDIR count
        random.seed()
        sys.argv = list(request["argv"])
        sys.path.insert(0, request["path0"])
        # The worker's stdout was /dev/null, so block-buffered; a fresh interpreter line-buffers a terminal.
        if os.isatty(1) and hasattr(sys.stdout, "reconfigure"):
            sys.stdout.reconfigure(line_buffering=True)
        assert _run_cli is not None
        _run_cli(sys.argv[1:])
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        _finish()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)  # what the interpreter does with an uncaught Ctrl-C
    except BaseException:
        traceback.print_exc()
        code = 1
    _finish()
    os._exit(code)


def _finish() -> None:
    """What interpreter shutdown does that a caller can see, in its order."""
    threading._shutdown()  # type: ignore[attr-defined]  # non-daemon threads are joined first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass
