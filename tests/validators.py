"""Shared test helpers: validate SARIF and GitLab Code Quality output with the real validators.

SARIF is checked twice: the official 2.1.0 JSON schema (Draft 4) and then the Microsoft SARIF
multitool with GitHub's ingestion rules (shared/README.md). shared/ lives beside the repository;
without it these checks skip with a reason. The multitool is installed by tests/install_multitool.sh
into ${OCR_HOOK_TOOLS:-~/.cache/ocr-hook-test-tools}; when it is missing the helper runs that script
once; if it still cannot run, the check fails under CI=true and skips elsewhere.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
SARIF_SCHEMA = SHARED / "schemas" / "sarif-schema-2.1.0.json"
GITHUB_RULES = SHARED / "schemas" / "sarif-multitool-github-rules.xml"
GITLAB_SCHEMA = SHARED / "schemas" / "gitlab-codequality-codeclimate.json"
INSTALL_SCRIPT = Path(__file__).resolve().parent / "install_multitool.sh"
MULTITOOL_REL = Path("node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def _need(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"{path} is absent: the shared/ folder is expected beside the repository at {SHARED}")
    return path


@functools.cache
def _load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def tools_dir() -> Path:
    return Path(os.environ.get("OCR_HOOK_TOOLS") or Path.home() / ".cache" / "ocr-hook-test-tools")


@functools.cache
def _multitool() -> tuple[Path | None, str]:
    """The multitool binary, installing it once if needed; else None and why."""
    binary = tools_dir() / MULTITOOL_REL
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        proc = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            return None, f"tests/install_multitool.sh failed: {(proc.stderr or proc.stdout).strip()[-500:]}"
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        return None, f"the SARIF multitool is not at {binary}"
    return binary, ""


def multitool_path() -> Path:
    """The multitool binary; fails under CI=true when it cannot be had, skips elsewhere."""
    binary, why = _multitool()
    if binary is None:
        if in_ci():
            pytest.fail(f"SARIF multitool unavailable in CI: {why}")
        pytest.skip(f"SARIF multitool unavailable: {why}")
    return binary


def schema_errors(sarif: Mapping[str, Any]) -> list[str]:
    validator = jsonschema.Draft4Validator(_load_json(_need(SARIF_SCHEMA)))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(sarif)]


def multitool_results(sarif_file: Path) -> list[dict[str, Any]]:
    """Every result the multitool reports for one file with GitHub's rules switched on."""
    binary = multitool_path()
    with tempfile.TemporaryDirectory(prefix="ocr-hook-multitool-") as tmp:
        out = Path(tmp) / "validation.sarif"
        env = {**os.environ, "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT": "1", "DOTNET_CLI_TELEMETRY_OPTOUT": "1"}
        proc = subprocess.run(
            [str(binary), "validate", str(sarif_file), "-c", str(_need(GITHUB_RULES)),
             "--rule-kind", "Sarif;Ghas", "-o", str(out), "--log", "ForceOverwrite"],
            capture_output=True, text=True, timeout=120, env=env,
        )
        if not out.is_file():
            pytest.fail(f"multitool wrote no output (exit {proc.returncode}): {proc.stdout}{proc.stderr}")
        report = json.loads(out.read_text(encoding="utf-8-sig"))
    return [r for run in report.get("runs", []) for r in run.get("results", [])]


def _describe(result: Mapping[str, Any]) -> str:
    message = result.get("message", {})
    return f"{result.get('ruleId')}: {message.get('text') or message.get('arguments')}"


def validate_sarif(path_or_dict: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """Assert that a SARIF file or document passes the schema and the multitool; return the document."""
    if isinstance(path_or_dict, Mapping):
        document = dict(path_or_dict)
        tmp = tempfile.NamedTemporaryFile("w", suffix=".sarif", delete=False, encoding="utf-8")
        with tmp:
            json.dump(document, tmp)
        path = Path(tmp.name)
        cleanup = True
    else:
        path = Path(path_or_dict)
        document = json.loads(path.read_text(encoding="utf-8"))
        cleanup = False
    try:
        errors = schema_errors(document)
        assert not errors, "SARIF schema errors:\n" + "\n".join(errors)
        bad = [r for r in multitool_results(path) if r.get("level") == "error"]
        assert not bad, "SARIF multitool errors:\n" + "\n".join(_describe(r) for r in bad)
    finally:
        if cleanup:
            path.unlink(missing_ok=True)
    return document


def validate_gitlab(entries: Sequence[Mapping[str, Any]]) -> None:
    """Assert that a Code Quality report is a list of valid entries with unique fingerprints."""
    assert isinstance(entries, list), "a GitLab Code Quality report is a JSON array"
    validator = jsonschema.Draft4Validator(_load_json(_need(GITLAB_SCHEMA)))
    for i, entry in enumerate(entries):
        errors = [e.message for e in validator.iter_errors(entry)]
        assert not errors, f"entry {i} is invalid: {errors}"
    fingerprints = [e["fingerprint"] for e in entries]
    assert len(set(fingerprints)) == len(fingerprints), "fingerprints are not unique"
