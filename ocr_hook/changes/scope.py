"""Which change a run reviews, and the rules for choosing it that the command line and the MCP server share.

Kept light (no click, no jsonschema): the CLI imports it at start-up. Each caller words the errors for its own
users (flags or tool arguments) from the attributes of the exceptions raised here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple


class Scope(NamedTuple):
    kind: str  # "staged" | "base" | "range" | "commit" | "push" | "scan"
    base: str | None = None  # --base REF
    from_ref: str | None = None  # --from REF
    to_ref: str | None = None  # --to REF
    commit: str | None = None  # --commit SHA
    rev: str | None = None  # scan: the revision whose whole files are reviewed; None: the index



# In the order errors list them. The refs are Scope's field names.
SCOPE_REFS: dict[str, tuple[str, ...]] = {
    "staged": (),
    "base": ("base",),
    "range": ("from_ref", "to_ref"),
    "commit": ("commit",),
    "push": (),
}


class ScopeError(ValueError):
    """The inputs do not name exactly one complete scope; str(exc) says why in one line."""


class ScopeConflict(ScopeError):
    """More than one scope was named or implied by the refs given."""

    def __init__(self, kinds: tuple[str, ...]) -> None:
        self.kinds = kinds
        super().__init__(f"choose one scope, got {' and '.join(kinds)}")


class ScopeIncomplete(ScopeError):
    """The one scope chosen lacks a ref it needs."""

    def __init__(self, kind: str, missing: tuple[str, ...]) -> None:
        self.kind = kind
        self.missing = missing
        super().__init__(f"scope '{kind}' needs {' and '.join(missing)}")


def choose_scope(named: Iterable[str] = (), *, base: str | None = None, from_ref: str | None = None,
                 to_ref: str | None = None, commit: str | None = None) -> Scope:
    """The one scope that `named` (scope kinds asked for by name) and the refs given (not None) pick.

    A ref implies the scope it belongs to; with nothing named or implied the scope is "staged".
    """
    named = tuple(named)
    unknown = [kind for kind in named if kind not in SCOPE_REFS]
    if unknown:
        raise ScopeError(f"unknown scope {unknown[0]!r}; the scopes are {', '.join(SCOPE_REFS)}")
    refs = {"base": base, "from_ref": from_ref, "to_ref": to_ref, "commit": commit}
    given = {ref for ref, value in refs.items() if value is not None}
    # A scope asked for by name reports what it lacks before any conflict: that is what the caller meant.
    for kind in named:
        missing = tuple(ref for ref in SCOPE_REFS[kind] if ref not in given)
        if missing:
            raise ScopeIncomplete(kind, missing)
    kinds = tuple(kind for kind, needs in SCOPE_REFS.items() if kind in named or given & set(needs))
    if len(kinds) > 1:
        raise ScopeConflict(kinds)
    kind = kinds[0] if kinds else "staged"
    missing = tuple(ref for ref in SCOPE_REFS[kind] if ref not in given)
    if missing:
        raise ScopeIncomplete(kind, missing)
    return Scope(kind, **{ref: refs[ref] for ref in SCOPE_REFS[kind]})


SCAN = "scan"  # not a diff, so not among SCOPE_REFS: `ocr-hook scan` (DESIGN.md 16) builds it with scan_scope


def scan_scope(rev: str | None = None, *, staged: bool = False) -> Scope:
    """Whole files as they stand at `rev` (default HEAD), or in the index with `staged`."""
    if staged and rev:
        raise ScopeConflict(("staged", "rev"))
    return Scope(SCAN, rev=None if staged else (rev or "HEAD"))
