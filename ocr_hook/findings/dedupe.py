"""Collapse duplicate findings on one file: the same problem reported twice on overlapping lines.

Two anchored findings on one file merge when their line ranges overlap and they are about the same
code: equal fingerprints, or identical normalised quoted code. A merged group keeps its most severe
finding (the earliest one on a tie). Unanchored findings have no lines to compare, so they merge
only with another unanchored finding that is an exact duplicate (same fingerprint and message).
"""

from __future__ import annotations

from collections.abc import Sequence

from ocr_hook.findings import Finding, normalise_code


def _same_problem(a: Finding, b: Finding) -> bool:
    if a.path != b.path:
        return False
    a_placed = a.anchored and a.start_line > 0
    b_placed = b.anchored and b.start_line > 0
    if not (a_placed and b_placed):
        return not a_placed and not b_placed and a.fingerprint == b.fingerprint and a.message == b.message
    if a.start_line > max(b.start_line, b.end_line) or b.start_line > max(a.start_line, a.end_line):
        return False
    if a.fingerprint == b.fingerprint:
        return True
    code = normalise_code(a.existing_code)
    return bool(code) and code == normalise_code(b.existing_code)


def _root(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def dedupe(findings: Sequence[Finding]) -> list[Finding]:
    """One finding per problem, ordered by (path, start line, severity from most severe)."""
    items = list(findings)
    parent = list(range(len(items)))
    by_path: dict[str, list[int]] = {}
    for i, finding in enumerate(items):
        by_path.setdefault(finding.path, []).append(i)
    for members in by_path.values():
        for x, i in enumerate(members):
            for j in members[x + 1 :]:
                if _same_problem(items[i], items[j]):
                    parent[_root(parent, j)] = _root(parent, i)
    best: dict[int, int] = {}
    for i, finding in enumerate(items):
        root = _root(parent, i)
        if root not in best or finding.severity.rank > items[best[root]].severity.rank:
            best[root] = i
    chosen = sorted(best.values())  # input order first, so the sort below is stable on ties
    return sorted((items[i] for i in chosen), key=lambda f: (f.path, f.start_line, -f.severity.rank))
