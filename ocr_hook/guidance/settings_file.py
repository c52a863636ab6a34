"""The repository's own settings file as a review of a range reads it: at the trusted revision (DESIGN.md 5).

A pull request controls its work tree, so a review of a range (`--base`, `--from/--to`, `--commit`, `--push`,
CI) takes `.ocr-hook.yaml` from the side of the change that is not under review, as guidance is taken: the
change cannot lower the gate that judges it; its edits are reviewed, named in the notes, and apply once
merged. A staged review and a scan keep the work tree's file (the person committing or scanning wrote it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ocr_hook.changes import git
from ocr_hook.changes.diff_parse import SYMLINK_MODE
from ocr_hook.guidance.resolve import trusted_revision
from ocr_hook.settings import REPO_CONFIG_NAME, RepoFile, Settings, load

if TYPE_CHECKING:
    from ocr_hook.changes.collect import Sides
    from ocr_hook.changes.model import ChangeSet


def reads_trusted(change_set: ChangeSet) -> bool:
    """Whether the review is of a range (its reviewed side is a commit, and it is not a scan)."""
    return change_set.target is not None and not change_set.scan


def repo_file(change_set: ChangeSet) -> RepoFile | None:
    """The settings file at the trusted revision, or None when the work tree's applies."""
    if not reads_trusted(change_set):
        return None
    return repo_file_at(change_set.repo_root, trusted_revision(change_set))


def repo_file_at(repo_root: str, revision: str | None, side: str = "the side before the change") -> RepoFile:
    """The settings file as `revision` (a range's trusted side; None: the range starts at the empty tree) has it."""
    if revision is None:  # the range starts at the empty tree: no side of it is trusted
        return RepoFile(None, "(none: the range starts before the first commit)")
    label = f"{revision[:12]} ({side})"
    listed = git.git_text(repo_root, ["ls-tree", "-z", "--full-tree", revision, "--", REPO_CONFIG_NAME])
    entry = next((line for line in listed.split("\0") if line), None)
    if entry is None:
        return RepoFile(None, label)
    mode, kind, sha = entry.split("\t", 1)[0].split(" ")
    if kind != "blob" or mode == SYMLINK_MODE:  # a link or a directory is no settings file (never followed)
        return RepoFile(None, label)
    data = git.run_git(repo_root, ["cat-file", "blob", sha]).stdout
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        from ocr_hook.errors import ConfigError

        raise ConfigError(f"{REPO_CONFIG_NAME} at {label}: not UTF-8 text") from None
    return RepoFile(text, label)


def repo_file_in_index(repo_root: str) -> RepoFile:
    """The settings file as the index has it: what a sparse checkout that left it out of the work tree would
    commit (issue 62.7). `text` None: the index has none (or only a link, which is never followed)."""
    label = "the index"
    listed = git.git_text(repo_root, ["ls-files", "--stage", "-z", "--", f":(literal){REPO_CONFIG_NAME}"])
    entry = next((line for line in listed.split("\0") if line), None)
    if entry is None:
        return RepoFile(None, label)
    mode, sha, _stage = entry.split("\t", 1)[0].split(" ")
    if mode in (SYMLINK_MODE, "160000"):
        return RepoFile(None, label)
    return RepoFile(_utf8(git.run_git(repo_root, ["cat-file", "blob", sha]).stdout, label), label)


def _utf8(data: bytes, label: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        from ocr_hook.errors import ConfigError

        raise ConfigError(f"{REPO_CONFIG_NAME} in {label}: not UTF-8 text") from None


def load_for_sides(repo_root: str, sides: Sides, config_file: str | None, flags: Mapping[str, Any],
                   environ: Mapping[str, str]) -> Settings:
    """A range's settings before its changes are collected (the collection needs max_file_bytes: a file over
    it is never read), from the sides alone: the trusted revision of a range is its base side."""
    if sides.target is None:  # the index: the work tree's file
        return load(repo_root, config_file, flags, environ)
    revision = None if git.is_empty_tree(sides.base) else sides.base
    return load(repo_root, config_file, flags, environ, repo_file=repo_file_at(repo_root, revision))


def load_for(change_set: ChangeSet, config_file: str | None, flags: Mapping[str, Any],
             environ: Mapping[str, str]) -> Settings:
    """The run's settings, the repository's layer read as `repo_file` says."""
    return load(change_set.repo_root, config_file, flags, environ, repo_file=repo_file(change_set))


def load_for_scan(repo_root: str, rev: str, config_file: str | None, flags: Mapping[str, Any],
                  environ: Mapping[str, str], command_defaults: Mapping[str, Any]) -> Settings:
    """`scan --rev REV` of another commit than HEAD judges REV with REV's own settings file, not the work tree's
    (docs/scan.md; issue 58.8): the work tree holds another revision's settings, or edits nobody committed."""
    revision = git.resolve_commit(repo_root, rev)
    return load(repo_root, config_file, flags, environ, command_defaults=command_defaults,
                repo_file=repo_file_at(repo_root, revision, "the scanned revision"))
