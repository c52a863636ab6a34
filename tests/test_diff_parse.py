"""Real git diffs → FileChange: line numbers, flags, and file names git has to quote."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_repo, write

from ocr_hook.changes import git as g
from ocr_hook.changes.collect import diff_files
from ocr_hook.changes.diff_parse import (
    DiffParseError,
    RawEntry,
    group_patches,
    parse_changes,
    parse_raw,
    split_patches,
)
from ocr_hook.changes.model import FileChange, FileStatus


def staged(repo: Path) -> dict[str, FileChange]:
    base = g.resolve_commit(str(repo), "HEAD") if g.has_head(str(repo)) else g.empty_tree(str(repo))
    return {f.path: f for f in diff_files(str(repo), base, None)}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    write(repo, "keep.txt", "unchanged\n")
    commit_all(repo, "initial")
    return repo


def test_modified_file_hunks_and_line_numbers(repo: Path) -> None:
    write(repo, "m.py", "".join(f"line {i}\n" for i in range(1, 21)))
    commit_all(repo)
    lines = [f"line {i}\n" for i in range(1, 21)]
    lines[1] = "changed 2\n"
    lines.insert(15, "inserted\n")
    del lines[18]
    write(repo, "m.py", "".join(lines))
    git(repo, "add", "m.py")
    change = staged(repo)["m.py"]
    assert change.status is FileStatus.MODIFIED
    assert (change.added, change.removed) == (2, 2)
    assert change.old_path is None and not change.is_binary
    assert (change.hunks[0].old_start, change.hunks[0].new_start) == (1, 1)
    removed = [(ln.text, ln.old_no, ln.new_no) for h in change.hunks for ln in h.lines if ln.kind == "-"]
    added = [(ln.text, ln.old_no, ln.new_no) for h in change.hunks for ln in h.lines if ln.kind == "+"]
    assert removed == [("line 2", 2, None), ("line 18", 18, None)]
    assert added == [("changed 2", None, 2), ("inserted", None, 16)]
    for hunk in change.hunks:
        for line in hunk.lines:
            if line.kind == " ":
                assert line.text == f"line {line.old_no}"
    assert change.patch.startswith("diff --git a/m.py b/m.py\n")
    assert "@@ -1," in change.patch


def test_no_newline_at_end_of_file_is_not_a_line(repo: Path) -> None:
    write(repo, "n.txt", "a\nb")
    commit_all(repo)
    write(repo, "n.txt", "a\nc")
    git(repo, "add", "n.txt")
    change = staged(repo)["n.txt"]
    assert "\\ No newline at end of file" in change.patch
    kinds = [(line.kind, line.text) for line in change.hunks[0].lines]
    assert kinds == [(" ", "a"), ("-", "b"), ("+", "c")]


def test_crlf_content_keeps_line_numbers_and_drops_line_endings(repo: Path) -> None:
    write(repo, "w.txt", b"one\r\ntwo\r\nthree\r\n")
    git(repo, "add", "w.txt")
    change = staged(repo)["w.txt"]
    assert [(line.text, line.new_no) for line in change.hunks[0].lines] == [("one", 1), ("two", 2), ("three", 3)]
    assert "one\r\n" in change.patch


def test_separator_characters_inside_a_line_do_not_split_it(repo: Path) -> None:
    # str.splitlines would cut at each of these and shift every following line number.
    write(repo, "s.txt", "a\x0cb\nc\x1cd\ne\u2028f\ng\x85h\nlast\n")
    git(repo, "add", "s.txt")
    lines = staged(repo)["s.txt"].hunks[0].lines
    assert [line.text for line in lines] == ["a\x0cb", "c\x1cd", "e\u2028f", "g\x85h", "last"]
    assert lines[-1].new_no == 5


def test_non_utf8_content_round_trips(repo: Path) -> None:
    raw = b"caf\xe9 latin-1\n\xff\xfe odd bytes\n"
    write(repo, "l1.txt", raw)
    git(repo, "add", "l1.txt")
    change = staged(repo)["l1.txt"]
    texts = [line.text for line in change.hunks[0].lines]
    assert "\n".join(texts).encode("utf-8", "surrogateescape") + b"\n" == raw


def test_binary_file_is_flagged_without_hunks(repo: Path) -> None:
    write(repo, "img.bin", bytes(range(256)) * 4)
    git(repo, "add", "img.bin")
    change = staged(repo)["img.bin"]
    assert change.is_binary and change.hunks == () and change.status is FileStatus.ADDED


def test_rename_with_edit(repo: Path) -> None:
    write(repo, "old name.py", "".join(f"x = {i}\n" for i in range(30)))
    commit_all(repo)
    git(repo, "mv", "old name.py", "new name.py")
    write(repo, "new name.py", "".join(f"x = {i}\n" for i in range(29)) + "x = 'changed'\n")
    git(repo, "add", "new name.py")
    change = staged(repo)["new name.py"]
    assert change.status is FileStatus.RENAMED
    assert change.old_path == "old name.py"
    assert (change.added, change.removed) == (1, 1)


def test_mode_change_only(repo: Path) -> None:
    write(repo, "run.sh", "echo hi\n")
    commit_all(repo)
    git(repo, "update-index", "--chmod=+x", "run.sh")
    change = staged(repo)["run.sh"]
    assert (change.old_mode, change.new_mode) == ("100644", "100755")
    assert change.hunks == () and change.changed_lines == 0


def test_symlink_submodule_and_type_change(repo: Path) -> None:
    write(repo, "plain.txt", "was a file\n")
    commit_all(repo)
    os.symlink("keep.txt", repo / "link")
    (repo / "plain.txt").unlink()
    os.symlink("keep.txt", repo / "plain.txt")
    sub_sha = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sub_sha},modules/lib")
    git(repo, "add", "link", "plain.txt")
    changes = staged(repo)
    assert changes["link"].is_symlink and changes["link"].new_mode == "120000"
    assert changes["modules/lib"].is_submodule and changes["modules/lib"].status is FileStatus.ADDED
    typed = changes["plain.txt"]
    assert typed.status is FileStatus.TYPE_CHANGED and typed.is_symlink
    assert (typed.added, typed.removed) == (1, 1)
    assert typed.patch.count("diff --git ") == 2


@pytest.mark.parametrize("name", [
    "with space.txt",
    'quote"d.txt',
    "tab\there.txt",
    "new\nline.txt",
    "ünïcødé/文件.txt",
    "back\\slash.txt",
    "x b/y.txt",  # unidiff cannot split `diff --git a/x b/y.txt b/x b/y.txt`
    "diff --git a.txt",
    "-leading-dash.txt",
])
def test_awkward_file_names(repo: Path, name: str) -> None:
    write(repo, name, "hello\nworld\n")
    commit_all(repo)
    write(repo, name, "hello\nthere\n")
    git(repo, "add", "--", name)
    changes = staged(repo)
    assert list(changes) == [name]
    change = changes[name]
    assert change.status is FileStatus.MODIFIED
    assert [(line.kind, line.text) for line in change.hunks[0].lines] == [
        (" ", "hello"), ("-", "world"), ("+", "there")]


def test_non_utf8_file_name(repo: Path) -> None:
    name = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
    (repo / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"x\n")
    git(repo, "add", "-A")
    changes = staged(repo)
    assert list(changes) == [name]
    assert changes[name].added == 1


def test_content_that_looks_like_a_diff_header(repo: Path) -> None:
    body = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n"
    write(repo, "doc.txt", body)
    git(repo, "add", "doc.txt")
    changes = staged(repo)
    assert list(changes) == ["doc.txt"]
    assert [line.text for line in changes["doc.txt"].hunks[0].lines] == body.splitlines()


def test_empty_added_file(repo: Path) -> None:
    write(repo, "empty.txt", b"")
    git(repo, "add", "empty.txt")
    change = staged(repo)["empty.txt"]
    assert change.status is FileStatus.ADDED and change.hunks == () and not change.is_binary


def test_deleted_file_keeps_its_old_path(repo: Path) -> None:
    git(repo, "rm", "-q", "keep.txt")
    change = staged(repo)["keep.txt"]
    assert change.status is FileStatus.DELETED
    assert (change.added, change.removed) == (0, 1)
    assert change.hunks[0].lines[0].old_no == 1


# --- pure functions ----------------------------------------------------------------------------


def test_parse_raw_reads_renames_and_absent_sides() -> None:
    z = "0" * 40
    raw = (f":000000 100644 {z} {'a' * 40} A\0new\nfile\0"
           f":100644 100644 {'b' * 40} {'c' * 40} R087\0old\0new\0")
    entries = parse_raw(raw)
    assert entries[0] == RawEntry("A", None, "100644", None, "a" * 40, "new\nfile", "new\nfile")
    assert entries[1].status == "R" and (entries[1].old_path, entries[1].new_path) == ("old", "new")


def test_parse_raw_refuses_unmerged_entries() -> None:
    z = "0" * 40
    with pytest.raises(DiffParseError, match="unmerged"):
        parse_raw(f":000000 000000 {z} {z} U\0f.txt\0")


def test_group_patches_detects_a_mismatch() -> None:
    entry = RawEntry("M", "100644", "100644", "a" * 40, "b" * 40, "f", "f")
    typed = entry._replace(status="T")
    assert group_patches([entry], ["p1"]) == [["p1"]]
    assert group_patches([typed], ["p1", "p2"]) == [["p1", "p2"]]
    assert group_patches([entry], ["p1", "p2"]) is None


def test_split_patches_refuses_text_without_headers() -> None:
    with pytest.raises(DiffParseError):
        split_patches("not a diff\n")
    assert split_patches("") == []


def test_parse_changes_on_mismatched_input_raises() -> None:
    z = "0" * 40
    with pytest.raises(DiffParseError):
        parse_changes(f":000000 100644 {z} {'a' * 40} A\0f\0", "")
