"""What a CI module detected: the CI's name, the candidate base refs in order, where they came from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple


class Guess(NamedTuple):
    ci: str  # e.g. "GitHub Actions (pull_request)"
    refs: tuple[str, ...]  # candidates; the first that names a commit in the clone is the base
    source: str  # the variable and value it came from, e.g. "GITHUB_BASE_REF=main"


def branch_refs(branch: str) -> tuple[str, ...]:
    """A target branch as CI systems name it: the remote-tracking ref a CI clone has, else a local one."""
    return (f"origin/{branch}", branch)


def value(environ: Mapping[str, str], name: str) -> str:
    """A variable's value stripped of surrounding blanks ('' when unset)."""
    return (environ.get(name) or "").strip()
