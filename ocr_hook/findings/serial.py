"""Findings as JSON and back: the one place that knows both forms a finding is written in.

* The store's record (`finding_to_json` / `finding_from_json`): every field, for the result cache and
  review memory. The reader is all-or-nothing (ValueError or KeyError on anything malformed), so a store
  treats a bad entry as a miss and reviews again.
* The `--format json` report (`finding_to_report`, which ocr_hook.reports.json_report writes, and the
  readers below): `parse_report` / `load_report` are strict, for the publishers (a fingerprint goes
  into a pull-request marker verbatim, so only the hex ocr-hook writes passes); `report_findings` is
  lenient, for `dismiss --from` (each finding as the object the report holds, only its identifying
  keys checked). Every reader of a report file goes through `read_report_json`.

Pure apart from `read_report_json`'s one read: the callers decide where the files live.
"""

import json
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from ocr_hook.errors import FatalError
from ocr_hook.findings.model import ALIASES, STATUSES, Category, Finding, Fix, Severity, all_fingerprints


def finding_to_json(finding: Finding) -> dict[str, Any]:
    return {
        "path": finding.path,
        "start_line": finding.start_line,
        "end_line": finding.end_line,
        "severity": str(finding.severity),
        "category": str(finding.category),
        "message": finding.message,
        "suggestion": finding.suggestion,
        "anchored": finding.anchored,
        "fingerprint": finding.fingerprint,
        "existing_code": finding.existing_code,
        "anchor_note": finding.anchor_note,
        "suppressed": finding.suppressed,
        "fix": None if finding.fix is None else finding.fix.as_dict(),
        "status": finding.status,
        "extra": dict(finding.extra),
    }


def _typed(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = data[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise ValueError(f"{name} has the wrong type")
    return value


def _fix_from_json(data: Any) -> Fix | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError("fix must be an object or null")
    return Fix(_typed(data, "start_line", int), _typed(data, "end_line", int), _typed(data, "replacement", str))


def finding_from_json(data: Any) -> Finding:
    """The inverse of finding_to_json; ValueError/KeyError on anything malformed."""
    if not isinstance(data, dict):
        raise ValueError("a finding must be an object")
    extra = _typed(data, "extra", dict)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in extra.items()):
        raise ValueError("extra must map strings to strings")
    status = _typed(data, "status", str)
    if status not in STATUSES:
        raise ValueError("unknown status")
    return Finding(
        path=_typed(data, "path", str),
        start_line=_typed(data, "start_line", int),
        end_line=_typed(data, "end_line", int),
        severity=Severity(_typed(data, "severity", str)),
        category=Category(_typed(data, "category", str)),
        message=_typed(data, "message", str),
        suggestion=_typed(data, "suggestion", (str, type(None))),
        anchored=_typed(data, "anchored", bool),
        fingerprint=_typed(data, "fingerprint", str),
        existing_code=_typed(data, "existing_code", str),
        anchor_note=_typed(data, "anchor_note", (str, type(None))),
        suppressed=_typed(data, "suppressed", (str, type(None))),
        fix=_fix_from_json(data["fix"]),
        status=status,
        extra=extra,
    )


def findings_from_json(items: Any) -> list[Finding]:
    if not isinstance(items, list):
        raise ValueError("findings must be a list")
    return [finding_from_json(item) for item in items]


# --- the --format json report -----------------------------------------------------------------------------

# The report's patterns compile on first use: the result cache and review memory read the store's record only.
_FINGERPRINT = r"[0-9a-f]{8,64}"
IDENTIFYING = ("path", "category", "severity", "fingerprint")  # what the lenient reader checks


def finding_to_report(f: Finding) -> dict[str, Any]:
    """One finding as the JSON report (and review memory's "last review") gives it."""
    return {
        "path": f.path,
        "start_line": f.start_line if f.anchored else 0,
        "end_line": f.end_line if f.anchored else 0,
        "severity": f.severity.value,
        "category": f.category.value,
        "message": f.message,
        "suggestion": f.suggestion,
        "anchored": f.anchored,
        "fingerprint": f.fingerprint,
        # The finding's other fingerprints (its earlier form's, its file's before a rename): what a publisher
        # matches earlier threads by, so a `git mv` does not post the finding again (issue 58.15).
        **({"fingerprint_aliases": aliases} if (aliases := _aliases(f)) else {}),
        "suppressed": f.suppressed,
        "suppression_reason": f.suppression_reason,  # a dismissal's reason (ocr-hook dismiss, or a person's reply)
        "anchor_note": f.anchor_note,
        # The suggestion as an edit: whole lines start..end become `replacement` (no final line break).
        "fix": None if f.fix is None else f.fix.as_dict(),
        # Review memory: new, carried (from the last review) or late (raised now on unchanged lines).
        "status": f.status,
        # Dismissed by a person on the pull request (DESIGN.md 18): by, at, in and the reason.
        **({"dismissal": forge_dismissal_dict(f)} if f.extra.get("dismissed_in") else {}),
    }


def _aliases(f: Finding) -> list[str]:
    return [n for n in dict.fromkeys(all_fingerprints(f)[1:]) if n != f.fingerprint]


# A finding a person dismissed on the forge carries who, when and where in `extra`.
FORGE_DISMISSAL_KEYS = {"by": "dismissed_by", "at": "dismissed_at", "in": "dismissed_in"}


def forge_dismissal_dict(f: Finding) -> dict[str, str]:
    return {**{key: f.extra.get(name, "") for key, name in FORGE_DISMISSAL_KEYS.items()},
            "reason": f.suppression_reason or ""}


class Report(NamedTuple):
    """What a publisher needs of a finished review's JSON report."""

    status: str  # complete / incomplete
    exit_code: int
    verdict: str
    findings: tuple[Finding, ...]
    skipped: int  # files not reviewed (size, budget, …)
    failed: int
    resolved: tuple[str, ...] = ()  # fingerprints of earlier findings review memory found fixed
    commit: str | None = None  # the reviewed commit as the scope names it (12+ hex digits); None: staged, unknown
    reviewed: frozenset[str] = frozenset()  # the files whose review completed (coverage.reviewed)
    # the checks' verdicts (checks.model.CheckVerdict, DESIGN.md 20): publish.report_input reads the report's `checks`
    checks: tuple[Any, ...] = ()


class ReportError(FatalError):
    """A file given as a JSON report is not one (exit 2)."""


MAX_REPORT_BYTES = 32 * 1024 * 1024  # far above any real report; a committed link to /dev/zero is not one


def read_report_json(path: str, where: str, *, regular_only: bool = False) -> Any:
    """The decoded JSON of a report file; ReportError("{where}: ...") when it cannot be read or is not JSON.
    `regular_only` (a report someone else may have planted, as `publish` reads): never through a link, never
    a FIFO or a device, never more than MAX_REPORT_BYTES (bounded_read). `dismiss --from` reads what its
    user names, a pipe included."""
    from ocr_hook.bounded_read import Refused, read_regular_file

    try:
        if regular_only:
            data = read_regular_file(path, MAX_REPORT_BYTES)
        else:
            with open(path, "rb") as fh:
                data = fh.read()
    except Refused as exc:
        raise ReportError(f"{where}: not read: {exc}") from None
    except OSError as exc:
        raise ReportError(f"{where}: cannot read it: {exc.strerror or exc}") from None
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError both are ValueErrors
        raise ReportError(f"{where}: not a JSON report (write one with --format json or --json-output)") from None


def load_report(path: str, where: str | None = None) -> Report:
    """The report at `path` (a regular file: the publishers read it), strictly checked; ReportError naming
    `where` (default: the path) otherwise."""
    where = where or path
    data = read_report_json(path, where, regular_only=True)
    try:
        return parse_report(data)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError, RecursionError) as exc:
        raise ReportError(f"{where}: is not an ocr-hook --format json report ({_short(exc)})") from None


def _short(exc: BaseException) -> str:
    text = " ".join(repr(exc).split())
    return text if len(text) <= 200 else text[:199] + "…"


def parse_report(data: Any) -> Report:
    """Strict: ValueError, KeyError or TypeError on anything that is not what ocr-hook writes."""
    if not isinstance(data, dict) or not isinstance(data.get("tool"), dict) or data["tool"].get("name") != "ocr-hook":
        raise ValueError("no tool.name ocr-hook")
    coverage = data.get("coverage") or {}
    findings, resolved = data["findings"], data.get("resolved") or []
    if not isinstance(coverage, dict) or not isinstance(findings, list) or not isinstance(resolved, list):
        raise TypeError("coverage must be an object, findings and resolved lists")
    if not all(isinstance(f, dict) for f in findings):
        raise TypeError("a finding is not an object")
    return Report(
        status=str(data["status"]),
        exit_code=int(data["exit_code"]),
        verdict=str(data.get("verdict") or ""),
        findings=tuple(finding_from_report(f) for f in findings),
        skipped=len(coverage.get("skipped") or []),
        failed=len(coverage.get("failed") or []),
        resolved=tuple(_fingerprint(r["fingerprint"]) for r in resolved
                       if isinstance(r, dict) and "fingerprint" in r),
        commit=reviewed_commit(data.get("scope")),
        reviewed=frozenset(_text(p) for p in coverage.get("reviewed") or []),
    )


# The scope's wording names the reviewed commit last (collect.resolve_sides): "main...HEAD (merge base
# a..b)", "x..y (a..b)", "commit b against its first parent a", "push range a..b (…)". Staged: none.
_SCOPE_COMMIT = r"\.\.([0-9a-f]{12,64})\b|^commit ([0-9a-f]{12,64})\b"


def reviewed_commit(scope: Any) -> str | None:
    if not isinstance(scope, str) or scope.startswith("staged"):
        return None
    found = [a or b for a, b in re.findall(_SCOPE_COMMIT, scope)]
    return found[-1] if found else None


def finding_from_report(f: dict[str, Any]) -> Finding:
    """One report finding, strictly (a report from before review memory has no status: "new")."""
    fix = f.get("fix")
    return Finding(
        path=_text(f["path"]),
        start_line=int(f["start_line"]),
        end_line=int(f["end_line"]),
        severity=Severity(f["severity"]),
        category=Category(f["category"]),
        message=_text(f.get("message") or ""),
        suggestion=None if f.get("suggestion") is None else _text(f["suggestion"]),
        anchored=bool(f["anchored"]),
        fingerprint=_fingerprint(f["fingerprint"]),
        suppressed=None if not f.get("suppressed") else _text(f["suppressed"]),
        suppression_reason=None if f.get("suppression_reason") is None else _text(f["suppression_reason"]),
        fix=None if fix is None else Fix(int(fix["start_line"]), int(fix["end_line"]), _text(fix["replacement"])),
        status=_status(f.get("status")),
        extra=_dismissal_extra(f.get("dismissal")) | _aliases_extra(f.get("fingerprint_aliases")),
    )


def _aliases_extra(data: Any) -> dict[str, str]:
    """A report's `fingerprint_aliases` (optional: reports before issue 58.15 have none) as Finding.extra keeps
    them; each must be hex as a fingerprint is, since a publisher matches markers with them."""
    if data is None:
        return {}
    if not isinstance(data, list):
        raise TypeError("fingerprint_aliases must be a list")
    return {ALIASES: " ".join(_fingerprint(a) for a in data)} if data else {}


def _dismissal_extra(data: Any) -> dict[str, str]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TypeError("dismissal must be an object")
    return {name: _text(data.get(key, "")) for key, name in FORGE_DISMISSAL_KEYS.items()}


def report_findings(data: Any, where: str) -> list[dict[str, Any]]:
    """Lenient: a report's (or review memory's) finding objects as they are, each with its identifying keys
    non-empty strings; ReportError otherwise. A report object or its bare `findings` list."""
    findings = data.get("findings") if isinstance(data, dict) else data
    if not isinstance(findings, list) or not all(
            isinstance(f, dict) and all(isinstance(f.get(k), str) and f.get(k) for k in IDENTIFYING)
            for f in findings):
        raise ReportError(f"{where}: expected 'findings' with {', '.join(IDENTIFYING)} each, as ocr-hook's JSON "
                          "report has them")
    return findings


def _status(value: Any) -> str:
    if value is None:  # a report from before review memory
        return "new"
    if value not in ("new", "carried", "late"):
        raise ValueError(f"status {value!r} is not new, carried or late")
    return str(value)


def _fingerprint(value: Any) -> str:
    # The markers carry it verbatim: ocr-hook writes hex, nothing else may pass.
    if not isinstance(value, str) or not re.fullmatch(_FINGERPRINT, value):
        raise ValueError(f"fingerprint {value!r} is not what ocr-hook writes")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value
