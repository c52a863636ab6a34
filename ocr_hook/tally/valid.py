"""Which history entries can be counted: the ones in the form ocr_hook.tally.entry writes. Pure.

The history lives in the cache directory, where an older version, a damaged disk or anyone who can write there
may have left an entry of another shape; one such entry is skipped (and counted, for a note), never the end
of `ocr-hook outcomes`. Only the fields the counting reads are checked: an entry may carry more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

_TEXTS = ("source", "change", "request", "model")
_ITEM_TEXTS = ("path", "severity", "category", "effort", "dismissed", "by")


def well_formed(entries: Iterable[Any]) -> tuple[list[Mapping[str, Any]], int]:
    """The entries that can be counted, and how many were skipped."""
    kept: list[Mapping[str, Any]] = []
    skipped = 0
    for entry in entries:
        if _counts(entry):
            kept.append(entry)
        else:
            skipped += 1
    return kept, skipped


def _counts(entry: Any) -> bool:
    if not isinstance(entry, Mapping) or not _number(entry.get("at", 0)):
        return False
    if any(not isinstance(entry.get(key, ""), str | int) or isinstance(entry.get(key), bool) for key in _TEXTS):
        return False
    for key in ("findings", "resolved"):
        items = entry.get(key) or []
        if not isinstance(items, list) or not all(_item(i) for i in items):
            return False
    complete = entry.get("complete") or []
    if not isinstance(complete, list) or not all(isinstance(p, str) for p in complete):
        return False
    feedback = entry.get("feedback") or {}
    return isinstance(feedback, Mapping) and all(isinstance(fp, str) and isinstance(counts, Mapping)
                                                 for fp, counts in feedback.items())


def _item(item: Any) -> bool:
    return (isinstance(item, Mapping) and isinstance(item.get("fp"), str)
            and all(isinstance(item.get(key, ""), str) for key in _ITEM_TEXTS))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
