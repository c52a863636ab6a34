"""Which change a run reviews, as the command line names it."""

from __future__ import annotations

from typing import NamedTuple


class Scope(NamedTuple):
    kind: str  # "staged" | "base" | "range" | "commit" | "push"
    base: str | None = None  # --base REF
    from_ref: str | None = None  # --from REF
    to_ref: str | None = None  # --to REF
    commit: str | None = None  # --commit SHA
