from __future__ import annotations

import json
from pathlib import Path

from report_samples import HOSTILE, ctx, finding, result, rich_result
from validators import validate_gitlab

from ocr_hook.outcome import FileCoverage, FileNote
from ocr_hook.reports import renderer, write_report
from ocr_hook.reports.gitlab import NOTE_CHECK, unique_fingerprint

render = renderer("gitlab")


def test_rich_result_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "gl-code-quality.json"
    write_report("gitlab", rich_result(), ctx(), path)
    entries = json.loads(path.read_text(encoding="utf-8"))
    validate_gitlab(entries)
    by_description = {e["description"]: e for e in entries}
    injection = by_description["Command injection via cmd"]
    assert injection["severity"] == "critical" and injection["check_name"] == "ocr-hook/security"
    assert injection["location"] == {"path": "src/app.py", "lines": {"begin": 4, "end": 4}}
    assert "subprocess.run" in injection["content"]["body"]
    assert by_description["Subtracts instead of adds"]["severity"] == "major"
    assert by_description["No docstring"]["severity"] == "minor"
    assert by_description["No docstring"]["location"]["lines"] == {"begin": 1, "end": 2}
    whole = next(e for e in entries if e["description"].startswith("Whole-file remark"))
    assert whole["severity"] == "info" and whole["location"]["lines"]["begin"] == 1
    # suppressed findings are left out; each unreviewed file is an entry of its own
    assert "Vague text" not in by_description and "Hard-coded command" not in by_description
    incomplete = [e for e in entries if e["check_name"] == "ocr-hook/review-incomplete"]
    assert sorted(e["location"]["path"] for e in incomplete) == ["gen/huge.py", "src/net.py"]


def test_duplicate_fingerprints_become_unique_deterministically() -> None:
    same = [finding(start=line, existing="os.system(cmd)", message="Same code quoted") for line in (4, 4, 4)]
    assert len({f.fingerprint for f in same}) == 1
    first = json.loads(render(result(same), ctx()))
    second = json.loads(render(result(same), ctx()))
    validate_gitlab(first)
    assert [e["fingerprint"] for e in first] == [e["fingerprint"] for e in second]
    assert first[0]["fingerprint"] == same[0].fingerprint


def test_unique_fingerprint_skips_taken_variants() -> None:
    taken: set[str] = set()
    a = unique_fingerprint("abc", taken)
    b = unique_fingerprint("abc", taken)
    c = unique_fingerprint("abc", taken)
    assert a == "abc" and len({a, b, c}) == 3 and taken == {a, b, c}


def test_clean_review_is_an_empty_array() -> None:
    entries = json.loads(render(result([], [FileCoverage("a.py", "reviewed")]), ctx()))
    assert entries == []
    validate_gitlab(entries)


def test_hostile_text_stays_valid() -> None:
    out = render(result([finding(message=HOSTILE, suggestion=HOSTILE, path="we,ird:.py")]), ctx())
    assert out.isascii() and "<" not in out and "\x1b" not in out
    entries = json.loads(out)
    validate_gitlab(entries)
    assert entries[0]["description"] == HOSTILE.strip()


SETTINGS_NOTE = "this change modifies .ocr-hook.yaml, the reviewer's own settings: the gate's settings moved"


def test_a_note_about_a_file_is_an_info_entry_at_its_first_line() -> None:
    guide = "this change edits guidance file REVIEW.md: the review used its version at abc123 (HEAD)"
    notes = [FileNote(".ocr-hook.yaml", SETTINGS_NOTE), FileNote("REVIEW.md", guide)]
    clean = result([], [FileCoverage("a.py", "reviewed")], notes=["budget note", SETTINGS_NOTE, guide],
                   file_notes=notes)
    entries = json.loads(render(clean, ctx()))
    validate_gitlab(entries)
    # only the notes tied to a file: GitLab has nowhere to show a run-level note
    assert [e["location"] for e in entries] == [
        {"path": ".ocr-hook.yaml", "lines": {"begin": 1, "end": 1}},
        {"path": "REVIEW.md", "lines": {"begin": 1, "end": 1}},
    ]
    settings = entries[0]
    assert settings["type"] == "issue" and settings["check_name"] == NOTE_CHECK == "ocr-hook/run-note"
    assert settings["severity"] == "info" and settings["engine_name"] == "ocr-hook"
    assert settings["description"] == SETTINGS_NOTE
    assert entries[1]["description"] == guide
    # informational: the review stays clean and passes
    assert clean.complete and not [e for e in entries if e["severity"] != "info"]


def test_note_fingerprints_are_stable_across_revisions_and_unique() -> None:
    def entries_for(revision: str) -> list[dict[str, object]]:
        text = f"this change edits guidance file REVIEW.md: the review used its version at {revision} (HEAD)"
        notes = [FileNote("REVIEW.md", text), FileNote(".ocr-hook.yaml", SETTINGS_NOTE)]
        # a finding on the same file at line 1 must not collide with the note
        return json.loads(render(result([finding(path="REVIEW.md", start=1, existing="os.system(cmd)")],
                                        file_notes=notes), ctx()))

    first, second = entries_for("abc123"), entries_for("def456")
    validate_gitlab(first)
    notes_first = {e["location"]["path"]: e["fingerprint"] for e in first if e["check_name"] == NOTE_CHECK}
    notes_second = {e["location"]["path"]: e["fingerprint"] for e in second if e["check_name"] == NOTE_CHECK}
    assert notes_first == notes_second and len(set(notes_first.values())) == 2
    assert len({e["fingerprint"] for e in first}) == len(first) == 3
