"""Findings of earlier reviews, keyed by everything that decided them: unchanged input, same findings.

One small JSON file per key under `<dir>/<key[:2]>/<key>.json` (ocr_hook.store.files): written
atomically, so a reader (another run, possibly at the same time) sees either no entry or a whole one.
Anything unreadable, corrupt or of another format version is a miss, never an error: the cache can
only save requests, not break a review. The newest MAX_ENTRIES entries are kept.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ocr_hook.digest import sha256_hex
from ocr_hook.findings import Finding
from ocr_hook.findings.serial import finding_from_json, finding_to_json, findings_from_json
from ocr_hook.store.files import JsonFileStore, is_key

if TYPE_CHECKING:
    from pathlib import Path

    from ocr_hook.context import PackSummary

__all__ = [
    "FORMAT_VERSION",
    "CachedReview",
    "ResultCache",
    "cache_key",
    "default_cache_dir",
    "default_cache_path",
    "finding_from_json",
    "finding_to_json",
    "run_cache_dir",
]

FORMAT_VERSION = 3  # 2: findings carry `fix`; 3: their memory `status`, and the run's `resolved`
MAX_ENTRIES = 5000  # entries kept; older ones are pruned (a review writes one per file)
APP_DIR = "ocr-hook"
_MAX_ENTRY_BYTES = 16 * 1024 * 1024  # far above any real entry; guards against reading junk


def default_cache_dir(environ: Mapping[str, str] = os.environ, *, platform: str = sys.platform) -> Path:
    """The per-user cache directory: never derived from the current directory or the work tree."""
    from pathlib import Path

    return Path(default_cache_path(environ, platform=platform))


def default_cache_path(environ: Mapping[str, str] = os.environ, *, platform: str = sys.platform) -> str:
    """default_cache_dir as text (a run answered from the cache needs no pathlib)."""
    if platform == "win32":
        from pathlib import PureWindowsPath

        local = environ.get("LOCALAPPDATA", "")
        if local and PureWindowsPath(local).is_absolute():
            return os.path.join(local, APP_DIR, "Cache")
    xdg = environ.get("XDG_CACHE_HOME", "")
    # The XDG spec says relative paths must be ignored; one would land inside the work tree.
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, APP_DIR)
    home = environ.get("HOME") or environ.get("USERPROFILE") or ""
    if home and os.path.isabs(home):
        return os.path.join(home, ".cache", APP_DIR)
    # No usable home (some CI containers): a per-user directory under the system temp dir.
    user = str(os.getuid()) if hasattr(os, "getuid") else environ.get("USERNAME", "user")
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"{APP_DIR}-{user}")


def run_cache_dir(cache_dir: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """Where a run keeps its cache, memory and records: the `cache_dir` setting, else the per-user default,
    refused when it is not this user's own (with no home it lies under a temp directory others share)."""
    if cache_dir:
        return cache_dir
    path = default_cache_path(environ)
    if os.name == "posix" and not _private_or_absent(path):
        from ocr_hook.errors import ConfigError

        raise ConfigError(f"the cache directory {path} is not this user's own (a link, another user's, or "
                          "writable by others): set XDG_CACHE_HOME or the cache_dir setting")
    return path


def _private_or_absent(path: str) -> bool:
    from ocr_hook.bounded_read import private_dir

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return True  # unreadable: the store that opens it says so
    return private_dir(st)


def cache_key(parts: Mapping[str, str]) -> str:
    """sha256 of the canonical JSON of `parts` (sorted keys, no spaces, ASCII escapes)."""
    canonical = json.dumps(dict(parts), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return sha256_hex(canonical.encode("ascii"))


class CachedReview:
    """One file's cached review: its findings (with the statuses of the run that stored them) and
    the findings that run found resolved since the review before it (review memory).

    A plain slotted class: a dataclass's methods would be compiled from source when this module loads, on
    every cached run, and a NamedTuple cannot give each entry its own `resolved` list by default."""

    __slots__ = ("findings", "memory", "pack", "resolved")

    def __init__(self, findings: list[Finding], resolved: list[Finding] | None = None,
                 memory: str | None = None, pack: tuple[str | None, int, int] | None = None) -> None:
        self.findings = findings
        self.resolved = [] if resolved is None else resolved
        self.memory = memory  # which review memory the statuses are relative to (None: none used)
        # The context pack the review was made with: (its text's digest, or None when the packs' deadline cut it;
        # its entries; entries cut for context_tokens). None: the file had no pack.
        self.pack = pack


class ResultCache:
    """Findings by cache key in `directory`, created (mode 0700) on the first write."""

    def __init__(self, directory: str | os.PathLike[str], keep: int = MAX_ENTRIES) -> None:
        """`keep`: entries kept when pruning; a run over more files than MAX_ENTRIES keeps room for all of them
        (and another configuration's), or a re-scan of an unchanged large tree would miss what it pruned."""
        self.store = JsonFileStore(directory, format_version=FORMAT_VERSION,
                                   max_entry_bytes=_MAX_ENTRY_BYTES, what="the result cache")
        self._pruned = False
        self._keep = max(MAX_ENTRIES, keep)

    @property
    def directory(self) -> Path:
        return self.store.directory

    @property
    def last_error(self) -> str | None:
        return self.store.last_error

    @staticmethod
    def _check(key: str) -> None:
        if not is_key(key):
            raise ValueError("cache keys are sha256 hex digests; build them with cache_key()")

    def get(self, key: str) -> list[Finding] | None:
        """The findings stored under `key`, or None when absent, unreadable, corrupt or outdated."""
        entry = self.get_review(key)
        return None if entry is None else entry.findings

    def get_review(self, key: str) -> CachedReview | None:
        """The whole entry under `key` (findings, resolved, which memory was used), or None on a miss."""
        self._check(key)
        data = self.store.read(key)
        if data is None:
            return None
        try:
            memory = data.get("memory")
            if memory is not None and not isinstance(memory, str):
                return None
            pack = data.get("pack")
            if pack is not None:
                if not (isinstance(pack, list) and len(pack) == 3 and (pack[0] is None or isinstance(pack[0], str))
                        and all(type(n) is int and n >= 0 for n in pack[1:])):
                    return None
                pack = (pack[0], pack[1], pack[2])
            return CachedReview(findings_from_json(data.get("findings")),
                                findings_from_json(data.get("resolved", [])), memory, pack)
        except (ValueError, KeyError, TypeError, RecursionError):
            return None

    def get_packs(self, key: str) -> dict[str, PackSummary | None] | None:
        """The pack memo: each file's context pack as the result-cache key holds it (None: no pack), stored
        under the packs_key of a change set (ocr_hook.context), or None on a miss. It lets an unchanged
        re-run find its result-cache keys without building the packs again (no git grep, no parsing)."""
        self._check(key)
        data = self.store.read(key)
        packs = data.get("packs") if data is not None else None
        if not isinstance(packs, dict):
            return None
        from ocr_hook.context import PackSummary

        out: dict[str, PackSummary | None] = {}
        for path, item in packs.items():
            if item is None:
                out[path] = None
            elif (isinstance(item, list) and len(item) == 4 and isinstance(item[0], str)
                  and all(type(n) is int and n >= 0 for n in item[1:3]) and isinstance(item[3], bool)):
                out[path] = PackSummary(*item)
            else:
                return None
        return out

    def put_packs(self, key: str, packs: Mapping[str, PackSummary | None]) -> None:
        self._check(key)
        self.store.write(key, {"packs": {path: None if item is None else list(item) for path, item in packs.items()}})

    def put(self, key: str, findings: Sequence[Finding], resolved: Sequence[Finding] = (), *,
            memory: str | None = None, pack: tuple[str | None, int, int] | None = None) -> None:
        """Store `findings` under `key` atomically. A failed write is recorded in last_error, not raised."""
        self._check(key)
        body = {"findings": [finding_to_json(f) for f in findings],
                "resolved": [finding_to_json(f) for f in resolved], "memory": memory,
                "pack": None if pack is None else list(pack)}
        if self.store.write(key, body) and not self._pruned:
            self._pruned = True  # once per run: listing the directory costs more than one write
            self.store.prune(self._keep)
