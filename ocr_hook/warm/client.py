"""The thin client: `ocr-hook review` under pre-commit hands its run to the warm worker when one answers
(DESIGN.md 14), and otherwise returns None so the caller runs the review itself, cold, as always.

Decided before anything heavy is imported, from what is cheap to read: argv (`--no-warm`, `--verbose`,
`--config`), the environment (OCR_HOOK_WARM, OCR_HOOK_WARM_IDLE, PRE_COMMIT, CI) and, only when one of
the two settings is not in the environment, the settings file (`--config`, OCR_HOOK_CONFIG, or the
.ocr-hook.yaml of the current directory, which is the repository root under pre-commit). Anything
unusual runs cold, silently unless --verbose: no worker, a stale socket, another version or installed
files, a start-up that differs, no answer within 200 ms.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ocr_hook.warm import protocol

if TYPE_CHECKING:
    import socket

# What the worker's own environment keeps: enough to import and to find its directories, nothing of a run
# (no key, no OCR_HOOK_* setting). Each run gets the client's whole environment instead.
_WORKER_ENV = ("PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "VIRTUAL_ENV")
_RELAYED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_LAUNCH = ("import os, sys; os.chdir('/'); sys.path.pop(0); "
           "from ocr_hook.__main__ import warm_worker; warm_worker(sys.argv[1:])")


def _say(verbose: bool, message: str) -> None:
    if verbose and sys.stderr is not None:
        sys.stderr.write(f"ocr-hook: warm: {message}\n")
        sys.stderr.flush()


def _option_value(argv: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1:]
    return None


def settings(argv: Sequence[str], environ: Mapping[str, str]) -> tuple[str, float] | None:
    """(warm, warm_idle) as this run would see them, or None when a value is invalid (the cold run then
    reports it as the settings error it is)."""
    mode: Any = environ.get("OCR_HOOK_WARM")
    idle: Any = environ.get("OCR_HOOK_WARM_IDLE")
    if mode is None or idle is None:
        path = _option_value(argv, "--config") or environ.get("OCR_HOOK_CONFIG") or ".ocr-hook.yaml"
        if os.path.isfile(path):
            import yaml

            try:
                with open(path, encoding="utf-8") as handle:
                    data = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            except (OSError, ValueError, yaml.YAMLError):
                return None
            if isinstance(data, dict):
                layer = {str(k).replace("-", "_"): v for k, v in data.items()}
                mode = layer.get("warm") if mode is None else mode
                idle = layer.get("warm_idle") if idle is None else idle
    mode = protocol.mode_of("auto" if mode is None else mode)
    try:
        seconds = protocol.DEFAULT_IDLE if idle is None else float(idle)
    except (TypeError, ValueError):
        return None
    if mode is None or isinstance(idle, bool) or not seconds > 0:
        return None
    return mode, seconds


def _before_paths(argv: Sequence[str]) -> list[str]:
    return list(argv[: argv.index("--")] if "--" in argv else argv)


def delegate(argv: Sequence[str]) -> int | None:
    """Serve `ocr-hook ARGV` warm and return its exit code, or None: run it cold."""
    options = _before_paths(argv)
    if not options or options[0] != "review" or "--no-warm" in options:
        return None
    verbose = "--verbose" in options
    chosen = settings(argv, os.environ)
    if chosen is None or not protocol.wanted(chosen[0], os.environ):
        return None
    directory = protocol.socket_dir(os.environ)
    if not protocol.trusted_root(os.path.dirname(directory)) or not protocol.private_dir(directory, create=True):
        _say(verbose, f"{directory} is not a private directory of this user; running cold")
        return None
    path = protocol.socket_path(directory)
    if len(path.encode()) > protocol.MAX_SOCKET_PATH:
        _say(verbose, f"socket path too long for a Unix socket ({path}); running cold")
        return None
    import socket  # only now: a run that stays cold never loads it

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        return _served(sock, path, chosen[1], verbose)
    except (OSError, ValueError) as exc:
        _say(verbose, f"the worker did not serve this run ({type(exc).__name__}: {exc}); running cold")
        return None
    finally:
        sock.close()


def _served(sock: socket.socket, path: str, idle: float, verbose: bool) -> int | None:
    sock.settimeout(protocol.ANSWER_TIMEOUT)
    try:
        sock.connect(path)
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        what = "no worker" if isinstance(exc, FileNotFoundError) else "a stale socket (nobody listening)"
        pid = spawn(path, idle, os.environ)
        _say(verbose, f"{what}; running cold" + (f", started a worker (pid {pid})" if pid else ""))
        return None
    if protocol.peer_uid(sock) != os.getuid():
        _say(verbose, f"{path} is served by another user; running cold")
        return None
    chan = protocol.Channel(sock)
    mine = {"identity": protocol.identity(sys.path[1:]), "start_up": protocol.start_up(os.environ)}
    chan.send({"op": "hello", **mine})
    answer, _ = chan.receive()
    differs = [k for k in ("identity", "start_up") if (answer or {}).get(k) != mine[k]]
    if answer is None or not answer.get("ok") or differs:
        _say(verbose, f"the worker differs in {', '.join(differs) or 'what it expects'}; running cold")
        return None
    sock.settimeout(None)
    sigint_ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    mask = os.umask(0o22)
    os.umask(mask)
    request = {"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": mask,
               "sigint_ignored": sigint_ignored, "path0": sys.path[0]}
    previous = {}
    for number in _RELAYED:
        if number == signal.SIGINT and sigint_ignored:
            continue
        previous[number] = signal.signal(number, lambda signum, _frame: chan.send({"signal": signum}))
    try:
        chan.send(request, [0, 1, 2])
        _say(verbose, f"served by the worker (pid {answer.get('pid')})")
        # Handed over: the run may be under way (requests paid, output written), so a lost connection is
        # reported, never followed by a cold run of the same review.
        try:
            while True:
                message, _ = chan.receive()
                if message is None:
                    return _lost("the worker ended the connection before the run's exit status")
                if "exit" in message:
                    break
        except (OSError, ValueError) as exc:
            return _lost(f"{type(exc).__name__}: {exc}")
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    code = int(message["exit"])
    if code < 0:  # the run died by a signal: so does this process, as a cold run would have
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code
    return code


def _lost(why: str) -> int:
    if sys.stderr is not None:
        sys.stderr.write(f"ocr-hook: error: the warm worker lost this run ({why}); it is not started again here, "
                         "so nothing runs twice: review again, or with --no-warm\n")
        sys.stderr.flush()
    return 3  # incomplete (DESIGN.md 4)


def _open_fds() -> list[int]:
    """This process's inheritable descriptors above stdio (the others close at exec anyway)."""
    found = []
    for name in os.listdir("/dev/fd"):
        fd = int(name)
        try:
            if fd > 2 and os.get_inheritable(fd):
                found.append(fd)
        except OSError:
            pass  # the listing's own descriptor, closed by now
    return found


def spawn(path: str, idle: float, environ: Mapping[str, str], *, lock_fd: int | None = None) -> int | None:
    """Start a worker for `path` in the background and return its pid, or None when one is being started
    already (the spawn lock is held) or it cannot be. Never waits for it: this run goes on cold."""
    import fcntl

    own_lock = lock_fd is None
    if lock_fd is None:
        lock_fd = os.open(os.path.join(os.path.dirname(path), "spawn.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(lock_fd)
            return None
    try:
        log_dir = protocol.cache_dir(environ)
        os.makedirs(log_dir, mode=0o700, exist_ok=True)
        if not protocol.trusted_root(log_dir):
            return None  # another user's (or everyone's) directory: no log of ours in it, no worker
        # O_NOFOLLOW: a link planted as warm.log would have the worker append to whatever it names.
        log = os.open(os.path.join(log_dir, "warm.log"),
                      os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        env = {name: value for name, value in environ.items()
               if name in _WORKER_ENV or protocol.read_at_start_up(name)}
        if sys.flags.utf8_mode and "PYTHONUTF8" not in env:
            # With no locale at all, this interpreter coerced LC_CTYPE to C.UTF-8 (PEP 538) and turned UTF-8
            # mode on (PEP 540); a worker started with that LC_CTYPE would see a locale and leave it off.
            env["PYTHONUTF8"] = "1"
        os.set_inheritable(lock_fd, True)  # held by the worker until it listens
        # Only stdio and the lock: a pipe inherited from whatever started the hook, held open for a quarter
        # of an hour by a background process, would keep its reader waiting for the end of it.
        actions: list[tuple[Any, ...]] = [(os.POSIX_SPAWN_CLOSE, fd) for fd in _open_fds() if fd not in (log, lock_fd)]
        actions += [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0), (os.POSIX_SPAWN_DUP2, log, 2)]
        try:
            return os.posix_spawn(sys.executable, [sys.executable, "-c", _LAUNCH, path, repr(idle), str(lock_fd)],
                                  env, setsid=True, file_actions=actions)
        finally:
            os.close(log)
    except (OSError, NotImplementedError):
        return None
    finally:
        if own_lock:
            os.close(lock_fd)
