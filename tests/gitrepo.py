"""Real scratch git repositories for tests (shared by every test module; keep it small and stable).

Importing this module isolates git for the whole test process: no user or system config, fixed
identity and dates, and none of the variables a surrounding git hook may have set (running the suite
from a pre-commit hook must not touch the outer repository's index).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import forked_cli
import hermetic  # noqa: F401  (first: it keeps the environment as inherited, before the isolation below)

_HOOK_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
              "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_PREFIX", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES",
              "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_EXTERNAL_DIFF", "GIT_DIFF_OPTS",
              "GIT_QUARANTINE_PATH", "GIT_REFLOG_ACTION", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR")

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_AUTHOR_DATE": "2024-01-01T12:00:00+00:00",
    "GIT_COMMITTER_DATE": "2024-01-01T12:00:00+00:00",
    "GIT_TERMINAL_PROMPT": "0",
}


# Many tests run the CLI with PRE_COMMIT=1, and real pre-commit: under `warm: auto` each would leave a warm
# worker behind (ocr_hook.warm). Off by the product's own variable; test_warm turns it on where it means to.
NO_WARM_WORKER = {"OCR_HOOK_WARM": "off"}


# What says a CI system runs the job (ocr_hook.cienv.running): a suite run by CI must still see a developer's
# hints and effort; a test that means CI sets these itself.
_CI_MARKERS = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "BITBUCKET_BUILD_NUMBER", "TF_BUILD", "JENKINS_URL", "BUILDKITE")
# A Claude Code credential of the machine's would make `provider: auto` review through Claude Code where a test
# means "no key" (HOME is each test's own, so no login file is inherited).
_CLAUDE_CODE = ("CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR")


def isolate_environment() -> None:
    """Apply GIT_ENV to os.environ and drop hook, CI, Claude Code and ocr-hook variables (runs once, at import)."""
    for name in list(os.environ):
        if name in (*_HOOK_VARS, *_CI_MARKERS, *_CLAUDE_CODE) or name.startswith(("PRE_COMMIT_", "OCR_HOOK_")):
            del os.environ[name]
    os.environ.update(GIT_ENV)
    os.environ.update(NO_WARM_WORKER)


isolate_environment()


def git(repo: Path, *args: str, input: bytes | None = None, check: bool = True) -> str:
    """Run git in `repo`; stdout as text (surrogateescape). Raises CalledProcessError on failure."""
    proc = subprocess.run(["git", *args], cwd=repo, input=input, capture_output=True)
    if check and proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, ["git", *args], proc.stdout, proc.stderr)
    return proc.stdout.decode("utf-8", "surrogateescape")


def make_repo(path: Path, branch: str = "main") -> Path:
    """`git init` in `path` (created if missing; existing files stay untracked). Returns the path."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    git(path, "symbolic-ref", "HEAD", f"refs/heads/{branch}")
    return path


def write(repo: Path, path: str, content: bytes | str) -> Path:
    """Write a file under the work tree (parents created); str content is UTF-8."""
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content.encode() if isinstance(content, str) else content)
    return target


def stage_blob(repo: Path, path: str, size: int, line: bytes) -> None:
    """Stage a file of `size` bytes of `line`s, streamed into the object store (no work tree copy: a big file
    costs the test neither the disk nor the memory of its size)."""
    proc = subprocess.Popen(["git", "-c", "core.compression=1", "hash-object", "-w", "--stdin"], cwd=repo,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    chunk = line * (1024 * 1024 // len(line))
    written = 0
    while written < size:
        part = chunk[: size - written]
        proc.stdin.write(part)
        written += len(part)
    proc.stdin.close()
    sha = proc.stdout.read().decode().strip()
    assert proc.wait() == 0
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{sha},{path}")


def stage(repo: Path, *paths: str) -> None:
    git(repo, "add", "--", *paths)


def commit_all(repo: Path, message: str = "commit") -> str:
    """Stage everything (including deletions) and commit; returns the new commit's sha."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "--no-verify", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def repo_state(repo: Path, exact_index: bool = False) -> dict[str, object]:
    """Everything the hook must never change: work tree (every file, untracked too), index, refs, HEAD,
    stash and config. Compare the result before and after a run.

    The index is compared by its entries, flags and staged diff. `exact_index=True` also compares the
    index file's bytes, which catches even a stat-cache refresh; leave it off when something else in
    the scenario (pre-commit itself runs `git diff` on the work tree) may legitimately refresh it.
    """
    git_dir = Path(git(repo, "rev-parse", "--absolute-git-dir").strip())
    worktree: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(repo):
        if ".git" in dirnames:
            dirnames.remove(".git")
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, repo)
            if os.path.islink(full):
                worktree[rel] = "link:" + os.readlink(full)
            else:
                with open(full, "rb") as fh:
                    worktree[rel] = hashlib.sha256(fh.read()).hexdigest()

    def file_hash(p: Path) -> str | None:
        return hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None

    return {
        "worktree": worktree,
        "index_entries": git(repo, "ls-files", "--stage", "-z"),
        "index_flags": git(repo, "ls-files", "-v", "-z"),
        "index_file": file_hash(git_dir / "index") if exact_index else None,
        "staged_diff": hashlib.sha256(
            git(repo, "diff", "--cached", "--binary", "--no-ext-diff", "--no-color").encode(
                "utf-8", "surrogateescape")).hexdigest(),
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "head_file": (git_dir / "HEAD").read_text(),
        "head": git(repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False).strip(),
        "stash": git(repo, "stash", "list"),
        "config": file_hash(git_dir / "config"),
    }


def run_cli(repo: Path, *args: str, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m ocr_hook ARGS` in `repo` as a user would run it; text output (errors replaced). Run in a
    process forked from a warm one (forked_cli says what that does and does not show)."""
    return forked_cli.run(args, cwd=repo, env={**os.environ, **(env or {})}, timeout=timeout, errors="replace")


def logging_git(tmp_path: Path, env: dict[str, str]) -> tuple[dict[str, str], Path]:
    """`env` with a `git` first on PATH that logs each call (a line of its arguments) to the returned file, then
    runs the real git: what a run starts is counted, not assumed."""
    real = shutil.which("git")
    assert real is not None
    shim_dir, log = tmp_path / "shim", tmp_path / "git-calls.log"
    shim_dir.mkdir()
    script = shim_dir / "git"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    path = env.get("PATH") or os.environ.get("PATH", "")
    return {**env, "PATH": f"{shim_dir}:{path}"}, log


def subcommands(log: Path) -> list[str]:
    """Each logged call's subcommand: the first word after git's own options (`--no-pager`, `-c NAME=VALUE`)."""
    found = []
    for line in log.read_text(encoding="utf-8").splitlines() if log.exists() else []:
        words, i = line.split(" "), 0
        while i < len(words) and words[i].startswith("-"):
            i += 2 if words[i] == "-c" else 1
        found.append(words[i] if i < len(words) else "")
    log.unlink(missing_ok=True)
    return found
