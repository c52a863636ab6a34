"""Which guidance applies to each changed file, read from the trusted revision, and the run notes.

The trusted revision is the side of the change that is not under review: staged → HEAD; --base →
the merge base; --from A → A; --commit C → C's first parent; --push → the remote side. That is the
change set's old side (`ChangeSet.base`), except before the first commit (the empty tree), where
there is none. Rules in the settings follow the configuration file as it is read today.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ocr_hook.changes.globs import GitIgnoreGlobs
from ocr_hook.changes.model import ChangeSet, FileStatus
from ocr_hook.changes.selection import is_sensitive
from ocr_hook.errors import ConfigError
from ocr_hook.guidance.discovery import (
    FILE_CAP_BYTES,
    PER_REVIEWED_FILE_CAP_BYTES,
    GuidanceReader,
    GuidanceText,
    cut_to,
)
from ocr_hook.guidance.rules import GuidanceRule, rules_of
from ocr_hook.outcome import FileNote
from ocr_hook.settings import REPO_CONFIG_NAME, Settings

if TYPE_CHECKING:
    from ocr_hook.findings.dismissals import Dismissal

MIN_PART_BYTES = 1024  # less room than this for a part that is longer: left out rather than cut
_KIND_WORDS = {"review": "review guidance", "context": "project context", "rule": "path rule",
               "dismissed": "findings dismissed before"}


class GuidancePlan:
    """The run's guidance per changed file. `resolve_guidance` fills it in as it reads, so it is a plain slotted
    class: a dataclass's methods would be compiled from source when this module loads, on every cached run."""

    __slots__ = ("revision", "revision_label", "per_path", "ignore",  # noqa: RUF023  (the constructor's order)
                 "notes", "file_notes", "trusted_dismissals", "dismissals", "dismissals_teach")

    def __init__(self, revision: str | None, revision_label: str, per_path: dict[str, tuple[GuidanceText, ...]],
                 ignore: dict[str, dict[str, str]], notes: list[str] | None = None,
                 file_notes: list[FileNote] | None = None, trusted_dismissals: tuple[Dismissal, ...] = (),
                 dismissals: dict[str, tuple[Dismissal, ...]] | None = None, dismissals_teach: bool = True) -> None:
        self.revision = revision  # the trusted revision's commit; None before the first commit
        self.revision_label = revision_label  # e.g. "abc123def456 (HEAD)"
        self.per_path = per_path  # after the per-reviewed-file cap
        self.ignore = ignore  # path → category → the rule that silences it
        self.notes = [] if notes is None else notes
        self.file_notes = [] if file_notes is None else file_notes  # their text is in `notes` too
        # The dismissals file as the trusted revision has it (teaching reads it; the review names what the work
        # tree's file adds to it), and per path the entries taught to that file's review.
        self.trusted_dismissals = trusted_dismissals
        self.dismissals = {} if dismissals is None else dismissals
        self.dismissals_teach = dismissals_teach  # False: the file's path is sensitive

    def sections(self, path: str) -> tuple[str, ...]:
        return tuple(section_text(item) for item in self.per_path.get(path, ()))

    def prompt_guidance(self, paths: Sequence[str]) -> dict[str, tuple[tuple[str, ...], int]]:
        """Per path: its guidance sections and how many of the first ones every path of `paths` shares
        (that part goes where prompt caching reuses it across files)."""
        lists = {p: self.sections(p) for p in paths}
        shared = _common_prefix(list(lists.values()))
        return {p: (sections, shared) for p, sections in lists.items() if sections}


def _common_prefix(lists: list[tuple[str, ...]]) -> int:
    if not lists:
        return 0
    n = 0
    for items in zip(*lists, strict=False):
        if any(x != items[0] for x in items):
            break
        n += 1
    return n


def section_text(item: GuidanceText) -> str:
    """One guidance part as the model sees it. No commit id in it: the text must stay the same (for the
    result cache and the prompt cache) as long as the guidance itself does not change."""
    title, _, file = item.source.partition(" file ")
    if item.kind == "dismissed":
        title, file = "Dismissed findings", item.source
    if item.kind == "rule" and not file:
        origin = "from the ocr-hook settings"
    else:
        origin = f"{file or item.source}, as committed before the change under review"
    body = item.text if item.text.endswith("\n") else item.text + "\n"
    if item.cut:
        body += f"[the rest of this guidance ({item.size - len(item.text.encode('utf-8')):,} bytes) was cut]\n"
    return f"## {title}: {_KIND_WORDS[item.kind]} ({origin})\n\n{body}"


def describe(item: GuidanceText) -> dict[str, object]:
    """One guidance part of a file, as `preview` and `rules` list it."""
    source, _, file = item.source.partition(" file ")
    return {
        "source": source,
        "kind": item.kind,
        "file": file or (None if item.kind == "rule" else item.source),
        "revision": item.revision,  # None: inline text of the settings file as read today
        "bytes": len(item.text.encode("utf-8")),
        "original_bytes": item.size,
        "cut": item.cut,
    }


def trusted_revision(change_set: ChangeSet) -> str | None:
    from ocr_hook.changes import git

    if change_set.scan:
        return change_set.guidance_rev
    if git.is_empty_tree(change_set.base):
        return None
    return change_set.base


def resolve_guidance(change_set: ChangeSet, settings: Settings, paths: Iterable[str]) -> GuidancePlan:
    """Guidance for `paths` (changed files) from the trusted revision. Raises ConfigError when a rule's
    instructions_file is missing or refused there."""
    rules = rules_of(settings)
    revision = trusted_revision(change_set)
    side = "HEAD" if change_set.target is None else "the side before the change"
    if change_set.scan and change_set.target is not None:
        side = "the scanned revision"
    label = f"{revision[:12]} ({side})" if revision else "(none: no commit yet)"
    snapshot = None
    if revision is not None:
        from ocr_hook.changes.snapshot import GitSnapshot

        snapshot = GitSnapshot(change_set.repo_root, revision)
    try:
        reader = GuidanceReader(snapshot, revision, settings)
        rule_items = _rule_items(rules, reader, revision, label)
        plan = GuidancePlan(revision, label, {}, {})
        plan.trusted_dismissals = _trusted_dismissals(reader, settings.dismissals_file, label)
        if plan.trusted_dismissals and is_sensitive(settings.dismissals_file, settings):
            # The same refusal as for guidance files: reasons would be sent to the model. Suppression still works.
            plan.dismissals_teach = False
            reader.notes.append(f"dismissals file {settings.dismissals_file}: its path is sensitive, so its reasons "
                                "are not sent to the model (its entries still suppress)")
        today = _today()
        globs = [GitIgnoreGlobs(rule.paths) for rule in rules]
        cut_counts: dict[str, int] = {}
        for path in dict.fromkeys(paths):
            items = reader.files_for(path, settings.review_files, settings.context_files)
            for rule, spec, item in zip(rules, globs, rule_items, strict=True):
                if spec.check_file(path).include:
                    if item is not None:
                        items.append(item)
                    for category in rule.ignore_categories:
                        plan.ignore.setdefault(path, {})[category] = rule.label
            taught = _dismissed_item(plan, path, settings.dismissals_file, revision, today)
            if taught is not None:
                items.append(taught)
            capped = _cap(items)
            kept = {item.source: item.text for item in capped}
            for item in items:
                if kept.get(item.source) != item.text:  # cut, or left out altogether
                    cut_counts[item.source] = cut_counts.get(item.source, 0) + 1
            plan.per_path[path] = tuple(capped)
        plan.notes = list(dict.fromkeys(reader.notes))
        for source, count in cut_counts.items():
            plan.notes.append(f"guidance {source}: cut or left out for {count} file(s) to stay within 48 KiB of "
                              "guidance per reviewed file")
        plan.file_notes = edit_notes(change_set, settings, label, revision)
        plan.notes += [note.text for note in plan.file_notes]
        return plan
    finally:
        if snapshot is not None:
            snapshot.close()


def _today() -> dt.date:
    return dt.date.today()


def _trusted_dismissals(reader: GuidanceReader, name: str, label: str) -> tuple[Dismissal, ...]:
    """The dismissals file at the trusted revision. A bad one teaches nothing, with a note: the change under
    review may be the fix, and the work tree's file (which suppresses) is checked on its own."""
    if reader.snapshot is None or not reader.exists(name):
        return ()
    from ocr_hook.findings.dismissals import parse_text

    if reader.snapshot.is_symlink(name):
        reader.notes.append(f"dismissals file {name} at {label} not read: it is a symbolic link")
        return ()

    data = reader.snapshot.read_bytes(name)
    try:
        return parse_text((data or b"").decode("utf-8"), f"{name} at {label}")
    except UnicodeDecodeError:
        reader.notes.append(f"dismissals file {name} at {label} is not UTF-8 text: its reasons were not used")
    except ConfigError as exc:
        reader.notes.append(f"{exc}: its reasons were not used")
    return ()


def _dismissed_item(plan: GuidancePlan, path: str, name: str, revision: str | None,
                    today: dt.date) -> GuidanceText | None:
    """The reasons of the trusted revision's dismissals that apply to `path`, as one guidance part."""
    if not plan.trusted_dismissals or not plan.dismissals_teach:
        return None
    from ocr_hook.findings.dismissals import teaching, teaching_text

    entries = teaching(plan.trusted_dismissals, path, today)
    if not entries:
        return None
    plan.dismissals[path] = tuple(entries)
    text, _left = teaching_text(entries)
    return GuidanceText(name, "dismissed", revision, text, len(text.encode("utf-8")))


def _rule_items(rules: Sequence[GuidanceRule], reader: GuidanceReader, revision: str | None,
                label: str) -> list[GuidanceText | None]:
    items: list[GuidanceText | None] = []
    for rule in rules:
        if rule.instructions is not None:
            text = cut_to(rule.instructions, FILE_CAP_BYTES)
            if text != rule.instructions:
                reader.notes.append(f"{rule.label}: instructions cut to their first {len(text.encode('utf-8')):,} "
                                    "bytes (16 KiB per guidance part)")
            items.append(GuidanceText(rule.label, "rule", None, text, len(rule.instructions.encode("utf-8"))))
            continue
        if rule.instructions_file is None:  # a rule that only sets its paths' effort
            items.append(None)
            continue
        file = rule.instructions_file
        where = f"{rule.source}: setting 'rules' item {rule.number}" if rule.source else \
            f"setting 'rules' item {rule.number}"
        if revision is None:
            reader.notes.append(f"{rule.label}: instructions_file {file} not read: there is no trusted revision "
                                "before the first commit")
            items.append(None)
            continue
        if not reader.exists(file):
            raise ConfigError(f"{where}: instructions_file {file!r} does not exist at the trusted revision {label} "
                              "(guidance is read from the side of the change not under review: commit it first)")
        item = reader.read(file, "rule")
        if item is None:
            why = reader.refused.get(file, "it is empty")
            raise ConfigError(f"{where}: instructions_file {file!r} cannot be used: {why}")
        items.append(GuidanceText(f"{rule.label} file {file}", "rule", item.revision, item.text, item.size))
    return items


def _cap(items: list[GuidanceText]) -> list[GuidanceText]:
    """At most PER_REVIEWED_FILE_CAP_BYTES in all; review guidance and rules keep their room first,
    project context files get what is left. Order is kept; what does not fit is cut or left out."""
    left = PER_REVIEWED_FILE_CAP_BYTES
    allowed: dict[int, int] = {}
    for wanted in (lambda k: k != "context", lambda k: k == "context"):
        for i, item in enumerate(items):
            if wanted(item.kind):
                size = len(item.text.encode("utf-8"))
                allowed[i] = min(size, left)
                left -= allowed[i]
    out = []
    for i, item in enumerate(items):
        if allowed[i] < min(MIN_PART_BYTES, len(item.text.encode("utf-8"))):
            continue  # a few hundred bytes of a long file would be a fragment, not guidance
        text = cut_to(item.text, allowed[i])
        if text.strip():
            out.append(GuidanceText(item.source, item.kind, item.revision, text, item.size))
    return out


def edit_notes(change_set: ChangeSet, settings: Settings, label: str, revision: str | None) -> list[FileNote]:
    """Run notes for a change that edits guidance or the reviewer's own settings, one per file named."""
    if change_set.scan:  # a scan changes nothing: its files are listed as added, not edited
        return []
    names = set(settings.review_files) | set(settings.context_files)
    rule_files = {r.instructions_file for r in rules_of(settings) if r.instructions_file}
    notes: list[FileNote] = []
    for change in change_set.files:
        for path in dict.fromkeys(p for p in (change.path, change.old_path) if p):
            if path == REPO_CONFIG_NAME and change_set.target is not None:  # a range: the trusted side's settings
                used = f"its version at the trusted revision {label}" if revision else "no repository settings"
                notes.append(FileNote(path, f"this change edits {REPO_CONFIG_NAME}, the reviewer's own settings: "
                                            f"the review used {used}, not the edited one; the edits apply once "
                                            "merged: review that file with care"))
            elif path == REPO_CONFIG_NAME:
                notes.append(FileNote(path, f"this change modifies {REPO_CONFIG_NAME}, the reviewer's own settings "
                                            "(rules included): the gate's settings moved; review that file with care"))
            elif path.rsplit("/", 1)[-1] in names or path in rule_files:
                if not revision:
                    used = "no guidance files (there is no trusted revision before the first commit)"
                elif path == change.path and change.status is FileStatus.ADDED:
                    used = f"no version of it: it is new, and guidance comes from the trusted revision {label}"
                else:
                    used = f"its version at the trusted revision {label}"
                notes.append(FileNote(path, f"this change edits guidance file {path}: the review used {used}, "
                                            "not the edited one"))
    return list(dict.fromkeys(notes))
