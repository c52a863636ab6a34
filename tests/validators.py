"""Shared test helpers: validate SARIF and GitLab Code Quality output with the real validators.

SARIF is checked twice: the official 2.1.0 JSON schema (Draft 4) and then the Microsoft SARIF multitool
with GitHub's ingestion rules. The schemas and the multitool's settings are in tests/schemas/ (origin and
licences in its README). The multitool is installed by tests/install_multitool.sh on first use, into
$OCR_HOOK_TOOLS or else .test-tools/ in the checkout (gitignored, kept between runs); a file lock makes
concurrent sessions and xdist workers install it once. Where it cannot be had (no npm, a platform npm has
no build for) the check fails under CI=true and skips elsewhere with a reason on tests/skip_allowlist.py;
any other installation failure fails the test.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import jsonschema
import pytest
from hermetic import INHERITED_ENV, in_ci
from skip_allowlist import MULTITOOL_NO_NPM, MULTITOOL_PLATFORM

REPO_ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = Path(__file__).resolve().parent / "schemas"
SARIF_SCHEMA = SCHEMAS / "sarif-schema-2.1.0.json"
GITHUB_RULES = SCHEMAS / "sarif-multitool-github-rules.xml"
GITLAB_SCHEMA = SCHEMAS / "gitlab-codequality-codeclimate.json"
INSTALL_SCRIPT = Path(__file__).resolve().parent / "install_multitool.sh"
MULTITOOL_REL = Path("node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool")
# install_multitool.sh's exit codes for "cannot be had here" (anything else non-zero is a failure).
_EXIT_UNSUPPORTED = {3: MULTITOOL_PLATFORM, 4: MULTITOOL_NO_NPM}


def tools_dir() -> Path:
    """Where the multitool lives: $OCR_HOOK_TOOLS as the suite was started, else .test-tools/ in the
    checkout (not under $HOME: the tests run with an empty home of their own)."""
    return Path(INHERITED_ENV.get("OCR_HOOK_TOOLS") or REPO_ROOT / ".test-tools")


@functools.cache
def _multitool() -> tuple[Path | None, str, str]:
    """(the binary, "", "") or (None, allow-listed skip reason, "") or (None, "", failure)."""
    directory = tools_dir()
    directory.mkdir(parents=True, exist_ok=True)
    # The script checks that the pinned version runs and installs it if not. npm gets the environment the
    # suite was started with: the user's registry, proxy, certificates and download cache.
    env = {**INHERITED_ENV, "OCR_HOOK_TOOLS": str(directory)}
    with open(directory / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time: xdist workers, parallel sessions
        proc = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=900, env=env)
    said = (proc.stderr or proc.stdout).strip()[-500:]
    if proc.returncode in _EXIT_UNSUPPORTED:
        return None, f"{_EXIT_UNSUPPORTED[proc.returncode]} ({said})", ""
    binary = directory / MULTITOOL_REL
    if proc.returncode != 0 or not os.access(binary, os.X_OK):
        return None, "", f"tests/install_multitool.sh failed (exit {proc.returncode}): {said}"
    return binary, "", ""


def multitool_path() -> Path:
    """The multitool binary; fails under CI=true when it cannot be had, skips (allow-listed) elsewhere."""
    binary, skip_reason, failure = _multitool()
    if binary is not None:
        return binary
    if failure:
        pytest.fail(f"SARIF multitool unavailable: {failure}")
    if in_ci():
        pytest.fail(f"SARIF multitool unavailable in CI: {skip_reason}")
    pytest.skip(skip_reason)


@functools.cache
def _validator(schema: Path) -> jsonschema.Draft4Validator:
    return jsonschema.Draft4Validator(json.loads(schema.read_text(encoding="utf-8")))


def schema_errors(sarif: Mapping[str, Any]) -> list[str]:
    validator = _validator(SARIF_SCHEMA)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(sarif)]


def multitool_results(sarif_file: Path) -> list[dict[str, Any]]:
    """Every result the multitool reports for one file with GitHub's rules switched on."""
    return multitool_results_by_file([sarif_file])[sarif_file]


def multitool_results_by_file(sarif_files: Sequence[Path]) -> dict[Path, list[dict[str, Any]]]:
    """Every result the multitool reports for each of several files, from one run of it: starting the .NET
    program is most of its cost (about 2 s of CPU; a second file adds about 0.5 s). It checks each file on its
    own and names the file in each result's location; a result that names none counts against every file."""
    binary = multitool_path()
    with tempfile.TemporaryDirectory(prefix="ocr-hook-multitool-") as tmp:
        out = Path(tmp) / "validation.sarif"
        env = {**os.environ, "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT": "1", "DOTNET_CLI_TELEMETRY_OPTOUT": "1"}
        proc = subprocess.run(
            [str(binary), "validate", *map(str, sarif_files), "-c", str(GITHUB_RULES),
             "--rule-kind", "Sarif;Ghas", "-o", str(out), "--log", "ForceOverwrite"],
            capture_output=True, text=True, timeout=120, env=env,
        )
        if not out.is_file():
            pytest.fail(f"multitool wrote no output (exit {proc.returncode}): {proc.stdout}{proc.stderr}")
        report = json.loads(out.read_text(encoding="utf-8-sig"))
    found: dict[Path, list[dict[str, Any]]] = {path: [] for path in sarif_files}
    by_file = {path.resolve(): path for path in sarif_files}
    for result in (r for run in report.get("runs", []) for r in run.get("results", [])):
        uris = [loc.get("physicalLocation", {}).get("artifactLocation", {}).get("uri", "")
                for loc in result.get("locations", [])]
        named = {by_file.get(Path(unquote(urlsplit(uri).path)).resolve()) for uri in uris if uri} - {None}
        for path in named or sarif_files:
            found[path].append(result)
    return found


def _describe(result: Mapping[str, Any]) -> str:
    message = result.get("message", {})
    return f"{result.get('ruleId')}: {message.get('text') or message.get('arguments')}"


def validate_sarif(path_or_dict: str | os.PathLike[str] | Mapping[str, Any],
                   multitool_found: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Assert that a SARIF file or document passes the schema and the multitool; return the document.
    `multitool_found`: what multitool_results_by_file reported for this file, when it has run already."""
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
        found = multitool_results(path) if multitool_found is None else multitool_found
        bad = [r for r in found if r.get("level") == "error"]
        assert not bad, "SARIF multitool errors:\n" + "\n".join(_describe(r) for r in bad)
    finally:
        if cleanup:
            path.unlink(missing_ok=True)
    return document


class DeferredSarif:
    """validate_sarif's two checks for the SARIF files a module's tests write, with one multitool run for all
    of them: the schema when the test hands the file in, the multitool over every file at once when the module
    ends (`finish`, from a module fixture). Starting the .NET program is most of its cost, so five files cost
    one run and a half instead of five. A file the multitool finds errors in fails the module's teardown, and
    the message names the test that wrote it."""

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="ocr-hook-sarif-batch-"))
        self._files: list[tuple[str, Path]] = []

    def check(self, path_or_dict: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
        """The schema now (an AssertionError here, as validate_sarif's); the multitool at `finish`, over a copy
        of the file as it is now. Returns the document."""
        copy = self._dir / f"{len(self._files)}.sarif"
        if isinstance(path_or_dict, Mapping):
            document = dict(path_or_dict)
            copy.write_text(json.dumps(document), encoding="utf-8")
        else:
            shutil.copyfile(path_or_dict, copy)
            document = json.loads(copy.read_text(encoding="utf-8"))
        errors = schema_errors(document)
        assert not errors, "SARIF schema errors:\n" + "\n".join(errors)
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
        self._files.append((test, copy))
        return document

    def finish(self) -> None:
        try:
            if not self._files:
                return
            found = multitool_results_by_file([path for _test, path in self._files])
            bad = [f"{test}: {_describe(r)}" for test, path in self._files for r in found[path]
                   if r.get("level") == "error"]
            assert not bad, "SARIF multitool errors:\n" + "\n".join(bad)
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)


def validate_gitlab(entries: Sequence[Mapping[str, Any]]) -> None:
    """Assert that a Code Quality report is a list of valid entries with unique fingerprints."""
    assert isinstance(entries, list), "a GitLab Code Quality report is a JSON array"
    validator = _validator(GITLAB_SCHEMA)
    for i, entry in enumerate(entries):
        errors = [e.message for e in validator.iter_errors(entry)]
        assert not errors, f"entry {i} is invalid: {errors}"
    fingerprints = [e["fingerprint"] for e in entries]
    assert len(set(fingerprints)) == len(fingerprints), "fingerprints are not unique"
