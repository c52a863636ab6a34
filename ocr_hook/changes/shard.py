"""`--shard I/N`: a deterministic share of the files, so a CI matrix of N jobs splits one review.

Every shard must compute the same split from the same file list on a different machine, so the
order comes from SHA-256 of the path (Python's hash() changes per process). Files are dealt round
robin in that order, which keeps shard sizes within one file of each other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ocr_hook.changes.model import ChangeSet
from ocr_hook.digest import sha256_hex
from ocr_hook.errors import ConfigError

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def parse_shard(shard: str) -> tuple[int, int]:
    """(I, N) from "I/N" with 1 <= I <= N; a ConfigError otherwise."""
    match = _SHARD.fullmatch(shard)
    if not match:
        raise ConfigError(f"--shard must look like I/N (for example 2/4), got {shard!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ConfigError(f"--shard {shard}: I must be between 1 and N, and N at least 1")
    return index, count


def _key(path: str) -> tuple[str, str]:
    return sha256_hex(path.encode("utf-8", "surrogateescape")), path


def shard_select(paths: Sequence[str], shard: str) -> set[str]:
    """The paths shard I of N reviews; the N shards partition the (deduplicated) paths."""
    index, count = parse_shard(shard)
    ordered = sorted(set(paths), key=_key)
    return {path for position, path in enumerate(ordered) if position % count == index - 1}


def shard_change_set(change_set: ChangeSet, shard: str | None) -> ChangeSet:
    """The change set with only shard I of N's files (all of them without a shard): dealt before selection, so
    max_files caps each shard of a CI matrix; review and preview deal the same way."""
    if not shard:
        return change_set
    mine = shard_select([c.path for c in change_set.files], shard)
    return change_set._replace(files=tuple(c for c in change_set.files if c.path in mine))
