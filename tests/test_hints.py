"""The next steps a blocked run ends with (ocr_hook.reports.hints), for each place a review runs."""

from __future__ import annotations

from ocr_hook.findings import Category, Finding, Fix, Severity
from ocr_hook.reports.hints import next_steps


def finding(n: int, fix: bool = False) -> Finding:
    return Finding("a.py", n, n, Severity.HIGH, Category.BUG, "m", "x", True, f"{n:02d}" * 16,
                   fix=Fix(n, n, "x") if fix else None)


def steps(findings: list[Finding], **kw: object) -> str:
    args = {"scope_kind": "staged", "pre_commit": False, "patch_output": None, "json_output": None,
            "dismissals_file": ".ocr-hook/dismissed.yaml", **kw}
    return "\n".join(next_steps(findings, **args))  # type: ignore[arg-type]


def test_nothing_blocking_means_no_hint() -> None:
    assert next_steps([], scope_kind="staged", pre_commit=True, patch_output=None, json_output=None,
                      dismissals_file="d.yaml") == ()


def test_a_staged_commit_under_pre_commit() -> None:
    text = steps([finding(1, fix=True)], pre_commit=True)
    assert "ocr-hook review --patch-output ocr-hook-fixes.patch && git apply --index ocr-hook-fixes.patch" in text
    assert 'ocr-hook dismiss 01010101 --reason "..."' in text
    assert "SKIP=ocr-hook git commit ..." in text


def test_a_push_names_the_push_hook_and_a_written_patch_is_applied_to_the_work_tree() -> None:
    text = steps([finding(1, fix=True)], pre_commit=True, scope_kind="push", patch_output="my fixes.patch")
    assert "git apply 'my fixes.patch'" in text and "--index" not in text
    assert "SKIP=ocr-hook-push git push ..." in text


def test_ci_has_no_skip_and_no_fix_line_without_a_fix() -> None:
    text = steps([finding(1)], scope_kind="base", json_output="out/r.json")
    assert "SKIP=" not in text and "apply" not in text
    assert 'ocr-hook dismiss 01010101 --from out/r.json --reason "..."' in text


def test_with_memory_off_dismiss_needs_a_report_and_many_ids_are_cut() -> None:
    text = steps([finding(n) for n in range(1, 9)], memory=False)
    assert text.count("ocr-hook dismiss ") == 5 and "--from REPORT.json" in text
    assert "(and 3 more: each finding shows its id)" in text
