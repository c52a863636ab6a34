"""The review history (DESIGN.md 18, outcomes): one small document per review that raised, fixed or
dismissed anything, under `<cache_dir>/history/`, for `ocr-hook outcomes`.

Review memory keeps only the latest state of each line of work; what share of findings was acted on needs
the sequence: raised here, fixed there, dismissed by whom. Each entry is an ocr_hook.store.files document
(atomic, 0600, links refused, anything corrupt a miss) holding the repository it belongs to; the store is
pruned to the newest MAX_ENTRIES and nothing older than MAX_AGE_DAYS. A write failure is a run note, never a
failed review. Entries hold fingerprints, paths, severities, categories, the model and who dismissed what:
never code or messages, so the history holds nothing a secret mask would have to find.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from typing import Any

from ocr_hook.digest import sha256_hex
from ocr_hook.store.files import JsonFileStore

FORMAT_VERSION = 1
HISTORY_DIR = "history"
MAX_ENTRY_BYTES = 4 * 1024 * 1024
MAX_ENTRIES = 20_000
MAX_AGE_DAYS = 400
_PRUNE_EVERY = 50  # prune on about one write in 50: a walk of the store is not free at commit time


def _store(cache_dir: str | os.PathLike[str]) -> JsonFileStore:
    return JsonFileStore(os.path.join(os.fspath(cache_dir), HISTORY_DIR), format_version=FORMAT_VERSION,
                         max_entry_bytes=MAX_ENTRY_BYTES, what="the review history", base=cache_dir)


def record(cache_dir: str | os.PathLike[str], repository: str, entry: Mapping[str, Any]) -> str | None:
    """Store one review's entry, unless the last entry of the same change (line of work, pull request) says the
    same: a hook run again on an unchanged index, or a CI job re-run, is no new event. The error line when it
    could not be written, else None."""
    import json

    store = _store(cache_dir)
    said = {k: v for k, v in entry.items() if k != "at"}
    content = sha256_hex(json.dumps(said, sort_keys=True, ensure_ascii=True).encode("ascii"))
    pointer = sha256_hex(f"last\0{repository}\0{entry.get('change', '')}\0{entry.get('request', '')}"
                         .encode("utf-8", "surrogateescape"))
    last = store.read(pointer)
    if last is not None and last.get("content") == content:
        return None
    key = sha256_hex(f"{repository}\0{time.time_ns()}\0{os.urandom(8).hex()}".encode("utf-8", "surrogateescape"))
    if not store.write(key, {"repository": repository, **entry}) or not store.write(pointer, {"content": content}):
        return store.last_error
    if int.from_bytes(os.urandom(2), "big") % _PRUNE_EVERY == 0:  # (secrets would load hashlib: OpenSSL)
        store.prune(MAX_ENTRIES, max_age_s=MAX_AGE_DAYS * 86_400.0)
    return None


def entries(cache_dir: str | os.PathLike[str], repository: str) -> Iterator[dict[str, Any]]:
    """Every readable entry of `repository`, in no particular order."""
    store = _store(cache_dir)
    for key in store.keys():
        document = store.read(key)
        if document is not None and document.get("repository") == repository:
            yield document
