"""Deduplication of findings on overlapping lines of one file."""

from __future__ import annotations

from ocr_hook.findings import Category, Finding, Severity, fingerprint
from ocr_hook.findings.dedupe import dedupe


def make(path: str = "a.py", start: int = 10, end: int | None = None, severity: Severity = Severity.MEDIUM,
         category: Category = Category.BUG, code: str = "x = compute()", message: str = "m") -> Finding:
    anchored = start > 0
    return Finding(path=path, start_line=start, end_line=start if end is None else end, severity=severity,
                   category=category, message=message, suggestion=None, anchored=anchored,
                   fingerprint=fingerprint(path, category, code, message), existing_code=code)


def test_same_code_on_overlapping_lines_keeps_the_most_severe() -> None:
    low = make(start=10, end=12, severity=Severity.LOW, message="first")
    high = make(start=11, end=11, severity=Severity.HIGH, message="second")
    assert dedupe([low, high]) == [high]


def test_tie_on_severity_keeps_the_first() -> None:
    a = make(message="first wording")
    b = make(message="second wording")
    assert dedupe([a, b]) == [a]
    assert dedupe([b, a]) == [b]


def test_identical_code_in_another_category_still_merges() -> None:
    bug = make(category=Category.BUG, severity=Severity.MEDIUM)
    sec = make(category=Category.SECURITY, severity=Severity.CRITICAL, code="x  =  compute()\n")
    assert bug.fingerprint != sec.fingerprint
    assert dedupe([bug, sec]) == [sec]


def test_different_code_or_no_overlap_or_other_file_stays() -> None:
    base = make(start=10, end=12)
    other_code = make(start=11, code="y = other()")
    apart = make(start=13)
    other_file = make(path="b.py")
    out = dedupe([base, other_code, apart, other_file])
    assert len(out) == 4


def test_unanchored_merge_only_with_exact_duplicates() -> None:
    lost = make(start=0, message="cannot place this")
    same = make(start=0, message="cannot place this")
    worded = make(start=0, message="cannot place this one")
    anchored = make(start=10, message="cannot place this")
    out = dedupe([lost, same, worded, anchored])
    assert out == [lost, worded, anchored]


def test_groups_chain_through_overlaps() -> None:
    a = make(start=1, end=3, severity=Severity.LOW)
    b = make(start=3, end=5, severity=Severity.MEDIUM)
    c = make(start=5, end=7, severity=Severity.HIGH)
    assert dedupe([a, b, c]) == [c]


def test_output_order_is_path_line_then_severity() -> None:
    f1 = make(path="b.py", start=5)
    f2 = make(path="a.py", start=9, code="q()")
    f3 = make(path="a.py", start=9, code="r()", severity=Severity.CRITICAL)
    f4 = make(path="a.py", start=0, code="", message="somewhere")
    assert dedupe([f1, f2, f3, f4]) == [f4, f3, f2, f1]


def test_empty_code_does_not_merge_by_code() -> None:
    a = make(start=10, code="", message="one")
    b = make(start=10, code="", message="two")
    assert len(dedupe([a, b])) == 2
