"""Turn a Scope into a ChangeSet: which two snapshots to compare, then one diff of all files."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ocr_hook.changes import deadline, git
from ocr_hook.changes.model import ChangeSet, FileChange
from ocr_hook.changes.scope import SCAN, Scope
from ocr_hook.errors import FatalError, GitError

if TYPE_CHECKING:
    from ocr_hook.changes.ci_base import AutoBase
    from ocr_hook.changes.diff_parse import RawEntry
    from ocr_hook.settings import Settings

AUTO_BASE = "auto"  # `--base auto`: the CI system's pull/merge request base (ocr_hook.cienv)


class Sides(NamedTuple):
    base: str  # tree-ish of the old side
    target: str | None  # commit of the reviewed side; None: the index
    description: str
    base_ref: str | None = None  # --base: the ref given, or the one `--base auto` detected
    auto_base: AutoBase | None = None  # what `--base auto` detected


class _Lookup:
    """The default of `head`: ask git."""


LOOKUP_HEAD = _Lookup()


def collect_changes(repo_root: str, scope: Scope, paths: tuple[str, ...],
                    environ: Mapping[str, str], *, head: str | _Lookup | None = LOOKUP_HEAD,
                    max_bytes: int | None = None, sides: Sides | None = None,
                    selection: Settings | None = None) -> ChangeSet:
    """Every changed file of the scope, restricted to `paths` (repo-relative, taken literally).

    `head`: HEAD's commit (None before the first commit) when the caller already asked git, e.g. with
    git.repo_top, which saves the staged scope a git call. `max_bytes`: a file bigger than this on either
    side is listed with its size (FileChange.oversize) and never read nor diffed. `sides`: resolve_sides's
    answer when the caller asked already (a range's settings are read at its base side before collecting).
    `selection`: the settings a scan's files will be selected by; with `max_bytes`, a file they skip by its name
    alone (sensitive, vendored, excluded) is listed and never diffed, so a scan's memory follows the files it
    reviews, not the tree's bytes (issue 62.5). A change's diffs are its own size, and its checks read them all."""
    if scope.kind == SCAN:
        return _scan(repo_root, scope, paths, head, max_bytes, selection)
    sides = sides or resolve_sides(repo_root, scope, environ, head=head)
    staged = scope.kind == "staged"
    if staged and paths:
        # A conflict anywhere stops the run, also outside the PATHS the diff below is limited to.
        git.check_no_unmerged(repo_root)
    files = diff_files(repo_root, sides.base, sides.target, paths, check_unmerged=staged and not paths,
                       max_bytes=max_bytes)
    description = sides.description
    if paths:
        description += " in " + ", ".join(paths)
    return ChangeSet(repo_root=repo_root, description=description, base=sides.base, target=sides.target,
                     files=tuple(files), base_ref=sides.base_ref, auto_base=sides.auto_base)


def _scan(repo: str, scope: Scope, paths: tuple[str, ...], head: str | _Lookup | None,
          max_bytes: int | None = None, selection: Settings | None = None) -> ChangeSet:
    """Every file at the revision (or in the index) as added, whole: the diff from the empty tree gives
    each its one hunk, so selection, the agent and the reports see an ordinary change set."""
    if scope.rev is None:
        head = git.head_commit(repo) if isinstance(head, _Lookup) else head
        target, description, trusted = None, "scan of the index (whole files)", head
    else:
        target = trusted = git.resolve_commit(repo, scope.rev)
        description = f"scan of {scope.rev} ({target[:12]}, whole files)"
    base = git.empty_tree(repo)
    files = diff_files(repo, base, target, paths, check_unmerged=target is None and not paths, max_bytes=max_bytes,
                       unreviewed=_by_name(selection))
    if target is None and paths:
        git.check_no_unmerged(repo)
    if paths:
        description += " in " + ", ".join(paths)
    return ChangeSet(repo_root=repo, description=description, base=base, target=target, files=tuple(files),
                     scan=True, guidance_rev=trusted)


def resolve_sides(repo: str, scope: Scope, environ: Mapping[str, str], *,
                  head: str | _Lookup | None = LOOKUP_HEAD) -> Sides:
    if scope.kind == "staged":
        return _staged(repo, git.head_commit(repo) if isinstance(head, _Lookup) else head)
    if scope.kind == "base":
        ref, detected, auto = scope.base or "", "", None
        if ref == AUTO_BASE:
            from ocr_hook.changes.ci_base import resolve_auto_base

            auto = resolve_auto_base(repo, environ)
            ref, detected = auto.ref, f"; --base auto: {auto.ci}, {auto.source}"
        base_sha = git.resolve_commit(repo, ref)
        head = git.resolve_commit(repo, "HEAD")
        mb = git.merge_base(repo, base_sha, head)
        return Sides(mb, head, f"{ref}...HEAD (merge base {mb[:12]}..{head[:12]}{detected})", ref, auto)
    if scope.kind == "range":
        old = git.resolve_commit(repo, scope.from_ref or "")
        new = git.resolve_commit(repo, scope.to_ref or "")
        return Sides(old, new, f"{scope.from_ref}..{scope.to_ref} ({old[:12]}..{new[:12]})")
    if scope.kind == "commit":
        sha = git.resolve_commit(repo, scope.commit or "")
        parent = git.first_parent(repo, sha)
        if parent is None:
            return Sides(git.empty_tree(repo), sha, f"commit {sha[:12]} (root commit, against the empty tree)")
        return Sides(parent, sha, f"commit {sha[:12]} against its first parent {parent[:12]}")
    if scope.kind == "push":
        return _push(repo, environ, scope)
    raise FatalError(f"unknown scope {scope.kind!r}")


def _staged(repo: str, head: str | None) -> Sides:
    # (Unmerged paths are refused by collect_changes, with the diff.)
    if head is not None:
        return Sides(head, None, f"staged changes (index against HEAD {head[:12]})")
    return Sides(git.empty_tree(repo), None, "staged changes (index against the empty tree: no commits yet)")


def _push(repo: str, environ: Mapping[str, str], scope: Scope) -> Sides:
    # The range comes from pre-commit's variables, or from the line git gave a plain pre-push hook.
    if scope.to_ref:
        from_ref, to_ref, source = scope.from_ref or "", scope.to_ref, "pre-push line"
    else:
        from_ref = environ.get("PRE_COMMIT_FROM_REF", "")
        to_ref = environ.get("PRE_COMMIT_TO_REF", "")
        source = "PRE_COMMIT_FROM_REF..PRE_COMMIT_TO_REF"
    if to_ref and git.is_zero_sha(to_ref):
        # A branch deletion pushes no content.
        head = git.resolve_commit(repo, "HEAD")
        return Sides(head, head, "push deletes a branch: nothing to review")
    tip = git.resolve_commit(repo, to_ref or "HEAD")
    if from_ref and not git.is_zero_sha(from_ref):
        old = git.resolve_commit(repo, from_ref)
        # Like pre-commit itself: review what the push adds on top of the remote's tip.
        mb = git.merge_base_or_none(repo, old, tip) or old
        return Sides(mb, tip, f"push range {old[:12]}..{tip[:12]} ({source})")
    return _unpushed(repo, tip)


def _unpushed(repo: str, tip: str) -> Sides:
    """pre-commit names no range for a push that contains the root commit (or a new branch): review the
    commits of `tip` that no remote-tracking ref contains."""
    out = git.git_text(repo, ["rev-list", "--topo-order", "--reverse", tip, "--not", "--remotes"])
    commits = out.split()
    if not commits:
        return Sides(tip, tip, f"push: every commit up to {tip[:12]} is already on a remote; nothing to review")
    oldest = commits[0]
    parent = git.first_parent(repo, oldest)
    count = f"{len(commits)} commit{'s' if len(commits) != 1 else ''} not on any remote"
    if parent is not None:
        return Sides(parent, tip, f"push: {count} ({parent[:12]}..{tip[:12]}; no range from pre-commit)")
    if oldest in git.shallow_commits(repo):
        raise GitError(f"cannot tell which commits are being pushed: {oldest[:12]} is the cut of a shallow "
                       f"clone; {git.shallow_advice()}")
    return Sides(git.empty_tree(repo), tip,
                 f"push: {count}, from the root commit (against the empty tree) to {tip[:12]}")


# --- the diff -------------------------------------------------------------------------------------


def diff_args(base: str, target: str | None) -> list[str]:
    return ["diff", *git.DIFF_OPTIONS, *(["--cached", base] if target is None else [base, target])]


def raw_command(base: str, target: str | None, paths: Sequence[str] = ()) -> list[str]:
    """The listing without content diff_files asks first when it has a size cap: without rename detection, which
    reads the blobs of every added and deleted file it compares (issue 62.4)."""
    return [*diff_args(base, target), "--no-renames", "--raw", "-z", "--no-abbrev", *literal_pathspecs(paths)]


def literal_pathspecs(paths: Sequence[str]) -> list[str]:
    return ["--", *(f":(literal){p}" for p in paths)] if paths else ["--"]


# Past this many bytes of names of files too big to read (or left unread), the patch is asked for the others by
# name (in batches) rather than for everything but them: either way the command line stays far below ARG_MAX.
# Everything in one command is what lets git find a rename among the others, so this is high.
_MAX_EXCLUDED_BYTES = 256 * 1024
_PATHSPEC_BATCH = 500


def diff_files(repo: str, base: str, target: str | None, paths: Sequence[str] = (), *,
               check_unmerged: bool = False, max_bytes: int | None = None,
               unreviewed: Callable[[str], bool] | None = None) -> list[FileChange]:
    """One git process for the raw listing and the patch of all files; per-file patches only if the two
    disagree.

    With `--raw -z --patch`, git writes the NUL-terminated raw records, one more NUL, then the patch text
    (a path is never empty, so the first "\0\0" is that boundary). check_unmerged: refuse an index with
    conflicts (GitError), for a listing of the whole index.

    max_bytes: sizes first (issue 55.3). The raw listing and the blobs' sizes come without any content; a
    file over the cap on either side becomes a FileChange with its size and no patch, and only the others
    are diffed, so a checked-in 1 GB file is never read."""
    if max_bytes is not None:
        return _diff_within(repo, base, target, paths, check_unmerged, max_bytes, unreviewed)
    return _diff_all(repo, base, target, literal_pathspecs(paths), check_unmerged)


def _by_name(settings: Settings | None) -> Callable[[str], bool] | None:
    """Whether selection skips a path by its name alone; the rules are loaded at the first path asked about
    (an idle run lists none)."""
    if settings is None:
        return None
    rules = []

    def skipped(path: str) -> bool:
        from ocr_hook.changes.selection import load_rules, skipped_by_name

        if not rules:
            rules.append(load_rules(settings))
        return skipped_by_name(path, rules[0])

    return skipped


def _diff_within(repo: str, base: str, target: str | None, paths: Sequence[str], check_unmerged: bool,
                 max_bytes: int, unreviewed: Callable[[str], bool] | None = None) -> list[FileChange]:
    # Without rename detection the listing reads no content: finding an inexact rename loads both blobs whole,
    # which for a 1 GB file renamed and regenerated cost 2 GB before any cap was looked at (issue 62.4).
    raw = git.git_text(repo, raw_command(base, target, paths))
    if not raw:
        return []
    from ocr_hook.changes.diff_parse import DiffParseError, oversize_change, parse_raw

    try:
        entries = parse_raw(raw)
    except DiffParseError as exc:
        if check_unmerged:
            git.check_no_unmerged(repo)
        raise GitError(f"cannot read the diff: {exc}") from None
    sizes = git.blob_sizes(repo, [sha for e in entries for sha in (e.old_sha, e.new_sha) if sha is not None])
    big: dict[str, tuple[RawEntry, int]] = {}
    left: list[RawEntry] = []  # never reviewed by their names alone: listed, not diffed (issue 62.5)
    for entry in entries:
        size = max((sizes.get(sha or "", 0) for sha in (entry.old_sha, entry.new_sha)), default=0)
        if size > max_bytes:
            big[entry.new_path] = (entry, size)
        elif unreviewed is not None and unreviewed(entry.new_path):
            left.append(entry)
    if not big and not left:
        return _diff_all(repo, base, target, literal_pathspecs(paths), False)
    aside = {e.new_path for e in left} | set(big)
    names = _grouped([e for e in entries if e.new_path not in aside])
    excluded = [f":(exclude,literal){p}" for p in sorted(aside)]
    found: list[FileChange] = []
    if names and sum(map(len, excluded)) <= _MAX_EXCLUDED_BYTES:
        spec = literal_pathspecs(paths) if paths else ["--", "."]
        found = _diff_all(repo, base, target, [*spec, *excluded], False)
    else:
        # Past that many bytes of pathspecs, by name in batches of whole groups: a rename's two sides (listed
        # apart, the listing finds no renames) in one batch where their content says they are one (issue 62.10).
        for batch in _batches(names, _PATHSPEC_BATCH):
            found += _diff_all(repo, base, target, literal_pathspecs(batch), False)
    out = [*found, *_counted(repo, base, target, left)]
    for entry, size in _pure_renames(list(big.values())):
        sha = entry.new_sha or entry.old_sha
        head = git.blob_head(repo, sha) if sha is not None else b""
        out.append(oversize_change(entry, size, is_binary=b"\0" in head))
    return sorted(out, key=lambda c: c.path.encode("utf-8", "surrogateescape"))  # git's order: by the bytes


def _counted(repo: str, base: str, target: str | None, entries: Sequence[RawEntry]) -> list[FileChange]:
    """Files listed without their patches, with the lines they add and remove and whether git calls them binary:
    `--numstat` holds one file at a time in git and sends us a line each."""
    from ocr_hook.changes.diff_parse import listed_change

    counts: dict[str, tuple[int, int, bool]] = {}
    names = [e.new_path for e in entries]
    for i in range(0, len(names), _PATHSPEC_BATCH):
        out = git.git_text(repo, [*diff_args(base, target), "--no-renames", "--numstat", "-z",
                                  *literal_pathspecs(names[i:i + _PATHSPEC_BATCH])])
        for record in out.split("\0"):
            added, _, rest = record.partition("\t")
            removed, _, path = rest.partition("\t")
            if path:
                binary = added == "-"
                counts[path] = (0 if binary else int(added), 0 if binary else int(removed), binary)
    return [listed_change(e, *counts.get(e.new_path, (0, 0, False))) for e in entries]


def _pure_renames(big: list[tuple[RawEntry, int]]) -> list[tuple[RawEntry, int]]:
    """Files over the cap, with a deletion and an addition of the same blob made one rename: equal object ids
    are the same content, so this is exact and reads nothing. A big file renamed and changed stays a deletion and
    an addition (git would have to load both to compare them)."""
    from ocr_hook.changes.diff_parse import RawEntry

    gone: dict[str, list[RawEntry]] = {}
    for entry, _ in big:
        if entry.status == "D" and entry.old_sha is not None:
            gone.setdefault(entry.old_sha, []).append(entry)
    paired: set[str] = set()
    out = []
    for entry, size in big:
        old = gone.get(entry.new_sha or "") if entry.status == "A" else None
        if old:
            was = old.pop(0)
            paired.add(was.old_path)
            out.append((RawEntry("R", was.old_mode, entry.new_mode, was.old_sha, entry.new_sha, was.old_path,
                                 entry.new_path), size))
        elif entry.status != "D":
            out.append((entry, size))
    return out + [(e, s) for e, s in big if e.status == "D" and e.old_path not in paired]


def _grouped(entries: Sequence[RawEntry]) -> list[list[str]]:
    """Each entry's names, a deletion and an addition of the same content in one group: the listing has no
    rename detection, and a rename diffed in two batches would be an added file and a deleted one."""
    added: dict[str, list[str]] = {}
    for e in entries:
        if e.status == "A" and e.new_sha is not None:
            added.setdefault(e.new_sha, []).append(e.new_path)
    out: list[list[str]] = []
    taken: set[str] = set()
    for e in entries:
        if e.new_path in taken:
            continue
        group = list(dict.fromkeys((e.old_path, e.new_path)))
        twins = added.get(e.old_sha or "") if e.status == "D" else None
        if twins:
            group.append(twins.pop(0))
            taken.add(group[-1])
        out.append(group)
    return out


def _batches(groups: Sequence[Sequence[str]], size: int) -> list[list[str]]:
    """The names in batches of at most `size` (a group bigger than that alone), no group split."""
    out: list[list[str]] = []
    for group in groups:
        if not out or len(out[-1]) + len(group) > size:
            out.append([])
        out[-1].extend(group)
    return out


def _diff_all(repo: str, base: str, target: str | None, spec: list[str], check_unmerged: bool,
              text: bool = False) -> list[FileChange]:
    args = [*diff_args(base, target), *(["--text"] if text else [])]
    out = git.git_text(repo, [*args, "--raw", "-z", "--no-abbrev", *git.PATCH_OPTIONS, *spec])
    if not out:
        # A conflicted path is always in the index's raw listing (status U), so an empty one proves
        # there is none: the idle run of a hook (nothing staged) needs no other git call.
        return []
    raw, _, patch = out.partition("\0\0")
    # Loaded only when there is a diff to parse: unidiff is no part of the idle path.
    from ocr_hook.changes.diff_parse import (
        DiffParseError,
        build_change,
        group_patches,
        parse_raw,
        split_patches,
        unread_change,
    )

    try:
        entries = parse_raw(raw.rstrip("\0") + "\0")  # refuses U (conflict) entries: no other check
    except DiffParseError as exc:
        if check_unmerged:
            git.check_no_unmerged(repo)  # a conflict gets its own message, naming the paths
        raise GitError(f"cannot read the diff: {exc}") from None
    try:
        groups = group_patches(entries, split_patches(patch))
        if groups is None:
            groups = [_patches_of(repo, args, e.old_path, e.new_path) for e in entries]
        changes = []
        for entry, group in zip(entries, groups, strict=True):
            late = deadline.passed()  # --timeout counts the preparation too: the rest are listed, not parsed
            changes.append(unread_change(entry, late) if late else build_change(entry, group))
    except DiffParseError as exc:
        raise GitError(f"cannot read the diff: {exc}") from None
    if not text and any(c.is_binary for c in changes):
        changes = _binary_by_content(repo, base, target, entries, changes)
    return changes


def _binary_by_content(repo: str, base: str, target: str | None, entries: Sequence[RawEntry],
                       changes: list[FileChange]) -> list[FileChange]:
    """git calls a file binary by its attributes too, and `git diff` reads them from the work tree: in a review
    of a pull request those are the pull request's, so its own `.gitattributes` (`* -diff`, `evil.py binary`)
    would keep its code from review (issue 58.1). A file is binary here only by its content, as git's own
    test without attributes decides it (a NUL byte in the first 8,000 bytes of either side); the others
    are diffed again as text."""
    binary = [(entry, [sha for sha in (entry.old_sha, entry.new_sha) if sha is not None])
              for entry, change in zip(entries, changes, strict=True) if change.is_binary]
    heads = git.blob_heads(repo, [sha for _, shas in binary for sha in shas])
    text_paths: list[str] = []
    for entry, shas in binary:
        if not any(b"\0" in heads.get(sha, b"\0") for sha in shas):
            text_paths += dict.fromkeys((entry.old_path, entry.new_path))
    if not text_paths:
        return changes
    again = {c.path: c for c in _diff_all(repo, base, target, literal_pathspecs(text_paths), False, text=True)}
    return [again.get(c.path, c) if c.is_binary else c for c in changes]


def _patches_of(repo: str, args: list[str], old_path: str, new_path: str) -> list[str]:
    from ocr_hook.changes.diff_parse import split_patches

    names = [old_path] if old_path == new_path else [old_path, new_path]
    return split_patches(git.git_text(repo, [*args, *git.PATCH_OPTIONS, *literal_pathspecs(names)]))


def repo_relative_paths(root: str, cwd: str, paths: Sequence[str]) -> tuple[str, ...]:
    """Command-line PATHS (relative to cwd, or absolute) as repo-relative '/'-separated paths.

    An empty tuple means "everything" (also when one of them is the repository root itself).
    """
    roots = (os.path.realpath(root), os.path.abspath(root))
    real_cwd = os.path.realpath(cwd)
    out: list[str] = []
    for raw in paths:
        joined = os.path.normpath(raw if os.path.isabs(raw) else os.path.join(real_cwd, raw))
        rel = next((r for r in (os.path.relpath(joined, top) for top in roots) if not _outside(r)), None)
        if rel is None:
            raise FatalError(f"path {raw!r} is outside the repository {root}")
        if rel == os.curdir:
            return ()
        out.append(rel.replace(os.sep, "/"))
    return tuple(dict.fromkeys(out))


def _outside(rel: str) -> bool:
    return rel == os.pardir or rel.startswith(os.pardir + os.sep)
