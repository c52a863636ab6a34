"""What the warm client and the worker share: where the socket lives, what must match between them, and
the frames on the wire.

Light on purpose: the client imports this on every commit before it knows whether it will run cold, so
only modules the interpreter has loaded anyway (os, sys) and small built-in ones (struct, zlib); json and
socket load where a frame is sent or a peer checked, so a run that stays cold (no worker wanted: CI, `warm:
off`, outside pre-commit) never loads them.
"""

from __future__ import annotations

import os
import struct
import sys
import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket

MODES = ("auto", "on", "off")
DEFAULT_IDLE = 900.0  # seconds without a run before the worker exits (setting warm_idle)
ANSWER_TIMEOUT = 0.2  # the worker's hello must come back within this, or the client runs cold
MAX_SOCKET_PATH = 100  # sun_path is 104 bytes on macOS, 108 on Linux (with the NUL)
_HEADER = struct.Struct("!I")
_MAX_FRAME = 16 << 20  # far above any real request (the environment is the largest part)
_APP = "ocr-hook"


def mode_of(value: object) -> str | None:
    """A `warm` value as a mode, or None when it is not one. YAML 1.1 reads a bare off/on as a boolean."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return value if isinstance(value, str) and value in MODES else None


def wanted(mode: str, environ: Mapping[str, str], platform: str = sys.platform) -> bool:
    """Whether a review should be served warm: never on Windows (no fork, no Unix socket we rely on);
    `auto` only at commit time (a git hook runs us: ocr_hook.hookenv) and not in CI, where every job starts on a
    fresh machine anyway."""
    if platform not in ("linux", "darwin") or mode == "off":
        return False
    if mode == "on":
        return True
    in_ci = environ.get("CI", "").lower() not in ("", "0", "false")
    from ocr_hook.hookenv import commit_time

    return commit_time(environ) and not in_ci


# --- where ----------------------------------------------------------------------------------------------

def _absolute(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "")
    return value if os.path.isabs(value) else ""  # XDG: a relative path must be ignored


def cache_dir(environ: Mapping[str, str]) -> str:
    """The per-user cache directory (as ocr_hook.store.result_cache finds it, without pathlib)."""
    base = _absolute(environ, "XDG_CACHE_HOME")
    if base:
        return os.path.join(base, _APP)
    home = _absolute(environ, "HOME")
    if home:
        return os.path.join(home, ".cache", _APP)
    # As tempfile.gettempdir would (TMPDIR first), without importing it on the client's path.
    tmp = _absolute(environ, "TMPDIR")
    return os.path.join(tmp if tmp and os.path.isdir(tmp) else "/tmp", f"{_APP}-{os.getuid()}")


def trusted_root(path: str) -> bool:
    """Whether `path` may hold this user's sockets and logs: a real directory (not a link) of this user that
    no one else may write to, or one that does not exist yet (it is then made 0700). Under a shared /tmp
    another user can create the fallback directory first."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    from ocr_hook.bounded_read import private_dir

    return private_dir(st)


def socket_dir(environ: Mapping[str, str]) -> str:
    """The runtime directory (XDG_RUNTIME_DIR: per user, mode 0700, emptied at logout) if there is one,
    else a directory in the cache directory."""
    runtime = _absolute(environ, "XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return os.path.join(runtime, _APP)
    return os.path.join(cache_dir(environ), "warm")


def private_dir(path: str, create: bool) -> bool:
    """Whether `path` is a directory of this user that nobody else may enter (made so when `create`)."""
    if create:
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError:
            return False
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_uid == os.getuid() and (st.st_mode & 0o077) == 0 and os.path.isdir(path)


def install_key() -> str:
    """One socket per installation (interpreter and package directory): two pre-commit environments of
    different ocr-hook versions each get their own worker instead of fighting over one socket."""
    import ocr_hook

    where = f"{sys.executable}\0{os.path.dirname(os.path.abspath(ocr_hook.__file__))}"
    return f"{zlib.crc32(where.encode()):08x}"


def socket_path(directory: str) -> str:
    return os.path.join(directory, f"w-{install_key()}.sock")


def sockets_in(directory: str) -> list[str]:
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(os.path.join(directory, n) for n in names if n.startswith("w-") and n.endswith(".sock"))


# --- what must match ------------------------------------------------------------------------------------

def _files_under(root: str) -> list[str]:
    rows = []
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            path = os.path.join(current, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            rows.append(f"{os.path.relpath(path, root)}\0{st.st_size}\0{st.st_mtime_ns}")
    return rows


def identity(search_path: Sequence[str]) -> dict[str, str]:
    """The installed ocr-hook as the worker imported it: the version, and a checksum of the interpreter,
    every file of the package and its shipped config (size, mtime), and the import path's directories
    (installing or uninstalling a package changes their mtime). `search_path` is sys.path without its first entry,
    which differs between `python -m` and the console script and is the run's own."""
    import ocr_hook
    import ocr_hook.config

    package = os.path.dirname(os.path.abspath(ocr_hook.__file__))
    config = os.path.dirname(os.path.abspath(ocr_hook.config.__file__))
    rows = [sys.executable, sys.version, *_files_under(package)]
    if not config.startswith(package + os.sep):  # an editable install maps config/ from the checkout
        rows += _files_under(config)
    for entry in search_path:
        try:
            rows.append(f"{entry}\0{os.stat(entry).st_mtime_ns}")
        except OSError:
            rows.append(f"{entry}\0-")
    return {"version": ocr_hook.__version__, "files": f"{zlib.crc32(chr(1).join(rows).encode()):08x}"}


def read_at_start_up(name: str) -> bool:
    """Variables a process reads once, before any run: the interpreter's own (PYTHON*, and the locale that
    sets its streams' encoding) and the SDK's log level (read when it is imported)."""
    return name.startswith(("PYTHON", "LC_")) or name in ("ANTHROPIC_LOG", "LANG")


def start_up(environ: Mapping[str, str]) -> dict[str, Any]:
    """What a fresh interpreter would have set up differently: those variables, its flags, the streams'
    encodings. A client whose start-up differs from the worker's runs cold."""
    return {
        # Not PYTHONUTF8: the client starts a worker with it to match its own UTF-8 mode, and that mode is in
        # the flags compared below.
        "env": {name: value for name, value in sorted(environ.items())
                if read_at_start_up(name) and name != "PYTHONUTF8"},
        "flags": list(sys.flags),
        "xoptions": sorted(f"{k}={v}" for k, v in sys._xoptions.items()),
        "encoding": [getattr(s, "encoding", None) for s in (sys.stdin, sys.stdout, sys.stderr)],
    }


# --- frames ---------------------------------------------------------------------------------------------

def peer_uid(sock: socket.socket) -> int | None:
    """The user on the other end of a connected Unix socket (SO_PEERCRED on Linux, LOCAL_PEERCRED, which
    getpeereid reads, on macOS), or None when the system does not say."""
    import socket

    if hasattr(socket, "SO_PEERCRED"):
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)[1]
    if sys.platform == "darwin":
        sol_local, local_peercred = 0, 1  # <sys/un.h>; struct xucred: version, uid, ngroups, groups[16]
        creds = sock.getsockopt(sol_local, local_peercred, 76)
        return struct.unpack_from("2I", creds)[1]
    return None


class Channel:
    """Length-prefixed JSON frames over a connected stream socket; file descriptors ride on a frame's
    first byte (SCM_RIGHTS). Buffered, because one recv may hold the end of one frame and a next."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = b""
        self._fds: list[int] = []

    def send(self, message: Mapping[str, Any], fds: Sequence[int] = ()) -> None:
        import json
        import socket

        data = json.dumps(message).encode()
        frame = _HEADER.pack(len(data)) + data
        sent = socket.send_fds(self.sock, [frame], list(fds)) if fds else 0
        if sent < len(frame):
            self.sock.sendall(frame[sent:])

    def _fill(self) -> bool:
        import socket

        data, fds, _flags, _addr = socket.recv_fds(self.sock, 1 << 16, 3)
        self._fds.extend(fds)
        self._buffer += data
        return bool(data)

    def receive(self) -> tuple[dict[str, Any] | None, list[int]]:
        """The next frame and the descriptors that came with it; (None, []) at end of stream."""
        while len(self._buffer) < _HEADER.size or len(self._buffer) < _HEADER.size + self._length():
            if not self._fill():
                return None, []
        size = _HEADER.size + self._length()
        frame, self._buffer = self._buffer[_HEADER.size:size], self._buffer[size:]
        fds, self._fds = self._fds, []
        import json

        message = json.loads(frame)
        if not isinstance(message, dict):
            raise ValueError("a frame that is not an object")
        return message, fds

    def has_buffered(self) -> bool:
        return len(self._buffer) >= _HEADER.size and len(self._buffer) >= _HEADER.size + self._length()

    def _length(self) -> int:
        (size,) = _HEADER.unpack_from(self._buffer)
        if size > _MAX_FRAME:
            raise ValueError(f"a frame of {size} bytes")
        return size
