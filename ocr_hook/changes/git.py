"""Running git: one argument-vector entry point with fixed safety options, and the few queries we need.

User configuration must not change what we parse, so every call pins the options that alter diff,
grep and path output. Nothing here writes to the work tree, the index, refs or the stash.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import IO, NamedTuple, NoReturn

from ocr_hook.errors import GitError

# Config that would change the bytes we parse, overridden on every call. Command-line options
# (DIFF_OPTIONS, grep flags) pin the rest; `-c` covers what has no option or differs by git version.
_PINNED_CONFIG = (
    "core.quotePath=false",
    "core.fsmonitor=false",
    "color.ui=never",
    "color.diff=never",
    "color.grep=never",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "diff.suppressBlankEmpty=false",
    "diff.submodule=short",
    "grep.column=false",
    "grep.fullName=true",
    "submodule.recurse=false",
)

# Options for every `git diff` whose output we parse (patch or raw).
DIFF_OPTIONS = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--no-relative",
    "--find-renames",  # the user's diff.renames must not decide whether a rename is one entry or two
    "-l0",  # nor diff.renameLimit how many: past 1,000 files a move lost its renames (issue 62.6)
    "--ignore-submodules=none",
    "--submodule=short",
)

# Only for the patch call: -U implies --patch, which would mix a patch into the raw listing.
PATCH_OPTIONS = ("--patch", "--unified=3")

# Variables that would redirect or reshape diff output; the hook's own GIT_DIR/GIT_INDEX_FILE are kept
# so that `git commit <paths>` (a temporary index) is reviewed exactly as it will be committed.
_DROPPED_ENV = ("GIT_EXTERNAL_DIFF", "GIT_DIFF_OPTS", "GIT_PAGER", "PAGER")

ZERO_SHA_CHARS = frozenset("0")


class GitResult(NamedTuple):
    returncode: int
    stdout: bytes
    stderr: str


def git_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a git child: the caller's, minus output-changing variables, no optional locks."""
    env = dict(os.environ if environ is None else environ)
    for name in _DROPPED_ENV:
        env.pop(name, None)
    # Read-only commands may otherwise refresh and rewrite .git/index opportunistically.
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def git_command(args: Sequence[str]) -> list[str]:
    """The full argument vector for `git <args>` with the pinned configuration."""
    cmd = ["git", "--no-pager"]
    for item in _PINNED_CONFIG:
        cmd += ["-c", item]
    cmd += list(args)
    return cmd


def first_line(stderr: str) -> str:
    """git's complaint as one line: the first fatal/error line, else the last non-empty line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return line
    return lines[-1] if lines else "no message"


def run_git(repo: str | None, args: Sequence[str], *, input: bytes | None = None,
            ok_codes: tuple[int, ...] = (0,)) -> GitResult:
    """Run git in `repo` (argument vector, never a shell); GitError unless the exit code is in ok_codes.
    A command the run started beforehand (`prefetch`) is not run again: its result is taken."""
    started = _take_prefetched(repo, args) if input is None else None
    try:
        if started is not None:
            out, err = started.communicate()
            proc = subprocess.CompletedProcess(started.args, started.returncode, out, err)
        else:
            proc = subprocess.run(git_command(args), cwd=repo, input=input, capture_output=True, env=git_env(),
                                  check=False)
    except (FileNotFoundError, NotADirectoryError):
        if repo is not None and not os.path.isdir(repo):
            raise GitError(f"not a directory: {repo}") from None
        raise GitError("git is not installed or not on PATH") from None
    stderr = proc.stderr.decode("utf-8", "replace")
    if proc.returncode not in ok_codes:
        raise GitError(f"git {_verb(args)} failed: {first_line(stderr)}")
    return GitResult(proc.returncode, proc.stdout, stderr)


# --- prefetching -----------------------------------------------------------------------------------

# The read-only commands a run started ahead of need, by (repository, arguments); None outside `prefetching`.
_prefetched: ContextVar[dict[tuple[str, tuple[str, ...]], subprocess.Popen[bytes]] | None] = ContextVar(
    "ocr_hook_git_prefetched", default=None)


@contextlib.contextmanager
def prefetching() -> Iterator[None]:
    """A run's scope for `prefetch`: what it started and nobody took is ended when the scope closes, so a
    later run (the MCP server and the warm worker serve many) never takes an earlier run's answer."""
    token = _prefetched.set({})
    try:
        yield
    finally:
        left = _prefetched.get() or {}
        _prefetched.reset(token)
        for proc in left.values():
            with contextlib.suppress(OSError):
                proc.kill()
            proc.communicate()


def prefetch(repo: str, commands: Sequence[Sequence[str]]) -> None:
    """Start read-only git commands now, so they run beside the work (and the imports) that come before
    their answers are needed; run_git with the same repository and arguments takes the answer. Only
    inside `prefetching`; a command that cannot start is simply run later, where its error is reported."""
    started = _prefetched.get()
    if started is not None:
        _start(repo, commands, started)


def start_repo_top(cwd: str) -> None:
    """Start repo_top's one git call for `cwd` now: the `ocr-hook review` console script calls this before it
    imports the CLI, so git answers while Python imports. The first repo_top(cwd) takes the answer; one
    nobody takes (a usage error, --help) ends with the process."""
    if os.path.isdir(cwd):
        _start(cwd, [_REPO_TOP], _early)


_Key = tuple[str, tuple[str, ...]]
# repo_top's query, started by the entry point before it imports the CLI (start_repo_top); taken once.
_early: dict[_Key, subprocess.Popen[bytes]] = {}
# One process for the top of the work tree, HEAD's commit, and what review memory names a line of work by (the
# common git directory and HEAD's symbolic name: learned_head). Before the first commit it fails as a whole, and
# _REPO_TOP_ALONE, which --verify --quiet keeps apart from the top, answers instead.
_REPO_TOP = ("rev-parse", "--show-toplevel", "--path-format=absolute", "--git-common-dir", "HEAD^{commit}",
             "--symbolic-full-name", "HEAD")
_REPO_TOP_ALONE = ("rev-parse", "--show-toplevel", "--verify", "--quiet", "HEAD^{commit}")


def _start(repo: str, commands: Sequence[Sequence[str]], into: dict[_Key, subprocess.Popen[bytes]]) -> None:
    for args in commands:
        key = (repo, tuple(args))
        if key in into:
            continue
        try:
            into[key] = subprocess.Popen(git_command(args), cwd=repo, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=git_env())
        except OSError:
            continue


def _take_prefetched(repo: str | None, args: Sequence[str]) -> subprocess.Popen[bytes] | None:
    if repo is None:
        return None
    key = (repo, tuple(args))
    early = _early.pop(key, None)
    if early is not None:
        return early
    started = _prefetched.get()
    return started.pop(key, None) if started else None


def git_text(repo: str | None, args: Sequence[str], ok_codes: tuple[int, ...] = (0,)) -> str:
    """stdout of a git command, decoded so that any byte sequence round-trips (surrogateescape)."""
    return decode(run_git(repo, args, ok_codes=ok_codes).stdout)


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _verb(args: Sequence[str]) -> str:
    return next((a for a in args if not a.startswith("-")), "command")


# --- queries ---------------------------------------------------------------------------------------

# The repository's absolute common directory and HEAD's full symbolic name, in one process: what review memory
# names a line of work by (ocr_hook.store.memory), unless repo_top learned them already (learned_head).
COMMON_DIR_AND_BRANCH = ("rev-parse", "--path-format=absolute", "--git-common-dir", "--symbolic-full-name", "HEAD")
_learned: dict[str, tuple[str, str]] = {}  # repo_top's root → (common directory, HEAD's symbolic full name)


def repo_root(cwd: str) -> str:
    """The top of the work tree containing cwd; GitError when cwd is not inside one."""
    proc = _rev_parse_top(cwd, [])
    root = decode(proc.stdout).rstrip("\n")
    if proc.returncode != 0 or not root:
        _not_a_work_tree(cwd, proc)
    return root


class RepoTop(NamedTuple):
    root: str  # the top of the work tree, as repo_root gives it
    head: str | None  # HEAD's commit as head_commit gives it; None before the first commit


_case_root: str | None = None  # the repository the last repo_top found: the run's own


def folds_case() -> bool:
    """Whether the run's path globs match regardless of case, as git matches them where core.ignorecase is
    true (what git init sets on the case-insensitive file systems macOS and Windows default to). Asked
    only when a path matches a glob in another case and not in its own, so most runs never ask git."""
    return _case_root is not None and ignores_case(_case_root)


def repo_top(cwd: str) -> RepoTop:
    """repo_root and head_commit in one git call (every staged run needs both, and each call costs ~2 ms),
    which also tells review memory what it asks (learned_head)."""
    global _case_root
    proc = _rev_parse_top(cwd, list(_REPO_TOP[2:]))
    lines = decode(proc.stdout).split("\n")
    if proc.returncode == 0 and len(lines) == 5 and lines[0] and lines[2] and lines[4] == "":
        root, common, head, symbolic = lines[:4]
        _learned[root] = (common, symbolic)
        _case_root = root
        return RepoTop(root, head)
    # Before the first commit (or outside a work tree): the query that tells the two apart.
    proc = _rev_parse_top(cwd, list(_REPO_TOP_ALONE[2:]))
    root, _, rest = decode(proc.stdout).partition("\n")
    if not root:  # --show-toplevel, the first query, failed: git printed nothing
        _not_a_work_tree(cwd, proc)
    head = rest.strip()
    # Every command finds its repository here, so here its path globs learn which repository's
    # core.ignorecase to follow (folds_case; asked only when a glob meets a path in another case).
    _case_root = root
    # Exit 1 (or 128) after the top was printed: HEAD names no commit yet (an unborn branch).
    return RepoTop(root, head if proc.returncode == 0 and head else None)


def learned_head(root: str) -> tuple[str, str] | None:
    """(the absolute common git directory, HEAD's symbolic full name) as repo_top(…) of `root` found them in
    the same process; None when repo_top did not (then ask COMMON_DIR_AND_BRANCH)."""
    return _learned.get(root)


@functools.cache
def ignores_case(repo: str) -> bool:
    """core.ignorecase: git matches paths regardless of case in this repository (the macOS and Windows
    default, set by git init after probing the file system)."""
    proc = run_git(repo, ["config", "--bool", "core.ignorecase"], ok_codes=(0, 1))
    return decode(proc.stdout).strip() == "true"


def _rev_parse_top(cwd: str, more: list[str]) -> GitResult:
    if not os.path.isdir(cwd):
        raise GitError(f"not a directory: {cwd}")
    return run_git(cwd, ["rev-parse", "--show-toplevel", *more], ok_codes=(0, 1, 128) if more else (0, 128))


def _not_a_work_tree(cwd: str, proc: GitResult) -> NoReturn:
    reason = first_line(proc.stderr)
    if "not a git repository" in reason:
        raise GitError(f"not a git repository: {cwd} (run ocr-hook inside a git work tree)")
    raise GitError(f"cannot use {cwd} as a git work tree: {reason}")


def resolve_commit(repo: str, ref: str) -> str:
    """The full sha of the commit `ref` names; GitError naming the ref when there is none."""
    if not ref or ref.startswith("-") or any(c in ref for c in "\0\n"):
        raise GitError(f"unknown ref {ref!r}: not a branch, tag or commit in this repository")
    proc = run_git(repo, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], ok_codes=(0, 1, 128))
    sha = decode(proc.stdout).strip()
    if proc.returncode != 0 or not sha:
        hint = " (in a shallow clone, fetch it first)" if is_shallow(repo) else ""
        raise GitError(f"unknown ref {ref!r}: not a branch, tag or commit in this repository{hint}")
    return sha


def has_head(repo: str) -> bool:
    """False before the first commit (HEAD names an unborn branch)."""
    return head_commit(repo) is not None


def head_commit(repo: str) -> str | None:
    """The full sha of HEAD's commit; None before the first commit (HEAD names an unborn branch)."""
    proc = run_git(repo, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], ok_codes=(0, 1, 128))
    sha = decode(proc.stdout).strip()
    return sha if proc.returncode == 0 and sha else None


def empty_tree(repo: str) -> str:
    """The empty tree's id in this repository's hash (not written to the object store)."""
    return run_git(repo, ["hash-object", "-t", "tree", "--stdin"], input=b"").stdout.decode().strip()


# The empty tree's id under each object format git has (SHA-1, SHA-256): the hash of "tree 0\0".
EMPTY_TREES = frozenset({"4b825dc642cb6eb9a060e54bf8d69288fbee4904",
                         "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"})


def is_empty_tree(sha: str) -> bool:
    """Whether `sha` is the empty tree, with no git process (a cached run asks on every start)."""
    return sha in EMPTY_TREES


def is_shallow(repo: str) -> bool:
    return git_text(repo, ["rev-parse", "--is-shallow-repository"]).strip() == "true"


def shallow_commits(repo: str) -> frozenset[str]:
    """Commits at the cut of a shallow clone: their parents are missing here."""
    path = git_text(repo, ["rev-parse", "--git-path", "shallow"]).strip()
    full = path if os.path.isabs(path) else os.path.join(repo, path)
    try:
        with open(full, encoding="ascii") as fh:
            return frozenset(line.strip() for line in fh if line.strip())
    except OSError:
        return frozenset()


def shallow_advice() -> str:
    """How to fetch the whole history, in the words of the CI system this runs in (ocr_hook.cienv)."""
    from ocr_hook.cienv import shallow_advice as advice

    return advice(os.environ)


def merge_base(repo: str, a: str, b: str) -> str:
    """The best common ancestor of two commits; GitError (with the shallow-clone fix) when there is none."""
    found = merge_base_or_none(repo, a, b)
    if found is not None:
        return found
    if is_shallow(repo):
        raise GitError(f"no merge base between {a[:12]} and {b[:12]}: this is a shallow clone and the "
                       f"common history is missing; {shallow_advice()}")
    raise GitError(f"no merge base between {a[:12]} and {b[:12]}: the histories are unrelated")


def merge_base_or_none(repo: str, a: str, b: str) -> str | None:
    proc = run_git(repo, ["merge-base", a, b], ok_codes=(0, 1))
    sha = decode(proc.stdout).strip()
    return sha if proc.returncode == 0 and sha else None


def first_parent(repo: str, commit: str) -> str | None:
    """The first parent of a commit; None for a root commit (or a shallow clone's cut)."""
    proc = run_git(repo, ["rev-parse", "--verify", "--quiet", f"{commit}^1"], ok_codes=(0, 1, 128))
    sha = decode(proc.stdout).strip()
    return sha if proc.returncode == 0 and sha else None


def unmerged_paths(repo: str) -> list[str]:
    """Paths with conflict stages in the index (a merge, rebase or cherry-pick stopped on a conflict)."""
    out = git_text(repo, ["ls-files", "--unmerged", "-z"])
    paths: list[str] = []
    for record in out.split("\0"):
        if "\t" in record:
            path = record.split("\t", 1)[1]
            if path not in paths:
                paths.append(path)
    return paths


def check_no_unmerged(repo: str) -> None:
    paths = unmerged_paths(repo)
    if paths:
        shown = ", ".join(repr(p) for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        raise GitError(f"merge conflict in progress: unmerged paths {shown}; resolve and stage them first")


def blob_sizes(repo: str, shas: Sequence[str]) -> dict[str, int]:
    """Each object's size in bytes, from one `git cat-file --batch-check`: git reads headers, never content,
    so a checked-in 1 GB file costs a line here (issue 55.3). Within a run's scope (`prefetching`) the same
    questions go to a `cat-file --batch-command` process that is then left to the run for the blobs' contents
    (take_object_reader): one process where a staged run started two (issue 62.9)."""
    unique = list(dict.fromkeys(shas))
    if not unique:
        return {}
    sizes = _sizes_by_command(repo, unique)
    if sizes is not None:
        return sizes
    out = run_git(repo, ["cat-file", "--batch-check=%(objectname) %(objectsize)"],
                  input="".join(f"{sha}\n" for sha in unique).encode("ascii")).stdout.decode("ascii", "replace")
    sizes: dict[str, int] = {}
    for line in out.splitlines():
        name, _, size = line.partition(" ")
        if size.isdigit():
            sizes[name] = int(size)
    return sizes


# `git cat-file --batch-command` (git 2.36): `info <id>` answers as --batch-check does, `contents <id>` as --batch.
OBJECT_READER = ("cat-file", "--batch-command")
_READER_KEY = ("cat-file", "--batch-command", "(object reader)")  # its place among the run's started processes
_INFO_BATCH = 500  # questions written before their answers are read: both stay far below a pipe's 64 KiB
_no_batch_command: list[bool] = []  # set once this git turned the option down (before 2.36): not asked again


def _sizes_by_command(repo: str, shas: Sequence[str]) -> dict[str, int] | None:
    """blob_sizes through a `--batch-command` process kept in the run's scope for take_object_reader; None
    outside a run's scope, or where git is older than 2.36 (then --batch-check answers, as before)."""
    started = _prefetched.get()
    if started is None or _no_batch_command:
        return None
    key = (repo, _READER_KEY)
    proc = started.pop(key, None)
    try:
        if proc is None:
            proc = subprocess.Popen(git_command(OBJECT_READER), cwd=repo, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=git_env())
        assert proc.stdin is not None and proc.stdout is not None
        sizes: dict[str, int] = {}
        for i in range(0, len(shas), _INFO_BATCH):
            batch = shas[i:i + _INFO_BATCH]
            proc.stdin.write("".join(f"info {sha}\n" for sha in batch).encode("ascii"))
            proc.stdin.flush()
            for _ in batch:
                line = proc.stdout.readline()
                if not line:  # git stopped: it does not know --batch-command
                    raise EOFError
                name, _, rest = line.decode("ascii", "replace").partition(" ")
                size = rest.rpartition(" ")[2].strip()
                if size.isdigit():
                    sizes[name] = int(size)
    except (OSError, ValueError, EOFError):
        _no_batch_command.append(True)
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.kill()
            proc.communicate()
        return None
    started[key] = proc
    return sizes


def take_object_reader(repo: str) -> subprocess.Popen[bytes] | None:
    """The run's `cat-file --batch-command` process (blob_sizes started it), for reading blobs with `contents <id>`
    lines; the taker stops it. None when there is none."""
    started = _prefetched.get()
    return started.pop((repo, _READER_KEY), None) if started else None


def blob_head(repo: str, sha: str, size: int = 8000) -> bytes:
    """The first `size` bytes of a blob (git's own binary test reads as many), streamed: the rest is never
    read into this process."""
    proc = subprocess.Popen(git_command(["cat-file", "blob", sha]), cwd=repo, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=git_env())
    assert proc.stdout is not None
    try:
        return proc.stdout.read(size)
    finally:
        proc.stdout.close()
        with contextlib.suppress(OSError):
            proc.kill()
        proc.wait()


def blob_heads(repo: str, shas: Sequence[str], size: int = 8000) -> dict[str, bytes]:
    """The first `size` bytes of each blob, from one `git cat-file --batch` (a process a blob cost 1,344 git
    starts on Django's tree: issue 62.8). Each blob is streamed through in chunks and all but its head dropped,
    so memory holds one chunk whatever the blob's size. A sha git does not have is left out."""
    unique = list(dict.fromkeys(shas))
    if not unique:
        return {}
    proc = subprocess.Popen(git_command(["cat-file", "--batch"]), cwd=repo, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=git_env())
    assert proc.stdin is not None and proc.stdout is not None
    # The names go in from a thread: git answers as it reads, and a pipe full both ways would hang.
    feeder = threading.Thread(target=_feed, args=(proc.stdin, unique), daemon=True)
    feeder.start()
    heads: dict[str, bytes] = {}
    try:
        for _ in unique:
            header = proc.stdout.readline().split()
            if len(header) != 3:  # "<sha> missing" (or git stopped)
                if not header:
                    break
                continue
            name, left = header[0].decode("ascii", "replace"), int(header[2])
            head = proc.stdout.read(min(size, left))
            left -= len(head)
            while left > 0:
                chunk = proc.stdout.read(min(left, 1 << 20))
                if not chunk:
                    break
                left -= len(chunk)
            proc.stdout.read(1)  # the newline after each blob
            heads[name] = head
    finally:
        proc.stdout.close()
        with contextlib.suppress(OSError):
            proc.kill()
        proc.wait()
        feeder.join()
    return heads


def _feed(pipe: IO[bytes], shas: Sequence[str]) -> None:
    with contextlib.suppress(OSError):
        with pipe:
            for sha in shas:
                pipe.write(f"{sha}\n".encode("ascii"))


def is_zero_sha(value: str) -> bool:
    """pre-commit and git hooks name a missing side (new branch, deletion) with all zeros."""
    return bool(value) and set(value) <= ZERO_SHA_CHARS
