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
    """Store one review's entry of the repository whose git directory is `repository`, under repository_key,
    unless the last entry of the same change (line of work, pull request) says the same: a hook run again on an
    unchanged index, or a CI job re-run, is no new event. The error line when it could not be written, else
    None."""
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
    named = _remembered_key(store, repository)
    if not store.write(key, {"repository": named, **entry}) or not store.write(pointer, {"content": content}):
        return store.last_error
    if int.from_bytes(os.urandom(2), "big") % _PRUNE_EVERY == 0:  # (secrets would load hashlib: OpenSSL)
        store.prune(MAX_ENTRIES, max_age_s=MAX_AGE_DAYS * 86_400.0)
    return None


def entries(cache_dir: str | os.PathLike[str], repository: str | tuple[str, ...]) -> Iterator[dict[str, Any]]:
    """Every readable entry of `repository` (any of several names of it: repository_names), in no order."""
    names = (repository,) if isinstance(repository, str) else repository
    store = _store(cache_dir)
    for key in store.keys():
        document = store.read(key)
        if document is not None and document.get("repository") in names:
            yield document


def repository_key(git_dir: str) -> str:
    """What the history is kept under: the repository as its remote names it (`origin`, else the first remote;
    host and path only, never a credential in the URL), so a new clone, a moved checkout or another CI
    workspace counts the same history; a repository without a remote, by its git directory (`git_dir`, the
    absolute common directory: store.memory.repository_id)."""
    from ocr_hook.changes import git

    listed = git.git_text(None, ["--git-dir", git_dir, "config", "--get-regexp", r"^remote\..*\.url$"],
                          ok_codes=(0, 1))
    urls = dict(line.split(" ", 1) for line in listed.splitlines() if " " in line)
    url = urls.get("remote.origin.url") or next(iter(sorted(urls.items())), ("", ""))[1]
    where = _place(url)
    return f"remote:{where}" if where else git_dir


def _remembered_key(store: JsonFileStore, git_dir: str) -> str:
    """repository_key, remembered in the store while the repository's config file is unchanged: a commit-time
    review that records an entry starts no git process for it."""
    try:
        info = os.stat(os.path.join(git_dir, "config"))
        stamp = f"{info.st_mtime_ns}:{info.st_size}"
    except OSError:
        stamp = ""
    memo = sha256_hex(f"key\0{git_dir}".encode("utf-8", "surrogateescape"))
    known = store.read(memo)
    if known is not None and known.get("stamp") == stamp and isinstance(known.get("key"), str):
        return known["key"]
    named = repository_key(git_dir)
    store.write(memo, {"stamp": stamp, "key": named})  # (a failed write: computed again next time)
    return named


def repository_names(git_dir: str) -> tuple[str, ...]:
    """Every name the history may hold the repository's entries under: repository_key's, and its git directory
    (what entries were kept under before, and are kept under without a remote)."""
    return tuple(dict.fromkeys((repository_key(git_dir), git_dir)))


def _place(url: str) -> str:
    """`host/path` of a remote URL (https, ssh, scp-like `git@host:path`), lowercase host, no `.git`; "" for
    none."""
    import re
    from urllib.parse import urlsplit

    url = url.strip()
    if not url:
        return ""
    scp = re.fullmatch(r"(?:[^@/]+@)?([^:/]+):(?!//)(.*)", url)
    if scp and "://" not in url:
        host, path = scp.group(1), scp.group(2)
    else:
        parts = urlsplit(url)
        host, path = parts.hostname or "", parts.path
    path = path.strip("/").removesuffix(".git").strip("/")
    return f"{host.lower()}/{path}" if path else ""
