"""The pure part of Bitbucket publishing (ocr_hook/publish/bitbucket_insights.py): which findings a Code
Insights report keeps under Bitbucket's 1,000, on which lines, and the fields' limits."""

from __future__ import annotations

import api_contract

from ocr_hook.findings import Category, Finding, Fix, Severity
from ocr_hook.publish.bitbucket_insights import MAX_ANNOTATIONS, MAX_SUMMARY, plan_insights
from ocr_hook.publish.report_input import Report


def finding(n: int, severity: Severity = Severity.LOW, *, line: int = 2, message: str = "m",
            category: Category = Category.STYLE, fix: Fix | None = None) -> Finding:
    return Finding(path="a.py", start_line=line, end_line=line, severity=severity, category=category,
                   message=message, suggestion=None, anchored=True, fingerprint=f"{n:032x}", fix=fix)


def report(findings: list[Finding], exit_code: int = 1) -> Report:
    return Report(status="complete", exit_code=exit_code, verdict="FAILED", findings=tuple(findings), skipped=0,
                  failed=0)


HEAD = {"a.py": ["one", "two", "three"]}


def test_the_cap_keeps_the_most_severe() -> None:
    findings = [finding(n) for n in range(MAX_ANNOTATIONS)] + [finding(5000, Severity.CRITICAL)]
    plan = plan_insights(report(findings), HEAD, HEAD)
    assert len(plan.annotations) == MAX_ANNOTATIONS and plan.left_out == 1
    assert plan.annotations[0]["external_id"] == f"{5000:032x}" and plan.annotations[0]["severity"] == "CRITICAL"
    assert [len(b) for b in plan.batches()] == [100] * 10


def test_fields_and_lines() -> None:
    long = finding(1, Severity.HIGH, message="word " * 200, category=Category.SECURITY)
    fixed = finding(2, line=3, fix=Fix(3, 3, "THREE"))
    past_the_end = finding(3, line=9)
    plan = plan_insights(report([long, fixed, past_the_end], exit_code=0), HEAD, HEAD)
    by_id = {a["external_id"]: a for a in plan.annotations}
    cut = by_id[f"{1:032x}"]
    assert len(cut["summary"]) == MAX_SUMMARY and cut["summary"].endswith("…")
    assert cut["annotation_type"] == "VULNERABILITY" and cut["line"] == 2
    assert by_id[f"{2:032x}"]["annotation_type"] == "CODE_SMELL" and "Suggested change:\nTHREE" in by_id[
        f"{2:032x}"]["details"]
    assert "line" not in by_id[f"{3:032x}"]  # line 9 is not in the commit's file
    assert plan.report["result"] == "PASSED" and (plan.on_lines, plan.without_line) == (2, 1)


def test_the_report_and_its_annotations_are_what_bitbucket_describes() -> None:
    """Bitbucket's description (swagger.v3.json) requires `type` of a report and of an annotation in the
    request too: each is an `object`, whose `type` names it. The publisher sent neither before."""
    reports = "/2.0/repositories/team/app/commit/" + "a" * 40 + "/reports/ocr-hook"
    plan = plan_insights(report([finding(1, Severity.HIGH), finding(2, line=9)]), HEAD, HEAD)
    assert plan.report["type"] == "report" and {a["type"] for a in plan.annotations} == {"report_annotation"}
    assert api_contract.check("bitbucket", "PUT", reports, {}, plan.report) == []
    assert [api_contract.check("bitbucket", "POST", reports + "/annotations", {}, b) for b in plan.batches()] == [[]]
