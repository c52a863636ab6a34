"""--filter-mode with reviewdog's meanings, on a change produced by real git."""

from __future__ import annotations

from pathlib import Path

import gitrepo  # noqa: F401  (isolates git from user config)
import pytest

from ocr_hook.changes import git
from ocr_hook.changes.diff_parse import parse_changes
from ocr_hook.changes.model import FileChange
from ocr_hook.findings import Category, Finding, Severity
from ocr_hook.findings.filter_mode import apply, keep_finding

OLD = "".join(f"line {n}\n" for n in range(1, 41))
# line 10 changed, 11-12 added, old line 30 deleted (new line 32 now stands where it was)
NEW = OLD.replace("line 10\n", "line ten\nadded a\nadded b\n").replace("line 30\n", "")


@pytest.fixture(scope="module")
def change(tmp_path_factory: pytest.TempPathFactory) -> FileChange:
    tmp = tmp_path_factory.mktemp("filter")
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    (tmp / "a" / "f.txt").write_text(OLD)
    (tmp / "b" / "f.txt").write_text(NEW)
    args = ["diff", "--no-index", *git.DIFF_OPTIONS, "a/f.txt", "b/f.txt"]
    raw = git.git_text(str(tmp), [*args, "--raw", "-z", "--no-abbrev"], ok_codes=(1,))
    return parse_changes(raw, git.git_text(str(tmp), args, ok_codes=(1,)))[0]


def test_the_fixture_diff_is_what_the_tests_assume(change: FileChange) -> None:
    added = [ln.new_no for h in change.hunks for ln in h.lines if ln.kind == "+"]
    assert added == [10, 11, 12]
    assert [(h.new_start, h.new_len) for h in change.hunks] == [(7, 9), (29, 6)]


@pytest.mark.parametrize(
    ("start", "end", "added", "diff_context"),
    [
        (10, 10, True, True),  # the changed line
        (12, 14, True, True),  # overlaps the last added line
        (13, 15, False, True),  # context after the additions
        (7, 7, False, True),  # first context line of the hunk
        (6, 6, False, False),  # just before the hunk
        (16, 20, False, False),  # between hunks
        (5, 7, False, True),  # reaches into the hunk
        (31, 31, False, True),  # context around the deletion
        (40, 41, False, False),  # far after
    ],
)
def test_added_and_diff_context(change: FileChange, start: int, end: int, added: bool, diff_context: bool) -> None:
    assert keep_finding(start, end, True, change, "added") is added
    assert keep_finding(start, end, True, change, "diff_context") is diff_context
    assert keep_finding(start, end, True, change, "file") is True
    assert keep_finding(start, end, True, change, "nofilter") is True


def test_unanchored_findings_are_kept_in_every_mode(change: FileChange) -> None:
    for mode in ("added", "diff_context", "file", "nofilter"):
        assert keep_finding(0, 0, False, change, mode) is True


def test_deleted_code_finding_is_in_the_diff_even_without_context(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "f").write_text("one\ntwo\nthree\n")
    (tmp_path / "b" / "f").write_text("one\nthree\n")
    args = ["diff", "--no-index", *git.DIFF_OPTIONS, "a/f", "b/f"]
    raw = git.git_text(str(tmp_path), [*args, "--raw", "-z", "--no-abbrev"], ok_codes=(1,))
    patch = git.git_text(str(tmp_path), [*args, "--unified=0"], ok_codes=(1,))
    zero_context = parse_changes(raw, patch)[0]
    assert zero_context.hunks[0].new_len == 0
    assert keep_finding(2, 2, True, zero_context, "diff_context") is True  # where "two" was
    assert keep_finding(1, 1, True, zero_context, "diff_context") is False
    assert keep_finding(2, 2, True, zero_context, "added") is False


def test_unknown_mode_is_an_error(change: FileChange) -> None:
    with pytest.raises(ValueError, match="unknown filter mode"):
        keep_finding(1, 1, True, change, "everything")


def _finding(path: str, start: int, end: int, anchored: bool = True) -> Finding:
    return Finding(path=path, start_line=start, end_line=end, severity=Severity.HIGH, category=Category.BUG,
                   message=f"issue at {start}", suggestion=None, anchored=anchored, fingerprint=f"fp{start}")


def test_apply_keeps_order_and_counts_what_it_drops(change: FileChange) -> None:
    findings = [_finding("b/f.txt", 11, 11), _finding("b/f.txt", 20, 20), _finding("b/f.txt", 0, 0, False),
                _finding("b/f.txt", 14, 14), _finding("other.py", 3, 3)]
    by_path = {"b/f.txt": change}
    kept, dropped = apply(findings, by_path, "added")
    assert [f.start_line for f in kept] == [11, 0]
    assert dropped == 3
    kept, dropped = apply(findings, by_path, "diff_context")
    assert [f.start_line for f in kept] == [11, 0, 14]
    assert dropped == 2
    kept, dropped = apply(findings, by_path, "file")
    assert (len(kept), dropped) == (4, 1)  # other.py is not a changed file
    kept, dropped = apply(findings, by_path, "nofilter")
    assert (kept, dropped) == (findings, 0)
