"""A directory of small JSON documents by hex key: what the result cache and the review memory share.

One file per key under `<dir>/<key[:2]>/<key>.json` (directories mode 0700, files 0600). Writes go to a
temporary file beside the entry and are renamed into place (ocr_hook.store.atomic), so a reader, another
run possibly at the same time, sees no entry or a whole one. Reads never fail: anything missing,
unreadable, oversized, corrupt, of another format version or stored under another key is a miss, and so is
a symbolic link, a FIFO or a device where an entry should be (ocr_hook.bounded_read: never a hang). The
store stays bounded: `prune` keeps the most recently written entries and drops the rest.

The cache directory is restored by CI and shared between runs, so it may hold links nobody meant: below the
directory the user chose (`base`), no directory is ever written through, read through or pruned through
when it is a symbolic link, and (the same checks as the default cache root's, for a cache_dir several users
share) none that another user owns or others may write; either is reported once as a write error.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

_HEX = frozenset("0123456789abcdef")
_STALE_TEMP_S = 3600.0  # a temporary file this old belongs to a run that died mid-write


def is_key(key: str) -> bool:
    """A sha256 hex digest: the only names the store accepts, so a key can never be a path."""
    return len(key) == 64 and set(key) <= _HEX


class JsonFileStore:
    """JSON documents `{"format": N, "key": K, ...}` by key in `directory`, created on the first write."""

    def __init__(self, directory: str | os.PathLike[str], *, format_version: int, max_entry_bytes: int, what: str,
                 base: str | os.PathLike[str] | None = None) -> None:
        # Kept as text: reading and touching entries (all a run answered from the cache does) need no pathlib,
        # which a run would otherwise load for this alone (~3 ms with what it imports).
        self._directory = os.fspath(directory)
        self._base = os.fspath(base) if base is not None else self._directory  # the cache_dir: links below refused
        self.format_version = format_version
        self.max_entry_bytes = max_entry_bytes
        self.what = what  # names the store in a write error, e.g. "the result cache"
        self.last_error: str | None = None  # the latest write failure, for a warning; reads never fail

    @property
    def directory(self) -> Path:
        from pathlib import Path

        return Path(self._directory)

    @property
    def base(self) -> Path:
        from pathlib import Path

        return Path(self._base)

    def entry(self, key: str) -> Path:
        from pathlib import Path

        return Path(self._entry(key))

    def _entry(self, key: str) -> str:
        if not is_key(key):
            raise ValueError("store keys are sha256 hex digests")
        return os.path.join(self._directory, key[:2], f"{key}.json")

    def read(self, key: str) -> dict[str, Any] | None:
        """The document stored under `key`, or None when absent, unreadable, oversized, corrupt or outdated."""
        from ocr_hook.bounded_read import Refused, read_regular_file, unsafe_component

        path = self._entry(key)
        try:
            if unsafe_component(self._base, os.path.dirname(path)) is not None:
                return None
            raw = read_regular_file(path, self.max_entry_bytes)
            # surrogateescape paths arrive as \udcXX escapes, which json restores unchanged.
            data = json.loads(raw.decode("utf-8"))
        except (OSError, ValueError, RecursionError, Refused):
            return None
        if not isinstance(data, dict) or data.get("format") != self.format_version or data.get("key") != key:
            return None
        return data

    def write(self, key: str, body: dict[str, Any]) -> bool:
        """Store `body` (plus format and key) atomically; False, with last_error set, when that failed."""
        from ocr_hook.store.atomic import replace_bytes  # writing only: a wholly cached run never loads it

        path = self.entry(key)
        document = {"format": self.format_version, "key": key, **body}
        payload = json.dumps(document, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        if len(payload) > self.max_entry_bytes:
            self.last_error = f"{self.what}: an entry of {len(payload)} bytes was not stored (too large)"
            return False
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.parent.mkdir(mode=0o700, exist_ok=True)
            link = self.link_below(path.parent)
            if link is not None:
                self.last_error = (f"{self.what}: {link} is a symbolic link or a directory that is not this user's "
                                   "own (another user's, or writable by others); nothing is written through it")
                return False
            replace_bytes(path, payload, mode=0o600, sync=False)
        except OSError as exc:
            self.last_error = f"cannot write {self.what} in {self.directory}: {exc.strerror or exc}"
            return False
        return True

    def link_below(self, path: str | os.PathLike[str]) -> str | None:
        """The first symbolic link, or directory not this user's own, from below `base` down to `path`, or
        None (ocr_hook.bounded_read.unsafe_component)."""
        from ocr_hook.bounded_read import unsafe_component

        return unsafe_component(self._base, path)

    def touch(self, key: str) -> None:
        """Mark an entry as just used (its file's time), so pruning keeps it like a fresh write."""
        path = self._entry(key)
        if self.link_below(os.path.dirname(path)) is None:
            with contextlib.suppress(OSError):
                os.utime(path, follow_symlinks=False)

    def delete(self, key: str) -> None:
        path = self.entry(key)
        if self.link_below(path.parent) is None:
            _unlink(path)

    @contextlib.contextmanager
    def locked(self, timeout_s: float = 30.0) -> Iterator[bool]:
        """An exclusive lock on the whole store (a `.lock` file in its directory) for a read-merge-write;
        yields False when it could not be had in `timeout_s` (a stuck run) or at all: the caller goes on
        unlocked, as before there was a lock. filelock: fcntl on POSIX, msvcrt on Windows; released by the
        OS when a holder dies."""
        import filelock

        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            if self.link_below(self.directory) is not None:
                yield False
                return
            lock = filelock.FileLock(str(self.directory / ".lock"), timeout=timeout_s)
            lock.acquire()
        except (OSError, filelock.Timeout):
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    def _shards(self) -> list[Path]:
        """The store's shard directories; none when the store or a shard is a symbolic link (not the store's:
        never listed, never pruned through)."""
        if self.link_below(self.directory) is not None:
            return []
        try:
            return [p for p in self.directory.iterdir()
                    if len(p.name) == 2 and set(p.name) <= _HEX and not p.is_symlink()]
        except OSError:
            return []

    def keys(self) -> Iterator[str]:
        """The key of every entry, in no particular order."""
        for shard in self._shards():
            try:
                names = os.listdir(shard)
            except OSError:
                continue
            yield from (name[:-5] for name in names if name.endswith(".json") and is_key(name[:-5]))

    def prune(self, keep: int, max_bytes: int | None = None, max_age_s: float | None = None) -> int:
        """Drop all but the `keep` most recently written entries, and more of the oldest while they
        total over `max_bytes` (the newest entry always stays) or were last written over `max_age_s` ago;
        temporary files of dead runs go too.

        Returns how many entries were removed. Another run may prune at the same time: a file that is
        already gone is simply skipped."""
        entries: list[tuple[float, int, Path]] = []
        now = time.time()
        for shard in self._shards():
            try:
                names = os.listdir(shard)
            except OSError:
                continue
            for name in names:
                path = shard / name
                try:
                    stat = path.lstat()
                except OSError:
                    continue
                if name.endswith(".tmp"):
                    if now - stat.st_mtime > _STALE_TEMP_S:
                        _unlink(path)
                elif name.endswith(".json") and is_key(name[:-5]):
                    entries.append((stat.st_mtime, stat.st_size, path))
        entries.sort(key=lambda item: item[0], reverse=True)
        kept, total = 0, 0
        for mtime, size, _path in entries[:keep]:
            if max_age_s is not None and now - mtime > max_age_s:
                break
            if kept and max_bytes is not None and total + size > max_bytes:
                break
            kept, total = kept + 1, total + size
        for _mtime, _size, path in entries[kept:]:
            _unlink(path)
        return len(entries) - kept


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
