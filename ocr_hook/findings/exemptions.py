"""What a change does to exempt its own code, named; and the baseline as the trusted revision has it (issue 58).

DESIGN.md 5: a change cannot lower the gate that judges it. Each way a file or a finding is kept out of a
review has honest uses (a generated file, a false positive silenced in the code, a vendored update), so in a
review of a range none is simply refused: what the change itself adds to exempt its own code is named with its
file, and the finding it silences where there is one, in the verdict line and every output's notes; the
trusted setting `change_exemptions: block` makes each fail the gate until the exemption is on the trusted
revision. An exemption of the change's own is

* a file it adds or modifies that a built-in path rule skips (vendored, generated, build output, minified:
  third_party/, *_pb2.py, dist/, ...), or that a generated marker skips which the trusted side of the file
  lacks (`# @generated` written by the change);
* a finding suppressed by an inline `ocr-hook: ignore` on a line the change added;
* a finding suppressed by a dismissal the trusted revision's dismissals file lacks.

A baseline adopts existing code, so in a review of a range its content comes from the trusted revision: the
entries the change adds are never honoured, and the findings they would silence are named.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ocr_hook.changes.model import ChangeSet, FileChange
    from ocr_hook.changes.selection import Rules, Selected
    from ocr_hook.changes.snapshot_api import Snapshot
    from ocr_hook.findings import Finding
    from ocr_hook.findings.dismissals import Dismissal
    from ocr_hook.findings.suppress import BaselineEntry
    from ocr_hook.settings import Settings

CHANGE_EXEMPTIONS = ("allow", "block")
# Path rules whose files a change may add without it being named: data no program runs (a lock file), and the
# trusted settings' own `exclude`, which the team wrote.
_NOT_EXEMPTIONS = ("lock file", "exclude")
_SHOWN = 5  # exemptions named in the verdict line before "and N more"


class Exemption(NamedTuple):
    """One way the change under review keeps its own code from counting."""

    path: str
    how: str  # e.g. "vendored path rule 'third_party/'", "an inline 'ocr-hook: ignore' it added at line 4"
    finding: str = ""  # the finding it silences ("high security at line 5: ..."), when there is one
    blocking: bool = False  # change_exemptions is block: it fails the gate

    def text(self) -> str:
        silenced = f", silencing {self.finding}" if self.finding else ""
        from ocr_hook.changes.names import shown  # a name that is not UTF-8 as git shows it (issue 62.10)

        return f"{shown(self.path)} ({self.how}{silenced})"


def applies(change_set: ChangeSet) -> bool:
    """Only a review of a range has a trusted side to hold the change's own exemptions against."""
    return change_set.target is not None and not change_set.scan


def describe(f: Finding) -> str:
    where = f" at line {f.start_line}" if f.anchored and f.start_line > 0 else ""
    message = " ".join(f.message.split())
    return f"{f.severity.value} {f.category.value}{where}: {message[:100]}"


# --- files the change keeps from review ---------------------------------------------------------------------


def skipped_files(change_set: ChangeSet, selected: Sequence[Selected], rules: Rules,
                  revision: str | None) -> list[Exemption]:
    """Files the change adds or modifies that a built-in path rule, or a generated marker it wrote, skips.
    `revision`: the trusted side's commit (None: there is none)."""
    from ocr_hook.changes.model import FileStatus
    from ocr_hook.changes.selection import generated_marker

    trusted: Snapshot | None = None
    out: list[Exemption] = []
    for item in selected:
        change = item.change
        if item.action != "skip" or item.incomplete or change.status is FileStatus.DELETED:
            continue
        if change.is_submodule or change.is_symlink or not item.reason:
            continue
        skipped = rules.skip.check_file(change.path)
        if skipped.include and skipped.index is not None:
            label = rules.skip_labels[skipped.index]
            if label not in _NOT_EXEMPTIONS:
                out.append(Exemption(change.path, f"{label} path rule {rules.skip_patterns[skipped.index]!r}"))
            continue
        if item.reason.startswith("generated ("):
            marker = item.reason[len("generated ("):].split(" in the first lines", 1)[0]
            if trusted is None and revision is not None:
                from ocr_hook.changes.snapshot import GitSnapshot

                trusted = GitSnapshot(change_set.repo_root, revision)
            before = trusted.read_bytes(change.old_path or change.path) if trusted is not None else None
            if before is None or generated_marker(before, rules) is None:
                out.append(Exemption(change.path, f"generated marker {marker} the change wrote"))
    if trusted is not None:
        trusted.close()
    return out


# --- findings the change silences ------------------------------------------------------------------------------


def silenced_findings(findings: Iterable[Finding], change_set: ChangeSet, texts: Mapping[str, str],
                      dismissed: Sequence[Dismissal], trusted_dismissals: Sequence[Dismissal]) -> list[Exemption]:
    """Findings suppressed by an inline marker on a line the change added, or by a dismissal the trusted
    revision lacks."""
    from ocr_hook.findings.dismissals import not_in
    from ocr_hook.findings.model import all_fingerprints

    added_entries = {e.fingerprint: e for e in not_in(dismissed, trusted_dismissals)}
    changes = change_set.by_path()
    out: list[Exemption] = []
    for f in findings:
        if f.suppressed == "inline":
            line = _added_marker_line(f, changes.get(f.path), texts.get(f.path))
            if line is not None:
                out.append(Exemption(f.path, f"an inline 'ocr-hook: ignore' it added at line {line}", describe(f)))
        elif f.suppressed == "dismissed" and "dismissed_in" not in f.extra:  # (the forge's: a person's resolve)
            entry = next((added_entries[n] for n in all_fingerprints(f) if n in added_entries), None)
            if entry is not None:
                out.append(Exemption(f.path, f"a dismissal it added ({entry.short_id})", describe(f)))
    return out


def _added_marker_line(f: Finding, change: FileChange | None, text: str | None) -> int | None:
    """The line carrying the marker that suppresses `f`, when the change added that line."""
    from ocr_hook.findings.suppress import marker_lines

    if change is None or text is None:
        return None
    added = {line.new_no for hunk in change.hunks for line in hunk.lines if line.kind == "+" and line.new_no}
    return next((n for n in marker_lines(f, text) if n in added), None)


# --- the baseline ------------------------------------------------------------------------------------------------


class TrustedBaseline(NamedTuple):
    honoured: tuple[BaselineEntry, ...]  # the entries that suppress
    added: frozenset[str]  # entries of the work tree's file the trusted revision lacks: never honoured
    where: str  # the file and revision, for the notes


def trusted_baseline(change_set: ChangeSet, settings: Settings, revision: str | None) -> TrustedBaseline | None:
    """The baseline as the trusted revision has it, when the run reviews a range and the baseline file is in
    the repository (a file of the user's own outside it is theirs, read as it is); None otherwise."""
    from ocr_hook.findings.suppress import baseline_entries, load_baseline

    if not settings.baseline or not applies(change_set):
        return None
    root = os.path.realpath(change_set.repo_root)
    full = os.path.realpath(settings.baseline)
    rel = os.path.relpath(full, root)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return None
    rel = rel.replace(os.sep, "/")
    work = load_baseline(settings.baseline) if os.path.lexists(settings.baseline) else ()
    where = f"{rel} at {revision[:12] if revision else '(no trusted revision)'}"
    text = None
    if revision is not None:
        from ocr_hook.changes.snapshot import GitSnapshot

        snapshot = GitSnapshot(change_set.repo_root, revision)
        try:
            data = None if snapshot.is_symlink(rel) else snapshot.read_bytes(rel)
        finally:
            snapshot.close()
        text = None if data is None else data.decode("utf-8", "replace")
    trusted = baseline_entries(text, where) if text is not None else ()
    added = frozenset(e.fingerprint for e in work) - frozenset(e.fingerprint for e in trusted)
    return TrustedBaseline(trusted, added, where)


def baseline_notes(findings: Iterable[Finding], baseline: TrustedBaseline, name: str) -> list[str]:
    """The entries the change adds to the baseline, named with the findings they would have silenced."""
    from ocr_hook.findings.model import all_fingerprints

    if not baseline.added:
        return []
    would = [f for f in findings if f.suppressed is None and any(n in baseline.added for n in all_fingerprints(f))]
    shown = "; ".join(f"{f.path} ({describe(f)})" for f in would[:_SHOWN])
    more = f"; and {len(would) - _SHOWN} more" if len(would) > _SHOWN else ""
    silenced = f": they would have silenced {shown}{more}" if would else ""
    return [f"baseline {name} has {len(baseline.added)} entr{'y' if len(baseline.added) == 1 else 'ies'} that "
            f"{baseline.where} lacks; a baseline adopts existing code, so they are not honoured{silenced}"]


# --- the verdict -------------------------------------------------------------------------------------------------


def verdict_part(exemptions: Sequence[Exemption]) -> str | None:
    """The exemptions as the verdict line names them, or None when there are none."""
    if not exemptions:
        return None
    named = [e.text() for e in exemptions[:_SHOWN]]
    if len(exemptions) > _SHOWN:
        named.append(f"and {len(exemptions) - _SHOWN} more")
    count = f"{len(exemptions)} exemption{'s' if len(exemptions) != 1 else ''}"
    if any(e.blocking for e in exemptions):
        return (f"FAILED — {count} the change makes for its own code (change_exemptions: block; allowed once on "
                "the trusted revision): " + ", ".join(named))
    return f"{count} the change makes for its own code: " + ", ".join(named)


def note(e: Exemption) -> str:
    effect = ("it fails the gate (change_exemptions: block) until it is on the trusted revision" if e.blocking
              else "allowed by change_exemptions: allow; check it with the change")
    return f"the change exempts its own code: {e.text()}; {effect}"
