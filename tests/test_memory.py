"""The pure review-memory logic: interdiff, carried findings' new lines, and the statuses of a re-review."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ocr_hook.findings import Category, Finding, Severity, fingerprint
from ocr_hook.findings.memory import Interdiff, Remembered, changed_context, classify, plan_memory, split_lines

OLD = "".join(f"line {n}\n" for n in range(1, 21))


def finding(start: int, end: int | None = None, *, text: str = OLD, category: Category = Category.BUG,
            severity: Severity = Severity.HIGH, status: str = "new", anchored: bool = True,
            message: str = "m") -> Finding:
    end = start if end is None else end
    lines = split_lines(text)
    code = "\n".join(lines[start - 1:end]) if anchored else ""
    return Finding(path="f.py", start_line=start if anchored else 0, end_line=end if anchored else 0,
                   severity=severity, category=category, message=message, suggestion=None, anchored=anchored,
                   fingerprint=fingerprint("f.py", category, code, message), existing_code=code, status=status)


def remembered(*findings: Finding, content: str = OLD) -> Remembered:
    return Remembered("f.py", content, {"models": "m"}, tuple(findings))


def edit(text: str, start: int, end: int, new: list[str]) -> str:
    """Replace lines start..end (1-based, end may be start-1 for an insertion before `start`)."""
    lines = split_lines(text)
    return "".join(line + "\n" for line in lines[:start - 1] + new + lines[end:])


def test_untouched_findings_are_carried_to_their_new_lines() -> None:
    new = edit(OLD, 1, 0, ["import os", "import sys"])  # two lines inserted at the top
    plan = plan_memory(remembered(finding(5), finding(10, 12, status="late")), new)
    assert [(f.start_line, f.end_line, f.status) for f in plan.carried] == [(7, 7, "carried"), (12, 14, "late")]
    assert plan.recheck == ()


def test_touched_removed_and_unanchored_findings_are_rechecked() -> None:
    new = edit(OLD, 5, 5, ["line five, fixed"])  # line 5 changed
    new = edit(new, 15, 16, [])  # lines 15-16 removed
    new = edit(new, 10, 9, ["inserted"])  # an insertion between lines 9 and 10
    earlier = [finding(5), finding(15), finding(9, 10), finding(0, anchored=False, message="whole file"),
               finding(2), finding(10)]
    plan = plan_memory(remembered(*earlier), new)
    assert {f.start_line for f in plan.recheck} == {5, 15, 9, 0}
    # line 10 itself is unchanged: an insertion just above it does not touch it
    assert sorted((f.start_line, f.end_line) for f in plan.carried) == [(2, 2), (11, 11)]


def test_classification_new_late_carried_resolved() -> None:
    new = edit(OLD, 5, 5, ["line five, fixed"])
    high, low, other = finding(5), finding(12, severity=Severity.LOW), finding(7, category=Category.STYLE)
    plan = plan_memory(remembered(high, low, other), new)
    comments = [
        finding(5, text=new, category=Category.STYLE, message="on the changed line"),  # new, inside the interdiff
        finding(18, text=new, message="raised late"),  # untouched line, no earlier finding → late
        finding(12, text=new, severity=Severity.LOW, message="again"),  # repeats a carried one → dropped
    ]
    out = classify(plan, comments)
    by_message = {f.message: f.status for f in out.findings}
    assert by_message == {"m": "carried", "on the changed line": "new", "raised late": "late"}
    assert [(f.start_line, f.message) for f in out.findings if f.status == "carried"] == [(12, "m"), (7, "m")]
    assert [f.start_line for f in out.resolved] == [5]


def test_rereported_by_overlap_and_category_or_by_fingerprint() -> None:
    new = edit(OLD, 5, 6, ["five", "six", "six and a half"])
    earlier_late = finding(5, 6, status="late", message="first")
    plan = plan_memory(remembered(earlier_late, finding(0, anchored=False, message="whole")), new)
    again = [finding(6, 7, text=new, message="reworded"), finding(0, anchored=False, message="whole")]
    out = classify(plan, again)
    assert [(f.message, f.status) for f in out.findings] == [("reworded", "late"), ("whole", "carried")]
    assert out.resolved == []
    other_category = [finding(6, text=new, category=Category.PERFORMANCE, message="different")]
    out = classify(plan, other_category)
    assert [f.status for f in out.findings] == ["new"] and len(out.resolved) == 2


def test_an_unfinished_review_resolves_nothing() -> None:
    new = edit(OLD, 5, 5, ["changed"])
    plan = plan_memory(remembered(finding(5)), new)
    out = classify(plan, [], complete=False)
    assert out.resolved == [] and [(f.start_line, f.status) for f in out.findings] == [(5, "carried")]


def test_changed_context_names_the_parts() -> None:
    assert changed_context({"models": "a", "guidance": "x"}, {"models": "a", "guidance": "y"}) == ["guidance"]
    assert changed_context({"models": "a"}, {"models": "a", "version": "2"}) == ["version"]


def test_interdiff_text_and_deletion_neighbours() -> None:
    diff = Interdiff.between(OLD, edit(OLD, 8, 9, []))
    body = diff.unified("f.py").split("\n")[3:]  # after the ---/+++ header and the hunk header
    assert diff.changed and "-line 8" in body and not [line for line in body if line.startswith("+")]
    assert diff.touches_new(7, 7) and diff.touches_new(8, 8) and not diff.touches_new(3, 3)
    assert not Interdiff.between(OLD, OLD).changed


lines_st = st.lists(st.sampled_from(["a", "b", "c", "", "}", "x = 1"]), max_size=25)


@settings(max_examples=200, deadline=None)
@given(old=lines_st, new=lines_st, start=st.integers(1, 25), length=st.integers(0, 3))
def test_carried_findings_point_at_the_same_text(old: list[str], new: list[str], start: int, length: int) -> None:
    """Whatever the edit, a carried finding's lines today hold exactly the text they held then."""
    old_text = "".join(line + "\n" for line in old)
    new_text = "".join(line + "\n" for line in new)
    if start + length > len(old):
        return
    f = finding(1, text=old_text or "z\n")._replace(start_line=start, end_line=start + length)
    plan = plan_memory(remembered(f, content=old_text), new_text)
    for c in plan.carried:
        assert new[c.start_line - 1:c.end_line] == old[start - 1:start + length]
    assert len(plan.carried) + len(plan.recheck) == 1
    if old == new:
        assert len(plan.carried) == 1
