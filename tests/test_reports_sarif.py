from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from report_samples import FILE_TEXTS, HOSTILE, ctx, finding, result, reviewed, rich_result
from validators import multitool_results_by_file, validate_sarif

from ocr_hook.findings.line_hash import line_hash
from ocr_hook.outcome import FileCoverage
from ocr_hook.reports import renderer, write_report
from ocr_hook.reports.sarif import MAX_RESULTS, OUR_FINGERPRINT, sarif_log


def _over_the_cap() -> Any:
    lows = [finding(path=f"f{i}.py", start=1, severity="low", message=f"low {i}") for i in range(MAX_RESULTS)]
    highs = [finding(path=f"h{i}.py", start=1, severity="high", message=f"high {i}") for i in range(3)]
    return result(lows + highs)


HOSTILE_PATH = "src/we ird,:%name.py"
# The document each test checks, and the report context it is written with. They are written once for the module
# so that the multitool (a .NET program: about 2 s of CPU to start) checks them all in one run; each test asserts
# the schema and the multitool's findings for its own file.
DOCUMENTS: dict[str, Callable[[], tuple[Any, dict[str, Any]]]] = {
    "rich": lambda: (_with_checks(), {"exit_code": 1, "sarif_category": "ocr-hook-pr"}),
    "clean": lambda: (result([], reviewed("src/app.py")), {}),
    "incomplete": lambda: (result([], [FileCoverage("src/app.py", "skipped", "budget exhausted", incomplete=True)]),
                           {}),
    "hostile": lambda: (result([finding(message=HOSTILE, suggestion=HOSTILE, path=HOSTILE_PATH, start=1)]), {}),
    "no-text": lambda: (result([finding(path="deleted.py", start=3)]), {"file_texts": {}}),
    "no-root": lambda: (result([finding()]), {"repo_root": "", "tool_version": ""}),
    "capped": lambda: (_over_the_cap(), {"file_texts": {}}),
}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[dict[str, Any]]]]:
    """Each document's file and what the multitool found in it."""
    folder = tmp_path_factory.mktemp("sarif")
    paths = {}
    for name, make in DOCUMENTS.items():
        res, ctx_kwargs = make()
        paths[name] = folder / f"{name}.sarif"
        write_report("sarif", res, ctx(**ctx_kwargs), paths[name])
    found = multitool_results_by_file(list(paths.values()))
    return {name: (path, found[path]) for name, path in paths.items()}


def _validated(written: dict[str, tuple[Path, list[dict[str, Any]]]], name: str) -> dict:
    path, found = written[name]
    return validate_sarif(path, multitool_found=found)


def _results_by_message(doc: dict) -> dict[str, dict]:
    return {r["message"]["text"].split("\n")[0]: r for r in doc["runs"][0]["results"]}


def _with_checks():
    """rich_result with the team's checks (DESIGN.md 20): a failed block check with evidence, an inconclusive warn
    check without, an overridden one and a pass; validated by the same multitool run as the findings."""
    from ocr_hook.checks.model import CheckVerdict, Evidence, Override

    res = rich_result()
    res.checks = [
        CheckVerdict("endpoint-test", "block", "fail", "No test calls it.", ".ocr-hook/checks/endpoint-test.md",
                     (Evidence("src/app.py", "os.system(cmd)", 4, 4, True), Evidence("src/app.py", "gone")),
                     instruction="Every new endpoint has a test."),
        CheckVerdict("docs", "warn", "inconclusive", "no verdict", ".ocr-hook/checks/docs.md"),
        CheckVerdict("rollback", "block", "fail", "No down step.", "db/.ocr-hook/checks/rollback.md",
                     override=Override("lead@example.com", "manual rollback", ".ocr-hook/dismissed.yaml")),
        CheckVerdict("licence", "warn", "pass", "Headers present.", ".ocr-hook/checks/licence.md"),
    ]
    return res


def test_rich_result_is_valid_and_complete(written) -> None:
    doc = _validated(written, "rich")
    checks = [r for r in doc["runs"][0]["results"] if r["ruleId"].startswith("ocr-hook/check/")]
    rules = {rule["id"]: rule for rule in doc["runs"][0]["tool"]["driver"]["rules"]}
    assert {"ocr-hook/check/endpoint-test", "ocr-hook/check/licence"} <= set(rules)
    assert rules["ocr-hook/check/endpoint-test"]["help"]["text"].startswith("Every new endpoint has a test.")
    placed = [(r["ruleId"].rpartition("/")[2], r["level"], r["locations"][0]["physicalLocation"]["artifactLocation"]
               ["uri"], r["locations"][0]["physicalLocation"]["region"]["startLine"], "suppressions" in r)
              for r in checks]
    assert placed == [("endpoint-test", "error", "src/app.py", 4, False),
                      ("docs", "warning", ".ocr-hook/checks/docs.md", 1, False),
                      ("rollback", "error", "db/.ocr-hook/checks/rollback.md", 1, True)]  # no result for a pass
    doc["runs"][0]["results"] = [r for r in doc["runs"][0]["results"] if r not in checks]
    assert doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "ocr-hook" and driver["version"] == "0.1.0" and driver["informationUri"]
    assert run["automationDetails"] == {"id": "ocr-hook-pr/"}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == "file:///tmp/repo/"
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert "ocr-hook/bug" in rule_ids and "ocr-hook/security/critical" in rule_ids
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"] and rule["help"]["text"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")

    results = _results_by_message(doc)
    assert len(results) == 6
    for r in results.values():
        assert driver["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SRCROOT%"

    injection = results["Command injection via cmd"]
    assert injection["level"] == "error" and injection["ruleId"] == "ocr-hook/security/critical"
    assert injection["properties"]["security-severity"] == "9.5"
    rule = driver["rules"][injection["ruleIndex"]]
    assert rule["properties"]["security-severity"] == "9.5" and "security" in rule["properties"]["tags"]
    float(injection["properties"]["security-severity"])  # GitHub rejects a non-numeric value
    assert injection["locations"][0]["physicalLocation"]["region"] == {"startLine": 4, "endLine": 4}
    assert injection["partialFingerprints"]["primaryLocationLineHash"] == line_hash(FILE_TEXTS["src/app.py"], 4)
    assert len(injection["partialFingerprints"][OUR_FINGERPRINT]) == 32
    assert "subprocess.run" in injection["message"]["text"]

    assert results["Subtracts instead of adds"]["level"] == "error"
    assert "security-severity" not in results["Subtracts instead of adds"]["properties"]
    assert results["No docstring"]["level"] == "warning"
    assert results["No docstring"]["locations"][0]["physicalLocation"]["region"] == {"startLine": 1, "endLine": 2}

    whole_file = results["Whole-file remark"]
    assert whole_file["level"] == "note" and whole_file["properties"]["anchored"] is False
    assert whole_file["locations"][0]["physicalLocation"]["region"]["startLine"] == 1

    vague = results["Vague text"]
    assert vague["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "docs/read%20me.md"
    assert vague["suppressions"][0]["kind"] == "external"
    assert results["Hard-coded command"]["suppressions"][0]["kind"] == "inSource"
    assert "suppressions" not in injection

    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == 1
    notes = {n["message"]["text"]: n for n in invocation["toolExecutionNotifications"]}
    failed = next(n for t, n in notes.items() if t.startswith("src/net.py"))
    assert failed["level"] == "error"
    assert failed["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/net.py"
    huge = next(n for t, n in notes.items() if t.startswith("gen/huge.py"))
    assert huge["level"] == "warning" and "incomplete" in huge["message"]["text"]
    assert next(n for t, n in notes.items() if t.startswith("assets/logo.png"))["level"] == "note"


def test_clean_complete_review_is_successful(written) -> None:
    doc = _validated(written, "clean")
    run = doc["runs"][0]
    assert run["results"] == []
    assert run["invocations"][0]["executionSuccessful"] is True
    assert run["invocations"][0]["toolExecutionNotifications"] == []


def test_incomplete_review_without_findings_is_not_successful(written) -> None:
    doc = _validated(written, "incomplete")
    invocation = doc["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["level"] == "warning"


def test_hostile_text_stays_valid_and_intact(written) -> None:
    doc = _validated(written, "hostile")
    text = written["hostile"][0].read_text(encoding="utf-8")
    assert "<" not in text and "\x1b" not in text and text.isascii()
    r = doc["runs"][0]["results"][0]
    assert r["message"]["text"].startswith(HOSTILE)  # data is kept exactly; only the encoding is safe
    uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "src/we%20ird%2C%3A%25name.py"


def test_file_without_text_has_no_line_hash_but_is_valid(written) -> None:
    doc = _validated(written, "no-text")
    fingerprints = doc["runs"][0]["results"][0]["partialFingerprints"]
    assert "primaryLocationLineHash" not in fingerprints and OUR_FINGERPRINT in fingerprints


def test_no_repo_root_no_version(written) -> None:
    doc = _validated(written, "no-root")
    assert "originalUriBaseIds" not in doc["runs"][0]


@pytest.mark.parametrize("severity", ["critical", "high", "medium", "low"])
def test_security_severity_per_severity(severity: str) -> None:
    doc = sarif_log(result([finding(category="security", severity=severity)]), ctx())
    r = doc["runs"][0]["results"][0]
    expected = {"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0"}[severity]
    assert r["properties"]["security-severity"] == expected
    assert doc["runs"][0]["tool"]["driver"]["rules"][r["ruleIndex"]]["properties"]["security-severity"] == expected


def test_results_capped_by_severity(written) -> None:
    doc = _validated(written, "capped")
    run = doc["runs"][0]
    assert len(run["results"]) == MAX_RESULTS
    kept = {r["message"]["text"] for r in run["results"]}
    assert {"high 0", "high 1", "high 2"} <= kept
    cut = [n for n in run["invocations"][0]["toolExecutionNotifications"] if "left out" in n["message"]["text"]]
    assert len(cut) == 1 and cut[0]["message"]["text"].startswith("3 more findings")


def test_output_is_deterministic() -> None:
    one = renderer("sarif")(rich_result(), ctx())
    two = renderer("sarif")(rich_result(), ctx())
    assert one == two
    json.loads(one)
