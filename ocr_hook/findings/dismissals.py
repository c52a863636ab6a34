"""Dismissals: a versioned, reviewable file of findings the team judged wrong, each with its reason (DESIGN.md 9).

The pure part: parse and check the file's entries, tell active from expired, build a new entry, write the
file's text. Reading the file (from the work tree or from a commit) is the caller's; every problem is a
one-line ConfigError naming the file, like a bad `.ocr-hook.yaml`.

A new file's text is written always the same way (a fixed key order, one line per field); an existing
file, which people edit and merge, is only ever appended to (`appended_text`): its comments, line endings
and entries stay byte-for-byte. Reading is strict where YAML is lax: a key given twice in one mapping (two
`dismissed:` blocks a merge left) or a date that does not exist is an error naming its line, never half
the file silently read or a traceback.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import yaml

from ocr_hook.errors import ConfigError
from ocr_hook.findings.model import Category, Finding, Severity, all_fingerprints

if TYPE_CHECKING:
    from ocr_hook.changes.globs import GitIgnoreGlobs

DEFAULT_FILE = ".ocr-hook/dismissed.yaml"
FINGERPRINT = re.compile(r"[0-9a-f]{32}")
SHORT_ID = 8  # the text report shows this many characters of a fingerprint
# The order of an entry's keys in the file; `paths`, `by` and `expires` may be left out.
# `request`: the pull request where a person dismissed it (`ocr-hook dismiss --from-forge`).
KEYS = ("fingerprint", "path", "category", "severity", "message", "reason", "paths", "by", "on", "expires", "request")
REQUIRED = (*KEYS[:6], "on")
# How much of the trusted revision's dismissals one reviewed file is taught: the most recent first.
TEACH_MAX_ENTRIES = 12
TEACH_MAX_BYTES = 6 * 1024
MAX_FILE_BYTES = 2 * 1024 * 1024  # thousands of entries; a bigger file is a mistake or an attack, never read
# libyaml's parser when it is compiled in (as for the shipped config): a long file parses many times faster.
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """The safe loader, with every mapping's keys checked for duplicates (YAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: list[Any] = []
        for key_node, _value in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.append(key)
        return super().construct_mapping(node, deep)  # type: ignore[no-any-return]


def _timestamp(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """A YAML date, or an error at its line for one that does not exist (2024-02-30, 2027-13-01)."""
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_timestamp(loader, node)
    except ValueError as exc:
        raise yaml.constructor.ConstructorError(None, None, f"not a valid date {node.value!r} ({exc})",
                                                node.start_mark) from None


_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)
_Loader = _StrictLoader


class Dismissal(NamedTuple):
    fingerprint: str
    path: str
    category: str
    severity: str
    message: str
    reason: str
    paths: tuple[str, ...]  # gitignore-style globs: where the reason teaches
    by: str | None
    on: dt.date
    expires: dt.date | None = None
    request: str | None = None  # where it was dismissed: "GitLab merge request group/app!3"

    def expired(self, today: dt.date) -> bool:
        """True from the expiry date on: `expires: 2027-03-01` suppresses up to 2027-02-28."""
        return self.expires is not None and today >= self.expires

    @property
    def short_id(self) -> str:
        return self.fingerprint[:SHORT_ID]

    def as_dict(self) -> dict[str, Any]:
        """The entry as the file holds it (and `ocr-hook dismissed --format json` prints it, dates as text)."""
        out: dict[str, Any] = {
            "fingerprint": self.fingerprint, "path": self.path, "category": self.category,
            "severity": self.severity, "message": self.message, "reason": self.reason, "paths": list(self.paths),
        }
        if self.by:
            out["by"] = self.by
        out["on"] = self.on
        if self.expires is not None:
            out["expires"] = self.expires
        if self.request:
            out["request"] = self.request
        return out


# --- reading ----------------------------------------------------------------------------------------------


def parse_text(text: str, where: str) -> tuple[Dismissal, ...]:
    """The entries of a dismissals file's text; `where` names the file in every error."""
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}:" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"dismissals file {where}:{line} {problem}") from None
    return parse_data(data, where)


def parse_data(data: Any, where: str) -> tuple[Dismissal, ...]:
    if data is None:
        return ()
    # `checks`: overrides of one check for one change (`dismiss --check`, ocr_hook.checks.overrides reads them).
    if not isinstance(data, Mapping) or not data or not set(data) <= {"dismissed", "checks"}:
        raise ConfigError(f"dismissals file {where}: expected a mapping with one key 'dismissed' (a list of "
                          "entries, as 'ocr-hook dismiss' writes it)")
    items = data.get("dismissed")
    if items is None:
        return ()
    if not isinstance(items, list):
        raise ConfigError(f"dismissals file {where}: 'dismissed' must be a list, got {type(items).__name__}")
    return tuple(_entry(item, f"dismissals file {where}: entry {n}") for n, item in enumerate(items, 1))


def _entry(item: Any, where: str) -> Dismissal:
    if not isinstance(item, Mapping):
        raise ConfigError(f"{where}: must be a mapping, got {item!r}"[:300])
    if True in item and "on" in item:
        raise ConfigError(f"{where}: 'on' is given twice (once quoted, once not)")
    # YAML 1.1 reads an unquoted `on:` key as true: a hand-written entry means the date.
    item = {("on" if k is True else k): v for k, v in item.items()}
    unknown = [str(k) for k in item if k not in KEYS]
    if unknown:
        raise ConfigError(f"{where}: unknown key '{unknown[0]}' (known keys: {', '.join(KEYS)})")
    missing = [k for k in REQUIRED if k not in item]
    if missing:
        raise ConfigError(f"{where}: missing key '{missing[0]}'")

    def text(key: str, *, empty_ok: bool = False) -> str:
        value = item[key]
        if not isinstance(value, str) or (not empty_ok and not value.strip()):
            raise ConfigError(f"{where}: '{key}' must be non-empty text, got {value!r}"[:300])
        return value

    fingerprint = text("fingerprint")
    if not FINGERPRINT.fullmatch(fingerprint):
        raise ConfigError(f"{where}: 'fingerprint' must be 32 lowercase hex characters, got {fingerprint!r}"[:300])
    category, severity = text("category"), text("severity")
    if category not in {c.value for c in Category}:
        raise ConfigError(f"{where}: unknown category {category!r} (one of {', '.join(c.value for c in Category)})")
    if severity not in {s.value for s in Severity}:
        raise ConfigError(f"{where}: unknown severity {severity!r} (one of {', '.join(s.value for s in Severity)})")
    path = text("path")
    paths = item.get("paths", [path])
    if isinstance(paths, str) or not isinstance(paths, list) or not paths \
            or not all(isinstance(p, str) and p.strip() for p in paths):
        raise ConfigError(f"{where}: 'paths' must be a non-empty list of glob strings, got {paths!r}"[:300])
    problem = _glob_problem(tuple(paths))
    if problem is not None:
        raise ConfigError(f"{where}: 'paths': {problem}")
    by = item.get("by")
    if by is not None and not isinstance(by, str):
        raise ConfigError(f"{where}: 'by' must be text (an e-mail address), got {by!r}"[:300])
    expires = _date(item.get("expires"), where, "expires") if item.get("expires") is not None else None
    request = item.get("request")
    if request is not None and not isinstance(request, str):
        raise ConfigError(f"{where}: 'request' must be text (the pull request it was dismissed on), got {request!r}"
                          [:300])
    return Dismissal(fingerprint, path, category, severity, text("message", empty_ok=True), text("reason"),
                     tuple(paths), by or None, _date(item["on"], where, "on"), expires, request or None)


@functools.cache
def _glob_problem(paths: tuple[str, ...]) -> str | None:
    from ocr_hook.changes.globs import check_patterns

    return check_patterns(list(paths))


@functools.cache
def _globs(paths: tuple[str, ...]) -> GitIgnoreGlobs:
    """One matcher per distinct `paths` list: many entries share one, and it keeps its compiled patterns."""
    from ocr_hook.changes.globs import GitIgnoreGlobs

    return GitIgnoreGlobs(paths)


def _date(value: Any, where: str, key: str) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    raise ConfigError(f"{where}: '{key}' must be a date (YYYY-MM-DD), got {value!r}"[:300])


# --- using them -----------------------------------------------------------------------------------------


def active(entries: Iterable[Dismissal], today: dt.date) -> dict[str, Dismissal]:
    """Fingerprint → the entry that suppresses it (the latest unexpired one)."""
    out: dict[str, Dismissal] = {}
    for entry in entries:
        if not entry.expired(today):
            out[entry.fingerprint] = entry
    return out


def expired(entries: Iterable[Dismissal], today: dt.date) -> dict[str, Dismissal]:
    """Fingerprint → an expired entry, for fingerprints no unexpired entry still dismisses."""
    live = active(entries, today)
    return {e.fingerprint: e for e in entries if e.expired(today) and e.fingerprint not in live}


def not_in(entries: Iterable[Dismissal], trusted: Iterable[Dismissal]) -> list[Dismissal]:
    """The entries (by fingerprint and reason) that the trusted revision's file does not have."""
    known = {(e.fingerprint, e.reason) for e in trusted}
    return [e for e in entries if (e.fingerprint, e.reason) not in known]


def teaching(entries: Iterable[Dismissal], path: str, today: dt.date) -> list[Dismissal]:
    """The unexpired entries whose `paths` match `path`, the most recent first (later in the file wins a tie)."""
    matching = [(e.on, n, e) for n, e in enumerate(entries)
                if not e.expired(today) and _globs(e.paths).check_file(path).include]
    return [e for _on, _n, e in sorted(matching, key=lambda t: (t[0], t[1]), reverse=True)]


def teaching_text(entries: Sequence[Dismissal]) -> tuple[str, int]:
    """The guidance text for these entries (already in order), capped; also how many were left out."""
    lines = ["Findings this team dismissed before as wrong for their code, and why. Do not raise such a finding "
             "again unless the code differs materially from what the reason describes; a different problem on "
             "the same lines is still worth a comment.", ""]
    size = sum(len(line) + 1 for line in lines)
    kept = 0
    for entry in entries[:TEACH_MAX_ENTRIES]:
        line = (f"- {entry.path}, {entry.category} ({entry.severity}): \"{_one_line(entry.message)}\" "
                f"— dismissed because: {_one_line(entry.reason)}")
        if size + len(line.encode("utf-8")) + 1 > TEACH_MAX_BYTES:
            break
        lines.append(line)
        size += len(line.encode("utf-8")) + 1
        kept += 1
    left = len(entries) - kept
    if left:
        lines.append(f"[{left} older dismissal(s) left out]")
    return "\n".join(lines) + "\n", left


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- writing ----------------------------------------------------------------------------------------------


def new_entry(finding: Mapping[str, Any], reason: str, paths: Sequence[str], by: str | None, on: dt.date,
              expires: dt.date | None, request: str | None = None) -> Dismissal:
    """An entry for a finding as the JSON report (or review memory) gives it."""
    from ocr_hook.findings.one_each import kept_message

    path = str(finding["path"])
    message = kept_message(str(finding.get("message") or ""))
    return Dismissal(str(finding["fingerprint"]), path, str(finding["category"]), str(finding["severity"]),
                     message, reason.strip(), tuple(paths) or (path,), by or None, on, expires, request or None)


def file_text(entries: Iterable[Dismissal]) -> str:
    """The whole file for these entries, in their order. Deterministic: the same entries, the same bytes."""
    data = {"dismissed": [e.as_dict() for e in entries]}
    # width: one line per field, however long the message; no key sorting: the order above is the format;
    # no anchors and aliases (two entries of one day share a date object): each entry reads on its own.
    return yaml.dump(data, Dumper=_PlainDumper, sort_keys=False, allow_unicode=True, width=1_000_000,
                     default_flow_style=False)


def appended_text(existing: str, added: Sequence[Dismissal], where: str) -> str:
    """`existing` (a dismissals file's text as it is on disk) with `added` appended to its `dismissed:` list (see
    insert_items); nothing else is changed. A file the entries cannot be added to without rewriting it (a
    flow-style list) is a ConfigError: the caller writes nothing."""
    before = parse_text(existing, where)
    body = file_text(added).split("\n", 1)[1]  # the list items, without the `dismissed:` line
    text = insert_items(existing, "dismissed", body, where)
    try:
        after = parse_text(text, where)
    except ConfigError:
        after = ()
    if after != (*before, *added):
        raise ConfigError(f"dismissals file {where}: cannot add to it without rewriting it (its 'dismissed' list "
                          "must be in block style); nothing written")
    return text


def insert_items(existing: str, key: str, items: str, where: str) -> str:
    """`existing` with the block-list `items` (YAML text, at column 0) added at the end of its top-level `key`
    list, in the file's own line endings and at the list's indentation; the key is added at the end of the file
    when it has none. The file holds two lists (`dismissed:` and `checks:`, each written by its own command) in
    either order, so the items go before the next top-level key (and the comments just above it) when the list
    is not last. Nothing else is changed; a flow-style list is a ConfigError (it cannot be added to in place)."""
    eol = "\r\n" if "\r\n" in existing else "\n"
    root = yaml.compose(existing, Loader=_Loader) if existing.strip() else None
    keys = list(root.value) if isinstance(root, yaml.MappingNode) else []
    at = next((n for n, (k, _v) in enumerate(keys) if getattr(k, "value", None) == key), None)
    node = keys[at][1] if at is not None else None
    if isinstance(node, yaml.SequenceNode) and node.flow_style:
        raise ConfigError(f"dismissals file {where}: its '{key}' list is written in flow style ([...]); cannot add "
                          "to it without rewriting it: write it as a block list (one '- ' per entry) first")
    indent = node.start_mark.column if isinstance(node, yaml.SequenceNode) and node.value else 0
    body = [(" " * indent + line) if line else line for line in items.rstrip("\n").split("\n")]
    if node is None:
        body = [f"{key}:", *body]
    text = existing if not existing or existing.endswith("\n") else existing + eol
    lines = text.splitlines(keepends=True)
    cut = len(lines)
    if at is not None and at + 1 < len(keys):
        cut = keys[at + 1][0].start_mark.line
        # the comments and blank lines just above the next key belong to it
        while cut > 0 and (not lines[cut - 1].strip() or lines[cut - 1].startswith("#")):
            cut -= 1
    added = "".join(line + eol for line in body)
    return "".join(lines[:cut]) + added + "".join(lines[cut:])


class _PlainDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """libyaml's emitter when compiled in (the same text as the pure-Python one, several times faster)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


# --- the file on disk ----------------------------------------------------------------------------------


def load_file(repo_root: str, name: str) -> tuple[Dismissal, ...]:
    """The work tree's dismissals file (`name` relative to the repository root); none when it is absent."""
    text = read_file_text(repo_root, name)
    return () if text is None else parse_text(text, name)


def read_file_text(repo_root: str, name: str) -> str | None:
    """The work tree's dismissals file's text as it is (line endings kept), or None when it is absent.

    Never through a symbolic link (the file or a directory on its way: it would lead out of the work tree),
    never a FIFO or device (a review would hang), never more than MAX_FILE_BYTES: each a one-line error."""
    import os

    from ocr_hook.bounded_read import Refused, linked_component, read_regular_file

    full = os.path.join(repo_root, name)
    if not os.path.lexists(full):
        return None
    link = linked_component(repo_root, full)
    if link is not None:
        shown = os.path.relpath(link, repo_root)
        raise ConfigError(f"dismissals file {name}: not read: {shown} is a symbolic link (the file must be in "
                          "the work tree itself)")
    try:
        data = read_regular_file(full, MAX_FILE_BYTES)
        return data.decode("utf-8")
    except Refused as exc:
        raise ConfigError(f"dismissals file {name}: not read: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"dismissals file {name}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"cannot read dismissals file {name}: {exc.strerror or exc}") from None


# --- a review's findings --------------------------------------------------------------------------------


def apply(findings: Iterable[Finding], entries: Sequence[Dismissal], today: dt.date, name: str
          ) -> tuple[list[Finding], list[str]]:
    """The findings with `suppressed="dismissed"` and the reason where an unexpired entry suppresses them (each
    entry one finding, never a more severe one: one_each.match), and a note for each finding an expired entry no
    longer suppresses, or that shares a dismissed finding's fingerprint without being it. A finding suppressed
    earlier keeps that."""
    from ocr_hook.findings import one_each

    items = list(findings)
    live = one_each.by_fingerprint(e for e in entries if not e.expired(today))
    lapsed = expired(entries, today)
    chosen = one_each.match(items, live)
    out: list[Finding] = []
    notes: list[str] = []
    for i, f in enumerate(items):
        names = all_fingerprints(f)  # its own, then an earlier form's and its path's before a rename
        entry = chosen.get(i)
        other = next((live[n][0] for n in names if n in live), None)
        gone = next((lapsed[n] for n in names if n in lapsed), None)
        if entry is not None:
            f = f._replace(suppressed="dismissed", suppression_reason=entry.reason,
                           extra={**f.extra, "dismissed_by": entry.by} if entry.by else f.extra)
        elif f.suppressed is None and other is not None:
            notes.append(f"{f.path}:{f.start_line} ({f.severity.value} {f.category.value}) shares the fingerprint "
                         f"{other.short_id} of a finding dismissed in {name} but is another finding (more severe, "
                         "or another message where more findings share it): it counts")
        elif f.suppressed is None and gone is not None:
            old = gone
            notes.append(f"the dismissal of {old.short_id} ({f.path}) in {name} expired on {old.expires}: the "
                         f"finding counts again (reason given then: {_one_line(old.reason)[:120]})")
        out.append(f)
    return out, notes


class ForgeDismissal(NamedTuple):
    """A finding a person dismissed for one pull request by resolving its thread on the forge (DESIGN.md 18)."""

    fingerprint: str
    by: str  # the forge's name for that person
    at: str  # when, ISO 8601 as the forge gives it ("" when it does not say)
    reason: str  # their last reply in the thread ("" when they wrote none)
    where: str  # "GitLab merge request group/app!3"
    severity: str = ""  # the dismissed finding's, as its comment gave it ("" when it does not say)
    said: str = ""  # its comment's text after the heading (message, then any fix)


NO_REPLY = "resolved without a reply"


def _words(text: str) -> list[str]:
    """A message's words, lower-cased, whatever a forge's rendering added around them (escapes, zero-width
    spaces): enough to tell the finding a comment was about from another one of the same fingerprint."""
    return re.findall(r"[^\W_]+", text.replace("\u200b", "").lower())


def _covers(d: ForgeDismissal, f: Finding, alone: bool) -> bool:
    """Whether a person's dismissal of a thread is about `f`: never a more severe finding; the one whose message
    the thread's comment carries; and, when `f` is the only finding of that fingerprint, it whatever the model's
    wording this time (two findings of one fingerprint, quoting the same line at two places, are two findings)."""
    if d.severity in Severity._value2member_map_ and f.severity.rank > Severity(d.severity).rank:
        return False
    if alone:
        return True
    words = _words(f.message)
    return bool(words) and _words(d.said)[:len(words)] == words


def apply_forge(findings: Iterable[Finding], found: Mapping[str, ForgeDismissal]) -> list[Finding]:
    """The findings a person dismissed on the forge, still raised with the same fingerprint (or one of its
    aliases: the file's path before a rename), as `dismissed`: their reply as the reason, who, when and where in
    `extra` (the report's `dismissal`). A finding suppressed otherwise (baseline, inline, the dismissals file)
    keeps that; a more severe finding, or another one of the same fingerprint, is not the one dismissed."""
    items = list(findings)
    named: dict[str, list[int]] = {}
    for i, f in enumerate(items):
        if f.suppressed is None:
            for n in dict.fromkeys(all_fingerprints(f)):
                named.setdefault(n, []).append(i)
    chosen: dict[int, ForgeDismissal] = {}
    for fp, d in found.items():
        same = named.get(fp, [])
        for i in same:
            if _covers(d, items[i], len(same) == 1):
                chosen.setdefault(i, d)
    out: list[Finding] = []
    for i, f in enumerate(items):
        d = chosen.get(i)
        if d is not None:
            f = f._replace(suppressed="dismissed", suppression_reason=d.reason or NO_REPLY,
                           extra={**f.extra, "dismissed_by": d.by, "dismissed_at": d.at, "dismissed_in": d.where})
        out.append(f)
    return out


def dismissal_words(f: Finding) -> str:
    """A dismissed finding's reason as the reports give it: for one dismissed on the forge, who, where and when
    before their words ("alice on GitLab merge request group/app!3 at 2026-12-05T10:00:00Z: not reachable")."""
    reason = f.suppression_reason or ""
    where = f.extra.get("dismissed_in")
    if not where:
        return reason
    at = f.extra.get("dismissed_at")
    return f"{f.extra.get('dismissed_by', '')} on {where}{' at ' + at if at else ''}: {reason}"


def added_note(entries: Sequence[Dismissal], trusted: Sequence[Dismissal], name: str, label: str) -> str | None:
    """The run note naming the dismissals the trusted revision lacks (added by the change under review, or not
    committed yet): they suppress findings in this run, so the people reviewing the change must see them."""
    added = not_in(entries, trusted)
    if not added:
        return None
    shown = "; ".join(f"{e.short_id} ({e.path}: {_one_line(e.reason)[:80]})" for e in added[:5])
    more = f"; and {len(added) - 5} more" if len(added) > 5 else ""
    return (f"{name} has {len(added)} dismissal(s) that the trusted revision {label} lacks: {shown}{more}. They "
            "suppress findings in this review; check them with the change")
