"""Write a file so that readers see the old content or the new one, never a half-written file."""

from __future__ import annotations

import contextlib
import os

from ocr_hook.errors import FatalError


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
    temp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` as UTF-8 to a temporary file beside `path`, then rename it over `path`.

    The temporary file is created with mode 0666 less the umask, like an ordinary new file, and is
    removed again when anything fails; the error is one line naming the file.
    """
    try:
        replace_bytes(path, text.encode("utf-8", "surrogateescape"))
    except OSError as exc:
        raise ReportWriteError(f"cannot write {path}: {exc.strerror or exc}") from None
