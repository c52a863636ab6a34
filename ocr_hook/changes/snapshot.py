"""The reviewed snapshot (the index in staged mode, else the target commit), read through git only.

Blobs come from one long-lived `git cat-file --batch` process (or the run's `--batch-command` one that answered
their sizes: git.take_object_reader), addressed by object id from the
snapshot's own listing, so no path (not even one with a newline) is ever parsed by cat-file and the
working tree is never read. Several agent threads share one Snapshot: a lock serialises the pipe.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import threading
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import IO, NamedTuple

from ocr_hook.changes import git
from ocr_hook.changes.model import ChangeSet
from ocr_hook.changes.snapshot_api import GrepHit, GrepResult
from ocr_hook.errors import GitError

_REGULAR_MODES = frozenset({"100644", "100755", "100664"})
_SYMLINK_MODE = "120000"
_MAX_GREP_OUTPUT = 8 * 1024 * 1024  # bytes read from one git grep before it is stopped
_MAX_GREP_HITS = 5_000
_MAX_HIT_TEXT = 2_000
# Blobs already read are kept (by object id, so never stale) up to this many bytes: selection, the
# result-cache lookup, the tools and the reports all read the same few files.
_BLOB_MEMO_BYTES = 16 * 1024 * 1024
_MAX_GREP_EXCLUDED = 200  # files over the cap left out of a grep by name (their pathspecs share one command line)
_MAX_LIKELY_PATHS = 500  # more would make a long command line; the whole listing is read instead
# Patterns as text, compiled by `re` (and kept in its cache) on first use: a run answered from the cache greps
# nothing and checks no pathspec.
_SHORT_MAGIC = r"^:[!^/]*:?"
_LONG_MAGIC = r"^:\([^)]*\)"
_WINDOWS_DRIVE = r"^[A-Za-z]:"
_OBJECT_ID = r"[0-9a-f]{40}|[0-9a-f]{64}"


class SnapshotClosed(RuntimeError):
    """The snapshot was used after close()."""


class _Entry(NamedTuple):
    mode: str
    sha: str


class GitSnapshot:
    """Implements snapshot_api.Snapshot for the index (target None) or a commit."""

    def __init__(self, repo_root: str, target: str | None, likely_paths: Sequence[str] = (),
                 known: Mapping[str, tuple[str, str]] | None = None, max_bytes: int | None = None) -> None:
        """likely_paths: the paths most reads will be for (the change set's). In the index, they are
        listed on their own first: the whole listing of a large repository costs ~1 ms per 1,000 files,
        which a run that reads only the changed files (e.g. a cached one) need not pay.
        known: path → (mode, object id) of every likely path the index holds, as the staged diff gave
        them; then even that first listing (one `git ls-files` process) is skipped.
        max_bytes: a blob larger than this is never read (read_bytes answers None, oversize its size), so no
        reader of the snapshot (a tool, the context pack) loads a file over the cap whole (issue 62.4)."""
        self.repo_root = repo_root
        self.target = target
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._ask = b""  # what precedes an object id on _proc's input: b"contents " for a --batch-command process
        self._entries: dict[str, _Entry] | None = None
        self._listing_digest: str | None = None
        use_likely = target is None and 0 < len(likely_paths) <= _MAX_LIKELY_PATHS
        self._likely = frozenset(likely_paths) if use_likely else frozenset()
        self._likely_entries: dict[str, _Entry] | None = None
        if use_likely and known is not None:
            self._likely_entries = {p: _Entry(*known[p]) for p in self._likely if p in known}
        self._blobs: dict[str, bytes] = {}
        self._blob_bytes = 0
        self._max_bytes = max_bytes
        self._oversize: dict[str, int] = {}  # object id → size, of the blobs refused for the cap
        self._too_large: tuple[str, ...] | None = None  # the snapshot's files over the cap, once grep asked
        self._closed = False

    # --- reading --------------------------------------------------------------------------------

    def read_bytes(self, path: str) -> bytes | None:
        """The blob at `path`; None unless a regular file or a symlink (whose blob is its target text,
        returned as is and never followed) is there."""
        with self._lock:
            entry = self._entry(path)
            if entry is None or (entry.mode not in _REGULAR_MODES and entry.mode != _SYMLINK_MODE):
                return None
            data = self._blobs.get(entry.sha)
            if data is None:
                data = self._cat(entry.sha)
                if data is None:
                    return None
                if self._blob_bytes + len(data) <= _BLOB_MEMO_BYTES:
                    self._blobs[entry.sha] = data
                    self._blob_bytes += len(data)
            return data

    def oversize(self, path: str) -> int | None:
        """The size of the blob at `path` when a read refused it for being over the cap; else None."""
        with self._lock:
            entry = self._entry(path)
            return None if entry is None else self._oversize.get(entry.sha)

    def read_text(self, path: str) -> str | None:
        data = self.read_bytes(path)
        return None if data is None else data.decode("utf-8", "surrogateescape")

    def paths(self) -> tuple[str, ...]:
        """Files and symlinks of the snapshot (submodules are not files here)."""
        with self._lock:
            return tuple(p for p, e in self._listing().items() if e.mode != "160000")

    def is_symlink(self, path: str) -> bool:
        with self._lock:
            entry = self._entry(path)
            return entry is not None and entry.mode == _SYMLINK_MODE

    def _entry(self, path: str) -> _Entry | None:
        if self._entries is None and path in self._likely:
            self._check_open()
            if self._likely_entries is None:
                self._likely_entries = _load_listing(self.repo_root, None, sorted(self._likely))[0]
            return self._likely_entries.get(path)
        return self._listing().get(path)

    def identity(self) -> str | None:
        """Names the snapshot's content exactly: the commit's object id, or a digest of the index's whole
        listing (every path with its mode, blob id and stage); None when the target is not an object id."""
        if self.target is not None:
            return f"commit {self.target}" if re.fullmatch(_OBJECT_ID, self.target) else None
        with self._lock:
            self._listing()
            return self._listing_digest

    def prefetch_listing(self) -> None:
        """Start the whole listing's git process now (git.prefetch), unless it is read already: a run asks for it
        once it knows a file needs a context pack, so one served from the cache starts no such process."""
        key = (self.repo_root, self.target) if self.target is not None else None
        if self._entries is None and (key is None or key not in _COMMIT_LISTINGS):
            git.prefetch(self.repo_root, [listing_command(self.target)])

    def _listing(self) -> dict[str, _Entry]:
        self._check_open()
        if self._entries is None:
            self._entries, self._listing_digest = _load_listing(self.repo_root, self.target)
        return self._entries

    def _cat(self, sha: str) -> bytes | None:
        if sha in self._oversize:
            return None
        proc = self._cat_file()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(self._ask + sha.encode("ascii") + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().decode("ascii", "replace").split()
            if len(header) != 3:
                raise GitError(f"git cat-file could not read object {sha}: {' '.join(header) or 'no answer'}")
            size = int(header[2])
            if self._max_bytes is not None and size > self._max_bytes:
                # The header says enough: the process is ended rather than drained (the next read starts another).
                self._oversize[sha] = size
                self._stop_cat_file(kill=True)
                return None
            data = proc.stdout.read(size + 1)
        except (OSError, ValueError) as exc:
            self._stop_cat_file()
            raise GitError(f"git cat-file stopped unexpectedly: {exc}") from None
        if len(data) != size + 1:
            self._stop_cat_file()
            raise GitError("git cat-file stopped unexpectedly")
        return data[:size]

    def _cat_file(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            # The run's process that answered the blobs' sizes (git.blob_sizes) reads them too: no second one.
            self._proc, self._ask = git.take_object_reader(self.repo_root), b"contents "
            if self._proc is None or self._proc.poll() is not None:
                self._proc, self._ask = subprocess.Popen(
                    git.git_command(["cat-file", "--batch"]), cwd=self.repo_root, stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=git.git_env(),
                ), b""
        return self._proc

    def _stop_cat_file(self, kill: bool = False) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if kill:
            proc.kill()
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            if os.name == "posix" and proc.stdout is not None:
                # git closes its output as it exits on the end of its input: waiting for that is bounded and
                # ends at once, where Popen.wait(timeout) polls in sleeps of a millisecond and more.
                select.select([proc.stdout], [], [], 2)
            proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        finally:
            if proc.stdout is not None:
                proc.stdout.close()

    def _check_open(self) -> None:
        if self._closed:
            raise SnapshotClosed("the snapshot was closed; the review of this change set has ended")

    # --- searching -------------------------------------------------------------------------------

    def grep(
        self,
        pattern: str,
        pathspecs: tuple[str, ...] = (),
        ignore_case: bool = True,
        perl_regexp: bool = False,
        max_per_file: int = 100,
        timeout_s: float = 10.0,
    ) -> GrepResult:
        """`git grep` over the snapshot's tracked files; problems come back as GrepResult.error."""
        if self._closed:
            return GrepResult((), (), "the reviewed snapshot is closed; the review has ended")
        if not pattern:
            return GrepResult((), (), "the search text is empty; give a word or a regular expression")
        for spec in pathspecs:
            problem = pathspec_problem(spec)
            if problem:
                return GrepResult((), (), problem)
        args = ["grep", "-n", "-I", "--null", "--no-color", "--full-name"]
        args += ["-i"] if ignore_case else []
        args += ["--perl-regexp"] if perl_regexp else ["--basic-regexp"]
        args += ["-e", pattern]
        args += ["--cached"] if self.target is None else [self.target]
        too_large = self._over_cap()
        # git grep loads every file it searches whole: those over the cap are left out (issue 62.4).
        args += ["--", *pathspecs, *(f":(exclude,literal){p}" for p in too_large)]
        output, returncode, stderr, timed_out = _run_capped(self.repo_root, args, timeout_s)
        if timed_out:
            return GrepResult((), (), f"the search took longer than {timeout_s:g} s and was stopped; "
                                      "use a more specific search text or narrower file patterns")
        if returncode not in (0, 1, None):
            message = git.first_line(stderr).removeprefix("fatal: ").removeprefix("error: ")
            return GrepResult((), (), f"git grep rejected the search: {message}")
        prefix = b"" if self.target is None else self.target.encode("ascii") + b":"
        hits, truncated = _parse_grep(output, prefix, max_per_file)
        return GrepResult(tuple(hits), tuple(truncated), None, too_large)

    def _over_cap(self) -> tuple[str, ...]:
        """The snapshot's regular files over the cap, from one `git cat-file --batch-check` (headers only)."""
        if self._max_bytes is None:
            return ()
        with self._lock:
            if self._too_large is None:
                files = {p: e.sha for p, e in self._listing().items() if e.mode in _REGULAR_MODES}
                sizes = git.blob_sizes(self.repo_root, list(files.values()))
                big = sorted(((sizes.get(sha, 0), p) for p, sha in files.items()), reverse=True)
                # The largest ones, as many as a command line takes on every platform.
                self._too_large = tuple(sorted(p for size, p in big[:_MAX_GREP_EXCLUDED] if size > self._max_bytes))
            return self._too_large

    # --- lifetime --------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the cat-file process; later reads raise SnapshotClosed, later greps return an error."""
        with self._lock:
            self._closed = True
            self._stop_cat_file()
            self._entries = None
            self._likely_entries = None
            self._blobs.clear()

    def __enter__(self) -> GitSnapshot:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def open_snapshot(repo_root: str, change_set: ChangeSet, max_bytes: int | None = None) -> GitSnapshot:
    """The reviewed side of `change_set`: the index when change_set.target is None, else that commit; a blob over
    `max_bytes` (the settings' max_file_bytes) is never read."""
    known = None
    if change_set.target is None:  # the staged diff's new side is the index: its ids are the index's
        known = {f.path: (f.new_mode, f.new_sha) for f in change_set.files if f.new_sha and f.new_mode}
    snapshot = GitSnapshot(repo_root, change_set.target, [f.path for f in change_set.files], known, max_bytes)
    with snapshot._lock:
        snapshot._cat_file()  # started now, so git starts up beside the imports before the first read
    return snapshot


def listing_command(target: str | None) -> list[str]:
    """The git command that lists a snapshot whole (for git.prefetch: the same arguments _load_listing uses)."""
    return ["ls-files", "--stage", "-z"] if target is None else ["ls-tree", "-r", "-z", "--full-tree", target]


# The last commits listed whole: a commit's listing never changes, and one run reads the trusted revision's twice
# (guidance files, then check files: ocr_hook.checks.load) with one git process. Two, so the warm worker keeps little.
_COMMIT_LISTINGS: dict[tuple[str, str], tuple[dict[str, _Entry], str]] = {}
_COMMIT_LISTINGS_KEPT = 2


def commit_listing(repo: str, commit: str) -> dict[str, tuple[str, str]]:
    """Path → (mode, object id) of a commit's whole tree (read-only: it is shared)."""
    return _load_listing(repo, commit)[0]  # type: ignore[return-value]


def _load_listing(repo: str, target: str | None, only: Sequence[str] = ()) -> tuple[dict[str, _Entry], str]:
    """Path → (mode, blob) of the snapshot (with `only`, index only: of just those paths), and a digest of the
    listing as git gave it."""
    key = (repo, target) if target is not None and re.fullmatch(_OBJECT_ID, target) else None
    if key is not None:
        found = _COMMIT_LISTINGS.get(key)
        if found is None:
            found = _COMMIT_LISTINGS[key] = _list(repo, target, only)
            while len(_COMMIT_LISTINGS) > _COMMIT_LISTINGS_KEPT:
                del _COMMIT_LISTINGS[next(iter(_COMMIT_LISTINGS))]
        return found
    return _list(repo, target, only)


def _list(repo: str, target: str | None, only: Sequence[str] = ()) -> tuple[dict[str, _Entry], str]:
    from ocr_hook.digest import sha256_hex

    entries: dict[str, _Entry] = {}
    if target is None:
        spec = ["--", *(f":(literal){p}" for p in only)] if only else []
        wanted = frozenset(only)
        out = git.git_text(repo, [*listing_command(None), *spec])
        for record in out.split("\0"):
            meta, tab, path = record.partition("\t")
            if not tab:
                continue
            mode, sha, stage = meta.split(" ")
            if stage == "0" and (not only or path in wanted):
                entries[path] = _Entry(mode, sha)
    else:
        out = git.git_text(repo, listing_command(target))
        for record in out.split("\0"):
            meta, tab, path = record.partition("\t")
            if not tab:
                continue
            mode, _kind, sha = meta.split(" ")
            entries[path] = _Entry(mode, sha)
    return entries, sha256_hex(out.encode("utf-8", "surrogateescape"))


def pathspec_problem(spec: str) -> str | None:
    """Why a pathspec could reach outside the repository (worded for the model); None when it is fine."""
    if "\0" in spec:
        return f"file pattern {spec!r} contains a NUL character"
    if spec.startswith(":("):
        match = re.match(_LONG_MAGIC, spec)
        if match is None:
            return f"file pattern {spec!r} has an unclosed ':(' magic; write it like ':(exclude)vendor/'"
        body = spec[match.end():]
    elif spec.startswith(":"):
        body = spec[re.match(_SHORT_MAGIC, spec).end():]  # type: ignore[union-attr]  # always matches ":"
    else:
        body = spec
    if body.startswith(("/", "\\")) or re.match(_WINDOWS_DRIVE, body):
        return (f"file pattern {spec!r} is an absolute path; use paths relative to the repository root, "
                "like 'src/' or '*.py'")
    if ".." in re.split(r"[/\\]", body):
        return (f"file pattern {spec!r} goes outside the repository with '..'; use paths relative to the "
                "repository root, like 'src/' or '*.py'")
    return None


def _run_capped(repo: str, args: list[str], timeout_s: float) -> tuple[bytes, int | None, str, bool]:
    """Run git with a wall-clock limit and an output cap; (stdout, returncode or None if we stopped
    it for size, stderr, timed_out)."""
    proc = subprocess.Popen(git.git_command(args), cwd=repo, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=git.git_env())
    # stderr is drained beside stdout so a chatty git can never block on a full pipe while stdout is read
    errors: list[bytes] = []
    drain = threading.Thread(target=lambda: errors.append(proc.stderr.read()),  # type: ignore[union-attr]
                             daemon=True)
    drain.start()
    timed_out = threading.Event()

    def expire() -> None:
        timed_out.set()
        proc.kill()

    timer = threading.Timer(timeout_s, expire)
    timer.daemon = True
    timer.start()
    chunks: list[bytes] = []
    size = 0
    capped = False
    try:
        stdout: IO[bytes] = proc.stdout  # type: ignore[assignment]
        while True:
            chunk = stdout.read1(65536)  # type: ignore[attr-defined]
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size >= _MAX_GREP_OUTPUT:
                capped = True
                proc.kill()
                break
    finally:
        timer.cancel()
        proc.wait()
        drain.join()  # stderr closes with git, like stdout
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    stderr = b"".join(errors).decode("utf-8", "replace")
    returncode = None if capped else proc.returncode
    return b"".join(chunks), returncode, stderr, timed_out.is_set()


def _parse_grep(data: bytes, prefix: bytes, max_per_file: int) -> tuple[list[GrepHit], list[str]]:
    """Records are `path NUL line NUL text LF`; a path may itself contain LF, never NUL."""
    hits: list[GrepHit] = []
    truncated: list[str] = []
    per_file: dict[bytes, int] = {}
    pos = 0
    while pos < len(data) and len(hits) < _MAX_GREP_HITS:
        z1 = data.find(b"\0", pos)
        z2 = data.find(b"\0", z1 + 1) if z1 >= 0 else -1
        end = data.find(b"\n", z2 + 1) if z2 >= 0 else -1
        if end < 0:
            break  # a record cut by the output cap
        raw_path, raw_line, raw_text = data[pos:z1], data[z1 + 1 : z2], data[z2 + 1 : end]
        pos = end + 1
        if prefix and raw_path.startswith(prefix):
            raw_path = raw_path[len(prefix):]
        seen = per_file.get(raw_path, 0)
        per_file[raw_path] = seen + 1
        path = git.decode(raw_path)
        if seen >= max_per_file:
            if seen == max_per_file:
                truncated.append(path)
            continue
        text = git.decode(raw_text.removesuffix(b"\r"))[:_MAX_HIT_TEXT]
        try:
            line_no = int(raw_line)
        except ValueError:
            continue
        hits.append(GrepHit(path, line_no, text))
    return hits, truncated
