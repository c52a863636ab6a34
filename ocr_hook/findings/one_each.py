"""Which findings a list of recorded entries (a dismissals file's, a baseline's) suppresses: each entry one finding.

A fingerprint is path, category and quoted code, so the same line quoted at two call sites gives two findings of
one fingerprint (issue 58.16). An entry records the finding it was written for (its severity and the start of its
message), and suppresses one finding, never a more severe one than that. Among several findings of its
fingerprint it takes the one its message names; and when there are no more such findings than entries (the usual
case: one entry, one finding) it takes them whatever the model's wording this time, as model wording varies run to
run. A finding left over (another message, or more severe, where more findings share the fingerprint than were
recorded) is reported and counts. The forge's dismissals follow the same rule (dismissals.apply_forge).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

from ocr_hook.findings.model import Finding, Severity, all_fingerprints

MESSAGE_CHARS = 200  # how much of a finding's message an entry keeps (the dismissals file's `message`)


class Entry(Protocol):
    @property
    def fingerprint(self) -> str: ...

    @property
    def severity(self) -> str: ...  # "" when the entry does not say (a baseline written before: any severity)

    @property
    def message(self) -> str: ...  # "" when it does not say


E = TypeVar("E", bound=Entry)


def kept_message(message: str) -> str:
    """A finding's message as an entry keeps it: one line, the first MESSAGE_CHARS characters."""
    return " ".join(message.split())[:MESSAGE_CHARS]


def words(text: str) -> list[str]:
    """A message's words, lower-cased, whatever escapes or zero-width spaces a rendering added around them."""
    return re.findall(r"[^\W_]+", text.replace("\u200b", "").lower())


def _not_more_severe(entry: Entry, f: Finding) -> bool:
    return entry.severity not in Severity._value2member_map_ or f.severity.rank <= Severity(entry.severity).rank


def _rank(entry: Entry) -> int:
    return Severity(entry.severity).rank if entry.severity in Severity._value2member_map_ else 99


def _names(entry: Entry, f: Finding) -> bool:
    said = words(entry.message)
    return bool(said) and said == words(kept_message(f.message))


def match(findings: Sequence[Finding], entries: Mapping[str, Sequence[E]]) -> dict[int, E]:
    """Index of each unsuppressed finding an entry suppresses → that entry. `entries`: fingerprint → its entries
    (a finding is found by its own fingerprint or an alias: its path before a rename, an earlier form)."""
    named: dict[str, list[int]] = {}
    for i, f in enumerate(findings):
        if f.suppressed is None:
            for n in dict.fromkeys(all_fingerprints(f)):
                if n in entries:
                    named.setdefault(n, []).append(i)
    chosen: dict[int, E] = {}
    for fp, candidates in named.items():
        left = list(entries[fp])
        open_ = [i for i in candidates if i not in chosen]
        for entry in list(left):  # first the findings an entry names by their message
            i = next((i for i in open_ if _names(entry, findings[i]) and _not_more_severe(entry, findings[i])), None)
            if i is not None:
                chosen[i] = entry
                open_.remove(i)
                left.remove(entry)
        if len(open_) <= len(left):  # no more findings than entries: whatever their wording, never more severe
            left.sort(key=_rank)  # the least severe finding first, each taking the least severe entry it fits
            for i in sorted(open_, key=lambda i: findings[i].severity.rank):
                entry = next((e for e in left if _not_more_severe(e, findings[i])), None)
                if entry is not None:
                    chosen[i] = entry
                    left.remove(entry)
    return chosen


def by_fingerprint(entries: Iterable[E]) -> dict[str, list[E]]:
    """Fingerprint → its entries, in their order."""
    out: dict[str, list[E]] = {}
    for entry in entries:
        out.setdefault(entry.fingerprint, []).append(entry)
    return out
