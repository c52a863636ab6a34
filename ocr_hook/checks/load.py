"""Check files (DESIGN.md 20): found, parsed and validated; which checks a change needs answered.

A check is `.ocr-hook/checks/<name>.md`, in the repository root or in any directory below it (a nested one
applies to its directory's subtree, as guidance files do). YAML front matter between `---` lines, then the
instruction. In a review, the files come from the trusted revision (DESIGN 5: the side of the change not under
review), so a change can neither add, weaken, switch off nor delete a check that gates it; `doctor` validates the
work tree's files, the ones a person is editing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ocr_hook.checks import CHECKS_DIR
from ocr_hook.checks.model import (
    INCONCLUSIVE_MODES,
    MAX_INSTRUCTION_CHARS,
    MODES,
    WHENS,
    Check,
    CheckVerdict,
)

if TYPE_CHECKING:
    from ocr_hook.changes.model import ChangeSet

# Both spellings: git's `**/` in a glob pathspec matches directories below the root only on some versions.
_PATHSPECS = (f":(glob){CHECKS_DIR}/*.md", f":(glob)**/{CHECKS_DIR}/*.md")
_FILE_RE = re.compile(r"^(?:(?P<scope>.+)/)?\.ocr-hook/checks/(?P<name>[^/]+)\.md$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(?P<yaml>.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)
_KEYS = ("paths", "mode", "when", "severity", "inconclusive")
_SEVERITIES = ("critical", "high", "medium", "low")


class CheckFile(NamedTuple):
    path: str  # relative to the repository root
    text: str


class LoadedChecks(NamedTuple):
    """The checks of one revision (or the work tree), and every file that could not be used, one line each."""

    checks: tuple[Check, ...]
    problems: tuple[str, ...]  # "path: what is wrong" (doctor prints them; a review names them in its notes)
    revision: str | None  # where they were read; None for the work tree or when there is no trusted revision
    broken: tuple[tuple[str, str], ...] = ()  # (path, problem) of files that are check files but unusable


def is_check_file(path: str) -> bool:
    return _FILE_RE.match(path) is not None


def parse_check(path: str, text: str) -> tuple[Check | None, list[str]]:
    """One check file: the check, or None and why not (each problem one line, prefixed with the path)."""
    match = _FILE_RE.match(path)
    if match is None:
        return None, [f"{path}: not a check file (checks are {CHECKS_DIR}/<name>.md)"]
    name, scope = match.group("name"), match.group("scope") or ""
    problems: list[str] = []
    if not _NAME_RE.match(name):
        problems.append(f"{path}: the name {name!r} (the file's stem) must be letters, digits, '.', '_' or '-'")
    front: dict[str, object] = {}
    body = text
    head = _FRONT_MATTER.match(text)
    if head is not None:
        import yaml

        body = text[head.end():]
        try:
            loaded = yaml.safe_load(head.group("yaml"))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 2})" if mark is not None else ""
            return None, [f"{path}: front matter is not valid YAML{where}: {getattr(exc, 'problem', None) or exc}"]
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            return None, [f"{path}: front matter must be a mapping of {', '.join(_KEYS)}"]
        front = loaded
    elif text.startswith("---"):
        return None, [f"{path}: front matter is not closed by a '---' line"]
    for key in front:
        if key not in _KEYS:
            problems.append(f"{path}: unknown front matter key {key!r} (known: {', '.join(_KEYS)})")
    paths = front.get("paths", [])
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not all(isinstance(p, str) and p.strip() for p in paths):
        problems.append(f"{path}: 'paths' must be a glob or a list of globs")
        paths = []
    values: dict[str, str | None] = {}
    for key, allowed, default in (("mode", MODES, "warn"), ("when", WHENS, "ci"),
                                  ("inconclusive", INCONCLUSIVE_MODES, "warn"), ("severity", _SEVERITIES, None)):
        value = front.get(key, default)
        if key == "mode" and value is False:  # YAML 1.1 reads a bare `off` as false
            value = "off"
        if value is not None and (not isinstance(value, str) or value not in allowed):
            problems.append(f"{path}: '{key}' must be one of {', '.join(allowed)}, not {value!r}")
            value = default
        values[key] = value
    instruction = body.strip()
    if not instruction:
        problems.append(f"{path}: the instruction (the text after the front matter) is empty")
    elif len(instruction) > MAX_INSTRUCTION_CHARS:
        problems.append(f"{path}: the instruction is {len(instruction):,} characters; at most "
                        f"{MAX_INSTRUCTION_CHARS:,} (one question per check)")
    if problems:
        return None, problems
    return Check(name=name, instruction=instruction, source=path, paths=tuple(p.strip() for p in paths),
                 mode=str(values["mode"]), when=str(values["when"]), severity=values["severity"],
                 inconclusive=str(values["inconclusive"]), scope=scope), []


def parse_all(files: Iterable[CheckFile], revision: str | None = None) -> LoadedChecks:
    """Every check file, shallowest folder first; a second check of the same name is a problem (names are
    what the model answers by), and the first one stays."""
    checks: list[Check] = []
    problems: list[str] = []
    broken: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    for file in sorted(files, key=lambda f: (f.path.count("/"), f.path)):
        check, found = parse_check(file.path, file.text)
        if check is None:
            problems += found
            broken.append((file.path, "; ".join(p.partition(": ")[2] for p in found)))
            continue
        if check.name in seen:
            problem = f"{file.path}: a check named {check.name!r} is already defined by {seen[check.name]}; " \
                      "check names must be unique (this one is not used)"
            problems.append(problem)
            broken.append((file.path, problem.partition(": ")[2]))
            continue
        seen[check.name] = file.path
        checks.append(check)
    return LoadedChecks(tuple(checks), tuple(problems), revision, tuple(broken))


def _decode(path: str, data: bytes) -> CheckFile | str:
    if b"\0" in data:
        return f"{path}: binary content, not a check"
    try:
        return CheckFile(path, data.decode("utf-8"))
    except UnicodeDecodeError:
        return f"{path}: not UTF-8 text"


def _parse_files(found: Iterable[CheckFile | str], revision: str | None) -> LoadedChecks:
    files = [f for f in found if isinstance(f, CheckFile)]
    unreadable = [f for f in found if isinstance(f, str)]
    loaded = parse_all(files, revision)
    return loaded._replace(problems=(*unreadable, *loaded.problems),
                           broken=(*((p.partition(": ")[0], p.partition(": ")[2]) for p in unreadable),
                                   *loaded.broken))


def load_at(repo_root: str, revision: str) -> LoadedChecks:
    """The check files of a commit (regular files only: a symbolic link is never followed). The commit's listing is
    the one guidance already read (changes.snapshot keeps it): a repository without checks costs no git process."""
    from ocr_hook.changes import git
    from ocr_hook.changes.snapshot import commit_listing

    found: list[CheckFile | str] = []
    for path, (mode, sha) in sorted(commit_listing(repo_root, revision).items()):
        if CHECKS_DIR not in path or not is_check_file(path):
            continue
        if mode not in ("100644", "100755"):
            found.append(f"{path}: not a regular file (a symbolic link is never followed)")
            continue
        data = git.run_git(repo_root, ["cat-file", "blob", sha]).stdout
        found.append(_decode(path, data))
    return _parse_files(found, revision)


def load_worktree(repo_root: str) -> LoadedChecks:
    """The work tree's check files (for `doctor`): the tracked and the untracked, not the ignored."""
    import os

    from ocr_hook.changes import git

    listing = git.git_text(repo_root, ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--",
                                       *_PATHSPECS])
    found: list[CheckFile | str] = []
    for path in dict.fromkeys(p for p in listing.split("\0") if p and is_check_file(p)):
        full = os.path.join(repo_root, path)
        if os.path.islink(full) or not os.path.isfile(full):
            if os.path.islink(full):
                found.append(f"{path}: not a regular file (a symbolic link is never followed)")
            continue
        with open(full, "rb") as handle:
            found.append(_decode(path, handle.read()))
    return _parse_files(found, None)


def trusted_checks(change_set: ChangeSet) -> LoadedChecks:
    """The checks that judge `change_set`: read at the trusted revision (guidance's rule, DESIGN 5), never from
    the change itself. Before the first commit there is none, and so no check."""
    from ocr_hook.changes import git

    # As guidance's trusted revision (guidance.resolve.trusted_revision): the change's old side; none before the
    # first commit. (A scan has no change to judge: the stage is not run for one.)
    revision = None if git.is_empty_tree(change_set.base) else change_set.base
    if revision is None:
        return LoadedChecks((), (), None)
    return load_at(change_set.repo_root, revision)


def changed_check_files(change_set: ChangeSet) -> set[str]:
    """The check files the change adds, edits, renames or deletes (either side of a rename)."""
    if change_set.scan:
        return set()
    return {p for f in change_set.files for p in (f.path, f.old_path) if p and is_check_file(p)}


def change_notes(loaded: LoadedChecks, change_set: ChangeSet) -> list[str]:
    """One run note per check file the change touches: the review used the trusted one (or none)."""
    edited = changed_check_files(change_set)
    by_source = {c.source: c for c in loaded.checks}
    notes = []
    for path in sorted(edited):
        if path in by_source:
            notes.append(f"this change edits check file {path}: the check changes with this pull request and takes "
                         "effect after merge; this review used the version at the trusted revision")
        else:
            notes.append(f"this change adds check file {path}: the check takes effect after merge; this review did "
                         "not evaluate it")
    for path, problem in loaded.broken:
        notes.append(f"check file {path} at the trusted revision cannot be used: {problem}")
    return notes


def matches(check: Check, path: str) -> bool:
    """Whether a changed path is one the check is about: within its folder's subtree, and (relative to that
    folder) matching its `paths` globs, gitignore-style; no globs means every file."""
    if check.scope:
        if not path.startswith(check.scope + "/"):
            return False
        path = path[len(check.scope) + 1:]
    if not check.paths:
        return True
    return _globs(check.paths).check_file(path).include is True


_GLOBS: dict[tuple[str, ...], object] = {}


def _globs(patterns: tuple[str, ...]):  # type: ignore[no-untyped-def]
    from ocr_hook.changes.globs import GitIgnoreGlobs

    spec = _GLOBS.get(patterns)
    if spec is None:
        spec = _GLOBS[patterns] = GitIgnoreGlobs(patterns)
    return spec


def applicable(checks: Sequence[Check], changed_paths: Sequence[str], commit_time: bool,
               edited: Iterable[str] = ()) -> tuple[list[Check], list[CheckVerdict]]:
    """Which checks the model must answer for a change, and the verdicts decided without it.

    `off` checks are not evaluated (and not listed); at commit time only `when: commit` checks run. A check
    whose paths the change does not touch is `not_applicable` at no cost. `edited`: check files the change
    touches (their verdicts say so)."""
    touched = set(edited)
    to_evaluate: list[Check] = []
    decided: list[CheckVerdict] = []
    for check in checks:
        if check.mode == "off" or (commit_time and check.when != "commit"):
            continue
        if any(matches(check, p) for p in changed_paths):
            to_evaluate.append(check)
            continue
        where = ", ".join(check.paths) if check.paths else "any file"
        if check.scope:
            where += f" under {check.scope}/"
        decided.append(not_applicable(check, f"the change touches none of its paths ({where})",
                                      check.source in touched))
    return to_evaluate, decided


def not_applicable(check: Check, reason: str, changed_in_change: bool = False) -> CheckVerdict:
    return CheckVerdict(name=check.name, mode=check.mode, verdict="not_applicable", reason=reason,
                        source=check.source, severity=check.severity, inconclusive=check.inconclusive,
                        changed_in_change=changed_in_change, instruction=check.instruction)


def changed_paths(change_set: ChangeSet) -> list[str]:
    """Every path a change touches, both sides of a rename: a check about `api/` applies to a file moved out."""
    return list(dict.fromkeys(p for f in change_set.files for p in (f.path, f.old_path) if p))
