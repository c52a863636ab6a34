"""`ocr-hook dismiss ID... --reason TEXT`: record findings as wrong, with the reason, in the dismissals file.

The findings are looked up by fingerprint or unique prefix (at least 8 characters) in the last review's
memory, or with `--from FILE` in a JSON report. The command writes the dismissals file and nothing else: it
never stages or commits (it prints the `git add` to run). Every refusal is one line and exit 2, with nothing
written.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ocr_hook.changes.git import repo_top, run_git
from ocr_hook.errors import ConfigError
from ocr_hook.findings import dismissals, serial
from ocr_hook.settings import load

MIN_PREFIX = 8
_HEX = re.compile(r"[0-9a-f]+")
_LOCK_TIMEOUT_S = 60.0


def run(ids: Sequence[str], reason: str, paths: Sequence[str], expires: str | None, from_file: str | None,
        config_file: str | None, *, environ: Mapping[str, str] | None = None, today: dt.date | None = None) -> int:
    environ = os.environ if environ is None else environ
    today = today or dt.date.today()
    cwd = os.getcwd()
    # Everything the user typed is checked before anything is read.
    wanted = [check_id(i) for i in ids]
    if not reason.strip():
        raise ConfigError("--reason is empty: say why the finding is wrong (it is recorded and teaches later reviews)")
    until = _check_expiry(expires, today)
    _check_globs(paths)
    root, _head = repo_top(cwd)
    settings = load(root, config_file, flags={}, environ=environ)
    dismissals.load_file(root, settings.dismissals_file)  # a bad file: exit 2 before anything else
    if from_file:
        candidates = _from_report(from_file)
    elif not settings.memory:
        raise ConfigError("review memory is off (setting memory: false): pass --from REPORT.json (a review's "
                          "--json-output)")
    else:
        candidates = _from_memory(settings.cache_dir, root, environ)
    chosen = [resolve(i, candidates) for i in wanted]
    by = _user_email(root)
    out: list[str] = []
    # Read, add, write under a lock: two runs at once would each add to what they read, and the later write
    # would drop the other's entry. The file is read again here, inside the lock.
    with _dismissals_lock(root):
        text = dismissals.read_file_text(root, settings.dismissals_file)
        existing = dismissals.parse_text(text, settings.dismissals_file) if text is not None else ()
        live = dismissals.active(existing, today)
        added: list[dismissals.Dismissal] = []
        for finding in dict((str(f["fingerprint"]), f) for f in chosen).values():
            fp = str(finding["fingerprint"])
            if fp in live:
                out.append(f"{fp[:8]} ({finding['path']}) is already dismissed in {settings.dismissals_file} "
                           f"(on {live[fp].on}: {live[fp].reason}); not added again")
                continue
            entry = dismissals.new_entry(finding, reason, paths, by, today, until)
            added.append(entry)
            out.append(f"dismissed {entry.short_id} ({entry.path}, {entry.severity} {entry.category}): {entry.reason}")
        if added:
            _write_file(root, settings.dismissals_file, text, added)
            shown = os.path.relpath(os.path.join(root, settings.dismissals_file), cwd)
            out.append(f"written to {settings.dismissals_file}; record it with your change (ocr-hook never stages "
                       f"it): git add {_quoted(shown)}")
    from ocr_hook.commands.progress import sanitise  # paths and reasons: one line each, no live workflow command

    sys.stdout.write("".join(sanitise(line) + "\n" for line in out))
    return 0


def check_id(raw: str) -> str:
    value = raw.strip().lower()
    if not _HEX.fullmatch(value) or not MIN_PREFIX <= len(value) <= 32:
        raise ConfigError(f"finding id {raw!r}: give the fingerprint or its first {MIN_PREFIX} or more hex characters "
                          "(the text report shows each finding's first 8)")
    return value


def _check_expiry(expires: str | None, today: dt.date) -> dt.date | None:
    if expires is None:
        return None
    try:
        until = dt.date.fromisoformat(expires)
    except ValueError:
        raise ConfigError(f"--expires {expires!r}: expected a date YYYY-MM-DD") from None
    if until <= today:
        raise ConfigError(f"--expires {expires}: the date has passed (today is {today}); give a later date")
    return until


def _check_globs(paths: Sequence[str]) -> None:
    from ocr_hook.changes.globs import check_patterns

    if any(not p.strip() for p in paths):
        raise ConfigError("--paths: a glob is empty")
    problem = check_patterns(list(paths))
    if problem is not None:
        raise ConfigError(f"--paths: {problem}")


def resolve(wanted: str, candidates: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The one finding whose fingerprint is `wanted` or starts with it; unknown or ambiguous: ConfigError."""
    matches = {str(f["fingerprint"]): f for f in candidates if str(f["fingerprint"]).startswith(wanted)}
    if not matches:
        raise ConfigError(f"finding id {wanted}: no finding of the last review has it (ids are in the text report, "
                          "or in the JSON report's 'fingerprint')")
    if len(matches) > 1:
        listed = ", ".join(sorted(fp[: len(wanted) + 4] for fp in matches)[:5])
        raise ConfigError(f"finding id {wanted} is ambiguous: {len(matches)} findings start with it ({listed}); "
                          "give more characters")
    return next(iter(matches.values()))


def _from_report(path: str) -> list[Mapping[str, Any]]:
    where = f"--from {path}"
    return _checked(serial.report_findings(serial.read_report_json(path, where), where))


def _from_memory(cache_dir: str | None, root: str, environ: Mapping[str, str]) -> list[Mapping[str, Any]]:
    """The findings of the last review of this repository, from review memory (ocr_hook.store.memory)."""
    from pathlib import Path

    from ocr_hook.store.result_cache import run_cache_dir

    try:
        from ocr_hook.store.memory import last_review_findings
    except ImportError:  # a build without review memory
        raise ConfigError("no review memory in this version of ocr-hook: pass --from REPORT.json "
                          "(a review's --json-output)") from None
    where = Path(run_cache_dir(cache_dir, environ))
    findings = last_review_findings(where, Path(root))
    if findings is None:
        raise ConfigError("no review of this repository is remembered (run ocr-hook review first, or pass "
                          "--from REPORT.json)")
    return _checked(serial.report_findings(findings, "the last review's memory"))


def _checked(findings: list[dict[str, Any]]) -> list[Mapping[str, Any]]:
    """Only findings a dismissal can name (an entry's fingerprint is 32 hex characters)."""
    return [f for f in findings if dismissals.FINGERPRINT.fullmatch(f["fingerprint"])]


def _user_email(root: str) -> str | None:
    """git's user.email (any level, the repository's own included), or None when it is not set."""
    proc = run_git(root, ["config", "--get", "user.email"], ok_codes=(0, 1))
    email = proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else ""
    return email or None


def _quoted(path: str) -> str:
    import shlex

    return shlex.quote(path)


def _write_file(repo_root: str, name: str, existing: str | None, added: Sequence[dismissals.Dismissal]) -> None:
    """Write the dismissals file atomically, creating its directory (this command's job, not the findings
    stage's): a new file in our format, an existing one with `added` appended and nothing else changed."""
    from ocr_hook.store.atomic import write_atomic

    text = dismissals.file_text(added) if existing is None else dismissals.appended_text(existing, added, name)
    full = os.path.join(repo_root, name)
    try:
        os.makedirs(os.path.dirname(full) or ".", exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the directory of dismissals file {name}: {exc.strerror or exc}") from None
    write_atomic(full, text)


@contextlib.contextmanager
def _dismissals_lock(repo_root: str) -> Iterator[None]:
    """An exclusive lock for this work tree's dismissals file, held while it is read, added to and written.

    The lock file lives in the work tree's git directory (`.git/ocr-hook-dismissals.lock`), never in the work
    tree, where it would show in `git status`. filelock takes an OS lock on it (fcntl on POSIX, msvcrt on
    Windows), which ends with the process that held it: a killed run leaves nothing to clean up."""
    import filelock

    git_dir = run_git(repo_root, ["rev-parse", "--absolute-git-dir"]).stdout.decode("utf-8", "surrogateescape").strip()
    lock = filelock.FileLock(os.path.join(git_dir, "ocr-hook-dismissals.lock"), timeout=_LOCK_TIMEOUT_S)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise ConfigError(f"another ocr-hook dismiss has held the dismissals file's lock for {_LOCK_TIMEOUT_S:.0f} s "
                          "(a stuck run?); nothing written, try again") from None
    except OSError as exc:  # e.g. a read-only .git: the lock file cannot be created
        raise ConfigError(f"cannot lock the dismissals file (in {git_dir}): {exc.strerror or exc}; nothing written"
                          ) from None
    try:
        yield
    finally:
        lock.release()
