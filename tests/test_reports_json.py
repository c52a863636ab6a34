from __future__ import annotations

import json

from report_samples import HOSTILE, ctx, finding, result, rich_result

from ocr_hook.outcome import FileCoverage
from ocr_hook.reports import ReportContext, renderer

render = renderer("json")

TOP_KEYS = ["schema_version", "tool", "status", "exit_code", "verdict", "fail_on", "scope", "findings",
            "resolved", "coverage", "usage", "dropped", "checks", "notes", "elapsed_s"]
FINDING_KEYS = ["path", "start_line", "end_line", "severity", "category", "message", "suggestion", "anchored",
                "fingerprint", "suppressed", "suppression_reason", "anchor_note", "fix", "status"]


def test_fields_and_key_order() -> None:
    doc = json.loads(render(rich_result(), ctx(exit_code=1)))
    assert list(doc) == TOP_KEYS
    assert doc["schema_version"] == 1 and doc["status"] == "incomplete" and doc["exit_code"] == 1
    assert all(list(f) == FINDING_KEYS for f in doc["findings"])
    assert doc["coverage"]["reviewed"] == ["docs/read me.md", "src/app.py", "src/util.py"]
    assert doc["coverage"]["cached"] == ["docs/read me.md"]
    assert doc["coverage"]["skipped"] == [
        {"path": "assets/logo.png", "reason": "binary file", "incomplete": False},
        {"path": "gen/huge.py", "reason": "file too large (9000 lines > 5000)", "incomplete": True},
    ]
    assert doc["coverage"]["failed"] == [{"path": "src/net.py", "reason": "API error: 529 overloaded"}]
    assert doc["usage"] == {"requests": 7, "input_tokens": 12345, "output_tokens": 678,
                            "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 5000, "cost_usd": 0.0421}
    assert doc["dropped"] == {"filter_mode": 2, "review_filter": 1}
    assert doc["notes"] == ["budget: 80% of max_cost used"]
    assert "REVIEW INCOMPLETE" in doc["verdict"]


def test_findings_in_reading_order_with_unanchored_at_zero() -> None:
    doc = json.loads(render(rich_result(), ctx()))
    places = [(f["path"], f["start_line"]) for f in doc["findings"]]
    assert places == sorted(places)
    whole = next(f for f in doc["findings"] if not f["anchored"])
    assert whole["start_line"] == 0 and whole["end_line"] == 0 and whole["anchor_note"] == "quoted code not found"
    assert {f["suppressed"] for f in doc["findings"]} == {None, "baseline", "inline"}


def test_complete_status() -> None:
    doc = json.loads(render(result([], [FileCoverage("a.py", "reviewed")]), ctx()))
    assert doc["status"] == "complete" and doc["findings"] == [] and doc["verdict"].startswith("PASSED")


def test_hostile_text_round_trips_exactly_and_output_is_inert() -> None:
    out = render(result([finding(message=HOSTILE, suggestion=HOSTILE)]), ctx())
    assert out.isascii() and "<" not in out and ">" not in out and "&" not in out
    assert "\x1b" not in out and "\r" not in out
    for line in out.splitlines():
        assert not line.lstrip().startswith("::")
    doc = json.loads(out)
    assert doc["findings"][0]["message"] == HOSTILE and doc["findings"][0]["suggestion"] == HOSTILE


def test_stable_output() -> None:
    assert render(rich_result(), ctx()) == render(rich_result(), ctx())


def test_exit_code_defaults_to_the_gate() -> None:
    res = result([finding(severity="medium")])
    assert json.loads(render(res, ReportContext(fail_on="medium")))["exit_code"] == 1
    assert json.loads(render(res, ReportContext(fail_on="high")))["exit_code"] == 0
    assert json.loads(render(res, ReportContext(fail_on="high", exit_code=3)))["exit_code"] == 3
