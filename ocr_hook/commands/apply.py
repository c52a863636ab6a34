"""`ocr-hook apply [ID...]`: the last review's suggested fixes, applied to the work tree and the index.

What the review already produced is all it needs (DESIGN.md 19): the findings and fixes of the repository's
last review, and the digest of each file's text as that review read it (ocr_hook.store.memory.RunFacts). No
model is asked. A fix is applied only to the very text it was computed on, checked twice: the file (in the
index and the work tree) must be the text that review read, and the lines the fix replaces must be the lines
its finding quoted. Anything else is refused with nothing applied.

Which text "the file" is depends on the index the review read. A staged review reads the repository's index:
the patch (the one `--patch-output` writes, ocr_hook.reports.patch) goes through `git apply --index`, so the
work tree and the index change together. `git commit -a` and `git commit PATH` run their hook on an index
made for that commit only (ocr_hook.hookenv.temporary_index), holding the work tree's text, and gone once
the hook fails: their fixes are checked against and applied to the work tree, then staged (`git add`), so the
same commit command, run again, commits them.

What was applied is written back to the last review: the fixes applied are marked, and the file's new text
with the other findings' lines moved to where they now are is what the next `apply ID` checks, so fixes can
be applied one at a time. The next commit's review starts from the last one (review memory).
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
    from ocr_hook.store.memory import LastReview, RunFacts

REVIEW_AGAIN = "review the change again (commit again, with the hook) and apply that review's fixes, or apply " \
               "the fix by hand"


def run(ids: Sequence[str], config_file: str | None, *, environ: Mapping[str, str] | None = None) -> int:
    from ocr_hook.commands.dismiss import check_id, resolve

    environ = os.environ if environ is None else environ
    wanted = [check_id(i) for i in ids]  # what the user typed is checked before anything is read
    root, _head = repo_top(os.getcwd())
    settings = load(root, config_file, flags={}, environ=environ)
    if not settings.memory:
        raise ConfigError("review memory is off (setting memory: false), so no review is remembered to apply: "
                          "review with --patch-output FILE, then git apply --index FILE")
    cache_dir = _cache_dir(settings.cache_dir, environ)
    last = _last_review(cache_dir, root)
    facts = _facts_of(last)
    done = set(facts.applied)
    if wanted:
        candidates = [{"fingerprint": f.fingerprint, "finding": f} for f in last.findings]
        chosen = list({id(f): f for f in (resolve(w, candidates)["finding"] for w in wanted)}.values())
        without = [f for f in chosen if f.fix is None]
        if without:
            raise ConfigError(f"finding {without[0].fingerprint[:8]} ({without[0].path}) has no suggested fix to "
                              "apply (its suggestion, if any, is text in the report)")
        again = [f for f in chosen if f.fingerprint in done]
        if again:
            raise ConfigError(f"finding {again[0].fingerprint[:8]} ({again[0].path}): its fix is applied already "
                              "(by an earlier ocr-hook apply): nothing applied")
    else:
        offered = [f for f in last.findings if f.fix is not None]
        chosen = [f for f in offered if f.fingerprint not in done]
        if not chosen:
            said = "every fix of the last review is applied already" if offered else \
                "the last review suggested no fix"
            sys.stdout.write(f"{said} (the review of {facts.scope}): nothing applied\n")
            return 0
    paths = sorted({f.path for f in chosen})
    texts = _unchanged_texts(root, paths, facts)
    fitting, notes = _fitting(chosen, texts)
    from ocr_hook.reports.patch import build_patch

    patch, patch_notes = build_patch(fitting, texts)
    notes += patch_notes
    left_out = {n.split(":", 1)[0] for n in patch_notes}
    applied = [f for f in fitting if f.path not in left_out]
    if patch:
        _git_apply(root, patch, sorted({f.path for f in applied}), facts.temporary_index)
        _remember_applied(cache_dir, root, last, facts, applied)
    notes += [f"{path}: its review did not finish: findings after where it stopped may be missing"
              for path in paths if path in facts.incomplete]
    return _say(applied, notes, facts)


def _cache_dir(cache_dir: str | None, environ: Mapping[str, str]) -> str:
    from ocr_hook.store.result_cache import run_cache_dir

    return str(run_cache_dir(cache_dir, environ))


def _last_review(cache_dir: str, root: str) -> LastReview:
    from ocr_hook.store.memory import last_review

    last = last_review(cache_dir, root)
    if last is None:
        raise ConfigError("no review of this repository is remembered: run ocr-hook review (or commit, with the "
                          "hook installed) first")
    return last


def _facts_of(last: LastReview) -> RunFacts:
    facts = last.run
    if facts is None:
        raise ConfigError("the last review was recorded by an earlier version of ocr-hook, which kept too little "
                          f"to apply its fixes safely: {REVIEW_AGAIN}")
    if not facts.remembered:
        raise ConfigError(f"the last review, of {facts.scope}, ran with review memory off (--no-memory), so none of "
                          "its findings is remembered and no older review's fix is offered: review again without "
                          "--no-memory, or with --patch-output FILE and then git apply FILE")
    return facts


def _unchanged_texts(root: str, paths: Sequence[str], facts: RunFacts) -> dict[str, str]:
    """Each file's text as reviewed, when the file still holds it: for a review of the repository's index, in
    the index and the work tree alike; for one of a commit's own index (commit -a, commit PATH), in the work
    tree. Any file that is not that text: ConfigError naming them all, before anything is applied."""
    from ocr_hook.store.memory import source_digest

    texts: dict[str, str] = {}
    changed: list[str] = []
    for path in paths:
        text = _work_tree_text(root, path) if facts.temporary_index else _index_text(root, path)
        if text is None or path not in facts.sources or source_digest(text) != facts.sources[path]:
            changed.append(path)
        else:
            texts[path] = text
    if changed:
        from ocr_hook.commands.progress import sanitise

        where = "the work tree" if facts.temporary_index else "the index or the work tree"
        raise ConfigError(sanitise(f"{', '.join(changed)} changed since the last review, of {facts.scope}: {where} "
                                   f"is not the text it reviewed, and its fixes fit only that text: nothing "
                                   f"applied; {REVIEW_AGAIN}"))
    return texts


def _index_text(root: str, path: str) -> str | None:
    """The file's text in the index, when the work tree holds the same (else None: not one text to patch)."""
    blob = run_git(root, ["cat-file", "blob", f":{path}"], ok_codes=(0, 128))
    if blob.returncode != 0:
        return None
    if run_git(root, ["diff", "--quiet", "--", f":(literal){path}"], ok_codes=(0, 1)).returncode != 0:
        return None
    return blob.stdout.decode("utf-8", "surrogateescape")


def _work_tree_text(root: str, path: str) -> str | None:
    full = os.path.join(root, path)
    if os.path.islink(full) or not os.path.isfile(full):
        return None
    with open(full, "rb") as handle:
        return handle.read().decode("utf-8", "surrogateescape")


def _fitting(chosen: Sequence[Finding], texts: Mapping[str, str]) -> tuple[list[Finding], list[str]]:
    """The findings whose fix replaces exactly the lines their finding quoted (the file's lines at that place
    as the review read them, secrets masked as it keeps them) in the text it will patch; the others left out,
    each with a note."""
    from ocr_hook.secrets_mask import mask_secrets

    fitting, notes = [], []
    for f in chosen:
        fix = f.fix
        assert fix is not None
        lines = texts[f.path].split("\n")
        block = "\n".join(line.removesuffix("\r") for line in lines[fix.start_line - 1:fix.end_line])
        if 1 <= fix.start_line <= fix.end_line <= len(lines) and mask_secrets(block)[0] == f.existing_code:
            fitting.append(f)
        else:
            notes.append(f"{f.path}: the fix of {f.fingerprint[:8]} left out: lines {fix.start_line}-{fix.end_line} "
                         "are not the lines its finding quoted")
    return fitting, notes


def _git_apply(root: str, patch: str, paths: Sequence[str], work_tree_only: bool) -> None:
    data = patch.encode("utf-8", "surrogateescape")
    args = ["apply", "--whitespace=nowarn", "-"] if work_tree_only else \
        ["apply", "--index", "--whitespace=nowarn", "-"]
    proc = run_git(root, args, input=data, ok_codes=(0, 1))
    if proc.returncode != 0:
        raise ConfigError(f"git apply refused the fixes: {_first_line(proc.stderr)}; nothing applied")
    if work_tree_only:  # staged too, so that `git commit` in any form takes the fixed text
        run_git(root, ["add", "--", *(f":(literal){p}" for p in paths)])


def _remember_applied(cache_dir: str, root: str, last: LastReview, facts: RunFacts,
                      applied: Sequence[Finding]) -> None:
    """The last review as it now stands: these fixes marked applied, each patched file's new text as the text
    the review's other fixes fit, their findings moved to the lines they are on now."""
    from ocr_hook.store.memory import rewrite_latest, source_digest

    sources = dict(facts.sources)
    for path in {f.path for f in applied}:
        text = _work_tree_text(root, path) if facts.temporary_index else _index_text(root, path)
        if text is None:
            sources.pop(path, None)  # (what git apply wrote cannot be read back: nothing more is offered)
        else:
            sources[path] = source_digest(text)
    moved = moved_findings(last.findings, applied)
    rewrite_latest(cache_dir, root, moved, facts._replace(sources=sources,
                                                          applied=(*facts.applied, *(f.fingerprint for f in applied))))


def moved_findings(findings: Sequence[Finding], applied: Sequence[Finding]) -> list[Finding]:
    """`findings` with each one's lines (and its fix's) moved by the lines the applied fixes above it added or
    removed in its file; a finding overlapping an applied fix keeps its lines, and loses its fix (it no longer
    fits)."""
    changes: dict[str, list[tuple[int, int, int]]] = {}  # path → (start, end, lines added minus removed)
    for f in applied:
        assert f.fix is not None
        delta = f.fix.replacement.count("\n") + 1 - (f.fix.end_line - f.fix.start_line + 1)
        changes.setdefault(f.path, []).append((f.fix.start_line, f.fix.end_line, delta))
    done = {f.fingerprint for f in applied}
    out = []
    for f in findings:
        spans = changes.get(f.path)
        if not spans or f.fingerprint in done or f.start_line < 1:
            out.append(f)
            continue
        lo, hi = (f.fix.start_line, f.fix.end_line) if f.fix is not None else (f.start_line, f.end_line)
        if any(not (hi < s or lo > e) for s, e, _d in spans):
            out.append(f._replace(fix=None))
            continue
        shift = sum(d for s, e, d in spans if e < lo)
        fix = None if f.fix is None else f.fix._replace(start_line=f.fix.start_line + shift,
                                                        end_line=f.fix.end_line + shift)
        out.append(f._replace(start_line=f.start_line + shift, end_line=f.end_line + shift, fix=fix))
    return out


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["no reason given"])[0]


def _say(applied: Sequence[Finding], notes: Sequence[str], facts: RunFacts) -> int:
    from ocr_hook.commands.progress import sanitise
    from ocr_hook.reports.text import one_line

    lines = [f"note: {n}" for n in notes]
    if applied:
        count = f"{len(applied)} fix{'es' if len(applied) != 1 else ''}"
        how = "git apply, then git add" if facts.temporary_index else "git apply --index"
        lines.append(f"applied {count} to the work tree and the index ({how}), from the review of {facts.scope}:")
        lines += [f"  {one_line(f)}" for f in sorted(applied, key=lambda f: (f.path, f.start_line))]
        if facts.temporary_index:
            lines.append("commit again with the same command (git commit -a, or git commit PATH): its review "
                         "starts from the last one (review memory)")
        else:
            lines.append("commit again: its review starts from the last one (review memory)")
    else:
        lines.append("nothing applied")
    sys.stdout.write("".join(sanitise(line) + "\n" for line in lines))
    return 0 if applied else 2
