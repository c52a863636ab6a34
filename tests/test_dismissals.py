"""The dismissals file's pure part (ocr_hook.findings.dismissals): its format, its checks, and what it teaches."""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest

from ocr_hook.errors import ConfigError
from ocr_hook.findings import Category, Finding, Severity
from ocr_hook.findings import dismissals as d

TODAY = dt.date(2026, 12, 1)


def entry(n: int, *, on: dt.date = TODAY, expires: dt.date | None = None, paths: tuple[str, ...] = ("src/**",),
          reason: str = "") -> d.Dismissal:
    return d.Dismissal(hashlib.md5(str(n).encode()).hexdigest(), f"src/m{n}.py", "bug", "high", f"message {n}",
                       reason or f"reason {n}", paths,
                       "dev@example.com" if n % 2 else None, on, expires)


def finding(fp: str, path: str = "src/m1.py") -> Finding:
    return Finding(path, 2, 2, Severity.HIGH, Category.BUG, "m", None, True, fp)


def test_the_file_round_trips_and_a_new_entry_only_appends() -> None:
    one = [entry(1, expires=dt.date(2027, 3, 1))]
    two = [*one, entry(2, reason="a 'quoted' reason: with\na line break and ünïcode")]
    assert d.parse_text(d.file_text(two), "f") == tuple(two)
    assert d.file_text(two).startswith(d.file_text(one))
    assert d.file_text(two) == d.file_text(d.parse_text(d.file_text(two), "f"))


def test_a_hand_written_entry_with_an_unquoted_on_key_and_no_paths_reads() -> None:
    text = ("dismissed:\n  - fingerprint: " + "a" * 32 + "\n    path: src/app.py\n    category: bug\n"
            "    severity: high\n    message: \"m\"\n    reason: \"validated by the caller\"\n    on: 2026-12-01\n")
    [e] = d.parse_text(text, "f")
    assert e.on == TODAY and e.paths == ("src/app.py",) and e.by is None and e.expires is None


@pytest.mark.parametrize(("text", "expected"), [
    ("dismissed: [\n", "dismissals file f: line"),
    ("- a\n", "expected a mapping with one key 'dismissed'"),
    ("dismissed: {}\n", "'dismissed' must be a list"),
    ("dismissed: [3]\n", "entry 1: must be a mapping"),
    ("dismissed: [{fingerprint: x}]\n", "entry 1: missing key 'path'"),
    ("dismissed: [{fingerprint: x, colour: red}]\n", "unknown key 'colour'"),
])
def test_bad_shapes_are_one_line_errors_naming_the_file(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        d.parse_text(text, "f")
    assert expected in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("fingerprint", "ABC", "32 lowercase hex"),
    ("category", "typo", "unknown category"),
    ("severity", "urgent", "unknown severity"),
    ("reason", "  ", "'reason' must be non-empty text"),
    ("paths", "src/**", "'paths' must be a non-empty list"),
    ("paths", ["!"], "'paths':"),
    ("on", "yesterday", "'on' must be a date"),
    ("expires", 5, "'expires' must be a date"),
    ("by", 3, "'by' must be text"),
])
def test_wrong_types_are_refused(key: str, value: object, expected: str) -> None:
    data = entry(1).as_dict()
    data[key] = value
    with pytest.raises(ConfigError, match=expected):
        d.parse_data({"dismissed": [data]}, "f")


def test_expiry_is_exclusive_of_its_date_and_a_later_unexpired_entry_wins() -> None:
    lapsed = entry(1, expires=TODAY)
    assert lapsed.expired(TODAY) and not lapsed.expired(TODAY - dt.timedelta(days=1))
    renewed = entry(1, expires=dt.date(2030, 1, 1))
    assert d.active([lapsed, renewed], TODAY) == {lapsed.fingerprint: renewed}
    assert d.expired([lapsed, renewed], TODAY) == {}
    findings, notes = d.apply([finding(lapsed.fingerprint)], [lapsed], TODAY, "f.yaml")
    assert findings[0].suppressed is None
    assert notes == [f"the dismissal of {lapsed.short_id} (src/m1.py) in f.yaml expired on {TODAY}: the finding "
                     "counts again (reason given then: reason 1)"]
    findings, notes = d.apply([finding(lapsed.fingerprint)], [renewed], TODAY, "f.yaml")
    assert (findings[0].suppressed, findings[0].suppression_reason, notes) == ("dismissed", "reason 1", [])


def test_an_earlier_suppression_is_kept() -> None:
    marked = Finding("a.py", 1, 1, Severity.LOW, Category.BUG, "m", None, True, "b" * 32, suppressed="baseline")
    other_reason = d.Dismissal("b" * 32, "a.py", "bug", "low", "m", "dismissed too", ("a.py",), None, TODAY)
    findings, _ = d.apply([marked], [other_reason], TODAY, "f")
    assert findings == [marked] and findings[0].suppression_reason is None


def test_teaching_matches_paths_skips_expired_and_puts_the_most_recent_first() -> None:
    old = entry(1, on=dt.date(2025, 1, 1))
    new = entry(2, on=dt.date(2026, 6, 1))
    same_day_later = entry(3, on=dt.date(2026, 6, 1))
    lapsed = entry(4, expires=TODAY)
    elsewhere = entry(5, paths=("docs/**",))
    taught = d.teaching([old, new, same_day_later, lapsed, elsewhere], "src/x/y.py", TODAY)
    assert taught == [same_day_later, new, old]
    assert d.teaching([elsewhere], "src/a.py", TODAY) == []


def test_teaching_is_capped_with_a_line_saying_how_many_were_left_out() -> None:
    many = [entry(n, reason="r" * 300) for n in range(1, 40)]
    text, left = d.teaching_text(many)
    assert left == len(many) - text.count("\n- ")
    assert left >= len(many) - d.TEACH_MAX_ENTRIES
    assert len(text.encode()) <= d.TEACH_MAX_BYTES + 100
    assert text.rstrip().endswith(f"[{left} older dismissal(s) left out]")
    assert "do not raise such a finding again unless the code differs materially" in text.lower()


def test_the_note_names_what_the_trusted_revision_lacks() -> None:
    kept, added = entry(1), entry(2)
    assert d.added_note([kept], [kept], "f", "abc (HEAD)") is None
    note = d.added_note([kept, added], [kept], "f", "abc (HEAD)")
    assert note is not None and added.short_id in note and kept.short_id not in note and "abc (HEAD)" in note


def test_a_new_entry_keeps_the_first_200_characters_of_the_message_on_one_line() -> None:
    report = {"path": "a.py", "category": "bug", "severity": "low", "fingerprint": "c" * 32,
              "message": "line one\nline two " + "x" * 300}
    e = d.new_entry(report, "  why  ", [], "me@example.com", TODAY, None)
    assert e.message.startswith("line one line two x") and len(e.message) == 200
    assert (e.reason, e.paths, e.by) == ("why", ("a.py",), "me@example.com")


CHECK_ITEM = "- check: calc-tests\n  change: staged abc\n  reason: r\n  by: a@b\n  'on': 2026-12-01\n"


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_both_lists_take_new_entries_in_either_order_and_nothing_else_changes(eol: str) -> None:
    """The file holds `dismissed:` (findings) and `checks:` (`dismiss --check`) in whichever order the commands
    first wrote them: each adds to its own list, before the next key and its comments, in the file's line endings
    (issue 59 item 6)."""
    checks_first = ("# overrides\nchecks:\n  - check: a\n    by: x\n\n# findings, below\n").replace("\n", eol)
    text = d.appended_text(checks_first, [entry(1)], "f")
    assert text.startswith(checks_first) and d.parse_text(text, "f") == (entry(1),)
    assert eol == "\n" or "\n" not in text.replace("\r\n", "")
    findings_first = d.file_text([entry(1)]).replace("\n", eol) + f"# the checks{eol}checks:{eol}- check: a{eol}"
    text = d.appended_text(findings_first, [entry(2)], "f")
    assert d.parse_text(text, "f") == (entry(1), entry(2))
    head = findings_first.split(f"# the checks{eol}")[0]
    assert text.startswith(head) and text.endswith(f"# the checks{eol}checks:{eol}- check: a{eol}")
    text = d.insert_items(text, "checks", CHECK_ITEM, "f")  # the checks list is last: appended
    assert text.endswith(f"- check: a{eol}" + CHECK_ITEM.replace("\n", eol))
    again = d.insert_items(checks_first, "checks", CHECK_ITEM, "f")  # the only key: at the end, at its indentation
    assert again == checks_first + "".join("  " + line + eol for line in CHECK_ITEM.splitlines())
    assert d.insert_items("", "checks", CHECK_ITEM, "f") == "checks:\n" + CHECK_ITEM
    with pytest.raises(ConfigError, match="flow style"):
        d.insert_items("checks: []\n", "checks", CHECK_ITEM, "f")
