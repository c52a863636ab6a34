"""Write a file so that readers see the old content or the new one, never a half-written file."""

from __future__ import annotations

import contextlib
import os

from ocr_hook.errors import FatalError

# A temporary file of ours this old belongs to a run that died mid-write (a concurrent writer's is seconds old).
STALE_TEMP_S = 3600.0


class ReportWriteError(FatalError):
    """An output file could not be written (missing directory, permissions, disk full)."""


def replace_bytes(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o666, sync: bool = True) -> None:
    """Write `data` to a temporary file beside `path`, then rename it over `path`; OSError on failure.

    The temporary file gets `mode` less the umask (0o600 for private caches) and is removed again when
    anything fails. `sync` flushes it to disk before the rename (reports); caches, which can only lose
    an entry on a crash, skip that cost."""
    from pathlib import Path

    target = Path(path)
    # os.urandom is what the secrets module reads too; importing that module (hmac, random) costs a cached run
    # several milliseconds for four bytes. O_EXCL below refuses a name that exists, whatever the odds.
    temp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")  # see _leftovers
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        _replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


# Windows refuses a rename over a file that another process holds open for a moment (a virus scanner, an
# editor, a second ocr-hook reading the report): PermissionError. Waited out briefly, then the error stands.
REPLACE_WAITS_S = (0.05, 0.1, 0.2, 0.4)


def _replace(temp: os.PathLike[str], target: os.PathLike[str]) -> None:
    import time

    for wait in REPLACE_WAITS_S:
        try:
            os.replace(temp, target)
            return
        except PermissionError:
            time.sleep(wait)
    os.replace(temp, target)


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` as UTF-8 to `path`: a regular file (or a new one) through a temporary file beside it renamed
    over it; a device or a FIFO (`/dev/null`, a pipe a reader waits on) written through, never replaced.

    A symbolic link is never replaced either: one to a device or a FIFO is written through (`/dev/stdout`); one
    to a file, or to nothing, is refused (a checkout's link could point anywhere the user can write). The
    temporary file is created with mode 0666 less the umask, like an ordinary new file, and is removed again
    when anything fails; the error is one line naming the file. Temporary files an earlier run killed
    mid-write left beside `path` (ours by their name, older than STALE_TEMP_S) are removed first.
    """
    data = text.encode("utf-8", "surrogateescape")
    try:
        kind = output_kind(path)
        if kind == SPECIAL:
            _write_through(path, data)
            return
        if kind == LINK:
            raise ReportWriteError(f"cannot write {path}: {LINK_REFUSED}")
        remove_leftovers(path)
        replace_bytes(path, data)
    except OSError as exc:
        raise ReportWriteError(f"cannot write {path}: {exc.strerror or exc}") from None


# What is at an output path, for write_atomic and for a run that clears its outputs first (commands/review.py).
ABSENT, REGULAR, SPECIAL, LINK, DIRECTORY = "absent", "regular", "special", "link", "directory"
LINK_REFUSED = ("it is a symbolic link to a file (or to nothing); name the file itself: a report is never "
                "written through such a link nor replaces it")


def output_kind(path: str | os.PathLike[str]) -> str:
    """ABSENT, REGULAR (a file of its own), SPECIAL (a device, a FIFO, a socket, or a link to one: written
    through), LINK (a link to a file or to nothing: refused) or DIRECTORY; OSError when it cannot be looked at."""
    import stat

    try:
        own = os.lstat(path)
    except FileNotFoundError:
        return ABSENT
    if stat.S_ISREG(own.st_mode):
        return REGULAR
    if stat.S_ISDIR(own.st_mode):
        return DIRECTORY
    if not stat.S_ISLNK(own.st_mode):
        return SPECIAL
    try:
        target = os.stat(path)
    except FileNotFoundError:
        return LINK
    if stat.S_ISDIR(target.st_mode):
        return DIRECTORY
    return LINK if stat.S_ISREG(target.st_mode) else SPECIAL


def _write_through(path: str | os.PathLike[str], data: bytes) -> None:
    """Write into what is there (never O_CREAT: nothing is made in its place); a FIFO waits for its reader."""
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def remove_leftovers(path: str | os.PathLike[str], *, now: float | None = None) -> int:
    """Delete the temporary files `replace_bytes` made for `path` and a killed run left behind: only names it
    makes (`.NAME.PID.8HEX.tmp`), only regular files (never a link), only older than STALE_TEMP_S, so a
    concurrent writer's file stays. Returns how many went; never raises."""
    import re
    import stat
    import time

    directory, name = os.path.split(os.path.abspath(path))
    ours = re.compile(rf"\.{re.escape(name)}\.\d+\.[0-9a-f]{{8}}\.tmp")
    now = time.time() if now is None else now
    removed = 0
    try:
        names = [n for n in os.listdir(directory) if ours.fullmatch(n)]
    except OSError:
        return 0
    for leftover in names:
        full = os.path.join(directory, leftover)
        with contextlib.suppress(OSError):
            info = os.lstat(full)
            if stat.S_ISREG(info.st_mode) and now - info.st_mtime > STALE_TEMP_S:
                os.unlink(full)
                removed += 1
    return removed
