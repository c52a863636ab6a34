"""A directory of small JSON documents by hex key: what the result cache and the review memory share.

One file per key under `<dir>/<key[:2]>/<key>.json` (directories mode 0700, files 0600). Writes go to a
temporary file beside the entry and are renamed into place (ocr_hook.store.atomic), so a reader, another
run possibly at the same time, sees no entry or a whole one. Reads never fail: anything missing,
unreadable, oversized, corrupt, of another format version or stored under another key is a miss. The
store stays bounded: `prune` keeps the most recently written entries and drops the rest.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

_HEX = frozenset("0123456789abcdef")
_STALE_TEMP_S = 3600.0  # a temporary file this old belongs to a run that died mid-write


def is_key(key: str) -> bool:
    """A sha256 hex digest: the only names the store accepts, so a key can never be a path."""
    return len(key) == 64 and set(key) <= _HEX


class JsonFileStore:
    """JSON documents `{"format": N, "key": K, ...}` by key in `directory`, created on the first write."""

    def __init__(self, directory: Path, *, format_version: int, max_entry_bytes: int, what: str) -> None:
        self.directory = Path(directory)
        self.format_version = format_version
        self.max_entry_bytes = max_entry_bytes
        self.what = what  # names the store in a write error, e.g. "the result cache"
        self.last_error: str | None = None  # the latest write failure, for a warning; reads never fail

    def entry(self, key: str) -> Path:
        if not is_key(key):
            raise ValueError("store keys are sha256 hex digests")
        return self.directory / key[:2] / f"{key}.json"

    def read(self, key: str) -> dict[str, Any] | None:
        """The document stored under `key`, or None when absent, unreadable, oversized, corrupt or outdated."""
        path = self.entry(key)
        try:
            with open(path, "rb") as handle:
                raw = handle.read(self.max_entry_bytes + 1)
            if len(raw) > self.max_entry_bytes:
                return None
            # surrogateescape paths arrive as \udcXX escapes, which json restores unchanged.
            data = json.loads(raw.decode("utf-8"))
        except (OSError, ValueError, RecursionError):
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
            replace_bytes(path, payload, mode=0o600, sync=False)
        except OSError as exc:
            self.last_error = f"cannot write {self.what} in {self.directory}: {exc.strerror or exc}"
            return False
        return True

    def delete(self, key: str) -> None:
        try:
            self.entry(key).unlink()
        except OSError:
            pass

    def prune(self, keep: int, max_bytes: int | None = None) -> int:
        """Drop all but the `keep` most recently written entries, and more of the oldest while they
        total over `max_bytes` (the newest entry always stays); temporary files of dead runs go too.

        Returns how many entries were removed. Another run may prune at the same time: a file that is
        already gone is simply skipped."""
        entries: list[tuple[float, int, Path]] = []
        now = time.time()
        try:
            shards = [p for p in self.directory.iterdir() if len(p.name) == 2 and set(p.name) <= _HEX]
        except OSError:
            return 0
        for shard in shards:
            try:
                names = os.listdir(shard)
            except OSError:
                continue
            for name in names:
                path = shard / name
                try:
                    stat = path.stat()
                except OSError:
                    continue
                if name.endswith(".tmp"):
                    if now - stat.st_mtime > _STALE_TEMP_S:
                        _unlink(path)
                elif name.endswith(".json") and is_key(name[:-5]):
                    entries.append((stat.st_mtime, stat.st_size, path))
        entries.sort(key=lambda item: item[0], reverse=True)
        kept, total = 0, 0
        for _mtime, size, _path in entries[:keep]:
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
