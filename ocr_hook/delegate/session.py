"""Delegate sessions on disk: one JSON document per session under `<cache dir>/delegate/`.

The store is ocr_hook.store's (atomic writes, mode 0600, anything corrupt or foreign is a miss, the newest
MAX_SESSIONS kept); a session also has a lock file of its own beside it, so concurrent `call`s on one session
take turns (read, answer, write) while other sessions go on undisturbed. A session older than MAX_AGE_S is
expired: refused and removed when used, and removed unused when another session starts.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ocr_hook.agent.hosted import OPEN, Settled
from ocr_hook.changes.scope import SCAN, SCOPE_REFS, Scope
from ocr_hook.errors import ConfigError, FatalError
from ocr_hook.findings import Category, Comment, Severity
from ocr_hook.settings import Settings, as_values, from_values
from ocr_hook.store.files import JsonFileStore, is_key

FORMAT_VERSION = 2  # 2: the settings fixed at start
SESSIONS_DIR = "delegate"
MAX_SESSIONS = 200
MAX_AGE_S = 24 * 3600.0  # a review left this long is abandoned
MAX_SESSION_BYTES = 8 * 1024 * 1024
LOCK_TIMEOUT_S = 60.0


class SessionError(FatalError):
    """The session cannot be used (unknown, expired, stale, another repository): exit 2, one line."""


@dataclass
class FileState:
    """One file of a session: its round budget, calls so far, comments and task_done state."""

    rounds: int
    effort: str
    context_entries: int | None = None
    context_cut: int = 0
    calls: int = 0
    state: str = OPEN  # OPEN | DONE | FAILED
    comments: list[Comment] = field(default_factory=list)

    def settled(self) -> Settled:
        return Settled(tuple(self.comments), self.state)


@dataclass
class Session:
    id: str
    repo_root: str
    scope: Scope
    paths: tuple[str, ...]
    config_file: str | None
    flags: dict[str, Any]  # the settings start took from its command line (effort)
    snapshot: str  # what the reviewed snapshot was (ocr_hook.delegate.ops.snapshot_identity)
    created: float
    files: dict[str, FileState]
    # The effective settings at start: selection and gate are fixed then; finish may only make the gate
    # stricter (ocr_hook.delegate.ops.finish_settings).
    settings: Settings
    # The checks pass (ocr_hook.delegate.checks): each applicable check's name → the host's verdict (the JSON
    # report's form), None until it gives one; and whether the host called task_done on the pass.
    checks: dict[str, Any] = field(default_factory=dict)
    checks_done: bool = False


def new_id() -> str:
    return os.urandom(32).hex()  # a store key (64 hex digits) nobody can guess or collide with


def _comment_json(c: Comment) -> dict[str, Any]:
    return {"content": c.content, "existing_code": c.existing_code, "severity": c.severity.value,
            "category": c.category.value, "suggestion_code": c.suggestion_code, "truncated": c.truncated}


def _comment(path: str, data: Mapping[str, Any]) -> Comment:
    suggestion = data.get("suggestion_code")
    return Comment(path=path, content=_typed(data["content"], str), existing_code=_typed(data["existing_code"], str),
                   severity=Severity(data["severity"]), category=Category(data["category"]),
                   suggestion_code=None if suggestion is None else _typed(suggestion, str),
                   truncated=bool(data.get("truncated")))


def to_json(session: Session) -> dict[str, Any]:
    return {
        "repo_root": session.repo_root, "scope": list(session.scope), "paths": list(session.paths),
        "config_file": session.config_file, "flags": session.flags, "snapshot": session.snapshot,
        "created": session.created,
        "settings": as_values(session.settings), "rules_source": session.settings.rules.source,
        "files": {path: {"rounds": f.rounds, "effort": f.effort, "context_entries": f.context_entries,
                         "context_cut": f.context_cut, "calls": f.calls, "state": f.state,
                         "comments": [_comment_json(c) for c in f.comments]}
                  for path, f in session.files.items()},
        "checks": session.checks, "checks_done": session.checks_done,
    }


def _typed(value: Any, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, float, (int, float))):
        raise TypeError(f"expected {kind}, got {type(value).__name__}")
    return value


def _strings(value: Any) -> list[str]:
    return [_typed(v, str) for v in _typed(value, list)]


def _file_state(path: str, f: Any) -> FileState:
    _typed(f, dict)
    entries = f["context_entries"]
    return FileState(rounds=_typed(f["rounds"], int), effort=_typed(f["effort"], str),
                     context_entries=None if entries is None else _typed(entries, int),
                     context_cut=_typed(f["context_cut"], int), calls=_typed(f["calls"], int),
                     state=_typed(f["state"], str),
                     comments=[_comment(path, _typed(c, dict)) for c in _typed(f["comments"], list)])


def from_json(key: str, data: Mapping[str, Any]) -> Session:
    """The session a document describes; TypeError, KeyError or ValueError (ConfigError for its settings) when
    any part of it has the wrong shape: a session file is data that was on disk, checked like any input."""
    scope = _typed(data["scope"], list)
    if (len(scope) != len(Scope._fields) or not all(v is None or isinstance(v, str) for v in scope)
            or scope[0] not in (*SCOPE_REFS, SCAN)):
        raise TypeError("scope")
    files = {_typed(path, str): _file_state(path, f) for path, f in _typed(data["files"], dict).items()}
    config_file = data["config_file"]
    settings = from_values(_typed(data["settings"], dict), "the delegate session's settings",
                           _typed(data.get("rules_source", ""), str))
    return Session(id=key, repo_root=_typed(data["repo_root"], str), scope=Scope(*scope),
                   paths=tuple(_strings(data["paths"])),
                   config_file=None if config_file is None else _typed(config_file, str),
                   flags=dict(_typed(data["flags"], dict)), snapshot=_typed(data["snapshot"], str),
                   created=float(_typed(data["created"], (int, float))), files=files, settings=settings,
                   checks={_typed(k, str): None if v is None else _typed(v, dict)
                           for k, v in _typed(data.get("checks", {}), dict).items()},
                   checks_done=bool(data.get("checks_done", False)))


class SessionStore:
    def __init__(self, cache_dir: str) -> None:
        self.store = JsonFileStore(os.path.join(cache_dir, SESSIONS_DIR), format_version=FORMAT_VERSION,
                                   max_entry_bytes=MAX_SESSION_BYTES, what="the delegate sessions", base=cache_dir)

    def save(self, session: Session) -> None:
        if not self.store.write(session.id, to_json(session)):
            raise SessionError(self.store.last_error or "the delegate session could not be written")

    def create(self, session: Session) -> None:
        self.save(session)
        # An abandoned session (not written for MAX_AGE_S: a call rewrites its session) goes now, not once
        # MAX_SESSIONS newer ones exist.
        if self.store.prune(MAX_SESSIONS, max_age_s=MAX_AGE_S):
            self._drop_orphan_locks()

    def _drop_orphan_locks(self) -> None:
        """The lock files of pruned sessions (a lock whose session still exists stays: a call may hold it)."""
        for lock in self.store.directory.glob("??/*.lock"):
            if is_key(lock.stem) and not lock.with_suffix(".json").exists() and not lock.is_symlink():
                with contextlib.suppress(OSError):
                    lock.unlink()

    def load(self, key: str, *, now: float | None = None) -> Session:
        if not is_key(key):
            raise SessionError(f"{key!r} is not a delegate session id (64 hex digits, as `delegate start` "
                               "printed it)")
        self._check_directory(key)
        data = self.store.read(key)
        if data is None:
            raise SessionError(f"unknown or expired delegate session {key[:12]}…; run `ocr-hook delegate start` "
                               "again")
        try:
            session = from_json(key, data)
        except (KeyError, TypeError, ValueError, ConfigError):
            raise SessionError(f"delegate session {key[:12]}… is unreadable; run `ocr-hook delegate start` "
                               "again") from None
        if (time.time() if now is None else now) - session.created > MAX_AGE_S:
            self.store.delete(key)
            self._drop_orphan_locks()
            raise SessionError(f"delegate session {key[:12]}… expired (older than {MAX_AGE_S / 3600:.0f} h); "
                               "run `ocr-hook delegate start` again")
        return session

    def _check_directory(self, key: str) -> None:
        """SessionError when the session's directory is a link, another user's, or writable by others: nobody
        else may plant or replace a session (a cache_dir several users share)."""
        unsafe = self.store.link_below(self.store.entry(key).parent)
        if unsafe is not None:
            raise SessionError(f"delegate sessions: {unsafe} is a symbolic link or a directory that is not this "
                               "user's own (another user's, or writable by others); set a cache_dir of your own")

    @contextlib.contextmanager
    def locked(self, key: str) -> Iterator[None]:
        """This session's own lock: a read-answer-write of one call at a time, other sessions untouched."""
        import filelock

        if not is_key(key):
            raise SessionError(f"{key!r} is not a delegate session id (64 hex digits, as `delegate start` "
                               "printed it)")
        self._check_directory(key)
        entry = self.store.entry(key)
        if not entry.exists():
            yield  # load() says what is wrong with it
            return
        path = entry.with_suffix(".lock")
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise SessionError(f"delegate session {key[:12]}…: its lock {path} is not a regular file (a link or a "
                               "directory put there); remove it, or run `ocr-hook delegate start` again")
        lock = filelock.FileLock(str(path), timeout=LOCK_TIMEOUT_S)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise SessionError(f"delegate session {key[:12]}… is busy (another call has held it for "
                               f"{LOCK_TIMEOUT_S:.0f} s)") from None
        except OSError as exc:
            raise SessionError(f"delegate session {key[:12]}…: cannot lock {path}: {exc.strerror or exc}") from None
        try:
            yield
        finally:
            lock.release()
