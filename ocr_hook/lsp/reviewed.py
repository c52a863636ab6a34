"""What the reviews produced, as the language server reads it: the last review's findings per file and, per
file, the text that review read (to tell which findings' lines changed since).

Two origins. Review memory (DESIGN.md 7), the default: the repository's latest review, any line of work, with
each file's text as sent (secrets masked) and the digest of the exact text (ocr_hook.store.memory). Or a
report a CI run wrote (`--from FILE`: the JSON report, or its SARIF): its findings, and each file's text at
the commit the report names (its scope), else (a staged review) in the index, read from git when a file is
opened. Nothing walks
the work tree: only open files are looked at, so a repository of any size costs what its open files cost.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ocr_hook.errors import ConfigError
from ocr_hook.findings import Finding


class Reviewed(NamedTuple):
    """`findings`: by path (relative to the repository's top, '/'-separated). `text_of(path)`: the text as
    reviewed and its exact digest when known (None, None: unknown, so every anchored finding is held back).
    `dismiss_from`: the JSON report `ocr-hook dismiss --from` reads, in report mode."""

    findings: Mapping[str, tuple[Finding, ...]]
    text_of: Callable[[str], tuple[str | None, str | None]]
    origin: str  # "the last review" / "report.json", for messages
    dismiss_from: str | None = None


def by_path(findings: list[Finding]) -> dict[str, tuple[Finding, ...]]:
    out: dict[str, list[Finding]] = {}
    for f in findings:
        out.setdefault(f.path, []).append(f)
    return {path: tuple(items) for path, items in out.items()}


def from_memory(root: str, cache_dir: str) -> Reviewed | None:
    """The last review review memory holds for the repository; None when there is none."""
    from pathlib import Path

    from ocr_hook.store.memory import last_review, last_review_contents

    last = last_review(Path(cache_dir), Path(root))
    if last is None:
        return None
    contents = last_review_contents(Path(cache_dir), Path(root))
    sources = dict(last.run.sources) if last.run is not None else {}  # what that review read, per file

    def text_of(path: str) -> tuple[str | None, str | None]:
        return contents.get(path), sources.get(path)

    return Reviewed(by_path(list(last.findings)), text_of, "the last review")


def from_report(root: str, path: str) -> Reviewed:
    """A `--format json` report or its SARIF; ConfigError (one line) for anything else."""
    from ocr_hook.findings.serial import ReportError, parse_report, read_report_json

    where = f"--from {path}"
    try:
        data = read_report_json(path, where)
    except ReportError as exc:
        raise ConfigError(str(exc)) from None
    commit: str | None = None
    if isinstance(data, dict) and "runs" in data:
        findings = sarif_findings(data, where)
        dismiss_from = None  # dismiss --from reads JSON reports only; the memory is looked in instead
    else:
        try:
            report = parse_report(data)
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError, RecursionError):
            raise ConfigError(f"{where}: not an ocr-hook JSON or SARIF report") from None
        findings, commit, dismiss_from = list(report.findings), report.commit, os.path.abspath(path)
    rev = commit or ""  # a staged review read the index (`:path`); a CI review names its commit
    cache: dict[str, str | None] = {}

    def text_of(name: str) -> tuple[str | None, str | None]:
        if name not in cache:
            cache[name] = _blob(root, rev, name)
        return cache[name], None

    return Reviewed(by_path(findings), text_of, os.path.basename(path), dismiss_from)


def _blob(root: str, rev: str, path: str) -> str | None:
    from ocr_hook.changes.git import run_git

    proc = run_git(root, ["cat-file", "blob", f"{rev}:{path}"], ok_codes=(0, 128))
    return proc.stdout.decode("utf-8", "surrogateescape") if proc.returncode == 0 else None


def sarif_findings(log: Any, where: str) -> list[Finding]:
    """ocr-hook's results of a SARIF log (its own, or merged by merge-sarif): what each result carries of the
    finding (fingerprint, severity, category, lines, message, fix). Results of other tools are left out."""
    from urllib.parse import unquote

    from ocr_hook.findings import Category, Fix, Severity
    from ocr_hook.reports.sarif import OUR_FINGERPRINT

    out: list[Finding] = []
    try:
        for run in log["runs"]:
            for result in run.get("results") or []:
                fingerprint = (result.get("partialFingerprints") or {}).get(OUR_FINGERPRINT)
                props = result.get("properties") or {}
                if not isinstance(fingerprint, str) or "severity" not in props:
                    continue
                location = result["locations"][0]["physicalLocation"]
                region = location.get("region") or {}
                start = int(region.get("startLine", 0))
                fix = None
                for change in (result.get("fixes") or [{}])[0].get("artifactChanges") or []:
                    for rep in change.get("replacements") or []:
                        deleted = rep["deletedRegion"]
                        fix = Fix(int(deleted["startLine"]), int(deleted["endLine"]),
                                  str(rep["insertedContent"]["text"]))
                out.append(Finding(
                    path=unquote(str(location["artifactLocation"]["uri"])), start_line=start,
                    end_line=int(region.get("endLine", start)), severity=Severity(props["severity"]),
                    category=Category(props["category"]), message=str(result["message"]["text"]),
                    suggestion=None, anchored=bool(props.get("anchored", True)), fingerprint=fingerprint,
                    suppressed="sarif" if result.get("suppressions") else None, fix=fix,
                    status=str(props.get("reviewStatus") or "new")))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        raise ConfigError(f"{where}: not a SARIF log ocr-hook wrote") from None
    return out


def dismissals(root: str, dismissals_file: str) -> tuple[Any, ...]:
    """The dismissals file's entries (a bad file: ConfigError, one line). Applied with the review's own rule
    (findings.dismissals.apply: one entry, one finding, never a more severe one), not as a set of fingerprints:
    a new critical finding that quotes a dismissed line at another call site shares its fingerprint and counts."""
    from ocr_hook.findings import dismissals as file

    return file.load_file(root, dismissals_file)


def undismissed(findings: list[Finding], entries: tuple[Any, ...], name: str) -> list[Finding]:
    """The findings no entry of the dismissals file suppresses today."""
    if not entries:
        return findings
    import datetime as dt

    from ocr_hook.findings.dismissals import apply

    return [f for f in apply(findings, entries, dt.date.today(), name)[0] if f.suppressed is None]


def whole_finding(f: Finding) -> str:
    """Everything the review said of a finding, for "show the whole finding"."""
    where = f"{f.path}:{f.start_line}" + (f"-{f.end_line}" if f.end_line > f.start_line else "") \
        if f.anchored and f.start_line >= 1 else f"{f.path} (the whole file)"
    lines = [f"{where} [{f.severity.value.upper()}] {f.category.value} {f.fingerprint[:8]} ({f.status})",
             f.message.strip()]
    if f.anchor_note:
        lines.append(f"note: {f.anchor_note}")
    if f.fix is not None:
        lines += ["suggested fix:", f.fix.replacement]
    elif f.suggestion:
        lines += ["suggestion:", f.suggestion]
    lines.append(f"fingerprint: {f.fingerprint}")
    return "\n".join(lines)


def signature(paths: list[str]) -> tuple[Any, ...]:
    """What changes when any of `paths` is written (atomic writes replace the file: a new inode)."""
    out: list[Any] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
        else:
            out.append((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(out)


