from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from report_samples import ctx, finding, result, reviewed
from validators import multitool_results_by_file, validate_sarif

from ocr_hook.changes.shard import shard_select
from ocr_hook.errors import ConfigError
from ocr_hook.outcome import FileCoverage
from ocr_hook.reports import write_report
from ocr_hook.reports.merge_sarif import merge_sarif
from ocr_hook.reports.sarif import dump_sarif


def _shard_files(tmp_path: Path, category: str = "ocr-hook") -> list[Path]:
    """Two shards of one change: shard 2 has a skipped (incomplete) file."""
    paths = ["src/app.py", "src/util.py", "docs/read me.md", "lib/a.py", "lib/b.py"]
    findings = [
        finding(path="src/app.py", start=4, severity="critical", category="security", message="injection"),
        finding(path="src/util.py", start=2, severity="high", message="wrong sign"),
        finding(path="lib/a.py", start=1, severity="low", category="style", message="style", anchored=False),
        finding(path="lib/b.py", start=1, severity="medium", category="performance", message="slow"),
    ]
    out = []
    for i in (1, 2):
        mine = shard_select(paths, f"{i}/2")
        files = reviewed(*sorted(mine))
        if i == 2:
            files.append(FileCoverage("gen/huge.py", "skipped", "file too large", incomplete=True))
        res = result([f for f in findings if f.path in mine], files)
        path = tmp_path / f"shard{i}.sarif"
        write_report("sarif", res, ctx(sarif_category=category, exit_code=1 if i == 1 else 3), path)
        out.append(path)
    return out


def _two_shards(tmp_path: Path) -> str:
    return dump_sarif(merge_sarif(_shard_files(tmp_path)))


def _all_complete(tmp_path: Path) -> str:
    files = []
    for i in (1, 2):
        path = tmp_path / f"s{i}.sarif"
        write_report("sarif", result([finding(path=f"f{i}.py", start=1)], reviewed(f"f{i}.py")), ctx(), path)
        files.append(path)
    return json.dumps(merge_sarif(files))


def _over_the_cap(tmp_path: Path) -> str:
    files = []
    for i in (1, 2):
        lows = [finding(path=f"s{i}/f{n}.py", start=1, severity="low", message=f"low {n}") for n in range(600)]
        if i == 2:
            lows.append(finding(path="s2/worst.py", start=1, severity="critical", message="worst"))
        path = tmp_path / f"big{i}.sarif"
        write_report("sarif", result(lows, reviewed()), ctx(file_texts={}), path)
        files.append(path)
    return json.dumps(merge_sarif(files))


@pytest.fixture(scope="module")
def merged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[dict[str, Any]]]]:
    """Each test's merged log, written once for the module so that the multitool (about 2 s of CPU to start)
    checks them all in one run: its file and what the multitool found in it."""
    folder = tmp_path_factory.mktemp("merged")
    paths = {}
    for make in (_two_shards, _all_complete, _over_the_cap):
        (folder / make.__name__).mkdir()
        paths[make.__name__] = folder / make.__name__ / "merged.sarif"
        paths[make.__name__].write_text(make(folder / make.__name__), encoding="utf-8")
    found = multitool_results_by_file(list(paths.values()))
    return {name: (path, found[path]) for name, path in paths.items()}


def _validated(merged: dict[str, tuple[Path, list[dict[str, Any]]]], name: str) -> dict[str, Any]:
    path, found = merged[name]
    return validate_sarif(path, multitool_found=found)


def test_merge_two_shards_into_one_valid_run(merged) -> None:
    doc = _validated(merged, "_two_shards")
    assert len(doc["runs"]) == 1
    run = doc["runs"][0]
    assert sorted(r["message"]["text"].split("\n")[0] for r in run["results"]) == [
        "injection", "slow", "style", "wrong sign"]
    rules = run["tool"]["driver"]["rules"]
    assert len({r["id"] for r in rules}) == len(rules)
    for r in run["results"]:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False  # shard 2 was incomplete
    assert invocation["exitCode"] == 1
    assert invocation["properties"]["shards"] == 2 and invocation["properties"]["requests"] == 14
    assert any("gen/huge.py" in n["message"]["text"] for n in invocation["toolExecutionNotifications"])
    assert run["automationDetails"] == {"id": "ocr-hook/"}


def test_all_complete_shards_merge_successful(merged) -> None:
    doc = _validated(merged, "_all_complete")
    assert doc["runs"][0]["invocations"][0]["executionSuccessful"] is True


def test_merge_refuses_different_categories(tmp_path: Path) -> None:
    one = _shard_files(tmp_path, "ocr-hook-a")[0]
    other = tmp_path / "other.sarif"
    write_report("sarif", result([]), ctx(sarif_category="ocr-hook-b"), other)
    with pytest.raises(ConfigError, match="different categories"):
        merge_sarif([one, other])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not a JSON file"),
        ('{"version": "2.1.0", "runs": []}', "exactly one run"),
        ('{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "other"}}}]}',
         "not a SARIF 2.1.0 file written by"),
    ],
)
def test_merge_rejects_bad_files_in_one_line(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.sarif"
    bad.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as info:
        merge_sarif([bad])
    assert "\n" not in str(info.value)


def test_merge_missing_file_and_no_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read SARIF file"):
        merge_sarif([tmp_path / "missing.sarif"])
    with pytest.raises(ConfigError, match="at least one"):
        merge_sarif([])


def test_merge_caps_results_by_severity(merged) -> None:
    doc = _validated(merged, "_over_the_cap")
    results = doc["runs"][0]["results"]
    assert len(results) == 1000
    assert any(r["message"]["text"] == "worst" for r in results)
    notes = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert any(n["message"]["text"].startswith("201 more findings") for n in notes)
