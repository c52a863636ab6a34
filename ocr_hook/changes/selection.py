"""Which changed files get reviewed, in what order, and a reason for every one that does not.

Policy lists (secrets, lock files, vendored and generated code) are data in config/selection.yaml.
A skip is `incomplete` when it means part of the change went unreviewed for a limit (size, file
count): the gate must then not report a clean pass. Policy skips (deleted, binary, secrets, ...)
leave the review complete. Annotations are evaluated (no `from __future__ import annotations`): a NamedTuple's
string annotations are each compiled as its class is made, on every cached run (issue 62.9).
"""

import functools
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from ocr_hook import config_files
from ocr_hook.changes import deadline
from ocr_hook.changes.globs import GitIgnoreGlobs, check_patterns
from ocr_hook.changes.model import ChangeSet, FileChange, FileStatus
from ocr_hook.changes.snapshot_api import Snapshot
from ocr_hook.errors import ConfigError
from ocr_hook.settings import Settings

_USER_EXCLUDE = "exclude"


class Selected(NamedTuple):
    change: FileChange
    action: Literal["review", "skip"]
    reason: str  # empty for reviewed files
    incomplete: bool  # a skip that leaves the review incomplete (limits), not a policy skip


class SensitiveGlobs(NamedTuple):
    """The sensitive-file globs: those that match any file, and those that match by a name's stem, which
    never match source code (config/selection.yaml: sensitive_by_stem)."""

    globs: GitIgnoreGlobs  # the built-in list and the user's `sensitive`
    by_stem: GitIgnoreGlobs
    source_suffixes: frozenset[str]

    def match(self, path: str) -> str | None:
        """The glob `path` matches, or None."""
        result = self.globs.check_file(path)
        if result.include and result.index is not None:
            return self.globs.patterns[result.index]
        result = self.by_stem.check_file(path)
        if result.include and result.index is not None:
            dot = path.rfind(".")
            if dot <= path.rfind("/") or path[dot:].lower() not in self.source_suffixes:
                return self.by_stem.patterns[result.index]
        return None


class Rules(NamedTuple):
    sensitive: SensitiveGlobs
    sensitive_patterns: tuple[str, ...]
    skip: GitIgnoreGlobs
    skip_patterns: tuple[str, ...]
    skip_labels: tuple[str, ...]  # per skip pattern: its category, or "exclude" for the user's own
    include: GitIgnoreGlobs | None
    markers: tuple[bytes, ...]
    marker_lines: int
    risky: tuple[str, ...]
    risky_weight: float
    low: tuple[str, ...]
    low_weight: float


def load_rules(settings: Settings) -> Rules:
    data: dict[str, Any] = config_files.read_yaml("selection.yaml")
    bad = [p for p in settings.sensitive if p.lstrip().startswith("!")]
    if bad:
        raise ConfigError(f"setting 'sensitive' cannot un-protect files: remove the '!' pattern {bad[0]!r}")
    for name in ("include", "exclude"):
        _check_setting(name, getattr(settings, name))
    sensitive = _sensitive_patterns(tuple(settings.sensitive))
    skip_patterns: list[str] = []
    labels: list[str] = []
    for label, patterns in data["default_skip"].items():
        skip_patterns += patterns
        labels += [label] * len(patterns)
    skip_patterns += settings.exclude
    labels += [_USER_EXCLUDE] * len(settings.exclude)
    priority = data["priority"]
    return Rules(
        sensitive=_sensitive_spec(tuple(settings.sensitive)),
        sensitive_patterns=sensitive,
        skip=GitIgnoreGlobs(skip_patterns),
        skip_patterns=tuple(skip_patterns),
        skip_labels=tuple(labels),
        include=GitIgnoreGlobs(settings.include) if settings.include else None,
        markers=tuple(m.encode() for m in data["generated_markers"]),
        marker_lines=int(data["marker_lines"]),
        risky=tuple(priority["risky"]),
        risky_weight=float(priority["risky_weight"]),
        low=tuple(priority["low"]),
        low_weight=float(priority["low_weight"]),
    )


def sensitive_pattern(path: str, rules: Rules) -> str | None:
    """The sensitive glob `path` matches, or None. Tools must refuse to show such a file too."""
    return rules.sensitive.match(path)


def is_sensitive(path: str, settings: Settings) -> bool:
    """True for files whose content must never leave the machine (built-in list plus `sensitive`)."""
    return _sensitive_spec(tuple(settings.sensitive)).match(path) is not None


def _sensitive_patterns(extra: tuple[str, ...]) -> tuple[str, ...]:
    data = config_files.read_yaml("selection.yaml")
    return (*data["sensitive"], *(p for p in extra if not p.lstrip().startswith("!")))


@functools.cache
def _sensitive_spec(extra: tuple[str, ...]) -> SensitiveGlobs:
    """Built once per run: file selection and the tools' is_hidden check share it (and what it compiled)."""
    _check_setting("sensitive", [p for p in extra if not p.lstrip().startswith("!")])
    data = config_files.read_yaml("selection.yaml")
    return SensitiveGlobs(GitIgnoreGlobs(_sensitive_patterns(extra)), GitIgnoreGlobs(data["sensitive_by_stem"]),
                          frozenset(data["source_suffixes"]))


def _check_setting(name: str, patterns: Sequence[str]) -> None:
    problem = check_patterns(patterns)
    if problem is not None:
        raise ConfigError(f"setting '{name}': {problem}")


def select_files(change_set: ChangeSet, snapshot: Snapshot, settings: Settings) -> list[Selected]:
    """Every file of the change set once: reviews first, most valuable first; then skips by path."""
    rules = load_rules(settings)
    reviews: list[Selected] = []
    skips: list[Selected] = []
    for change in change_set.files:
        late = change.unread or deadline.passed()  # no time left to read it (issue 55.8)
        item = Selected(change, "skip", f"not reviewed: {late}", True) if late else \
            classify(change, snapshot, settings, rules)
        (reviews if item.action == "review" else skips).append(item)
    reviews.sort(key=lambda s: (-priority(s.change, rules), s.change.path))
    over = [
        Selected(s.change, "skip", f"over the max_files limit ({settings.max_files}); lower priority than the "
                                   "reviewed files", True)
        for s in reviews[settings.max_files:]
    ]
    skips.sort(key=lambda s: s.change.path)
    return reviews[: settings.max_files] + over + skips


def classify(change: FileChange, snapshot: Snapshot, settings: Settings, rules: Rules) -> Selected:
    """Review or skip one file, with the reason."""
    reason = _policy_reason(change, rules)
    if reason is not None:
        return Selected(change, "skip", reason, False)
    if change.oversize:  # listed by size alone (collect_changes): reading it is what the cap is for
        reason = f"too large: {change.oversize} bytes (max_file_bytes {settings.max_file_bytes})"
        return Selected(change, "skip", reason, True)
    if change.path == settings.dismissals_file:
        # People review it (its new entries are named in the run notes); the model has nothing to add.
        return Selected(change, "skip", "ocr-hook's dismissals file: new entries are named in the notes", False)
    content = snapshot.read_bytes(change.path)
    if content is None:
        return Selected(change, "skip", "not a regular file in the reviewed snapshot", False)
    if _is_lfs_pointer(content):
        return Selected(change, "skip", "Git LFS pointer: the file's content is stored outside the repository", False)
    forced = rules.skip.check_file(change.path).include is False  # re-included by the user's "!pattern"
    if not forced:
        marker = generated_marker(content, rules)
        if marker is not None:
            return Selected(change, "skip", f"generated ({marker!r} in the first lines)", False)
    limit = _over_limit(change, content, settings)
    if limit is not None:
        return Selected(change, "skip", limit, True)
    return Selected(change, "review", "", False)


def priority(change: FileChange, rules: Rules) -> float:
    lowered = change.path.lower()
    weight = 1.0
    if any(word in lowered for word in rules.risky):
        weight *= rules.risky_weight
    if any(word in lowered for word in rules.low):
        weight *= rules.low_weight
    return change.changed_lines * weight


def _policy_reason(change: FileChange, rules: Rules) -> str | None:
    for path in _paths_of(change):
        glob = sensitive_pattern(path, rules)
        if glob is not None:
            return f"sensitive ({glob!r}): never sent to the model"
    if change.status is FileStatus.DELETED:
        return "deleted"
    if change.is_submodule:
        return "submodule"
    if change.is_symlink:
        return "symlink"
    if change.is_binary:
        return "binary"
    skipped = rules.skip.check_file(change.path)
    if skipped.include and skipped.index is not None:
        label, glob = rules.skip_labels[skipped.index], rules.skip_patterns[skipped.index]
        if label == _USER_EXCLUDE:
            return f"excluded by your exclude pattern {glob!r}"
        return f"{label} ({glob!r}); re-include with an exclude line '!{glob}'"
    if rules.include is not None and not rules.include.check_file(change.path).include:
        return "not matched by your include patterns"
    if not change.hunks and not change.oversize:
        return "empty file" if change.status is FileStatus.ADDED else "no content change (rename or mode only)"
    return None


def skipped_by_name(path: str, rules: Rules) -> bool:
    """Whether _policy_reason skips a file at `path` whatever its content and its diff hold: the files collect
    lists without diffing them (issue 62.5)."""
    if sensitive_pattern(path, rules) is not None:
        return True
    skipped = rules.skip.check_file(path)
    if skipped.include and skipped.index is not None:
        return True
    return rules.include is not None and not rules.include.check_file(path).include


def _paths_of(change: FileChange) -> Sequence[str]:
    return (change.path,) if change.old_path is None else (change.path, change.old_path)


# A Git LFS pointer (git-lfs's spec, v1): a few "key value" lines starting with one of these, under 1024 bytes.
# Pointers written before git-lfs 1.0 name the spec by its earlier address, which git-lfs still reads as v1.
_LFS_POINTERS = (b"version https://git-lfs.github.com/spec/", b"version https://hawser.github.com/spec/v1")


def _is_lfs_pointer(content: bytes) -> bool:
    """What `filter=lfs` checks in: the pointer, never the file; reviewing it as code would be noise."""
    return len(content) < 1024 and content.startswith(_LFS_POINTERS) and b"\noid sha256:" in content


def generated_marker(content: bytes, rules: Rules) -> str | None:
    head = b"\n".join(content.split(b"\n", rules.marker_lines)[: rules.marker_lines])
    for marker in rules.markers:
        if marker in head:
            return marker.decode()
    return None


def _over_limit(change: FileChange, content: bytes, settings: Settings) -> str | None:
    if change.changed_lines > settings.max_diff_lines:
        return f"too large: {change.changed_lines} changed lines (max_diff_lines {settings.max_diff_lines})"
    if len(content) > settings.max_file_bytes:
        return f"too large: {len(content)} bytes (max_file_bytes {settings.max_file_bytes})"
    lines = content.count(b"\n") + (0 if content.endswith(b"\n") or not content else 1)
    if lines > settings.max_file_lines:
        return f"too large: {lines} lines (max_file_lines {settings.max_file_lines})"
    return None
