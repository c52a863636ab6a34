"""Read a small file that someone else may have planted: never through a link, never a FIFO or a device,
never more than a cap.

The work tree's dismissals file and the cache's entries are under the control of whoever wrote the
repository or restored the cache. `open()` on a FIFO blocks until a writer comes, on `/dev/zero` reads for
ever, and follows a link anywhere: a review would hang past its deadline or read a file outside. So the
file is opened without following a final link (O_NOFOLLOW) and without blocking (O_NONBLOCK, which on a
regular file changes nothing), then checked to be a regular file before one capped read. Where the
platform lacks those flags (Windows has no FIFOs at such paths), a link is still refused by lstat first.
"""

from __future__ import annotations

import errno
import os
import stat


class Refused(Exception):
    """The file is not read, and why ("it is a symbolic link", ...): the caller names the file."""


def read_regular_file(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of the regular file at `path`; Refused for a link, a special file or more than `max_bytes`;
    OSError (FileNotFoundError, PermissionError, ...) as open() raises it."""
    if os.path.islink(path):
        raise Refused("it is a symbolic link")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the link appeared after the check
            raise Refused("it is a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Refused("it is not a regular file")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise Refused(f"it is larger than {max_bytes} bytes")
    return data


def _components(base: str | os.PathLike[str], path: str | os.PathLike[str]) -> list[str]:
    """Each directory or file from `base` (exclusive: the user chose it) down to `path`, which lies under it."""
    rel = os.path.relpath(path, base)
    if rel == ".":
        return []
    current, found = os.fspath(base), []
    for part in rel.split(os.sep):
        current = os.path.join(current, part)
        found.append(current)
    return found


def private_dir(st: os.stat_result) -> bool:
    """A directory this user owns and nobody else may write (what the cache, the store and the warm sockets
    live in)."""
    import stat

    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def unsafe_component(base: str | os.PathLike[str], path: str | os.PathLike[str]) -> str | None:
    """The first directory or file from `base` (exclusive) down to `path` that is a symbolic link or, on POSIX,
    a directory another user owns or others may write: below a cache directory several users share, another
    user could otherwise plant or replace what a run reads as its own. None when there is none."""
    import stat

    for current in _components(base, path):
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return None  # nothing below exists yet: it will be created this user's own
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            return current
        if os.name == "posix" and stat.S_ISDIR(st.st_mode) and not private_dir(st):
            return current
    return None


def linked_component(base: str | os.PathLike[str], path: str | os.PathLike[str]) -> str | None:
    """The first directory or file from `base` (exclusive: the user chose it) down to `path` that is a symbolic
    link, or None. `path` must lie under `base`; components that do not exist yet are not links."""
    return next((current for current in _components(base, path) if os.path.islink(current)), None)
