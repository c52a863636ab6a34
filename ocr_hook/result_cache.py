"""Findings of earlier reviews, keyed by everything that decided them: unchanged input, same findings.

One small JSON file per key under `<dir>/<key[:2]>/<key>.json`. Writes go to a temporary file in
the same directory and are renamed into place, so a reader (another run, possibly at the same time)
sees either no entry or a whole one. Anything unreadable, corrupt or of another format version is a
miss, never an error: the cache can only save requests, not break a review.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path, PureWindowsPath
from typing import Any

from ocr_hook.findings import Category, Finding, Fix, Severity

FORMAT_VERSION = 2  # 2: findings carry `fix`
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


def finding_to_json(finding: Finding) -> dict[str, Any]:
    return {
        "path": finding.path,
        "start_line": finding.start_line,
        "end_line": finding.end_line,
        "severity": str(finding.severity),
        "category": str(finding.category),
        "message": finding.message,
        "suggestion": finding.suggestion,
        "anchored": finding.anchored,
        "fingerprint": finding.fingerprint,
        "existing_code": finding.existing_code,
        "anchor_note": finding.anchor_note,
        "suppressed": finding.suppressed,
        "fix": None if finding.fix is None else finding.fix.as_dict(),
        "extra": dict(finding.extra),
    }


def _typed(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = data[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise ValueError(f"{name} has the wrong type")
    return value


def _fix_from_json(data: Any) -> Fix | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError("fix must be an object or null")
    return Fix(_typed(data, "start_line", int), _typed(data, "end_line", int), _typed(data, "replacement", str))


def finding_from_json(data: Any) -> Finding:
    """The inverse of finding_to_json; ValueError/KeyError on anything malformed."""
    if not isinstance(data, dict):
        raise ValueError("a finding must be an object")
    extra = _typed(data, "extra", dict)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in extra.items()):
        raise ValueError("extra must map strings to strings")
    return Finding(
        path=_typed(data, "path", str),
        start_line=_typed(data, "start_line", int),
        end_line=_typed(data, "end_line", int),
        severity=Severity(_typed(data, "severity", str)),
        category=Category(_typed(data, "category", str)),
        message=_typed(data, "message", str),
        suggestion=_typed(data, "suggestion", (str, type(None))),
        anchored=_typed(data, "anchored", bool),
        fingerprint=_typed(data, "fingerprint", str),
        existing_code=_typed(data, "existing_code", str),
        anchor_note=_typed(data, "anchor_note", (str, type(None))),
        suppressed=_typed(data, "suppressed", (str, type(None))),
        fix=_fix_from_json(data["fix"]),
        extra=extra,
    )


def _is_key(key: str) -> bool:
    return len(key) == 64 and all(c in "0123456789abcdef" for c in key)


class ResultCache:
    """Findings by cache key in `directory`, created (mode 0700) on the first write."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.last_error: str | None = None  # the latest write failure, for a warning; reads never fail

    def _entry(self, key: str) -> Path:
        if not _is_key(key):
            raise ValueError("cache keys are sha256 hex digests; build them with cache_key()")
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> list[Finding] | None:
        """The findings stored under `key`, or None when absent, unreadable, corrupt or outdated."""
        path = self._entry(key)
        try:
            with open(path, "rb") as handle:
                raw = handle.read(_MAX_ENTRY_BYTES + 1)
            if len(raw) > _MAX_ENTRY_BYTES:
                return None
            # surrogateescape paths arrive as \udcXX escapes, which json restores unchanged.
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict) or data.get("format") != FORMAT_VERSION or data.get("key") != key:
                return None
            findings = data.get("findings")
            if not isinstance(findings, list):
                return None
            return [finding_from_json(item) for item in findings]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return None

    def put(self, key: str, findings: Sequence[Finding]) -> None:
        """Store `findings` under `key` atomically. A failed write is recorded in last_error, not raised."""
        path = self._entry(key)
        document = {
            "format": FORMAT_VERSION,
            "key": key,
            "findings": [finding_to_json(f) for f in findings],
        }
        payload = json.dumps(document, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        temp_name: str | None = None
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.parent.mkdir(mode=0o700, exist_ok=True)
            import tempfile  # writing only: a wholly cached run never loads it

            fd, temp_name = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
            os.replace(temp_name, path)
            temp_name = None
        except OSError as exc:
            self.last_error = f"cannot write the result cache in {self.directory}: {exc.strerror or exc}"
        finally:
            if temp_name is not None:
                try:
                    os.unlink(temp_name)
                except OSError:
                    pass
