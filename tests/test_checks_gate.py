"""The gate decides once, from findings and checks together (DESIGN.md 20). Pure: no repository needed."""

from __future__ import annotations

import pytest

from ocr_hook.checks.model import CheckVerdict, Override
from ocr_hook.gate import EXIT_BLOCKING, EXIT_CLEAN, EXIT_INCOMPLETE, decide
from ocr_hook.outcome import FileCoverage, ReviewResult


def verdict(verdict: str, mode: str = "block", **more: object) -> CheckVerdict:
    return CheckVerdict(name="c", mode=mode, verdict=verdict, reason="why", source=".ocr-hook/checks/c.md",
                        **more)  # type: ignore[arg-type]


def result(*checks: CheckVerdict) -> ReviewResult:
    return ReviewResult(findings=[], files=[FileCoverage("a.py", "reviewed")], checks=list(checks))


@pytest.mark.parametrize(("check", "code", "words"), [
    (verdict("fail"), EXIT_BLOCKING, "1 blocking check: c (fail)"),
    (verdict("fail", mode="warn"), EXIT_CLEAN, "checks to look at: 1 failed (warn)"),
    (verdict("inconclusive"), EXIT_CLEAN, "checks to look at: 1 inconclusive"),
    (verdict("inconclusive", inconclusive="block"), EXIT_BLOCKING, "c (inconclusive)"),
    (verdict("fail", override=Override("lead@example.com", "known gap", "dismissed.yaml")), EXIT_CLEAN,
     "1 check(s) overridden"),
    (verdict("inconclusive", incomplete=True), EXIT_INCOMPLETE, "REVIEW INCOMPLETE — 1 check(s) not evaluated"),
])
def test_one_decision_from_the_checks(check: CheckVerdict, code: int, words: str) -> None:
    decided = decide(result(check), "high", "fail")
    assert decided.exit_code == code
    assert words in decided.line and decided.line.endswith(f"[exit {code}]")
    assert decided.blocking_checks == ((check,) if code == EXIT_BLOCKING else ())
