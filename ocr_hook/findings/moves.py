"""The names files had when the baseline and the dismissals file were written (issue 62.6).

A finding's fingerprint names its file's path. The diff under review knows a rename it contains (the finding's
aliases carry the old path: post_review), but a later change or scan of the moved file does not: all 1,200
baselined findings of a moved tree came back. So the run asks git which of the findings' files were renamed
since the commit that last wrote each of those files, and the findings take their fingerprints under the
earlier name as aliases too. Both the baseline and the dismissals match on every alias.

Asked only when there are findings and a baseline or dismissals file; no file over max_file_bytes is read
(the listing is taken without rename detection, and big files are paired by blob id alone).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from ocr_hook.changes import git
from ocr_hook.findings.model import ALIASES, Finding, fingerprint_aliases

_MAX_RENAME_NAMES = 2_000  # paths on one command line of the inexact search; past it only exact moves count


def with_earlier_names(findings: list[Finding], repo: str, target: str | None, revision: str | None,
                       written: Iterable[str], max_bytes: int) -> list[Finding]:
    """`findings`, each also named (Finding.extra[ALIASES]) under the path its file had when each file of
    `written` (repository-relative: the baseline, the dismissals file) was last committed before `revision`.
    `target`: the reviewed side (a commit, or None: the index)."""
    if not findings or revision is None:
        return findings
    earlier: dict[str, set[str]] = {}
    paths = sorted({f.path for f in findings})
    for name in dict.fromkeys(written):
        since = git.git_text(repo, ["log", "-1", "--format=%H", revision, "--", f":(literal){name}"]).strip()
        if since:
            for new, old in earlier_paths(repo, since, target, paths, max_bytes).items():
                earlier.setdefault(new, set()).add(old)
    if not earlier:
        return findings
    out = []
    for f in findings:
        olds = sorted(earlier.get(f.path, ()))
        if olds:
            names = f.extra.get(ALIASES, "").split()
            for old in olds:
                names += fingerprint_aliases(f.path, old, f.category, f.existing_code, f.message).split()
            f = f._replace(extra={**f.extra, ALIASES: " ".join(dict.fromkeys(names))})
        out.append(f)
    return out


def earlier_paths(repo: str, since: str, target: str | None, paths: Sequence[str], max_bytes: int) -> dict[str, str]:
    """Path at `target` → its path at `since`, for those of `paths` a rename since then gave their names: an
    equal blob id is a move (exact, nothing read); the others are left to git's rename detection over the files
    within the cap."""
    from ocr_hook.changes.collect import diff_args, literal_pathspecs, raw_command
    from ocr_hook.changes.diff_parse import parse_raw

    entries = parse_raw(git.git_text(repo, raw_command(since, target)))
    added = {e.new_path: e for e in entries if e.status == "A"}
    wanted = [p for p in paths if p in added]
    gone = [e for e in entries if e.status == "D"]
    if not wanted or not gone:
        return {}
    by_blob = {e.old_sha: e.old_path for e in gone if e.old_sha is not None}
    found = {p: by_blob[sha] for p in wanted if (sha := added[p].new_sha) in by_blob}
    sizes = git.blob_sizes(repo, [s for s in (*(added[p].new_sha for p in wanted), *by_blob) if s is not None])
    rest = [p for p in wanted if p not in found and sizes.get(added[p].new_sha or "", 0) <= max_bytes]
    sources = [e.old_path for e in gone if sizes.get(e.old_sha or "", 0) <= max_bytes]
    if rest and sources and len(rest) + len(sources) <= _MAX_RENAME_NAMES:
        out = git.git_text(repo, [*diff_args(since, target), "--raw", "-z", "--no-abbrev", "--diff-filter=R",
                                  *literal_pathspecs([*rest, *sources])])
        found.update((e.new_path, e.old_path) for e in parse_raw(out) if e.new_path in rest)
    return found


def written_files(root: str, baseline: str | None, dismissals_file: str | None) -> list[str]:
    """The repository-relative paths of the baseline and of the dismissals file, those given and inside the
    repository (the baseline's path is as the user gave it: from the current directory)."""
    out = []
    real = os.path.realpath(root)
    for name in (baseline, os.path.join(root, dismissals_file) if dismissals_file else None):
        if not name:
            continue
        rel = os.path.relpath(os.path.realpath(name), real)
        if not (rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel)):
            out.append(rel.replace(os.sep, "/"))
    return out
