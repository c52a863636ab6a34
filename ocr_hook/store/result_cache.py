"""Findings of earlier reviews, keyed by everything that decided them: unchanged input, same findings.

One small JSON file per key under `<dir>/<key[:2]>/<key>.json` (ocr_hook.store.files): written
atomically, so a reader (another run, possibly at the same time) sees either no entry or a whole one.
Anything unreadable, corrupt or of another format version is a miss, never an error: the cache can
only save requests, not break a review. The newest MAX_ENTRIES entries are kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath

from ocr_hook.findings import Finding
from ocr_hook.findings.serial import finding_from_json, finding_to_json, findings_from_json
from ocr_hook.store.files import JsonFileStore, is_key

__all__ = ["FORMAT_VERSION", "CachedReview", "ResultCache", "cache_key", "default_cache_dir",
           "finding_from_json", "finding_to_json"]

FORMAT_VERSION = 3  # 2: findings carry `fix`; 3: their memory `status`, and the run's `resolved`
MAX_ENTRIES = 5000  # entries kept; older ones are pruned (a review writes one per file)
APP_DIR = "ocr-hook"
_MAX_ENTRY_BYTES = 16 * 1024 * 1024  # far above any real entry; guards against reading junk


def default_cache_dir(environ: Mapping[str, str] = os.environ, *, platform: str = sys.platform) -> Path:
    """The per-user cache directory: never derived from the current directory or the work tree."""
    if platform == "win32":
        local = environ.get("LOCALAPPDATA", "")
        if local and PureWindowsPath(local).is_absolute():
            return Path(local) / APP_DIR / "Cache"
    xdg = environ.get("XDG_CACHE_HOME", "")
    # The XDG spec says relative paths must be ignored; one would land inside the work tree.
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / APP_DIR
    home = environ.get("HOME") or environ.get("USERPROFILE") or ""
    if home and Path(home).is_absolute():
        return Path(home) / ".cache" / APP_DIR
    # No usable home (some CI containers): a per-user directory under the system temp dir.
    user = str(os.getuid()) if hasattr(os, "getuid") else environ.get("USERNAME", "user")
    import tempfile

    return Path(tempfile.gettempdir()) / f"{APP_DIR}-{user}"


def cache_key(parts: Mapping[str, str]) -> str:
    """sha256 of the canonical JSON of `parts` (sorted keys, no spaces, ASCII escapes)."""
    canonical = json.dumps(dict(parts), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class CachedReview:
    """One file's cached review: its findings (with the statuses of the run that stored them) and
    the findings that run found resolved since the review before it (review memory)."""

    findings: list[Finding]
    resolved: list[Finding] = field(default_factory=list)
    memory: str | None = None  # which review memory the statuses are relative to (None: none used)


class ResultCache:
    """Findings by cache key in `directory`, created (mode 0700) on the first write."""

    def __init__(self, directory: Path) -> None:
        self.store = JsonFileStore(Path(directory), format_version=FORMAT_VERSION,
                                   max_entry_bytes=_MAX_ENTRY_BYTES, what="the result cache")
        self._pruned = False

    @property
    def directory(self) -> Path:
        return self.store.directory

    @property
    def last_error(self) -> str | None:
        return self.store.last_error

    def _entry(self, key: str) -> Path:
        if not is_key(key):
            raise ValueError("cache keys are sha256 hex digests; build them with cache_key()")
        return self.store.entry(key)

    def get(self, key: str) -> list[Finding] | None:
        """The findings stored under `key`, or None when absent, unreadable, corrupt or outdated."""
        entry = self.get_review(key)
        return None if entry is None else entry.findings

    def get_review(self, key: str) -> CachedReview | None:
        """The whole entry under `key` (findings, resolved, which memory was used), or None on a miss."""
        self._entry(key)
        data = self.store.read(key)
        if data is None:
            return None
        try:
            memory = data.get("memory")
            if memory is not None and not isinstance(memory, str):
                return None
            return CachedReview(findings_from_json(data.get("findings")),
                                findings_from_json(data.get("resolved", [])), memory)
        except (ValueError, KeyError, TypeError, RecursionError):
            return None

    def put(self, key: str, findings: Sequence[Finding], resolved: Sequence[Finding] = (), *,
            memory: str | None = None) -> None:
        """Store `findings` under `key` atomically. A failed write is recorded in last_error, not raised."""
        self._entry(key)
        body = {"findings": [finding_to_json(f) for f in findings],
                "resolved": [finding_to_json(f) for f in resolved], "memory": memory}
        if self.store.write(key, body) and not self._pruned:
            self._pruned = True  # once per run: listing the directory costs more than one write
            self.store.prune(MAX_ENTRIES)
