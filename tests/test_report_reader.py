"""One reader of the JSON report (ocr_hook.findings.serial): what the writer writes, the strict reader reads back;
the lenient reader keeps what dismiss needs; every file error names who asked. Pure and cheap: no git, no CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_samples import ctx, rich_result

from ocr_hook.findings.serial import ReportError, load_report, parse_report, read_report_json, report_findings
from ocr_hook.publish import report_input
from ocr_hook.reports import renderer


def written(tmp_path: Path) -> tuple[Path, dict]:
    path = tmp_path / "report.json"
    path.write_text(renderer("json")(rich_result(), ctx(exit_code=1)), encoding="utf-8")
    return path, json.loads(path.read_text(encoding="utf-8"))


def test_the_strict_reader_reads_back_what_the_writer_writes(tmp_path: Path) -> None:
    path, doc = written(tmp_path)
    report = load_report(str(path))
    assert (report.status, report.exit_code, report.skipped, report.failed) == ("incomplete", 1, 2, 1)
    assert [(f.path, f.start_line, f.fingerprint, f.severity.value, f.status) for f in report.findings] == [
        (f["path"], f["start_line"], f["fingerprint"], f["severity"], f["status"]) for f in doc["findings"]]
    # The publishers read the same report through the same reader, with the checks' verdicts besides.
    assert report_input.ReportError is ReportError and report_input.load_report(str(path)).findings == report.findings


def test_strict_refuses_what_lenient_keeps(tmp_path: Path) -> None:
    _, doc = written(tmp_path)
    doc["findings"][0]["fingerprint"] = "not-hex"
    with pytest.raises(ValueError, match="not what ocr-hook writes"):
        parse_report(doc)
    kept = report_findings(doc, "--from r.json")
    assert kept[0]["fingerprint"] == "not-hex" and len(kept) == len(doc["findings"])
    del doc["findings"][1]["path"]
    with pytest.raises(ReportError, match=r"^--from r\.json: expected 'findings' with path, category"):
        report_findings(doc, "--from r.json")


def test_file_errors_name_who_asked(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"^github-review: x\.json: cannot read it: "):
        read_report_json(str(tmp_path / "missing.json"), "github-review: x.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ReportError, match=r"^--from b: not a JSON report"):
        read_report_json(str(bad), "--from b")
    bad.write_text('{"findings": []}', encoding="utf-8")
    with pytest.raises(ReportError, match=rf"^{bad}: is not an ocr-hook --format json report"):
        load_report(str(bad))
