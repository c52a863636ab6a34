"""`ocr-hook dismiss ID... --reason TEXT`: record findings as wrong, with the reason, in the dismissals file.

The findings are looked up by fingerprint or unique prefix (at least 8 characters) in the last review's
memory, or with `--from FILE` in a JSON report. The command writes the dismissals file and nothing else: it
never stages or commits (it prints the `git add` to run). Every refusal is one line and exit 2, with nothing
written.

`--from-forge` (DESIGN.md 18) keeps what people decided on the pull request instead: every finding a person
with write access dismissed there by resolving ocr-hook's thread (as the review in CI reads it) becomes an
entry with that person as `by`, the day of the resolve as `on`, their last reply as the reason and the
request as `request`; the pull request is found from the CI variables `ocr-hook publish` reads, with the
same token. It is a mode of `dismiss`, not a command of its own: it writes the same entries to the same
file, looked up the same way; only who decided, and why, comes from the forge instead of the command line.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from ocr_hook.changes.git import repo_top, run_git
from ocr_hook.errors import ConfigError
from ocr_hook.findings import dismissals, serial
from ocr_hook.settings import load

MIN_PREFIX = 8
_HEX = re.compile(r"[0-9a-f]+")
_LOCK_TIMEOUT_S = 60.0


class _Decided(NamedTuple):
    """One finding to dismiss, and who decided it, when, why and where."""

    finding: Mapping[str, Any]
    reason: str
    by: str | None
    on: dt.date
    request: str | None = None


def run(ids: Sequence[str], reason: str | None, paths: Sequence[str], expires: str | None, from_file: str | None,
        config_file: str | None, *, from_forge: str | None = None, timeout: float = 120.0,
        environ: Mapping[str, str] | None = None, today: dt.date | None = None) -> int:
    """`from_forge`: the forge ("auto", "gitlab", ...) whose pull request's dismissals to keep, instead of
    `reason` (each has its own)."""
    environ = os.environ if environ is None else environ
    today = today or dt.date.today()
    cwd = os.getcwd()
    # Everything the user typed is checked before anything is read.
    wanted = [check_id(i) for i in ids]
    if from_forge is None and not ids:
        raise ConfigError("name the findings to dismiss (their ids), or keep a pull request's with --from-forge")
    if from_forge is not None and reason is not None:
        raise ConfigError("--reason and --from-forge: with --from-forge each dismissal keeps the reason its "
                          "person gave on the pull request; leave --reason out")
    if from_forge is None and not (reason or "").strip():
        raise ConfigError("--reason is empty: say why the finding is wrong (it is recorded and teaches later reviews)")
    if from_forge is None and not (reason or "").strip(" .\u2026\"'"):
        # The hint prints `--reason "..."`: pasted as printed, the placeholder would become the recorded reason.
        raise ConfigError(f"--reason {reason!r} is the hint's placeholder: say why the finding is wrong in its "
                          "place (it is recorded and teaches later reviews)")
    until = _check_expiry(expires, today)
    _check_globs(paths)
    root, _head = repo_top(cwd)
    settings = load(root, config_file, flags={}, environ=environ)
    dismissals.load_file(root, settings.dismissals_file)  # a bad file: exit 2 before anything else
    out: list[str] = []
    if from_forge is not None:  # the forge first: a pull request with nothing dismissed needs no findings
        found = _from_forge(from_forge, environ, timeout, root)
        if wanted:
            found = {fp: d for fp, d in found.items() if any(fp.startswith(w) for w in wanted)}
        if not found:
            sys.stdout.write("no finding was dismissed on the pull request by a person with write access "
                             "(its author's own resolves do not count); nothing written\n")
            return 0
    if from_file:
        candidates = _from_report(from_file)
    elif not settings.memory:
        raise ConfigError("review memory is off (setting memory: false): pass --from REPORT.json (a review's "
                          "--json-output)")
    else:
        candidates = _from_memory(settings.cache_dir, root, environ)
    if from_forge is None:
        by = _user_email(root)
        decided = [_Decided(f, (reason or "").strip(), by, today) for i in wanted for f in named(i, candidates)]
    else:
        decided = []
        known = {str(f["fingerprint"]): f for f in candidates}
        for fp, d in sorted(found.items()):
            if fp not in known:
                out.append(f"{fp[:8]} (dismissed by {d.by} on {d.where}) is not a finding of the "
                           f"{'report' if from_file else 'last review'}; not added (pass the review's --json-output "
                           "with --from)")
                continue
            why = d.reason or f"{dismissals.NO_REPLY} on {d.where}"
            decided.append(_Decided(known[fp], why, d.by, _day(d.at, today), d.where))
    # Read, add, write under a lock: two runs at once would each add to what they read, and the later write
    # would drop the other's entry. The file is read again here, inside the lock.
    with _dismissals_lock(root):
        text = dismissals.read_file_text(root, settings.dismissals_file)
        existing = dismissals.parse_text(text, settings.dismissals_file) if text is not None else ()
        live = dismissals.active(existing, today)
        added: list[dismissals.Dismissal] = []
        for item in {id(d.finding): d for d in decided}.values():
            finding = item.finding
            fp = str(finding["fingerprint"])
            # One entry suppresses one finding (findings.one_each): another finding of a dismissed fingerprint (the
            # same line quoted at another place, another message or more severe) gets an entry of its own.
            if fp in live and (finding.get("suppressed") == "dismissed" or _recorded(existing, finding, today)):
                out.append(f"{fp[:8]} ({finding['path']}) is already dismissed in {settings.dismissals_file} "
                           f"(on {live[fp].on}: {live[fp].reason}); not added again")
                continue
            entry = dismissals.new_entry(finding, item.reason, paths, item.by, item.on, until, item.request)
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


def _from_forge(forge: str, environ: Mapping[str, str], timeout: float,
                root: str) -> Mapping[str, dismissals.ForgeDismissal]:
    """The pull request's person-made dismissals, read as the review reads them; a forge that cannot be read is
    one line and exit 2 (nothing is written)."""
    import time
    from pathlib import Path

    from ocr_hook.publish.forge_dismissals import read
    from ocr_hook.publish.forges import FORGES, NotApplicable, detect

    if forge == "auto":
        try:
            forge = detect(environ)
        except NotApplicable:
            raise ConfigError("--from-forge: this is not a CI run of a known forge; name the forge (--from-forge "
                              f"{'|'.join(FORGES)}) and set the variables its recipe names") from None
    got = read(environ, time.monotonic() + timeout, Path(root), forge=forge, quiet=False, feedback=False)
    if got.note:
        raise ConfigError(got.note)
    return got.found


def _day(at: str, today: dt.date) -> dt.date:
    """The day of a forge's ISO 8601 time ("2026-12-05T10:00:00Z"), or today when it gives none."""
    try:
        return dt.date.fromisoformat(at[:10])
    except ValueError:
        return today


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


def named(wanted: str, candidates: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The findings an id names: every finding of its fingerprint that counted (the same line quoted at two
    places is two findings of one fingerprint, issue 58.16), or the one it names when none did."""
    one = resolve(wanted, candidates)
    same = [f for f in candidates if f["fingerprint"] == one["fingerprint"] and not f.get("suppressed")]
    return same or [one]


def _recorded(existing: Sequence[dismissals.Dismissal], finding: Mapping[str, Any], today: dt.date) -> bool:
    """Whether an unexpired entry was written for this very finding: its fingerprint, message, a severity as high."""
    from ocr_hook.findings.model import Severity
    from ocr_hook.findings.one_each import kept_message, words

    said = words(kept_message(str(finding.get("message") or "")))
    rank = Severity(str(finding["severity"])).rank
    return any(e.fingerprint == finding["fingerprint"] and not e.expired(today) and words(e.message) == said
               and Severity(e.severity).rank >= rank for e in existing)


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


def run_check(name: str, reason: str | None, base: str | None, config_file: str | None, *,
              environ: Mapping[str, str] | None = None, today: dt.date | None = None) -> int:
    """`dismiss --check NAME`: an override of that one check for this change (the pull request in CI, the staged
    change, or with --base the branch's range), appended under `checks:` in the dismissals file."""
    import yaml

    from ocr_hook.checks.overrides import CheckOverride, change_id, parse
    from ocr_hook.store.atomic import write_atomic

    environ = os.environ if environ is None else environ
    if not (reason or "").strip():
        raise ConfigError("--reason is empty: say why this check does not hold for this change (it is recorded)")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ConfigError(f"--check {name!r}: a check's name is its file's stem (letters, digits, '.', '_', '-')")
    root, head = repo_top(os.getcwd())
    from ocr_hook.checks.load import load_at, load_worktree

    # A typo would record an override that never applies; the change may have deleted the check it overrides.
    known = {c.name for c in load_worktree(root).checks}
    if head:
        known |= {c.name for c in load_at(root, head).checks}
    if name not in known:
        raise ConfigError(f"--check {name!r}: there is no such check in .ocr-hook/checks/ (checks: "
                          f"{', '.join(sorted(known)) or 'none'})")
    settings = load(root, config_file, flags={}, environ=environ)
    change = change_id(_check_change_set(root, base), environ, settings.dismissals_file)
    entry = CheckOverride(name, change, " ".join((reason or "").split()), _user_email(root) or "unknown", today or
                          dt.date.today())
    with _dismissals_lock(root):
        text = dismissals.read_file_text(root, settings.dismissals_file)
        data = yaml.load(text, Loader=dismissals._Loader) if text else None
        if text is not None:
            dismissals.parse_text(text, settings.dismissals_file)  # a bad file: exit 2, nothing written
            parse(data, settings.dismissals_file)
        body = yaml.safe_dump([{**entry.as_dict()}], sort_keys=False, allow_unicode=True, width=1_000_000)
        new = dismissals.insert_items(text or "", "checks", body, settings.dismissals_file)
        # What the file held is still there, unchanged, with this one entry added (else nothing is written).
        after = yaml.load(new, Loader=dismissals._Loader)
        if parse(after, settings.dismissals_file) != (*parse(data, settings.dismissals_file), entry) or (
                text is not None and dismissals.parse_text(new, settings.dismissals_file)
                != dismissals.parse_text(text, settings.dismissals_file)):
            raise ConfigError(f"{settings.dismissals_file}: cannot add to it without rewriting it (its 'checks' "
                              "list must be in block style); nothing written")
        full = os.path.join(root, settings.dismissals_file)
        os.makedirs(os.path.dirname(full) or ".", exist_ok=True)
        write_atomic(full, new)
    sys.stdout.write(f"check {name} overridden for {change} in {settings.dismissals_file} (by {entry.by}): "
                     "review and commit that file\n")
    return 0


def _check_change_set(root: str, base: str | None) -> Any:
    """Just enough of the change a review would see to name it (change_id): staged, or the range from --base."""
    from ocr_hook.changes import git
    from ocr_hook.changes.model import ChangeSet

    if base is None:
        return ChangeSet(root, "staged changes", "HEAD", None, ())
    head = git.resolve_commit(root, "HEAD")
    return ChangeSet(root, "range", git.merge_base(root, git.resolve_commit(root, base), head), head, ())
