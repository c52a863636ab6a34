"""Write a file so that readers see the old content or the new one, never a half-written file."""

from __future__ import annotations

import contextlib
import os

from ocr_hook.errors import FatalError


class ReportWriteError(FatalError):
    """An output file could not be written (missing directory, permissions, disk full)."""


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` as UTF-8 to a temporary file beside `path`, then rename it over `path`.

    The temporary file is created with mode 0666 less the umask, like an ordinary new file, and is
    removed again when anything fails; the error is one line naming the file.
    """
    import secrets  # only when a file is written: not on every run's start-up
    from pathlib import Path

    target = Path(path)
    data = text.encode("utf-8", "surrogateescape")
    temp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise ReportWriteError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        if isinstance(exc, OSError):
            raise ReportWriteError(f"cannot write {target}: {exc.strerror or exc}") from None
        raise
