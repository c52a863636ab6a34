"""Suppressing known findings: a baseline file of fingerprints, and inline `ocr-hook: ignore` markers.

A suppressed finding is still reported (SARIF `suppressions`, JSON `suppressed`) but never blocks.
The baseline holds fingerprints only (path, category and quoted code; no line numbers, no
timestamps), sorted, so it survives unrelated edits and diffs cleanly in review.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping

from ocr_hook.errors import ConfigError
from ocr_hook.findings import Finding
from ocr_hook.findings.model import all_fingerprints

BASELINE_VERSION = 1
INLINE_MARKER = "ocr-hook: ignore"
# Any comment syntax: the marker text anywhere in the line, spacing after the colon optional.
_MARKER = re.compile(r"ocr-hook:\s*ignore\b", re.IGNORECASE)


def baseline_text(findings: Iterable[Finding]) -> str:
    """The baseline file's content for these findings (deterministic)."""
    fingerprints = sorted({f.fingerprint for f in findings})
    return json.dumps({"version": BASELINE_VERSION, "fingerprints": fingerprints}, indent=2) + "\n"


def load_baseline(path: str | os.PathLike[str]) -> frozenset[str]:
    """The fingerprints in a baseline file; any problem is a one-line ConfigError."""
    where = os.fspath(path)
    try:
        with open(where, encoding="utf-8") as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise ConfigError(f"baseline file not found: {where} (create it with 'ocr-hook baseline')") from None
    except OSError as exc:
        raise ConfigError(f"cannot read baseline file {where}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"baseline file {where}: not UTF-8 text") from None
    return baseline_entries(raw, where)


def baseline_entries(raw: str, where: str) -> frozenset[str]:
    """The fingerprints in a baseline file's text; any problem is a one-line ConfigError naming `where`."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"baseline file {where}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, dict) or data.get("version") != BASELINE_VERSION:
        raise ConfigError(f"baseline file {where}: expected {{\"version\": {BASELINE_VERSION}, "
                          "\"fingerprints\": [...]}} as written by 'ocr-hook baseline'")
    fingerprints = data.get("fingerprints")
    if not isinstance(fingerprints, list) or not all(isinstance(f, str) and f for f in fingerprints):
        raise ConfigError(f"baseline file {where}: 'fingerprints' must be a list of non-empty strings")
    return frozenset(fingerprints)


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
    findings: Iterable[Finding], baseline: frozenset[str], file_texts: Mapping[str, str]
) -> list[Finding]:
    """The findings with `suppressed` set to "baseline" or "inline" where one applies.

    A finding suppressed earlier keeps its reason; the baseline wins over an inline marker.
    """
    out = []
    for f in findings:
        if f.suppressed is None:
            if any(name in baseline for name in all_fingerprints(f)):  # an earlier form or path too
                f = f._replace(suppressed="baseline")
            elif has_inline_marker(f, file_texts.get(f.path)):
                f = f._replace(suppressed="inline")
        out.append(f)
    return out
