"""`ocr-hook apply [ID...]`: the last review's suggested fixes, applied to the work tree and the index.

What the review already produced is all it needs (DESIGN.md 19): the findings and fixes of the repository's
last review, and the digest of each file's text as that review read it, both from review memory
(ocr_hook.store.memory). No model is asked. A fix is applied only to the very text it was computed on: a file
whose index or work tree differs from what was reviewed is refused, with nothing applied. The patch is the one
`--patch-output` writes (ocr_hook.reports.patch) and `git apply --index` applies it, so the work tree and the
index change together and the next commit's review starts from the last one (review memory re-reviews what the
fix changed at the commit's effort).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ocr_hook.changes.git import repo_top, run_git
from ocr_hook.errors import ConfigError
from ocr_hook.findings import Finding
from ocr_hook.settings import load

if TYPE_CHECKING:
    from ocr_hook.store.memory import LastReview


def run(ids: Sequence[str], config_file: str | None, *, environ: Mapping[str, str] | None = None) -> int:
    from ocr_hook.commands.dismiss import check_id, resolve

    environ = os.environ if environ is None else environ
    wanted = [check_id(i) for i in ids]  # what the user typed is checked before anything is read
    root, _head = repo_top(os.getcwd())
    settings = load(root, config_file, flags={}, environ=environ)
    if not settings.memory:
        raise ConfigError("review memory is off (setting memory: false), so no review is remembered to apply: "
                          "review with --patch-output FILE, then git apply --index FILE")
    last = _last_review(settings.cache_dir, root, environ)
    if wanted:
        candidates = [{"fingerprint": f.fingerprint, "finding": f} for f in last.findings]
        chosen = list({id(f): f for f in (resolve(w, candidates)["finding"] for w in wanted)}.values())
        without = [f for f in chosen if f.fix is None]
        if without:
            raise ConfigError(f"finding {without[0].fingerprint[:8]} ({without[0].path}) has no suggested fix to "
                              "apply (its suggestion, if any, is text in the report)")
    else:
        chosen = [f for f in last.findings if f.fix is not None]
        if not chosen:
            sys.stdout.write("the last review suggested no fix: nothing applied\n")
            return 0
    texts = _unchanged_texts(root, sorted({f.path for f in chosen}), last.sources)
    from ocr_hook.reports.patch import build_patch

    patch, notes = build_patch(chosen, texts)
    left_out = {n.split(":", 1)[0] for n in notes}
    applied = [f for f in chosen if f.path not in left_out]
    if patch:
        proc = run_git(root, ["apply", "--index", "--whitespace=nowarn", "-"], input=patch.encode("utf-8",
                                                                                               "surrogateescape"),
                       ok_codes=(0, 1))
        if proc.returncode != 0:
            raise ConfigError(f"git apply refused the fixes: {_first_line(proc.stderr)}; nothing applied")
    return _say(applied, notes)


def _last_review(cache_dir: str | None, root: str, environ: Mapping[str, str]) -> LastReview:
    from pathlib import Path

    from ocr_hook.store.memory import last_review
    from ocr_hook.store.result_cache import run_cache_dir

    last = last_review(Path(run_cache_dir(cache_dir, environ)), Path(root))
    if last is None:
        raise ConfigError("no review of this repository is remembered: run ocr-hook review (or commit, with the "
                          "hook installed) first")
    return last


def _unchanged_texts(root: str, paths: Sequence[str], sources: Mapping[str, str]) -> dict[str, str]:
    """Each file's text as reviewed, read from the index, when the index and the work tree still hold it;
    any file that changed since the review: ConfigError naming them all, before anything is applied."""
    from ocr_hook.store.memory import source_digest

    texts: dict[str, str] = {}
    changed: list[str] = []
    for path in paths:
        blob = run_git(root, ["cat-file", "blob", f":{path}"], ok_codes=(0, 128))
        text = blob.stdout.decode("utf-8", "surrogateescape") if blob.returncode == 0 else None
        same_tree = run_git(root, ["diff", "--quiet", "--", f":(literal){path}"], ok_codes=(0, 1)).returncode == 0
        if text is None or path not in sources or source_digest(text) != sources[path] or not same_tree:
            changed.append(path)
        else:
            texts[path] = text
    if changed:
        from ocr_hook.commands.progress import sanitise

        raise ConfigError(sanitise(f"{', '.join(changed)} changed since the last review (the index or the work tree "
                                   "is not what it reviewed): nothing applied; commit again to have the change "
                                   "reviewed, or apply the fix by hand"))
    return texts


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["no reason given"])[0]


def _say(applied: Sequence[Finding], notes: Sequence[str]) -> int:
    from ocr_hook.commands.progress import sanitise
    from ocr_hook.reports.text import one_line

    lines = [f"note: {n}" for n in notes]
    if applied:
        count = f"{len(applied)} fix{'es' if len(applied) != 1 else ''}"
        lines.append(f"applied {count} to the work tree and the index (git apply --index):")
        lines += [f"  {one_line(f)}" for f in sorted(applied, key=lambda f: (f.path, f.start_line))]
        lines.append("commit again: its review starts from the last one (review memory)")
    else:
        lines.append("nothing applied")
    sys.stdout.write("".join(sanitise(line) + "\n" for line in lines))
    return 0 if applied else 2
