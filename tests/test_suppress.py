from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_samples import finding, result

from ocr_hook import gate
from ocr_hook.errors import ConfigError
from ocr_hook.findings.suppress import (
    BaselineEntry,
    apply_suppressions,
    baseline_entries,
    baseline_text,
    load_baseline,
)
from ocr_hook.store.atomic import write_atomic

TEXT = "\n".join([
    "def a():",                      # 1
    "    # ocr-hook: ignore",        # 2
    "    risky()",                   # 3
    "    other()  // OCR-HOOK:ignore",  # 4
    "    third()",                   # 5
    "",                              # 6
    "    fourth()",                  # 7
]) + "\n"


def test_baseline_round_trip_sorted_one_entry_per_finding_without_lines(tmp_path: Path) -> None:
    findings = [finding(message="b", start=3), finding(message="a", start=9)]
    findings.append(findings[0]._replace(start_line=30, end_line=30))  # the same code quoted at another place
    path = tmp_path / ".ocr-hook-baseline.json"
    write_atomic(path, baseline_text(findings))
    data = json.loads(path.read_text(encoding="utf-8"))
    # one entry per finding: the same line quoted at two places is two findings of one fingerprint (issue 58.16)
    rows = sorted((f.fingerprint, f.severity.value, f.message) for f in findings)
    assert len(rows) == 3 and len({r[0] for r in rows}) == 2  # the two "b" findings share a fingerprint
    assert data == {"version": 2, "findings": [{"fingerprint": a, "severity": b, "message": c} for a, b, c in rows]}
    assert load_baseline(path) == tuple(BaselineEntry(*r) for r in rows)
    moved = [f._replace(start_line=f.start_line + 40, end_line=f.end_line + 40) for f in findings]
    assert baseline_text(moved) == path.read_text(encoding="utf-8")  # line numbers play no part


def test_a_version_1_baseline_is_still_read() -> None:
    assert baseline_entries('{"version": 1, "fingerprints": ["ab", "cd"]}', "b.json") == (
        BaselineEntry("ab"), BaselineEntry("cd"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "invalid JSON at line 1"),
        ('{"fingerprints": []}', "expected"),
        ('{"version": 3, "findings": []}', "expected"),
        ('{"version": 2, "fingerprints": []}', "expected"),
        ('{"version": 2, "findings": [{"fingerprint": "ab", "severity": "worst", "message": ""}]}', "entry 1"),
        ('{"version": 1, "fingerprints": "abc"}', "must be a list of non-empty strings"),
        ('{"version": 1, "fingerprints": [1]}', "must be a list of non-empty strings"),
        ("[]", "expected"),
    ],
)
def test_bad_baseline_is_a_one_line_config_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as info:
        load_baseline(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_missing_baseline(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="baseline file not found"):
        load_baseline(tmp_path / "nope.json")


def test_inline_marker_on_the_line_or_above() -> None:
    findings = [
        finding(path="m.py", start=3, message="above"),       # marker on line 2
        finding(path="m.py", start=4, message="same line"),   # marker on line 4 (any comment syntax, any case)
        finding(path="m.py", start=5, message="below marker"),  # line 4 has one: the line above counts
        finding(path="m.py", start=7, message="not marked"),
        finding(path="m.py", message="unanchored", anchored=False),
        finding(path="other.py", start=3, message="no text"),
    ]
    out = apply_suppressions(findings, (), {"m.py": TEXT})
    assert [f.suppressed for f in out] == ["inline", "inline", "inline", None, None, None]


def test_baseline_wins_and_earlier_reasons_stay() -> None:
    marked = finding(path="m.py", start=3, message="x")
    already = finding(path="m.py", start=7, message="y", suppressed="inline")
    entries = (BaselineEntry(marked.fingerprint), BaselineEntry(already.fingerprint))
    out = apply_suppressions([marked, already], entries, {"m.py": TEXT})
    assert [f.suppressed for f in out] == ["baseline", "inline"]


def test_gate_never_blocks_on_suppressed_findings(tmp_path: Path) -> None:
    blocking = finding(severity="critical", message="known issue")
    path = tmp_path / "baseline.json"
    write_atomic(path, baseline_text([blocking]))
    res = result([blocking])
    assert gate.exit_code(res, "high", "fail") == 1
    res.findings = apply_suppressions(res.findings, load_baseline(path), {})
    assert gate.exit_code(res, "high", "fail") == 0
