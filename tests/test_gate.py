from __future__ import annotations

import pytest
from report_samples import finding, result, reviewed

from ocr_hook import gate
from ocr_hook.outcome import FileCoverage

INCOMPLETE_FILES = [*reviewed("a.py"), FileCoverage("big.py", "skipped", "file too large", incomplete=True)]
FAILED_FILES = [*reviewed("a.py"), FileCoverage("b.py", "failed", "API error: 500")]
POLICY_SKIP = [*reviewed("a.py"), FileCoverage("logo.png", "skipped", "binary file")]


@pytest.mark.parametrize(
    ("name", "findings", "files", "fail_on", "on_error", "expected"),
    [
        ("clean", [], None, "high", "fail", 0),
        ("blocking high", [finding(severity="high")], None, "high", "fail", 1),
        ("blocking critical at high", [finding(severity="critical")], None, "high", "fail", 1),
        ("below threshold", [finding(severity="medium")], None, "high", "fail", 0),
        ("low at low", [finding(severity="low")], None, "low", "fail", 1),
        ("critical only", [finding(severity="high")], None, "critical", "fail", 0),
        ("never", [finding(severity="critical")], None, "never", "fail", 0),
        ("incomplete", [], INCOMPLETE_FILES, "high", "fail", 3),
        ("failed file", [], FAILED_FILES, "high", "fail", 3),
        ("incomplete + warn", [], INCOMPLETE_FILES, "high", "warn", 0),
        ("blocking beats incomplete", [finding(severity="high")], INCOMPLETE_FILES, "high", "fail", 1),
        ("blocking beats incomplete + warn", [finding(severity="high")], FAILED_FILES, "high", "warn", 1),
        ("never + incomplete", [finding(severity="critical")], INCOMPLETE_FILES, "never", "fail", 3),
        ("policy skip is complete", [], POLICY_SKIP, "high", "fail", 0),
        ("baseline-suppressed", [finding(severity="critical", suppressed="baseline")], None, "high", "fail", 0),
        ("inline-suppressed", [finding(severity="high", suppressed="inline")], None, "low", "fail", 0),
        ("suppressed + one live", [finding(severity="high", suppressed="inline"), finding(severity="high")],
         None, "high", "fail", 1),
        ("suppressed + incomplete", [finding(severity="high", suppressed="baseline")], INCOMPLETE_FILES,
         "high", "fail", 3),
    ],
)
def test_exit_code_table(name, findings, files, fail_on, on_error, expected) -> None:
    res = result(findings, files)
    assert gate.exit_code(res, fail_on, on_error) == expected, name


def test_bad_threshold_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="fail_on"):
        gate.exit_code(result(), "severe", "fail")
    with pytest.raises(ValueError, match="on_error"):
        gate.exit_code(result(), "high", "ignore")


def test_verdict_clean_says_passed() -> None:
    line = gate.verdict_line(result(), "high", "fail")
    assert line.startswith("PASSED") and "[exit 0]" in line


def test_verdict_incomplete_is_loud_and_names_files() -> None:
    line = gate.verdict_line(result([], INCOMPLETE_FILES), "high", "fail")
    assert line.startswith("REVIEW INCOMPLETE — 1 file not reviewed: big.py (file too large)")
    assert "PASSED" not in line and "[exit 3]" in line


def test_verdict_incomplete_with_warn_still_says_incomplete() -> None:
    line = gate.verdict_line(result([], FAILED_FILES), "high", "warn")
    assert "REVIEW INCOMPLETE" in line and "NOT a clean pass" in line and "[exit 0]" in line
    assert "PASSED" not in line


def test_verdict_blocking_and_incomplete_says_both() -> None:
    line = gate.verdict_line(result([finding(severity="critical"), finding(severity="high")], FAILED_FILES),
                             "high", "fail")
    assert line.startswith("FAILED — 2 blocking findings at or above 'high' (1 critical, 1 high)")
    assert "REVIEW INCOMPLETE — 1 file not reviewed: b.py (API error: 500)" in line


def test_verdict_lists_at_most_five_files() -> None:
    files = [FileCoverage(f"f{i}.py", "failed", "timeout") for i in range(8)]
    line = gate.verdict_line(result([], files), "high", "fail")
    assert "8 files not reviewed" in line and "and 3 more" in line and "f5.py" not in line


def test_verdict_gate_off() -> None:
    line = gate.verdict_line(result([finding(severity="critical")]), "never", "fail")
    assert line.startswith("PASSED") and "gate is off" in line


@pytest.mark.parametrize(
    ("statuses", "late_findings", "expected"),
    [
        (["new"], "advisory", 1),
        (["carried"], "advisory", 1),  # a carried finding blocks as before
        (["late"], "advisory", 0),  # raised late on unchanged lines: advisory
        (["late"], "block", 1),
        (["late", "carried"], "advisory", 1),
    ],
)
def test_memory_statuses_at_the_gate(statuses, late_findings, expected) -> None:
    res = result([finding(severity="high")._replace(status=s) for s in statuses], None)
    res.late_findings = late_findings
    assert gate.exit_code(res, "high", "fail") == expected
    assert gate.verdict_line(res, "high", "fail").endswith(f"[exit {expected}]")


def test_several_reviews_in_one_run_block_on_any_blocking_one_even_beside_an_incomplete_one() -> None:
    assert gate.worst_exit([gate.EXIT_INCOMPLETE, gate.EXIT_BLOCKING, gate.EXIT_CLEAN]) == gate.EXIT_BLOCKING
    assert gate.worst_exit([gate.EXIT_CLEAN, gate.EXIT_INCOMPLETE]) == gate.EXIT_INCOMPLETE
    assert gate.worst_exit([gate.EXIT_CLEAN, gate.EXIT_CLEAN]) == gate.EXIT_CLEAN
