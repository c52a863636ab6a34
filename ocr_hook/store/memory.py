"""Where review memory lives (DESIGN.md section 7): under `cache_dir`, by repository and line of work.

Two kinds of document, each one ocr_hook.store.files entry under `<cache_dir>/memory/` (atomic writes,
anything corrupt or foreign is a miss, bounded sizes, the oldest entries pruned):

* a line-of-work record, keyed by the repository and the line of work: per file whose review
  completed, its content as reviewed, the result-cache key's other parts, and its findings;
* the repository's latest review (any line of work, any scope): its findings, for `last_review_findings`, and
  what `ocr-hook apply` needs of it (RunFacts: the digest of each file's text as that review read it, which
  files it did not finish, which index it read). Every review writes it, those of scopes without a line of
  work (`--commit`, `--from/--to`, `scan`) too; a review with memory off leaves one that remembers nothing,
  so no later command takes an older review's findings for its.

The content is kept as it was sent to the model, secrets masked (ocr_hook.secrets_mask): the interdiff
is computed between texts the model has seen, and the cache directory, which CI systems upload and
restore, never holds a secret the mask recognises. Files the sensitive rules exclude are never
reviewed, so they are never recorded either.

The repository is its absolute git common directory (shared by its worktrees; in CI the checkout path
is the same on every run). The line of work: for staged and `--push` reviews the current branch (or the
detached HEAD's commit); for `--base` reviews the head branch (in CI from the CI system's variables,
ocr_hook.cienv) and the base as given. `--commit` and `--from/--to` reviews have none: they neither read
nor write memory.
"""

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ocr_hook.changes.scope import Scope
from ocr_hook.digest import sha256_hex
from ocr_hook.findings import Finding
from ocr_hook.findings.serial import finding_to_json, finding_to_report, findings_from_json
from ocr_hook.store.files import JsonFileStore

if TYPE_CHECKING:
    from ocr_hook.findings.memory import Remembered

FORMAT_VERSION = 1
MEMORY_DIR = "memory"
MAX_RECORD_BYTES = 16 * 1024 * 1024  # one line of work; its oldest files are forgotten to stay below
MAX_FILES_PER_RECORD = 400  # the oldest files of a line of work are forgotten first
MAX_RECORDS = 200  # lines of work and repositories remembered; the least recently written go first
MAX_TOTAL_BYTES = 256 * 1024 * 1024  # all of memory; the least recently written documents go first

__all__ = ["FileReview", "LastReview", "MemoryStore", "RunFacts", "last_review", "last_review_contents",
           "last_review_findings", "latest_review_entry", "line_of_work", "open_memory", "record_latest",
           "repository_id", "rewrite_latest", "source_digest"]


def _digest(*parts: str) -> str:
    return sha256_hex("\0".join(parts).encode("utf-8", "surrogateescape"))


def repository_id(repo_root: str | os.PathLike[str]) -> str:
    """The repository's absolute git common directory (its worktrees share it)."""
    from ocr_hook.changes import git

    out = git.git_text(str(repo_root), ["rev-parse", "--path-format=absolute", "--git-common-dir"]).strip()
    return os.path.realpath(out)


def _repository_and_branch(repo_root: str) -> tuple[str, str | None]:
    """repository_id and the current branch ("branch:NAME") in one git process; the branch is None when
    HEAD is detached, unborn or ambiguous (a tag named HEAD), where _current_branch asks on its own."""
    from ocr_hook.changes import git

    learned = git.learned_head(repo_root)
    if learned is not None:
        lines, complete = list(learned), True
    else:
        proc = git.run_git(repo_root, git.COMMON_DIR_AND_BRANCH, ok_codes=(0, 128))
        lines, complete = git.decode(proc.stdout).splitlines(), proc.returncode == 0
    if not lines or not lines[0]:
        return repository_id(repo_root), None  # its own call words the error
    branch = lines[1] if complete and len(lines) == 2 else ""
    named = f"branch:{branch.removeprefix('refs/heads/')}" if branch.startswith("refs/heads/") else None
    return os.path.realpath(lines[0]), named


def line_of_work(repo_root: str, scope: Scope, environ: Mapping[str, str], *,
                 base_ref: str | None = None, current: str | None = None) -> str | None:
    """What a review's memory is reused along (see the module docstring); None: no memory.

    `base_ref`: the base as collect_changes resolved it (ChangeSet.base_ref), so `--base auto` is
    not detected a second time. `current`: the current branch when the caller knows it already."""
    if scope.kind in ("staged", "push"):
        return current or _current_branch(repo_root)
    if scope.kind == "base":
        from ocr_hook.cienv import head_branch

        # CI checks a pull request out at a detached (merge) commit that changes on every push: the CI
        # system's head branch is the line of work there, with `--base auto` or an explicit base alike.
        head = head_branch(environ) or current or _current_branch(repo_root)
        base = base_ref or scope.base or ""
        if base == "auto":
            from ocr_hook.changes.ci_base import resolve_auto_base

            base = resolve_auto_base(repo_root, environ).ref
        return f"{head} base:{base}"
    return None


def _current_branch(repo_root: str) -> str:
    from ocr_hook.changes import git

    proc = git.run_git(repo_root, ["symbolic-ref", "-q", "HEAD"], ok_codes=(0, 1, 128))
    name = git.decode(proc.stdout).strip() if proc.returncode == 0 else ""
    if name:
        return f"branch:{name.removeprefix('refs/heads/')}"
    head = git.head_commit(repo_root)
    return f"detached:{head}" if head else "detached:(no commit)"


def _store(cache_dir: str | os.PathLike[str]) -> JsonFileStore:
    return JsonFileStore(os.path.join(cache_dir, MEMORY_DIR), format_version=FORMAT_VERSION,
                         max_entry_bytes=MAX_RECORD_BYTES, what="review memory", base=cache_dir)


def _remembered_from_json(path: str, data: Any) -> "Remembered":
    from ocr_hook.findings.memory import Remembered, content_hash

    if not isinstance(data, dict):
        raise ValueError("a file entry must be an object")
    content, sha, at = data["content"], data["sha"], data["at"]
    context = data["context"]
    if not isinstance(content, str) or not isinstance(sha, str) or not isinstance(at, int | float):
        raise ValueError("bad file entry")
    if content_hash(content) != sha:
        raise ValueError("content does not match its hash")
    if not isinstance(context, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in context.items()):
        raise ValueError("bad context")
    findings = findings_from_json(data["findings"])
    if any(f.path != path for f in findings):
        raise ValueError("a finding of another file")
    return Remembered(path, content, context, tuple(findings), float(at))  # OverflowError: caught as corrupt


def _remembered_to_json(item: "Remembered") -> dict[str, Any]:
    from ocr_hook.findings.memory import split_lines

    lines = split_lines(item.content)

    def with_lines(f: Finding) -> dict[str, Any]:
        # The anchored lines' text as reviewed, beside the quote: what the finding was about, readable
        # without the content (the loader ignores it; the content is the source of truth).
        data = finding_to_json(f)
        data["lines_text"] = "\n".join(lines[f.start_line - 1:f.end_line]) if f.anchored and f.start_line >= 1 else ""
        return data

    return {"sha": item.sha, "content": item.content, "context": dict(item.context), "at": item.at,
            "findings": [with_lines(f) for f in item.findings]}


class MemoryStore:
    """One repository's memory along one line of work."""

    def __init__(self, cache_dir: str | os.PathLike[str], repo: str, line: str) -> None:
        self.store = _store(cache_dir)
        self.repo = repo
        self.line = line
        self.record_key = _digest("line", repo, line)
        self.latest_key = _digest("latest", repo)

    @property
    def last_error(self) -> str | None:
        return self.store.last_error

    def _read(self) -> dict[str, Any]:
        data = self.store.read(self.record_key)
        if data is None or data.get("repo") != self.repo or data.get("line") != self.line:
            return {}
        files = data.get("files")
        return files if isinstance(files, dict) else {}

    def load(self) -> "dict[str, Remembered]":
        """Every remembered file of this line of work; a corrupt file entry is forgotten, never an error."""
        out: dict[str, Remembered] = {}
        for path, entry in self._read().items():
            try:
                out[str(path)] = _remembered_from_json(str(path), entry)
            except (ValueError, KeyError, TypeError, RecursionError, OverflowError):  # 10**400 is no time
                continue
        return out

    def remembered(self) -> "Mapping[str, Remembered]":
        """`load()`, read on first use: a run whose files all come from the result cache never reads it."""
        return _OnFirstUse(self.load)

    def record(self, files: "Sequence[FileReview]", run_findings: Sequence[Finding], *,
               mask: Callable[[str], str], run: "RunFacts | None" = None) -> None:
        """Remember `files` (replacing their earlier entries) and this run as the repository's latest review.
        Each file's text is stored as `mask` leaves it (as it was sent: secrets masked), beside the digest of
        the text as reviewed (`source`).

        Read, merge, write under the store's lock: two reviews of one line of work at once each add their
        files to what the other wrote (unlocked, the later write would drop the earlier one's files and turn
        a late finding into a new, blocking one); the later one wins for the files both reviewed.

        An unchanged re-run (every file answered from the result cache) finds the same entries already
        stored (the same source digest, context and findings): they are then only marked as used (their
        files' times), without masking anything, the lock or a write."""
        sources = {item.path: source_digest(item.text) for item in files}
        facts = None if run is None else _as_stored(run._asdict())
        if self._already_recorded(files, sources, run_findings, facts):
            return
        # Here, not at the top: an unchanged re-run (the common case) loads none of the re-review code.
        from ocr_hook.findings.memory import Remembered

        remembered = [Remembered(item.path, mask(item.text), dict(item.context), tuple(item.findings), time.time())
                      for item in files]
        with self.store.locked() as held:
            self._record(remembered, sources, run_findings, facts)
        if not held and self.store.last_error is None:
            self.store.last_error = f"review memory: could not lock {self.store.directory}; recorded unlocked"

    def _already_recorded(self, files: "Sequence[FileReview]", sources: Mapping[str, str],
                          run_findings: Sequence[Finding], facts: Any) -> bool:
        stored, latest = self._read(), self.store.read(self.latest_key)
        if latest is None or latest.get("repo") != self.repo or latest.get("line") != self.line:
            return False
        if latest.get("run") != facts:
            return False
        if latest.get("findings") != _as_stored([finding_to_json(f) for f in run_findings]):
            return False
        for item in files:
            old = stored.get(item.path)
            # The same text as reviewed and the same context (the ocr-hook version among it) give the same
            # masked content and so the same quoted lines: the findings are compared without them.
            if (not isinstance(old, dict) or old.get("source") != sources[item.path]
                    or old.get("context") != dict(item.context) or not isinstance(old.get("findings"), list)
                    or [_without(f, "lines_text") for f in old["findings"]]
                    != _as_stored([finding_to_json(f) for f in item.findings])):
                return False
        for key in (self.record_key, self.latest_key):
            self.store.touch(key)
        return True

    def _record(self, files: "Sequence[Remembered]", sources: Mapping[str, str],
                run_findings: Sequence[Finding], facts: Any) -> None:
        merged: dict[str, Any] = dict(self._read())
        for item in files:
            merged[item.path] = {**_remembered_to_json(item), "source": sources[item.path]}
        newest = sorted(merged.items(), key=lambda kv: _entry_time(kv[1]), reverse=True)[:MAX_FILES_PER_RECORD]
        # Within the size bound: the files of this run first (they are the newest), then older ones.
        budget = MAX_RECORD_BYTES - 4096
        kept: dict[str, Any] = {}
        for path, entry in newest:
            size = len(json.dumps(entry, ensure_ascii=True, separators=(",", ":"))) + len(path) + 8
            if size > budget:
                continue
            kept[path], budget = entry, budget - size
        now = time.time()
        self.store.write(self.record_key, {"repo": self.repo, "line": self.line, "at": now, "files": kept})
        self.store.write(self.latest_key, {"repo": self.repo, "line": self.line, "at": now, "run": facts,
                                           "findings": [finding_to_json(f) for f in run_findings]})
        self.store.prune(MAX_RECORDS, MAX_TOTAL_BYTES)


def _as_stored(value: Any) -> Any:
    """`value` as the store gives it back (tuples become lists), for comparison with what it holds."""
    return json.loads(json.dumps(value, ensure_ascii=True))


def _without(entry: Any, name: str) -> Any:
    return {k: v for k, v in entry.items() if k != name} if isinstance(entry, dict) else entry


def _entry_time(entry: Any) -> float:
    at = entry.get("at") if isinstance(entry, dict) else None
    try:
        return float(at) if isinstance(at, int | float) else 0.0
    except OverflowError:  # an integer no float holds (10**400): not a time, the oldest
        return 0.0


def open_memory(cache_dir: str | os.PathLike[str], repo_root: str, scope: Scope, environ: Mapping[str, str], *,
                base_ref: str | None = None) -> MemoryStore | None:
    """The memory of this review's line of work; None for scopes without one (--commit, --from/--to)."""
    if scope.kind not in ("staged", "push", "base"):
        return None
    repository, current = _repository_and_branch(repo_root)
    line = line_of_work(repo_root, scope, environ, base_ref=base_ref, current=current)
    if line is None:
        return None
    return MemoryStore(cache_dir, repository, line)


def _latest(cache_dir: str | os.PathLike[str],
            repo_root: str | os.PathLike[str]) -> tuple[str, dict[str, Any], list[Finding]] | None:
    """The repository's id, its latest review's document and findings; None when nothing (readable) is kept."""
    try:
        repo = repository_id(repo_root)
    except Exception:  # not a repository any more, git missing: nothing remembered
        return None
    data = _store(cache_dir).read(_digest("latest", repo))
    if data is None or data.get("repo") != repo:
        return None
    try:
        return repo, data, findings_from_json(data.get("findings"))
    except (ValueError, KeyError, TypeError, RecursionError, OverflowError):
        return None


def last_review_findings(cache_dir: str | os.PathLike[str],
                         repo_root: str | os.PathLike[str]) -> list[dict[str, Any]] | None:
    """The findings of the most recent review recorded for this repository (any line of work), as JSON
    report finding objects; None when nothing is remembered (or what is stored is unreadable)."""
    latest = _latest(cache_dir, repo_root)
    return None if latest is None else [finding_to_report(f) for f in latest[2]]


class RunFacts(NamedTuple):
    """What `ocr-hook apply` needs of a review beside its findings (stored in the latest review's document)."""

    scope: str  # the change set's description ("staged changes", "commit 1a2b3c4d", "scan of the index ...")
    sources: dict[str, str]  # path → source_digest of the text this review read, every file it has findings in
    incomplete: list[str]  # the files whose review did not finish (their findings are what came before the stop)
    # A staged review of an index git made for this commit only (`git commit -a`, `git commit PATH`): what it
    # read is the work tree's text, not the index's (ocr_hook.hookenv.temporary_index).
    temporary_index: bool = False
    remembered: bool = True  # False: memory was off, nothing of the review is kept (only that it happened)
    applied: tuple[str, ...] = ()  # the fingerprints whose fixes `ocr-hook apply` applied since


class LastReview(NamedTuple):
    """The repository's most recent review as memory keeps it: its findings, and what that review read
    (`ocr-hook apply` applies fixes only to that very text). `run` is None for a review recorded by an
    ocr-hook that kept no RunFacts."""

    findings: list[Finding]
    run: RunFacts | None
    at: float


def source_digest(text: str) -> str:
    """What memory records of a file's text as reviewed (before masking), to tell whether it is still that text."""
    return _digest(text)


def _facts_from_json(data: Any) -> RunFacts | None:
    if not isinstance(data, dict):
        return None
    sources, incomplete = data.get("sources"), data.get("incomplete")
    if (not isinstance(data.get("scope"), str) or not isinstance(sources, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in sources.items())
            or not isinstance(incomplete, list) or not all(isinstance(p, str) for p in incomplete)):
        return None
    applied = data.get("applied")
    return RunFacts(data["scope"], dict(sources), list(incomplete), data.get("temporary_index") is True,
                    data.get("remembered") is not False,
                    tuple(a for a in applied if isinstance(a, str)) if isinstance(applied, list) else ())


def last_review(cache_dir: str | os.PathLike[str], repo_root: str | os.PathLike[str]) -> LastReview | None:
    """The most recent review recorded for this repository (any line of work, any scope), with what it read;
    None when nothing is remembered (or what is stored is unreadable)."""
    found = _latest(cache_dir, repo_root)
    if found is None:
        return None
    _repo, latest, findings = found
    at = latest.get("at")
    return LastReview(findings, _facts_from_json(latest.get("run")), float(at) if isinstance(at, int | float) else 0.0)


def record_latest(cache_dir: str | os.PathLike[str], repo_root: str | os.PathLike[str], findings: Sequence[Finding],
                  run: RunFacts) -> str | None:
    """Record a review of a scope without a line of work (or with memory off: `run.remembered` False, no
    findings) as the repository's latest; the store's error, if the write failed."""
    store = _store(cache_dir)
    repo = repository_id(repo_root)
    kept = [finding_to_json(f) for f in findings] if run.remembered else []
    store.write(_digest("latest", repo), {"repo": repo, "line": None, "at": time.time(),
                                          "run": _as_stored(run._asdict()), "findings": kept})
    return store.last_error


def rewrite_latest(cache_dir: str | os.PathLike[str], repo_root: str | os.PathLike[str], findings: Sequence[Finding],
                   run: RunFacts) -> str | None:
    """Replace the latest review's findings and facts (what `apply` leaves of it), keeping the rest of its
    document; the store's error, if the write failed."""
    found = _latest(cache_dir, repo_root)
    if found is None:
        return None
    repo, latest, _findings = found
    store = _store(cache_dir)
    store.write(_digest("latest", repo), {**latest, "run": _as_stored(run._asdict()),
                                          "findings": [finding_to_json(f) for f in findings]})
    return store.last_error


def last_review_contents(cache_dir: str | os.PathLike[str], repo_root: str | os.PathLike[str]) -> dict[str, str]:
    """Each file of the most recent review (any line of work) as that review sent it (secrets masked): what the
    language server diffs an open file against, to tell which findings' lines changed since. Empty when nothing
    is remembered; a corrupt entry is left out."""
    found = _latest(cache_dir, repo_root)
    if found is None or not isinstance(found[1].get("line"), str):
        return {}
    return {path: item.content for path, item in MemoryStore(cache_dir, found[0], found[1]["line"]).load().items()}


def latest_review_entry(cache_dir: str | os.PathLike[str], repo_root: str | os.PathLike[str]) -> str:
    """The file that holds the repository's latest review: every finished review rewrites it, so its stat
    tells a watcher (the language server) that a review finished, without reading anything."""
    return str(_store(cache_dir).entry(_digest("latest", repository_id(repo_root))))


class _OnFirstUse(Mapping[str, "Remembered"]):
    def __init__(self, load: "Callable[[], dict[str, Remembered]]") -> None:
        self._load: Callable[[], dict[str, Remembered]] | None = load
        self._files: dict[str, Remembered] = {}

    def _all(self) -> "dict[str, Remembered]":
        if self._load is not None:
            self._files, self._load = self._load(), None
        return self._files

    def __getitem__(self, path: str) -> "Remembered":
        return self._all()[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


class FileReview(NamedTuple):
    """One file of a finished run as review memory takes it: the text as reviewed (before masking), what
    else decided its review (the result-cache key's other parts) and its findings."""

    path: str
    text: str
    context: Mapping[str, str]
    findings: Sequence[Finding]
