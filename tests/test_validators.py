"""The validators the report tests trust: the vendored files are intact, and each check rejects what it must
(a validator that accepts everything would make every SARIF and GitLab test pass for nothing)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from validators import (
    SCHEMAS,
    DeferredSarif,
    multitool_results_by_file,
    schema_errors,
    validate_gitlab,
    validate_sarif,
)


def _minimal_sarif() -> dict[str, Any]:
    """A small SARIF log that GitHub accepts: one result with a location, rule and fingerprint."""
    return {
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{
            "tool": {"driver": {"name": "probe", "version": "1.0.0", "informationUri": "https://example.com/",
                                "rules": [{"id": "probe/bug", "shortDescription": {"text": "A bug."},
                                           "fullDescription": {"text": "A bug."}, "help": {"text": "Fix it."}}]}},
            "results": [{
                "ruleId": "probe/bug", "ruleIndex": 0, "level": "error", "message": {"text": "Off by one."},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": "src/app.py"},
                                                    "region": {"startLine": 3}}}],
                "partialFingerprints": {"primaryLocationLineHash": "0123456789abcdef:1"},
            }],
        }],
    }


def test_vendored_files_match_their_recorded_hashes() -> None:
    recorded = dict((name, digest) for digest, name in re.findall(
        r"^([0-9a-f]{64})  (\S+)$", (SCHEMAS / "README.md").read_text(encoding="utf-8"), re.MULTILINE))
    on_disk = {p.name for p in SCHEMAS.iterdir() if p.name != "README.md"}
    assert set(recorded) == on_disk
    for name, digest in recorded.items():
        assert hashlib.sha256((SCHEMAS / name).read_bytes()).hexdigest() == digest, name


def test_the_schema_rejects_a_log_without_a_version() -> None:
    log = _minimal_sarif()
    del log["version"]
    assert any("version" in error for error in schema_errors(log))


def test_the_schema_rejects_line_zero() -> None:
    log = _minimal_sarif()
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert any("startLine" in error for error in schema_errors(log))


def test_the_multitool_applies_githubs_rules(tmp_path: Path) -> None:
    """A result without a location is schema-valid, but GitHub rejects the upload (GH1001)."""
    log = _minimal_sarif()
    del log["runs"][0]["results"][0]["locations"]
    assert not schema_errors(log)
    path = tmp_path / "no-location.sarif"
    path.write_text(json.dumps(log), encoding="utf-8")
    good = tmp_path / "minimal.sarif"
    good.write_text(json.dumps(_minimal_sarif()), encoding="utf-8")
    # one run of the multitool over both files: each file's errors are its own
    found = multitool_results_by_file([good, path])
    errors = {r.get("ruleId") for r in found[path] if r.get("level") == "error"}
    assert any(rule and rule.startswith("GH1001") for rule in errors), errors
    assert [r for r in found[good] if r.get("level") == "error"] == []
    # validate_sarif on each file's own results from that run: the minimal log passes both checks, the other fails
    validate_sarif(_minimal_sarif(), multitool_found=found[good])
    with pytest.raises(AssertionError, match="GH1001"):
        validate_sarif(path, multitool_found=found[path])


def test_a_module_s_deferred_multitool_run_names_the_test_of_the_bad_file(tmp_path: Path) -> None:
    """DeferredSarif (one multitool run for a module's SARIF files): the schema at once, GitHub's rules at the
    end, and a file with errors fails naming the test that handed it in."""
    log = _minimal_sarif()
    del log["runs"][0]["results"][0]["locations"]
    batch = DeferredSarif()
    assert batch.check(_minimal_sarif()) == _minimal_sarif()
    path = tmp_path / "no-location.sarif"
    path.write_text(json.dumps(log), encoding="utf-8")
    assert batch.check(path) == log
    path.unlink()  # checked as it was handed in
    broken = _minimal_sarif()
    del broken["version"]
    with pytest.raises(AssertionError, match="SARIF schema errors"):
        batch.check(broken)
    with pytest.raises(AssertionError, match="GH1001") as failed:
        batch.finish()
    [line] = [line for line in str(failed.value).splitlines() if "GH1001" in line]
    assert line.startswith("tests/test_validators.py::test_a_module_s_deferred_multitool_run_names_the_test"), line


def test_gitlab_entries_need_a_fingerprint_and_unique_ones() -> None:
    entry = {"description": "Off by one.", "fingerprint": "f1", "severity": "major",
             "location": {"path": "src/app.py", "lines": {"begin": 3}}}
    validate_gitlab([entry])
    with pytest.raises(AssertionError, match="fingerprint"):
        validate_gitlab([{k: v for k, v in entry.items() if k != "fingerprint"}])
    with pytest.raises(AssertionError, match="not unique"):
        validate_gitlab([entry, dict(entry)])
    with pytest.raises(AssertionError, match="integer"):
        validate_gitlab([{**entry, "location": {"path": "src/app.py", "lines": {"begin": "3"}}}])
