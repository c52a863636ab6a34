"""Suggested fixes as pure functions: re-indentation from the quote against the file, the decorations a
model copies (diff markers, `N|` prefixes, fences), the cases that get no fix, overlaps, and applying
fixes to CRLF files and files without a final line break. Patches go through the real `git apply`
in tests/test_fixes_e2e.py; here a real git checks our diff headers against its own."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_repo, write
from hypothesis import given, settings
from hypothesis import strategies as st

from ocr_hook.findings import Category, Finding, Fix, Severity
from ocr_hook.findings.fixes import apply_fixes, compute_fix, settle
from ocr_hook.reports.patch import file_diff, git_quoted
from ocr_hook.secrets_mask import MARKER

PY = """\
class Store:
    def load(self, path):
        if path:
            fh = open(path)
            data = fh.read()
            return data
        return None
"""
# lines 4-5 of PY: "            fh = open(path)" / "            data = fh.read()"

GO = "package main\n\nfunc main() {\n\tfor i := 0; i < 3; i++ {\n\t\tif i > 1 {\n\t\t\tprintln(i)\n\t\t}\n\t}\n}\n"
# lines 5-7 of GO: "\t\tif i > 1 {" / "\t\t\tprintln(i)" / "\t\t}"


def test_dedented_quote_gets_the_files_indentation_back() -> None:
    fix = compute_fix("fh = open(path)\ndata = fh.read()", "with open(path) as fh:\n    data = fh.read()",
                      PY, 4, 5)
    assert fix == Fix(4, 5, "            with open(path) as fh:\n                data = fh.read()")


def test_quote_as_in_the_file_keeps_the_suggestion_as_written() -> None:
    suggestion = "            with open(path) as fh:\n                data = fh.read()"
    assert compute_fix("            fh = open(path)\n            data = fh.read()", suggestion, PY, 4, 5) == Fix(
        4, 5, suggestion)


def test_partly_dedented_quote_shifts_by_the_difference() -> None:
    # quoted at 4 spaces where the file has 12: every suggestion line moves right by 8
    fix = compute_fix("    fh = open(path)\n    data = fh.read()",
                      "    with open(path) as fh:\n        data = fh.read()", PY, 4, 5)
    assert fix is not None
    assert fix.replacement == "            with open(path) as fh:\n                data = fh.read()"


def test_suggestion_left_of_its_partly_dedented_quote_keeps_that_offset() -> None:
    # quoted at 4 (file: 12), suggested at 0: the same "+8" puts it at 8, 4 left of the quote's lines
    fix = compute_fix("    fh = open(path)", "fh = open(path)", PY, 4, 4)
    assert fix == Fix(4, 4, " " * 8 + "fh = open(path)")


def test_over_indented_quote_shifts_left() -> None:
    quote = "\n".join(" " * 16 + line.strip() for line in ("fh = open(path)", "data = fh.read()"))
    fix = compute_fix(quote, " " * 16 + "data = open(path).read()", PY, 4, 5)
    assert fix == Fix(4, 5, " " * 12 + "data = open(path).read()")


def test_quote_starting_deeper_than_it_ends() -> None:
    quote = "    return data\nreturn None"  # lines 6-7, quoted 8 columns to the left
    fix = compute_fix(quote, "    return data\nreturn b''", PY, 6, 7)
    assert fix == Fix(6, 7, "            return data\n        return b''")


def test_tabs_stay_tabs() -> None:
    quote = "if i > 1 {\n\tprintln(i)\n}"
    fix = compute_fix(quote, "if i > 1 {\n\tfmt.Println(i)\n}", GO, 5, 7)
    assert fix == Fix(5, 7, "\t\tif i > 1 {\n\t\t\tfmt.Println(i)\n\t\t}")


def test_tab_file_quoted_with_spaces_gets_no_fix() -> None:
    # one "    " -> "\t\t" swap would leave lines indented with tabs and spaces together
    quote = "    if i > 1 {\n        println(i)\n    }"
    assert compute_fix(quote, "    if i > 2 {\n        println(i)\n    }", GO, 5, 7) is None


def test_plus_markers_are_stripped_from_quote_and_suggestion() -> None:
    quote = "+            fh = open(path)\n+            data = fh.read()"
    suggestion = "+            with open(path) as fh:\n+                data = fh.read()"
    fix = compute_fix(quote, suggestion, PY, 4, 5)
    assert fix == Fix(4, 5, "            with open(path) as fh:\n                data = fh.read()")


def test_marked_dedented_quote_and_diff_shaped_suggestion() -> None:
    # a hunk copied with its context column and dedented; the suggestion written as a diff too
    quote = " if path:\n+    fh = open(path)\n+    data = fh.read()"
    suggestion = (" if path:\n-    fh = open(path)\n-    data = fh.read()\n"
                  "+    with open(path) as fh:\n+        data = fh.read()")
    fix = compute_fix(quote, suggestion, PY, 3, 5)
    assert fix == Fix(3, 5, "        if path:\n            with open(path) as fh:\n                data = fh.read()")


def test_marked_quote_with_a_plain_suggestion() -> None:
    fix = compute_fix("+fh = open(path)\n+data = fh.read()", "data = open(path).read()", PY, 4, 5)
    assert fix == Fix(4, 5, "            data = open(path).read()")


def test_line_number_prefixes_are_stripped() -> None:
    quote = "4|            fh = open(path)\n5|            data = fh.read()"
    suggestion = "4|            with open(path) as fh:\n5|                data = fh.read()"
    fix = compute_fix(quote, suggestion, PY, 4, 5)
    assert fix == Fix(4, 5, "            with open(path) as fh:\n                data = fh.read()")


def test_fenced_suggestion_loses_its_fence_and_blank_edges() -> None:
    fix = compute_fix("fh = open(path)", "```python\n\nfh = open(path, encoding='utf-8')\n\n```\n", PY, 4, 4)
    assert fix == Fix(4, 4, "            fh = open(path, encoding='utf-8')")


def test_blank_lines_inside_the_suggestion_stay_blank() -> None:
    fix = compute_fix("fh = open(path)", "fh = open(path)\n\nfh.close()", PY, 4, 4)
    assert fix == Fix(4, 4, "            fh = open(path)\n\n            fh.close()")


def test_code_starting_like_a_marker_is_kept_when_the_quote_has_it_too() -> None:
    yaml_text = "steps:\n  - run: make\n  - run: test\n"
    assert compute_fix("- run: make\n- run: test", "- run: make\n- run: make test", yaml_text, 2, 3) == Fix(
        2, 3, "  - run: make\n  - run: make test")
    sql = "SELECT 1;\nSELECT 2;\n"
    assert compute_fix("SELECT 2;", "-- the second query\nSELECT 2 AS two;", sql, 2, 2) == Fix(
        2, 2, "-- the second query\nSELECT 2 AS two;")


def test_crlf_file_gets_a_plain_replacement() -> None:
    text = PY.replace("\n", "\r\n")
    fix = compute_fix("data = fh.read()\r\n", "data = fh.read(4096)\r\n", text, 5, 5)
    assert fix == Fix(5, 5, "            data = fh.read(4096)")


@pytest.mark.parametrize(("quote", "suggestion", "start", "end"), [
    ("fh = open(path)\ndata = fh.read()", "fh = open(path)\ndata = fh.read()", 4, 5),  # equal to the lines
    ("fh = open(path)", "fh = open(path)   ", 4, 4),  # equal once re-indented (trailing space aside)
    ("fh = open(path)", "", 4, 4),  # nothing suggested
    ("fh = open(path)", "  \n", 4, 4),
    ("fh = open(path)\n...\nreturn data", "fh = open(path)\nreturn fh.read()", 4, 6),  # `...`: not the whole range
    ("fh = open(pa", "fh = open(path, 'rb')", 4, 4),  # cut short: not the whole line
    ("fh = open(path)", f"fh = open({MARKER})", 4, 4),  # would write the mask into the file
    ("fh = open(path)", "fh = open(path)  # \u202eevil", 4, 4),  # a bidi override (trojan source)
    ("fh = open(path)", "fh = open(path)\x1b[2J", 4, 4),  # a terminal escape
    ("fh = open(path)", "fh = open(path)\rx = 1", 4, 4),  # a bare CR inside a line
    # quoted 4 columns deeper than the file: a suggestion line left of that has nowhere to go
    (" " * 16 + "fh = open(path)", "fh = open(path)", 4, 4),
    ("fh = open(path)\n    data = fh.read()", "x = 1", 4, 5),  # quote's relative indentation differs
    ("fh = open(path)", "-fh = open(path)\n+fh = open(path, 'rb')", 4, 4),  # a diff the quote was not
    ("fh = open(path)", "+fh = open(path, 'rb')", 4, 4),
    ("fh = open(path)", "4|fh = open(path, 'rb')", 4, 4),  # `N|` prefixes the quote did not have
    ("   \n", "x = 1", 4, 4),  # nothing quoted
    ("fh = open(path)", "x = 1", 0, 0),  # not anchored
    ("fh = open(path)", "x = 1", 8, 9),  # past the end
    ("data = fh.read()", "x = 1", 4, 4),  # a quote of other lines than the anchored ones
])
def test_no_fix(quote: str, suggestion: str, start: int, end: int) -> None:
    assert compute_fix(quote, suggestion, PY, start, end) is None


@pytest.mark.parametrize(("quote", "suggestion", "text", "start", "end"), [
    # spacing inside a line differs from the file's: applying would rewrite the string's three spaces
    ('msg = "Hello, world"', 'msg = "Bye, world"', 'x = 1\nmsg = "Hello,   world"\n', 2, 2),
    # aligned fields quoted with single spaces: the "fix" would only break the alignment
    ("Name string\nAge int", "Name string\nAge int", "type P struct {\n\tName string\n\tAge  int\n}\n", 2, 3),
    # a blank line of the anchored range left out of the quote: the fix would delete it
    ("First paragraph.\nSecond paragraph.", "One.\nTwo.", "First paragraph.\n\nSecond paragraph.\n", 1, 3),
])
def test_no_fix_when_the_quote_is_not_the_lines_as_written(quote: str, suggestion: str, text: str, start: int,
                                                          end: int) -> None:
    assert compute_fix(quote, suggestion, text, start, end) is None


def test_blank_lines_around_the_quote_do_not_matter() -> None:
    assert compute_fix("\nfh = open(path)\n\n", "fh = open(path, 'rb')", PY, 4, 4) == \
        Fix(4, 4, "            fh = open(path, 'rb')")


def _finding(path: str, start: int, end: int, severity: Severity, name: str, suppressed: str | None = None) -> Finding:
    return Finding(path=path, start_line=start, end_line=end, severity=severity, category=Category.BUG,
                   message=name, suggestion="x", anchored=True, fingerprint=name, suppressed=suppressed,
                   fix=Fix(start, end, "x"))


def test_overlapping_fixes_the_more_severe_wins() -> None:
    items = [
        _finding("a.py", 3, 5, Severity.LOW, "low"),
        _finding("a.py", 5, 6, Severity.HIGH, "high"),  # overlaps `low` on line 5: wins
        _finding("a.py", 7, 7, Severity.LOW, "adjacent"),  # touches nothing: kept
        _finding("a.py", 6, 8, Severity.HIGH, "same-severity-later"),  # overlaps `high`, starts later: loses
        _finding("b.py", 3, 5, Severity.LOW, "other-file"),  # another file: kept
        _finding("a.py", 1, 1, Severity.CRITICAL, "suppressed", suppressed="inline"),
    ]
    settled = {f.message: f for f in settle(items)}
    assert {name for name, f in settled.items() if f.fix is not None} == {"high", "adjacent", "other-file"}
    assert settled["low"].suggestion == "x"  # the suggestion stays, as text
    assert [f.message for f in settle(items)] == [f.message for f in items]  # order and members kept


def test_apply_fixes_keeps_crlf_and_the_missing_final_line_break() -> None:
    text = "a\r\nb\r\nc\r\nd"
    out = apply_fixes(text, [Fix(2, 2, "B1\nB2"), Fix(4, 4, "D")])
    assert out == "a\r\nB1\r\nB2\r\nc\r\nD"
    assert apply_fixes("one\ntwo\n", [Fix(1, 2, "three")]) == "three\n"
    # the last line of a CRLF file without a final line break: new lines take the file's CRLF
    assert apply_fixes("a\r\nb = 1", [Fix(2, 2, "b = 2\nc = 3")]) == "a\r\nb = 2\r\nc = 3"


@pytest.mark.parametrize("name", ["plain.py", "with space.py", 'quote"d.py', "back\\slash.py", "tab\there.py",
                                  "ünïcode.py"])
def test_diff_headers_name_files_as_git_does(tmp_path: Path, name: str) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, f"dir/{name}", "one\ntwo\n")
    commit_all(repo, "base")
    write(repo, f"dir/{name}", "one\n2\n")
    ours = file_diff(f"dir/{name}", "one\ntwo\n", "one\n2\n")
    theirs = git(repo, "-c", "core.quotePath=false", "diff", "--no-color", "--no-ext-diff",
                 "--src-prefix=a/", "--dst-prefix=b/")
    header = [line for line in theirs.splitlines(keepends=True) if line.startswith(("diff --git", "--- ", "+++ "))]
    assert ours.splitlines(keepends=True)[:3] == header
    assert git_quoted(f"a/dir/{name}") in theirs
    # and git reads ours back: check it against the committed file after undoing the edit
    git(repo, "checkout", "--", ".")
    patch = tmp_path / "fix.patch"
    patch.write_bytes(ours.encode("utf-8", "surrogateescape"))
    proc = subprocess.run(["git", "apply", "--check", str(patch)], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_a_settled_finding_is_still_a_finding() -> None:
    f = _finding("a.py", 1, 1, Severity.LOW, "only")
    assert settle([f]) == [f]
    assert settle([f._replace(fix=None)])[0].fix is None


# --- properties: a quote re-indented or decorated any way the model does, the same edit results ----------

@st.composite
def _case(draw: st.DrawFn) -> tuple[str, str, str, int, int, str]:
    """(file text, quote, suggestion, start, end, expected text after the fix)."""
    unit = draw(st.sampled_from(["    ", "  ", "\t"]))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    base = draw(st.integers(0, 3))
    levels = draw(st.lists(st.integers(0, 2), min_size=1, max_size=6))
    levels[0] = 0
    for i in range(1, len(levels)):  # code nests one level at a time
        levels[i] = min(levels[i], levels[i - 1] + 1)
    block = [unit * (base + level) + f"v{i} = call({i})" for i, level in enumerate(levels)]
    above = ["def outer():", unit + "setup()"]
    lines = above + block + [unit + "teardown()"]
    start, end = len(above) + 1, len(above) + len(block)
    final_eol = draw(st.booleans())
    text = eol.join(lines) + (eol if final_eol else "")

    dedent = draw(st.integers(0, base))  # how far left the model moved the quote
    changed = draw(st.integers(0, len(block) - 1))
    quoted = [line[len(unit) * dedent:] for line in block]
    suggested = [line.replace(f"v{changed} =", f"w{changed} =") for line in quoted]
    style = draw(st.sampled_from(["plain", "plus", "numbered", "fenced"]))
    if style == "plus":
        quoted, suggested = ["+" + line for line in quoted], ["+" + line for line in suggested]
    elif style == "numbered":
        quoted = [f"{start + i}|{line}" for i, line in enumerate(quoted)]
        suggested = [f"{start + i}|{line}" for i, line in enumerate(suggested)]
    elif style == "fenced":
        quoted, suggested = ["```", *quoted, "```"], ["```python", *suggested, "```"]
    expected_lines = [line.replace(f"v{changed} =", f"w{changed} =") for line in lines]
    expected = eol.join(expected_lines) + (eol if final_eol else "")
    return text, "\n".join(quoted), "\n".join(suggested), start, end, expected


@settings(max_examples=200, deadline=None)
@given(_case())
def test_any_dedent_or_decoration_gives_the_same_edit(case: tuple[str, str, str, int, int, str]) -> None:
    text, quote, suggestion, start, end, expected = case
    fix = compute_fix(quote, suggestion, text, start, end)
    assert fix is not None
    assert (fix.start_line, fix.end_line) == (start, end)
    assert apply_fixes(text, [fix]) == expected


def test_build_patch_settles_overlaps_and_skips_what_does_not_fit() -> None:
    from ocr_hook.reports.patch import build_patch

    text = "a\nb\nc\n"
    items = [
        _finding("f.txt", 1, 2, Severity.LOW, "low")._replace(fix=Fix(1, 2, "A\nB")),
        _finding("f.txt", 2, 3, Severity.HIGH, "high")._replace(fix=Fix(2, 3, "BC")),
        _finding("g.txt", 5, 5, Severity.LOW, "stale")._replace(fix=Fix(5, 5, "x")),
    ]
    patch, notes = build_patch(items, {"f.txt": text, "g.txt": text})
    assert patch == "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,2 @@\n a\n-b\n-c\n+BC\n"
    assert len(notes) == 1 and "g.txt" in notes[0]
