"""Properties of the anchoring matcher and normaliser, checked by hypothesis on generated files.

Hunks are built from difflib's grouped opcodes (the structure of a unified diff with 3 lines of
context); the matcher only reads the Hunk model, so no patch text is needed here.
"""

from __future__ import annotations

import difflib

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ocr_hook.changes.model import DiffLine, Hunk
from ocr_hook.findings.anchoring import anchor, prepare
from ocr_hook.findings.normalise import forms, is_trivial, norm_line

# Lines chosen to collide: repeats, lines that look like diff markers, `N|` prefixes or `...`,
# braces and keywords that are trivial, and the same code with different spacing.
VOCAB = [
    "x = 1", "x=1", "y = x + 2", "return y", "if x:", "else:", "}", "{", "", "  ", "foo(bar)",
    "call(a, b)", "call(a,b)", "- item", "+ more", "-x", "12|odd", "...", "pass", "# note",
    "value = compute(x)", "deeper()", "end", "return None", "self.items.append(value)",
    "raise ValueError(msg)", "for i in range(10):", "@@ -1 +1 @@",
]
INDENTS = ["", "    ", "\t", "  "]
line_st = st.builds(lambda indent, text: (indent + text) if text.strip() else text,
                    st.sampled_from(INDENTS), st.sampled_from(VOCAB))
file_st = st.lists(line_st, min_size=1, max_size=40)

SETTINGS = settings(max_examples=150, deadline=None)


def hunks_between(old: list[str], new: list[str]) -> tuple[Hunk, ...]:
    out = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for group in matcher.get_grouped_opcodes(3):
        rows: list[DiffLine] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [DiffLine(" ", old[i1 + k], i1 + k + 1, j1 + k + 1) for k in range(i2 - i1)]
                continue
            rows += [DiffLine("-", old[i], i + 1, None) for i in range(i1, i2)]
            rows += [DiffLine("+", new[j], None, j + 1) for j in range(j1, j2)]
        o1, o2, n1, n2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(Hunk(o1 + 1 if o2 > o1 else o1, o2 - o1, n1 + 1 if n2 > n1 else n1, n2 - n1, tuple(rows)))
    return tuple(out)


def text_of(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def keys_of(lines: list[str]) -> tuple[str, ...]:
    return tuple(k for k in (norm_line(line) for line in lines) if k)


def count(keys: tuple[str, ...], seq: tuple[str, ...]) -> int:
    m = len(keys)
    return sum(1 for i in range(len(seq) - m + 1) if seq[i : i + m] == keys)


def old_sides(hunks: tuple[Hunk, ...]) -> list[tuple[str, ...]]:
    return [keys_of([r.text for r in h.lines if r.kind != "+"]) for h in hunks]


def overlaps_hunk(hunks: tuple[Hunk, ...], start: int, end: int) -> bool:
    return any(h.new_len and start <= h.new_start + h.new_len - 1 and end >= h.new_start for h in hunks)


def added_lines(hunks: tuple[Hunk, ...]) -> set[int]:
    return {r.new_no for h in hunks for r in h.lines if r.kind == "+" and r.new_no}


def pick_range(new: list[str], data: st.DataObject) -> tuple[int, int]:
    i = data.draw(st.integers(0, len(new) - 1))
    j = data.draw(st.integers(i, min(len(new) - 1, i + 6)))
    while i <= j and not new[i].strip():
        i += 1
    while j >= i and not new[j].strip():
        j -= 1
    assume(i <= j)
    return i, j


@SETTINGS
@given(old=file_st, new=file_st, data=st.data())
def test_exact_copy_of_a_unique_range_anchors_to_that_range(old: list[str], new: list[str],
                                                            data: st.DataObject) -> None:
    i, j = pick_range(new, data)
    hunks = hunks_between(old, new)
    keys = keys_of(new[i : j + 1])
    assume(count(keys, keys_of(new)) == 1)
    # Outside the hunks, a copy among deleted lines comes first (stage order); and a range of trivial
    # lines (braces, `x = 1`) is unique only if no deleted line repeats it either.
    in_old = any(count(keys, side) for side in old_sides(hunks))
    trivial = all(is_trivial(k) for k in keys)
    assume(not in_old or (overlaps_hunk(hunks, i + 1, j + 1) and not trivial))
    got = anchor("\n".join(new[i : j + 1]), hunks, text_of(new))
    assert got is not None and (got.start_line, got.end_line) == (i + 1, j + 1)
    assert got.side == "new"


@SETTINGS
@given(old=file_st, base=file_st, data=st.data())
def test_repeated_code_anchors_to_a_copy_and_prefers_an_added_one(old: list[str], base: list[str],
                                                                  data: st.DataObject) -> None:
    i, j = pick_range(base, data)
    keys = keys_of(base[i : j + 1])
    assume(not all(is_trivial(k) for k in keys))
    at = data.draw(st.sampled_from([*range(i + 1), *range(j + 1, len(base) + 1)]))
    new = base[:at] + base[i : j + 1] + base[at:]  # a second copy somewhere
    hunks = hunks_between(old, new)
    got = anchor("\n".join(base[i : j + 1]), hunks, text_of(new))
    assert got is not None
    added = added_lines(hunks)
    nonblank = [n for n, line in enumerate(new, 1) if line.strip()]
    m = len(keys)
    copies = [(nonblank[k], nonblank[k + m - 1]) for k in range(len(nonblank) - m + 1)
              if keys_of([new[n - 1] for n in nonblank[k : k + m]]) == keys]
    assert len(copies) >= 2
    if any(any(s <= n <= e for n in added) for s, e in copies):
        assert got.side == "new"
        assert (got.start_line, got.end_line) in copies
        assert any(got.start_line <= n <= got.end_line for n in added)
    elif got.side == "new":
        assert (got.start_line, got.end_line) in copies


@SETTINGS
@given(old=file_st, new=file_st, data=st.data(),
       wrap=st.sampled_from(["plain", "plus", "numbers", "indent", "dots"]))
def test_a_snippet_with_a_line_absent_from_the_file_never_anchors(old: list[str], new: list[str],
                                                                  data: st.DataObject, wrap: str) -> None:
    i, j = pick_range(new, data)
    quoted = list(new[i : j + 1])
    at = data.draw(st.integers(0, len(quoted)))
    quoted.insert(at, data.draw(st.sampled_from(["Qz = 1", "call(Qz)", "return Qzv", "  qZ.run()"])))
    if wrap == "plus":
        quoted = ["+" + line for line in quoted]
    elif wrap == "numbers":
        quoted = [f"{n}|{line}" for n, line in enumerate(quoted, start=i + 1)]
    elif wrap == "indent":
        quoted = ["        " + line for line in quoted]
    elif wrap == "dots":
        quoted.insert(data.draw(st.integers(0, len(quoted))), "...")
    assert anchor("\n".join(quoted), hunks_between(old, new), text_of(new)) is None


@settings(max_examples=300, deadline=None)
@given(old=st.text(max_size=300), new=st.text(max_size=300), snippet=st.text(max_size=120))
def test_arbitrary_text_never_raises_and_stays_in_the_file(old: str, new: str, snippet: str) -> None:
    new_lines = new.split("\n")
    hunks = hunks_between(old.split("\n"), new_lines)
    index = prepare(new, hunks)
    for quoted in (snippet, snippet + "\n" + new[:80], new[10:90], "+" + new[:40]):
        got = anchor(quoted, hunks, new)
        if got is not None:
            assert 1 <= got.start_line <= got.end_line <= max(1, index.line_count)


@settings(max_examples=200, deadline=None)
@given(blob=st.binary(max_size=400), snippet=st.binary(max_size=100),
       shift=st.integers(-50, 50), length=st.integers(0, 30))
def test_bytes_and_inconsistent_hunks_never_raise(blob: bytes, snippet: bytes, shift: int, length: int) -> None:
    new = blob.decode("utf-8", "surrogateescape")
    quoted = snippet.decode("utf-8", "surrogateescape")
    # hunks that do not fit the file (numbers past its end, negative starts) must not break anything
    rows = tuple(DiffLine("+" if n % 2 else "-", quoted[:n], n if n % 3 else None, n + shift if n % 2 else None)
                 for n in range(length))
    hunks = (Hunk(shift, length, shift, length, rows),)
    for text in (quoted, new[:50], "\n".join(r.text for r in rows)):
        got = anchor(text, hunks, new)
        if got is not None:
            assert got.start_line >= 1 and got.end_line >= got.start_line


@SETTINGS
@given(lines=st.lists(line_st, min_size=1, max_size=8),
       marker=st.sampled_from(["", "+", "-"]), numbered=st.booleans(), cr=st.booleans())
def test_normaliser_readings_contain_the_code_without_decoration(lines: list[str], marker: str,
                                                                 numbered: bool, cr: bool) -> None:
    assume(any(line.strip() for line in lines))
    decorated = [f"{n}|{marker}{line}" if numbered else marker + line for n, line in enumerate(lines, 1)]
    snippet = ("\r\n" if cr else "\n").join(decorated)
    readings = [keys_of(list(form.lines)) for form in forms(snippet)]
    assert keys_of(lines) in readings
    assert keys_of(decorated) == readings[0]  # the literal reading always comes first
