"""`--patch-output FILE`: every fix as one unified diff against the reviewed snapshot.

ocr-hook never applies it; `git apply FILE` does, from the repository's top directory (in staged scope
`git apply --cached FILE`, or `--index`, since the snapshot is the index). Paths carry git's `a/` and
`b/` prefixes and are quoted where git quotes them; CRLF lines stay CRLF; a file without a final line
break gets git's "\\ No newline at end of file" marker.

With no fix the file is written empty, never left out: a patch from an earlier run must not survive
to be applied again. `git apply` refuses an empty file ("No valid patches in input"), so scripts test
for content first: `test -s FILE && git apply FILE`.

A patch shows the file's lines around each fix. When those would show something secret-looking (the
same detector that masks what the model sees), that file's fixes are left out of the patch with a
note; they stay in SARIF and JSON, which carry only the replacement text.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ocr_hook.changes.names import c_quoted
from ocr_hook.store.atomic import write_atomic

if TYPE_CHECKING:  # annotations only: an empty patch (nothing staged) loads none of the findings' types
    from ocr_hook.findings import Finding, Fix

CONTEXT_LINES = 3  # git's default, so the patch reads like `git diff`


def git_quoted(name: str) -> str:
    """A path as git writes it in a diff header: C-quoted when it holds a quote, a backslash or a
    control character (other bytes, UTF-8 included, stay as they are, which `git apply` reads)."""
    raw = name.encode("utf-8", "surrogateescape")
    if not any(b < 0x20 or b == 0x7F or b in (34, 92) for b in raw):
        return name
    return c_quoted(name, escape_high=False)


def file_diff(path: str, old: str, new: str) -> str:
    """One file's section of a git-style unified diff from `old` to `new` (empty when equal)."""
    if old == new:
        return ""
    name_a, name_b = git_quoted("a/" + path), git_quoted("b/" + path)
    tab = "\t" if " " in path else ""  # as git does, so that GNU patch finds where the name ends
    out = [f"diff --git {name_a} {name_b}\n", f"--- {name_a}{tab}\n", f"+++ {name_b}{tab}\n"]
    import difflib  # here, like the fixes: a hook run with no fix to write needs neither

    from ocr_hook.findings.fixes import split_keeping_ends

    body = difflib.unified_diff(split_keeping_ends(old), split_keeping_ends(new), n=CONTEXT_LINES)
    for number, line in enumerate(body):
        if number < 2:  # difflib's own ---/+++ lines, without git's names
            continue
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def build_patch(findings: Iterable[Finding], file_texts: Mapping[str, str]) -> tuple[str, list[str]]:
    """The patch of every fix (files in path order) and notes about fixes left out of it."""
    findings = list(findings)
    if all(f.fix is None for f in findings):  # e.g. the idle hook run: an empty patch, nothing loaded
        return "", []
    from ocr_hook.findings.fixes import apply_fixes, settle, split_keeping_ends
    from ocr_hook.secrets_mask import mask_secrets

    by_path: dict[str, list[Fix]] = {}
    for f in settle(findings):  # already settled on the review path; a no-op then, a guard otherwise
        if f.fix is not None:
            by_path.setdefault(f.path, []).append(f.fix)
    sections: list[str] = []
    notes: list[str] = []
    for path in sorted(by_path):
        text = file_texts.get(path)
        if text is None:
            notes.append(f"{path}: fixes left out of the patch: the reviewed file could not be read")
            continue
        if max(fix.end_line for fix in by_path[path]) > len(split_keeping_ends(text)):
            notes.append(f"{path}: fixes left out of the patch: they do not fit the reviewed file")
            continue
        section = file_diff(path, text, apply_fixes(text, by_path[path]))
        if mask_secrets(section)[1]:
            notes.append(f"{path}: fixes left out of the patch, which would show secret-looking lines of the "
                         "file; they are in the SARIF and JSON reports")
            continue
        sections.append(section)
    return "".join(sections), notes


def write_patch(path: str | os.PathLike[str], findings: Iterable[Finding], file_texts: Mapping[str, str]) -> list[str]:
    """Write the patch atomically (empty when there is no fix); the notes about what was left out."""
    text, notes = build_patch(findings, file_texts)
    write_atomic(path, text)
    return notes
