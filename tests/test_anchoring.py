"""Anchoring of quoted code: one test per perturbation class, the repeated-line preference, the
old-side mapping and the refusals. Hunks come from a real `git diff --no-index` parsed by the
project's own parser."""

from __future__ import annotations

from pathlib import Path

import gitrepo  # noqa: F401  (isolates git from user config for the whole test process)
import pytest

from ocr_hook.changes import git
from ocr_hook.changes.diff_parse import parse_changes
from ocr_hook.changes.model import FileChange
from ocr_hook.findings.anchoring import Anchor, anchor, anchor_prepared, prepare


def change_of(tmp: Path, old: str, new: str) -> FileChange:
    """The FileChange git reports between two versions of one file."""
    (tmp / "old").mkdir(exist_ok=True)
    (tmp / "new").mkdir(exist_ok=True)
    (tmp / "old" / "f").write_text(old, encoding="utf-8")
    (tmp / "new" / "f").write_text(new, encoding="utf-8")
    args = ["diff", "--no-index", *git.DIFF_OPTIONS, "old/f", "new/f"]
    raw = git.git_text(str(tmp), [*args, "--raw", "-z", "--no-abbrev"], ok_codes=(0, 1))
    patch = git.git_text(str(tmp), args, ok_codes=(0, 1))
    changes = parse_changes(raw, patch)
    assert len(changes) == 1
    return changes[0]


def at(tmp: Path, old: str, new: str, snippet: str) -> Anchor | None:
    return anchor(snippet, change_of(tmp, old, new).hunks, new)


def lines(a: Anchor | None) -> tuple[int, int] | None:
    return None if a is None else (a.start_line, a.end_line)


OLD = """import os


def load(path):
    with open(path) as fh:
        data = fh.read()
    return data


def save(path, data):
    with open(path, "w") as fh:
        fh.write(data)
    return None
"""

NEW = """import os


def load(path):
    with open(path, encoding="utf-8") as fh:
        data = fh.read()
    if not data:
        raise ValueError("empty file: " + path)
    return data


def save(path, data):
    with open(path, "w") as fh:
        fh.write(data)
    return None
"""
# NEW: line 5 changed, 7-8 added; `with open(...)`/`fh.write` are context or outside the hunk


@pytest.fixture()
def change(tmp_path: Path) -> FileChange:
    return change_of(tmp_path, OLD, NEW)


def test_exact_quote_of_added_lines(change: FileChange) -> None:
    got = anchor('if not data:\n    raise ValueError("empty file: " + path)', change.hunks, NEW)
    assert got == Anchor(7, 8, "hunk_new", "new")


def test_diff_markers_on_added_lines(change: FileChange) -> None:
    snippet = '+    if not data:\n+        raise ValueError("empty file: " + path)'
    assert lines(anchor(snippet, change.hunks, NEW)) == (7, 8)


def test_diff_headers_copied_with_the_markers_are_ignored(change: FileChange) -> None:
    snippet = ("diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -4,7 +4,9 @@ def load(path):\n"
               '+    if not data:\n+        raise ValueError("empty file: " + path)')
    assert lines(anchor(snippet, change.hunks, NEW)) == (7, 8)


def test_diff_markers_with_context_lines_kept_as_context(change: FileChange) -> None:
    snippet = '         data = fh.read()\n+    if not data:\n+        raise ValueError("empty file: " + path)'
    assert lines(anchor(snippet, change.hunks, NEW)) == (6, 8)


def test_removed_line_maps_to_where_it_was_and_says_old_side(change: FileChange) -> None:
    got = anchor("-    with open(path) as fh:", change.hunks, NEW)
    assert got == Anchor(5, 5, "hunk_old", "old")
    # without the marker too: it is only on the old side
    assert anchor("with open(path) as fh:", change.hunks, NEW) == Anchor(5, 5, "hunk_old", "old")


def test_mixed_removed_and_added_lines_anchor_to_the_new_lines(change: FileChange) -> None:
    snippet = '-    with open(path) as fh:\n+    with open(path, encoding="utf-8") as fh:'
    assert anchor(snippet, change.hunks, NEW) == Anchor(5, 5, "hunk_new", "new")
    # the same diff fragment copied without markers
    assert lines(anchor(snippet.replace("-", "", 1).replace("+", "", 1), change.hunks, NEW)) == (5, 5)


def test_deleted_block_maps_to_the_line_now_in_its_place(tmp_path: Path) -> None:
    old = "a = 1\nb = compute_b(a)\nc = compute_c(b)\nd = 4\n"
    new = "a = 1\nd = 4\n"
    got = at(tmp_path, old, new, "b = compute_b(a)\nc = compute_c(b)")
    assert got == Anchor(2, 2, "hunk_old", "old")


def test_deletion_at_end_of_file_is_clamped_to_the_last_line(tmp_path: Path) -> None:
    old = "keep_me = True\nremove_me = compute(1)\n"
    new = "keep_me = True\n"
    assert at(tmp_path, old, new, "remove_me = compute(1)") == Anchor(1, 1, "hunk_old", "old")


def test_deleted_file_anchors_at_line_one(tmp_path: Path) -> None:
    old = "first_line = 1\nsecond_line = 2\n"
    change = change_of(tmp_path, old, "")
    assert anchor("second_line = 2", change.hunks, "") == Anchor(1, 1, "hunk_old", "old")


def test_line_number_prefixes_from_file_read(change: FileChange) -> None:
    assert lines(anchor('7|    if not data:\n8|        raise ValueError("empty file: " + path)',
                        change.hunks, NEW)) == (7, 8)
    assert lines(anchor("    13|     with open(path, \"w\") as fh:\n    14|         fh.write(data)",
                        change.hunks, NEW)) == (13, 14)


def test_line_numbers_pick_the_quoted_copy_of_a_repeated_line(change: FileChange) -> None:
    new = NEW + "\n\ndef again(path):\n    data = fh.read()\n"  # line 19 repeats line 6
    assert lines(anchor("19|    data = fh.read()", change.hunks, new)) == (19, 19)
    assert lines(anchor("6|    data = fh.read()", change.hunks, new)) == (6, 6)


def test_changed_indentation(change: FileChange) -> None:
    snippet = 'if not data:\n  raise ValueError("empty file: " + path)'
    assert lines(anchor(snippet, change.hunks, NEW)) == (7, 8)
    assert lines(anchor("\t\t" + snippet, change.hunks, NEW)) == (7, 8)


def test_changed_inner_spacing(change: FileChange) -> None:
    assert lines(anchor('raise ValueError( "empty file: "+path )', change.hunks, NEW)) == (8, 8)


def test_trailing_whitespace_and_carriage_returns(change: FileChange) -> None:
    snippet = 'if not data:  \r\n    raise ValueError("empty file: " + path)\t\r\n'
    assert lines(anchor(snippet, change.hunks, NEW)) == (7, 8)


def test_blank_lines_added_or_dropped(change: FileChange) -> None:
    assert lines(anchor("    return data\n\ndef save(path, data):", change.hunks, NEW)) == (9, 12)
    assert lines(anchor("if not data:\n\n\n    raise ValueError(\"empty file: \" + path)",
                        change.hunks, NEW)) == (7, 8)


def test_first_line_cut_short(change: FileChange) -> None:
    snippet = 'encoding="utf-8") as fh:\n        data = fh.read()'
    assert lines(anchor(snippet, change.hunks, NEW)) == (5, 6)


def test_last_line_cut_short_with_or_without_dots(change: FileChange) -> None:
    assert lines(anchor("if not data:\n    raise ValueError(", change.hunks, NEW)) == (7, 8)
    assert lines(anchor("if not data:\n    raise ValueError( ...", change.hunks, NEW)) == (7, 8)
    assert lines(anchor('raise ValueError("empty file…', change.hunks, NEW)) == (8, 8)


def test_ellipsis_line_stands_for_skipped_lines(change: FileChange) -> None:
    for mark in ("...", "…", "    # ...", "// ... existing code ..."):
        snippet = f"def load(path):\n{mark}\n    return data"
        assert lines(anchor(snippet, change.hunks, NEW)) == (4, 9), mark


def test_ellipsis_gap_is_bounded(tmp_path: Path) -> None:
    body = "".join(f"    step_{i}()\n" for i in range(250))
    new = "def start_here():\n" + body + "    finish_there()\n"
    old = new.replace("step_3()", "step_three()")
    assert at(tmp_path, old, new, "def start_here():\n...\n    finish_there()") is None
    assert lines(at(tmp_path, old, new, "def start_here():\n...\n    step_100()")) == (1, 102)


def test_ellipsis_like_edge_line_is_tried_as_real_text_first(tmp_path: Path) -> None:
    old = "const options = {\n  adapter: function (config) {\n  },\n};\n"
    new = "const options = {\n  adapter: function (config) {\n    prepare(config);\n    send(config);\n" \
          "    /* ... */\n  },\n};\n"
    assert lines(at(tmp_path, old, new, "adapter: function (config) {\n// ...\n    /* ... */")) == (2, 5)


def test_ellipsis_next_to_a_trivial_line_that_repeats_is_refused(tmp_path: Path) -> None:
    old = "function run(job) {\n  start(job);\n}\n"
    new = "function run(job) {\n  if (job.ready) {\n    start(job);\n  }\n  if (job.done) {\n    stop(job);\n" \
          "  }\n}\n"
    assert at(tmp_path, old, new, "function run(job) {\n  ...\n}") is None  # which `}`? a guess
    assert lines(at(tmp_path, old, new, "function run(job) {\n  ...\n    stop(job);")) == (1, 6)


def test_python_ellipsis_statement_is_taken_literally_first(tmp_path: Path) -> None:
    old = "class Proto:\n    def run(self) -> None:\n        pass\n"
    new = "class Proto:\n    def run(self) -> None:\n        ...\n"
    assert lines(at(tmp_path, old, new, "def run(self) -> None:\n    ...")) == (2, 3)


def test_line_starting_with_minus_or_plus_is_real_code_first(tmp_path: Path) -> None:
    old = "# Notes\n\n- first item\n"
    new = "# Notes\n\n- first item\n- second item\n+ third item\n"
    assert lines(at(tmp_path, old, new, "- second item\n+ third item")) == (4, 5)
    assert lines(at(tmp_path, old, new, "+- second item")) == (4, 4)


def test_fenced_snippet(change: FileChange) -> None:
    snippet = '```python\nif not data:\n    raise ValueError("empty file: " + path)\n```'
    assert lines(anchor(snippet, change.hunks, NEW)) == (7, 8)


# --- repeated lines ------------------------------------------------------------------------------

REPEAT_OLD = """def one():
    result = compute()
    return result


def two():
    value = 2
    return value


def three():
    result = compute()
    return result
"""

REPEAT_NEW = """def one():
    result = compute()
    return result


def two():
    value = 2
    result = compute()
    return value


def three():
    result = compute()
    return result
"""


def test_repeated_line_resolves_to_its_added_occurrence(tmp_path: Path) -> None:
    # the first copy in the file is line 2; the added copy is line 8
    assert at(tmp_path, REPEAT_OLD, REPEAT_NEW, "result = compute()") == Anchor(8, 8, "hunk_new", "new")
    assert lines(at(tmp_path, REPEAT_OLD, REPEAT_NEW, "+    result = compute()")) == (8, 8)


def test_repeated_context_prefers_the_copy_inside_the_hunk(tmp_path: Path) -> None:
    new = REPEAT_NEW.replace("    value = 2\n", "    value = 3\n").replace("    result = compute()\n    return value",
                                                                       "    return value")
    assert lines(at(tmp_path, REPEAT_OLD, new, "return result")) in {(3, 3), (13, 13)}
    # both copies of `return result` are outside the single hunk (lines 6-9); the nearer one wins
    far = "\n".join(f"pad_{i} = {i}" for i in range(30)) + "\n"
    old2 = "def first():\n    return result\n" + far + "def mid():\n    value = 2\n" + far
    new2 = "def first():\n    return result\n" + far + "def mid():\n    value = 3\n    return result\n" + far
    new2 += "def last():\n    return result\n"
    old2 += "def last():\n    return result\n"
    assert lines(at(tmp_path, old2, new2, "    return result")) == (35, 35)


def test_nearest_to_the_change_when_no_copy_is_in_a_hunk(tmp_path: Path) -> None:
    pad = "".join(f"filler_{i} = {i}\n" for i in range(20))
    old = "log_it(event)\n" + pad + "changed = 1\n" + pad + pad + "log_it(event)\n"
    new = old.replace("changed = 1", "changed = 2")
    assert at(tmp_path, old, new, "log_it(event)") == Anchor(1, 1, "file", "new")


# --- refusals ------------------------------------------------------------------------------------


def test_fabricated_code_never_anchors(change: FileChange) -> None:
    for snippet in ("if not dta:", "raise ValueError('empty file')", "with open(path, 'rb') as fh:",
                    "data = fh.readlines()", "return data\nreturn None", "import sys"):
        assert anchor(snippet, change.hunks, NEW) is None, snippet


def test_short_fragment_does_not_anchor_alone(change: FileChange) -> None:
    assert anchor("data =", change.hunks, NEW) is None
    assert anchor("fh.", change.hunks, NEW) is None


def test_fragment_matching_different_lines_is_refused(tmp_path: Path) -> None:
    old = "configure_logging(level)\nconfigure_network(timeout)\nconfigure_storage(path)\n"
    new = "configure_logging(level, fmt)\nconfigure_network(timeout, retries)\nconfigure_storage(path)\n"
    assert at(tmp_path, old, new, "configure_") is None  # too short to stand alone
    assert at(tmp_path, old, new, "config ...") is None  # likewise, even with dots
    assert at(tmp_path, old, new, "configure_lo ...") == Anchor(1, 1, "hunk_new", "new")
    assert at(tmp_path, old, new, "    configure_network(") == Anchor(2, 2, "hunk_new", "new")
    # old and new copies of the modified line sit at the same place: no doubt about where
    assert lines(at(tmp_path, old, new, "configure_network(timeout")) == (2, 2)
    # the fragment fits lines 1 and 2 ("...ing(" is no help): refused, not guessed
    assert at(tmp_path, old + "configure_logger(level)\n", new + "configure_logger(level)\n",
              "configure_logg") is None


def test_fragment_that_is_one_line_head_and_another_line_tail_is_refused(tmp_path: Path) -> None:
    old = "x = 0\n"
    new = "item.anchor, item.code = found, code\nx = 0\nplace = item.anchor\n"
    assert at(tmp_path, old, new, "item.anchor") is None
    assert lines(at(tmp_path, old, new, "item.anchor, item.co")) == (1, 1)
    assert lines(at(tmp_path, old, new, "place = item.anch")) == (3, 3)


def test_trivial_lines_only_anchor_when_unambiguous(tmp_path: Path) -> None:
    old = "function a() {\n  return 1;\n}\n\nfunction b() {\n  return 2;\n}\n"
    new = "function a() {\n  return 1;\n}\n\nfunction b() {\n  if (x) {\n    go();\n  }\n  return 2;\n}\n"
    # three closing braces in the file, only one of them added: that one
    assert at(tmp_path, old, new, "}") == Anchor(8, 8, "hunk_new", "new")
    two = new.replace("    go();\n  }\n", "    go();\n  }\n  if (y) {\n    stop();\n  }\n")
    assert at(tmp_path, old, two, "}") is None  # two added braces: which one is a guess
    assert at(tmp_path, old, two, "+  }") is None
    old3 = "def f():\n    return compute(1)\n"
    new3 = "def f():\n    try:\n        return compute(1)\n    finally:\n        pass\n"
    assert lines(at(tmp_path, old3, new3, "pass")) == (5, 5)
    many = "".join(f"def f{i}():\n    pass\n" for i in range(5))
    assert at(tmp_path, many, many.replace("f2", "g2"), "pass") is None  # five copies, none added
    assert at(tmp_path, many, many.replace("f2", "g2"), "8|    pass") == Anchor(8, 8, "hunk_new", "new")


def test_empty_and_blank_snippets(change: FileChange) -> None:
    for snippet in ("", "   ", "\n\n", "\r\n", "...", "+\n-\n"):
        assert anchor(snippet, change.hunks, NEW) is None, repr(snippet)


def test_prepared_index_gives_the_same_answers(change: FileChange) -> None:
    index = prepare(NEW, change.hunks)
    for snippet in ("if not data:", "-    with open(path) as fh:", "fh.write(data)", "nothing like this"):
        assert anchor_prepared(snippet, index) == anchor(snippet, change.hunks, NEW)


def test_without_hunks_the_whole_file_is_searched() -> None:
    assert anchor("fh.write(data)", (), NEW) == Anchor(14, 14, "file", "new")
