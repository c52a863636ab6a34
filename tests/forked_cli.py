"""`python -m ocr_hook ARGS` without paying for the interpreter and the imports on every run.

Most of the suite's CPU went into starting the CLI: each run imports the Anthropic SDK (0.86 s of CPU),
and the end-to-end tests run the CLI some 400 times. Here one server process per pytest worker imports
ocr_hook and everything it uses once, then forks a fresh copy of itself for each run. The copy gets
the run's own stdin, stdout and stderr (passed as file descriptors over a Unix socket), working
directory, environment and argv, then runs `ocr_hook/__main__.py` exactly as `python -m ocr_hook`
would and ends the way the interpreter ends (non-daemon threads joined, atexit handlers run, stdio
flushed). The caller gets what `subprocess.run` gives: a CompletedProcess with the exit code (negative
for a signal), the output decoded the same way, TimeoutExpired after killing the run.

What this cannot show is the process's own start-up: the import graph of the idle path, a missing
dependency, the console script, signal dispositions given at exec. Tests of those start a real process
(test_import_graph, test_precommit_hook, the signal tests' popen_review), and test_forked_cli checks that
a run here and a real run print the same. `OCR_TEST_REAL_PROCESSES=1` runs every CLI call as a real
process instead.

The server forks from a process with a single thread (forking a threaded process can copy a lock some
other thread holds): the pytest worker, which runs the fake servers' threads, only connects to it.
Each request is served by a forked handler, which forks the run and reports its pid and exit status, so
runs may overlap.
"""

from __future__ import annotations

import atexit
import io
import json
import locale
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

_HEADER = struct.Struct("!I")
_server: subprocess.Popen[bytes] | None = None
_server_env: dict[str, str] = {}
_socket_path = ""
_server_lock = threading.Lock()


def _read_at_start_up(name: str) -> bool:
    """Variables a process reads once, before any run's environment is in place: the interpreter's own
    (PYTHON*, the locale of its standard streams) and the SDK's log level (read when it is imported)."""
    if name == "PYTHONIOENCODING":
        return False  # the forked run sets its streams' encoding itself (_apply_io_encoding)
    return name.startswith("PYTHON") or name in ("ANTHROPIC_LOG", "LANG", "LC_ALL", "LC_CTYPE")


def real_processes() -> bool:
    """OCR_TEST_REAL_PROCESSES=1: every run a fresh interpreter (subprocess.run), as before this module."""
    if not hasattr(os, "fork") or not hasattr(socket, "AF_UNIX"):  # Windows: no fork server
        return True
    return os.environ.get("OCR_TEST_REAL_PROCESSES", "") not in ("", "0")


def _needs_a_real_process(env: Mapping[str, str]) -> bool:
    if real_processes():
        return True
    _ensure_server()
    startup = {name: value for name, value in env.items() if _read_at_start_up(name)}
    return startup != {name: value for name, value in _server_env.items() if _read_at_start_up(name)}


def run(args: Sequence[str], *, cwd: Path | str, env: Mapping[str, str], timeout: float,
        text: bool = True, errors: str = "strict") -> subprocess.CompletedProcess:
    """subprocess.run([sys.executable, "-m", "ocr_hook", *args], cwd=, env=, capture_output=True, ...), with
    standard input from /dev/null (what pytest's capture gives a real child). A run whose environment
    differs from the server's in what is read at start-up is a real process."""
    argv = [sys.executable, "-m", "ocr_hook", *args]
    if _needs_a_real_process(env):
        return subprocess.run(argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True,
                              text=text, errors=errors if text else None, timeout=timeout)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(_ensure_server())
    stdin_r = os.open(os.devnull, os.O_RDONLY)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        payload = json.dumps({"argv": list(args), "cwd": str(cwd), "env": dict(env)}).encode()
        message = _HEADER.pack(len(payload)) + payload
        sent = socket.send_fds(conn, [message], [stdin_r, out_w, err_w])
        conn.sendall(message[sent:])
    finally:
        for fd in (stdin_r, out_w, err_w):
            os.close(fd)
    out, err, returncode = _collect(conn, argv, timeout, out_r, err_r)
    if text:
        return subprocess.CompletedProcess(argv, returncode, _decode(out, errors), _decode(err, errors))
    return subprocess.CompletedProcess(argv, returncode, out, err)


def _decode(data: bytes, errors: str) -> str:
    # What subprocess does in text mode: the locale's encoding, universal newlines.
    return data.decode(locale.getpreferredencoding(False), errors).replace("\r\n", "\n").replace("\r", "\n")


def _collect(conn: socket.socket, argv: list[str], timeout: float, out_r: int, err_r: int
             ) -> tuple[bytes, bytes, int]:
    deadline = time.monotonic() + timeout
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    control = b""
    pid = returncode = None
    sel = selectors.DefaultSelector()
    for fd in (out_r, err_r):
        sel.register(fd, selectors.EVENT_READ)
    sel.register(conn, selectors.EVENT_READ)
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                expired = subprocess.TimeoutExpired(argv, timeout, b"".join(chunks[out_r]), b"".join(chunks[err_r]))
                expired.pid = _kill(conn, control, pid, returncode)  # type: ignore[attr-defined]  # a test checks it is gone
                raise expired
            for key, _ in sel.select(left):
                data = conn.recv(4096) if key.fileobj is conn else os.read(key.fd, 65536)
                if not data:
                    sel.unregister(key.fileobj)
                elif key.fileobj is conn:
                    control += data
                    *lines, control = control.split(b"\n")
                    for line in lines:
                        event = json.loads(line)
                        pid = event.get("pid", pid)
                        returncode = event.get("returncode", returncode)
                else:
                    chunks[key.fd].append(data)
    finally:
        sel.close()
        conn.close()
        for fd in (out_r, err_r):
            os.close(fd)
    if returncode is None:
        raise RuntimeError(f"the forked CLI server lost the run of {argv[3:]}")
    return b"".join(chunks[out_r]), b"".join(chunks[err_r]), returncode


def _kill(conn: socket.socket, pending: bytes, pid: int | None, returncode: int | None) -> int | None:
    """Kill the run (its pid may still be on its way: the handler sends it right after the fork) and wait
    until the handler has reaped it, so that the pid cannot be reused under us. Returns the pid."""
    if returncode is not None:
        return pid  # it ended just now; nothing to kill
    conn.settimeout(60)
    buffer = pending

    def next_event() -> dict[str, int]:
        nonlocal buffer
        while b"\n" not in buffer:
            data = conn.recv(4096)
            if not data:
                raise RuntimeError("the forked CLI server lost a run it was to kill")
            buffer += data
        line, buffer = buffer.split(b"\n", 1)
        return json.loads(line)

    while pid is None:
        pid = next_event().get("pid")
    os.kill(pid, signal.SIGKILL)
    while "returncode" not in next_event():
        pass
    return pid


def _ensure_server() -> str:
    global _server, _server_env, _socket_path
    with _server_lock:
        if _server is not None and _server.poll() is None:
            return _socket_path
        _server_env = dict(os.environ)
        # A short path: a Unix socket's name is limited to about 100 bytes.
        _socket_path = os.path.join(tempfile.mkdtemp(prefix="ocr-cli-"), "s")
        _server = subprocess.Popen([sys.executable, __file__, _socket_path], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE)
        assert _server.stdout is not None
        ready = _server.stdout.readline()  # the server prints one line once it listens
        if ready != b"ready\n":
            raise RuntimeError(f"the forked CLI server did not start (exit {_server.wait()})")
        return _socket_path


@atexit.register
def stop_server() -> None:
    global _server
    with _server_lock:
        if _server is not None:
            assert _server.stdin is not None
            _server.stdin.close()  # EOF tells it to go
            _server.wait(timeout=60)
            _server = None


# --- the server side --------------------------------------------------------------------------------

def _serve(path: str) -> None:
    from ocr_hook.warm.worker import preload  # what the warm worker imports and warms before it forks

    preload()
    if threading.active_count() != 1:
        raise SystemExit(f"forked_cli: an import started a thread: {threading.enumerate()}")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    sel.register(sys.stdin.fileno(), selectors.EVENT_READ)
    while True:
        for key, _ in sel.select(5):
            if key.fileobj is listener:
                conn, _addr = listener.accept()
                if os.fork() == 0:
                    listener.close()
                    _handle(conn)  # does not return
                conn.close()
            elif not os.read(sys.stdin.fileno(), 1024):
                return  # the pytest worker is gone or done
        while True:  # reap finished handlers
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


def _handle(conn: socket.socket) -> None:
    code = 1
    try:
        message, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
        while len(message) < _HEADER.size or len(message) < _HEADER.size + _HEADER.unpack_from(message)[0]:
            more = conn.recv(1 << 16)
            if not more:
                raise EOFError("the request was cut short")
            message += more
        request = json.loads(message[_HEADER.size:])
        pid = os.fork()
        if pid == 0:
            _run_cli(conn, request, fds)  # does not return
        for fd in fds:
            os.close(fd)
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        _, status = os.waitpid(pid, 0)
        conn.sendall(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
        code = 0
    finally:
        os._exit(code)


def _run_cli(conn: socket.socket, request: dict, fds: list[int]) -> None:
    import random
    import runpy
    import traceback

    conn.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # gettempdir() caches its answer: let this run's TMPDIR count
    random.seed()
    _apply_io_encoding(request["env"].get("PYTHONIOENCODING", ""))
    sys.argv = ["-m", *request["argv"]]  # runpy puts the module's path in argv[0]
    sys.path[0] = os.getcwd()  # what `python -m` puts first
    code = 0
    try:
        runpy.run_module("ocr_hook", run_name="__main__", alter_sys=True)
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


def _apply_io_encoding(value: str) -> None:
    """What the interpreter makes of PYTHONIOENCODING=ENCODING[:ERRORS] at start-up for the output streams:
    stdout in that encoding with those errors (strict by default), stderr in it with backslashreplace. (New
    wrappers over the run's descriptors: reconfiguring the server's would seek its pipe. Standard input is
    /dev/null, which no run decodes.)"""
    if not value:
        return
    encoding, _, errors = value.partition(":")
    encoding = encoding or sys.stdout.encoding
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(open(1, "wb", closefd=False), encoding=encoding,
                                                   errors=errors or "strict")
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(open(2, "wb", closefd=False), encoding=encoding,
                                                   errors="backslashreplace", line_buffering=True)


def _finish() -> None:
    """What interpreter shutdown does that a caller can see, in its order."""
    threading._shutdown()  # type: ignore[attr-defined]  # non-daemon threads are joined first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass


if __name__ == "__main__":
    _serve(sys.argv[1])
