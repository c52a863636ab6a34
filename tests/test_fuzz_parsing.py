"""Issue 7, robust parsing: property-based fuzzing of the diff model and of anchoring on parsed diffs.

The diff parser (ocr_hook.changes.diff_parse) reads what git prints, decoded with surrogateescape. Over
random bytes, text in odd encodings (latin-1, UTF-16 with a BOM, lone surrogates, CR/LF mixes, NULs,
Unicode line separators) and random edits of real diffs made by git from a scratch repository, it either
returns a consistent model or raises its one documented error, DiffParseError. Anchoring then never
raises on whatever the parser accepted and never anchors outside the reviewed file's lines.

(tests/test_anchoring_properties.py covers the matcher on generated files; this module feeds it what
the parser makes of hostile input.)
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from gitrepo import commit_all, git, make_repo, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ocr_hook.changes import git as g
from ocr_hook.changes.collect import diff_args
from ocr_hook.changes.diff_parse import DiffParseError, parse_changes, parse_raw, split_patches
from ocr_hook.changes.model import FileChange
from ocr_hook.findings.anchoring import anchor

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SHA_A = "a" * 40
SHA_B = "b" * 40

BEFORE: dict[str, bytes] = {
    "latin1.txt": "caf\xe9\nna\xefve\nend\n".encode("latin-1"),
    "utf16.txt": "hello\nworld\n".encode("utf-16"),  # BOM and NULs: git calls it binary
    "crlf.txt": b"one\r\ntwo\r\nthree\r\n",
    "surrogates.txt": b"ok\n\xed\xa0\x80 lone surrogate bytes\n\xff\xfe broken\n",
    "no_eol.txt": b"a\nb",
    "header_like.txt": b"diff --git a/x b/x\n@@ -1 +1 @@\n--- a/x\n+++ b/x\nplain\n",
    "separators.txt": "a\u2028b\x0cc\x85d\x1ce\rf\n".encode(),
    "to_rename.py": b"".join(b"def f%d():\n    return %d\n" % (n, n) for n in range(12)),
    "to_delete.py": b"gone = True\n",
    "mode.sh": b"echo hi\n",
    "big.py": b"".join(b"value_%03d = %d\n" % (n, n) for n in range(200)),
}
AFTER: dict[str, bytes] = {
    "latin1.txt": "caf\xe9!\nna\xefve\nend\n".encode("latin-1"),
    "utf16.txt": "hello\nthere\n".encode("utf-16"),
    "crlf.txt": b"one\r\n2\r\nthree\r\n",
    "surrogates.txt": b"ok\n\xed\xa0\x80 lone surrogate bytes changed\n\xff\xfe broken\n\xc3\n",
    "no_eol.txt": b"a\nc",
    "header_like.txt": b"diff --git a/y b/y\n@@ -1 +1 @@\n--- a/x\n+++ b/y\nplain\n\\ No newline\n",
    "separators.txt": "a\u2028b\x0cc\x85d\x1ce\rf\ng\u2029h\n".encode(),
    "renamed.py": b"".join(b"def f%d():\n    return %d\n" % (n, n * (n != 5)) for n in range(12)),
    "nul.bin": b"abc\x00def",
    "big.py": b"".join(b"value_%03d = %d\n" % (n, n + (n % 37 == 0)) for n in range(200)),
    os.fsdecode(b"bad\xffname.txt"): b"non-UTF-8 name\n",
    "new\tfile with spaces.txt": b"tab in the name\n",
}


class RealDiff:
    def __init__(self, raw: str, patch: str, texts: dict[str, str]) -> None:
        self.raw = raw
        self.patch = patch
        self.texts = texts  # path -> staged content, decoded the way the review decodes it


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> RealDiff:
    root = make_repo(tmp_path_factory.mktemp("fuzz") / "repo")
    for path, data in BEFORE.items():
        write(root, path, data)
    commit_all(root, "before")
    git(root, "rm", "-q", "to_rename.py", "to_delete.py")
    for path, data in AFTER.items():
        write(root, path, data)
    os.chmod(root / "mode.sh", 0o755)
    os.symlink("big.py", root / "link.py")
    git(root, "add", "-A")
    args = diff_args(g.resolve_commit(str(root), "HEAD"), None)
    raw = g.git_text(str(root), [*args, "--raw", "-z", "--no-abbrev", "--"])
    patch = g.git_text(str(root), [*args, *g.PATCH_OPTIONS, "--"])
    texts = {}
    for path in [*AFTER, "mode.sh", "link.py"]:
        data = (root / path).read_bytes() if not (root / path).is_symlink() else b"big.py"
        texts[path] = g.decode(data)
    return RealDiff(raw, patch, texts)


def check_model(changes: list[FileChange]) -> None:
    """What the rest of the review relies on in a parsed change."""
    for change in changes:
        assert isinstance(change.path, str) and change.path
        plus = [line for h in change.hunks for line in h.lines if line.kind == "+"]
        minus = [line for h in change.hunks for line in h.lines if line.kind == "-"]
        assert (change.added, change.removed) == (len(plus), len(minus))
        for hunk in change.hunks:
            for line in hunk.lines:
                assert line.kind in ("+", "-", " ")
                assert "\n" not in line.text
                assert (line.new_no is None) == (line.kind == "-") and (line.old_no is None) == (line.kind == "+")
                assert all(n is None or n >= 0 for n in (line.old_no, line.new_no))
            numbers = [line.new_no for line in hunk.lines if line.new_no is not None]
            assert numbers == sorted(numbers)


def line_count(text: str) -> int:
    """Lines as findings count them: only "\\n" ends a line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return len(lines)


def assert_anchors_inside(snippet: str, change: FileChange, text: str) -> None:
    got = anchor(snippet, change.hunks, text)
    if got is not None:
        assert 1 <= got.start_line <= got.end_line <= max(1, line_count(text)), (got, line_count(text))
        assert got.side in ("new", "old")


# --- the real diff itself -----------------------------------------------------------------------------


def test_the_real_diff_parses_completely(real: RealDiff) -> None:
    changes = parse_changes(real.raw, real.patch)
    check_model(changes)
    by_path = {c.path: c for c in changes}
    assert set(AFTER) - {"renamed.py"} <= set(by_path)
    assert by_path["utf16.txt"].is_binary and by_path["nul.bin"].is_binary
    # A line holding form feeds, NEL, Unicode separators or a lone CR is still one line.
    separators = [line.text for h in by_path["separators.txt"].hunks for line in h.lines]
    assert "a\u2028b\x0cc\x85d\x1ce\rf" in separators
    assert [line.text for h in by_path["crlf.txt"].hunks for line in h.lines if line.kind == "+"] == ["2"]


# --- random input -------------------------------------------------------------------------------------


def _decoded(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _only_parse_errors(fn: Callable[[], object]) -> object | None:
    try:
        return fn()
    except DiffParseError:
        return None


@FUZZ
@given(raw=st.binary(max_size=600), patch=st.binary(max_size=2_000))
def test_random_bytes_raise_nothing_but_diff_parse_error(raw: bytes, patch: bytes) -> None:
    raw_text, patch_text = _decoded(raw), _decoded(patch)
    _only_parse_errors(lambda: parse_raw(raw_text))
    _only_parse_errors(lambda: split_patches(patch_text))
    changes = _only_parse_errors(lambda: parse_changes(raw_text, patch_text))
    if changes is not None:
        check_model(changes)  # type: ignore[arg-type]


@FUZZ
@given(rows=st.lists(st.tuples(st.sampled_from(["+", "-", " ", "\\"]), st.binary(max_size=40)), max_size=12),
       old_delta=st.sampled_from([0, 0, 0, 1, -1]), new_delta=st.sampled_from([0, 0, 0, 2, -1]),
       start=st.integers(0, 5), tail=st.binary(max_size=30), funcname=st.binary(max_size=20))
def test_random_bytes_in_hunks_of_random_shape(rows: list[tuple[str, bytes]], old_delta: int, new_delta: int,
                                               start: int, tail: bytes, funcname: bytes) -> None:
    """Lines of random bytes under a hunk header whose counts are right, or off by a little."""
    body = "".join(kind + _decoded(data.replace(b"\n", b" ")) + "\n" for kind, data in rows)
    old_len = sum(kind in "- " for kind, _ in rows) + old_delta
    new_len = sum(kind in "+ " for kind, _ in rows) + new_delta
    context = _decoded(funcname.replace(b"\n", b""))
    header = f"@@ -{start},{old_len} +{start},{new_len} @@ {context}\n"
    patch = f"diff --git a/f b/f\nindex 1111111..2222222 100644\n--- a/f\n+++ b/f\n{header}{body}{_decoded(tail)}"
    raw = f":100644 100644 {SHA_A} {SHA_B} M\0f\0"
    changes = _only_parse_errors(lambda: parse_changes(raw, patch))
    if changes is not None:
        check_model(changes)  # type: ignore[arg-type]


ENCODINGS = ["utf-8", "latin-1", "utf-16", "utf-8-sig", "cp1252", "utf-16-le"]
odd_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=40) | st.sampled_from(
    ["caf\xe9", "\ufeffbom", "a\u2028b", "x\x0cy", "tab\tz", "nel\x85", "cr\rmid", "\x00nul", "\U0001f600"])


@FUZZ
@given(lines=st.lists(odd_text, min_size=1, max_size=8), encoding=st.sampled_from(ENCODINGS),
       crlf=st.booleans(), surrogate=st.booleans())
def test_odd_encodings_round_trip_line_by_line(lines: list[str], encoding: str, crlf: bool, surrogate: bool) -> None:
    """An added file's lines come back exactly as git shows them, whatever bytes they hold."""
    encoded = [line.replace("\n", " ").encode(encoding, "replace") for line in lines]
    if surrogate:
        encoded[0] += b"\xed\xa0\x80\xff"
    if encoding.startswith("utf-16"):  # its newline bytes are not b"\n" alone; keep lines apart
        encoded = [e.replace(b"\n", b"") for e in encoded]
    decoded = [_decoded(e) for e in encoded]
    body = "".join(f"+{line}" + ("\r\n" if crlf else "\n") for line in decoded)
    patch = f"diff --git a/f b/f\nnew file mode 100644\nindex 0000000..2222222\n--- /dev/null\n+++ b/f\n" \
            f"@@ -0,0 +1,{len(decoded)} @@\n{body}"
    raw = f":000000 100644 {'0' * 40} {SHA_B} A\0f\0"
    changes = _only_parse_errors(lambda: parse_changes(raw, patch))
    if changes is None:
        return
    check_model(changes)  # type: ignore[arg-type]
    [change] = changes  # type: ignore[misc]
    got = [line.text for h in change.hunks for line in h.lines]
    assert got == [line.removesuffix("\r") if not crlf else line for line in decoded] or got == decoded
    assert [line.new_no for h in change.hunks for line in h.lines] == list(range(1, len(decoded) + 1))


# --- random edits of a real diff ------------------------------------------------------------------------

JUNK = st.binary(max_size=24).map(_decoded) | st.sampled_from(
    ["@@ -1,2 +1,2 @@", "@@ -99999 +0,0 @@", "@@ -a +b @@", "diff --git a/f b/f", "--- a/f", "+++ b/f", "\\ No newline",
     "+", "-", " ", "", "\r", "\x00", "Binary files a/f and b/f differ", "rename from x", "new file mode 120000"])


def _edit(lines: list[str], data: st.DataObject) -> list[str]:
    lines = list(lines)
    for _ in range(data.draw(st.integers(1, 4))):
        if not lines:
            lines.append(data.draw(JUNK))
            continue
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["delete", "duplicate", "swap", "replace", "insert", "digits", "marker",
                                        "truncate", "cr", "nul"]))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap" and i + 1 < len(lines):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
        elif op == "replace":
            lines[i] = data.draw(JUNK)
        elif op == "insert":
            lines.insert(i, data.draw(JUNK))
        elif op == "digits":
            lines[i] = "".join(str(data.draw(st.integers(0, 99999))) if c.isdigit() else c for c in lines[i])
        elif op == "marker" and lines[i]:
            lines[i] = data.draw(st.sampled_from(["+", "-", " ", "\\", "@", "d"])) + lines[i][1:]
        elif op == "truncate":
            lines = lines[:i]
        elif op == "cr":
            lines[i] += "\r"
        elif op == "nul":
            lines[i] = lines[i][: len(lines[i]) // 2] + "\x00" + lines[i][len(lines[i]) // 2:]
    return lines


@FUZZ
@given(data=st.data())
def test_random_edits_of_a_real_patch(real: RealDiff, data: st.DataObject) -> None:
    edited = "\n".join(_edit(real.patch.split("\n"), data))
    changes = _only_parse_errors(lambda: parse_changes(real.raw, edited))
    if changes is None:
        return
    check_model(changes)  # type: ignore[arg-type]
    # Whatever the parser accepted, anchoring on it never raises nor leaves the file.
    for change in changes:  # type: ignore[attr-defined]
        text = real.texts.get(change.path, "")
        for line in [line for h in change.hunks for line in h.lines][:3]:
            assert_anchors_inside(line.text, change, text)


@FUZZ
@given(data=st.data())
def test_random_edits_of_a_real_raw_listing(real: RealDiff, data: st.DataObject) -> None:
    fields = _edit(real.raw.split("\0"), data)
    raw = "\0".join(fields)
    _only_parse_errors(lambda: parse_raw(raw))
    changes = _only_parse_errors(lambda: parse_changes(raw, real.patch))
    if changes is not None:
        check_model(changes)  # type: ignore[arg-type]


# --- anchoring on what the parser made of real diffs ------------------------------------------------------

DECORATIONS = ["plain", "plus", "minus", "numbered", "indented", "crlf", "dots", "junk", "tabs"]


@FUZZ
@given(data=st.data(), decoration=st.sampled_from(DECORATIONS))
def test_anchoring_random_snippets_on_parsed_real_diffs(real: RealDiff, data: st.DataObject, decoration: str) -> None:
    changes = [c for c in parse_changes(real.raw, real.patch) if c.path in real.texts]
    change = data.draw(st.sampled_from(changes))
    text = real.texts[change.path]
    source = text.split("\n") + [line.text for h in change.hunks for line in h.lines]
    start = data.draw(st.integers(0, max(0, len(source) - 1)))
    picked = source[start : start + data.draw(st.integers(1, 6))]
    if decoration == "plus":
        picked = ["+" + p for p in picked]
    elif decoration == "minus":
        picked = ["-" + p for p in picked]
    elif decoration == "numbered":
        picked = [f"{start + n + 1}|{p}" for n, p in enumerate(picked)]
    elif decoration == "indented":
        picked = ["    " + p.strip() for p in picked]
    elif decoration == "dots":
        picked.insert(data.draw(st.integers(0, len(picked))), "...")
    elif decoration == "junk":
        picked.insert(data.draw(st.integers(0, len(picked))), data.draw(JUNK))
    elif decoration == "tabs":
        picked = [p.replace("    ", "\t") for p in picked]
    snippet = ("\r\n" if decoration == "crlf" else "\n").join(picked)
    assert_anchors_inside(snippet, change, text)
    # The same snippet against a text that no longer matches the hunks (a stale or odd snapshot).
    assert_anchors_inside(snippet, change, data.draw(st.sampled_from(list(real.texts.values()))))
