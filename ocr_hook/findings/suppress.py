"""Suppressing known findings: a baseline file of fingerprints, and inline `ocr-hook: ignore` markers.

A suppressed finding is still reported (SARIF `suppressions`, JSON `suppressed`) but never blocks.
The baseline holds one entry per finding: its fingerprint (path, category and quoted code; no line numbers, no
timestamps), severity and the start of its message, sorted, so it survives unrelated edits and diffs cleanly in
review. The fingerprint finds the finding; severity and message tell it from another finding of the same
fingerprint (the same line quoted at another call site).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from ocr_hook.errors import ConfigError
from ocr_hook.findings import Finding

BASELINE_VERSION = 2  # 2: one entry per finding, with its severity and message (issue 58.16); 1 still read
INLINE_MARKER = "ocr-hook: ignore"
# Any comment syntax: the marker text anywhere in the line, spacing after the colon optional.
_MARKER = re.compile(r"ocr-hook:\s*ignore\b", re.IGNORECASE)


class BaselineEntry(NamedTuple):
    """One finding a baseline adopted: it suppresses one finding of its fingerprint, never a more severe one, and
    among several of that fingerprint the one its message names (findings.one_each)."""

    fingerprint: str
    severity: str = ""  # "" in a version 1 file (fingerprints only): any severity
    message: str = ""  # the start of the finding's message, one line ("" in a version 1 file)


def baseline_text(findings: Iterable[Finding]) -> str:
    """The baseline file's content for these findings (deterministic: sorted, one entry per finding)."""
    from ocr_hook.findings.one_each import kept_message

    entries = sorted((f.fingerprint, f.severity.value, kept_message(f.message)) for f in findings)
    rows = [{"fingerprint": fp, "severity": sev, "message": msg} for fp, sev, msg in entries]
    return json.dumps({"version": BASELINE_VERSION, "findings": rows}, indent=2, ensure_ascii=False) + "\n"


def load_baseline(path: str | os.PathLike[str]) -> tuple[BaselineEntry, ...]:
    """The entries of a baseline file; any problem is a one-line ConfigError."""
    where = os.fspath(path)
    try:
        with open(where, encoding="utf-8") as handle:
            raw = handle.read()
    except FileNotFoundError:
        from ocr_hook.hookenv.program import program

        raise ConfigError(f"baseline file not found: {where} (create it with '{program(os.environ)} baseline')"
                          ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read baseline file {where}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"baseline file {where}: not UTF-8 text") from None
    return baseline_entries(raw, where)


def baseline_entries(raw: str, where: str) -> tuple[BaselineEntry, ...]:
    """The entries of a baseline file's text; any problem is a one-line ConfigError naming `where`."""
    from ocr_hook.findings.model import Severity

    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"baseline file {where}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    shape = (f"baseline file {where}: expected {{\"version\": {BASELINE_VERSION}, \"findings\": [{{\"fingerprint\", "
             "\"severity\", \"message\"}, ...]} as written by 'ocr-hook baseline'")
    if not isinstance(data, dict) or data.get("version") not in (1, BASELINE_VERSION):
        raise ConfigError(shape)
    if data["version"] == 1:  # fingerprints only: each one finding, of any severity
        fingerprints = data.get("fingerprints")
        if not isinstance(fingerprints, list) or not all(isinstance(f, str) and f for f in fingerprints):
            raise ConfigError(f"baseline file {where}: 'fingerprints' must be a list of non-empty strings")
        return tuple(BaselineEntry(f) for f in fingerprints)
    rows = data.get("findings")
    if not isinstance(rows, list):
        raise ConfigError(shape)
    out = []
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict) or not isinstance(row.get("fingerprint"), str) or not row["fingerprint"] \
                or row.get("severity") not in Severity._value2member_map_ or not isinstance(row.get("message"), str):
            raise ConfigError(f"baseline file {where}: entry {n}: expected fingerprint (text), severity (one of "
                              f"{', '.join(Severity)}) and message (text)")
        out.append(BaselineEntry(row["fingerprint"], row["severity"], row["message"]))
    return tuple(out)


def has_inline_marker(finding: Finding, file_text: str | None) -> bool:
    """True when the finding's first line or the line above it carries the marker."""
    return bool(marker_lines(finding, file_text))


def marker_lines(finding: Finding, file_text: str | None) -> list[int]:
    """The lines (1-based) among the finding's first line and the one above it that carry the marker."""
    if file_text is None or not finding.anchored or finding.start_line < 1:
        return []
    lines = file_text.splitlines()
    first = max(1, finding.start_line - 1)
    return [n for n in range(first, finding.start_line + 1) if n <= len(lines) and _MARKER.search(lines[n - 1])]


def apply_suppressions(
    findings: Iterable[Finding], baseline: Sequence[BaselineEntry], file_texts: Mapping[str, str]
) -> list[Finding]:
    """The findings with `suppressed` set to "baseline" or "inline" where one applies.

    A finding suppressed earlier keeps its reason; the baseline wins over an inline marker. Each baseline entry
    suppresses one finding of its fingerprint (or an alias: an earlier form, the path before a rename), never a
    more severe one (findings.one_each).
    """
    items = list(findings)
    chosen = {}
    if baseline:
        from ocr_hook.findings import one_each

        chosen = one_each.match(items, one_each.by_fingerprint(baseline))
    out = []
    for i, f in enumerate(items):
        if f.suppressed is None:
            if i in chosen:
                f = f._replace(suppressed="baseline")
            elif has_inline_marker(f, file_texts.get(f.path)):
                f = f._replace(suppressed="inline")
        out.append(f)
    return out
