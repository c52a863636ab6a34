"""Review comments and findings: the small frozen types every report reads."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

STATUSES = ("new", "carried", "late")


class Severity(StrEnum):
    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        """Higher is worse: critical 4 … low 1."""
        return _SEVERITY_RANK[self]


_SEVERITY_RANK = {Severity.CRITICAL: 4, Severity.HIGH: 3, Severity.MEDIUM: 2, Severity.LOW: 1}


class Category(StrEnum):
    BUG = "bug"
    SECURITY = "security"
    PERFORMANCE = "performance"
    MAINTAINABILITY = "maintainability"
    TEST = "test"
    STYLE = "style"
    DOCUMENTATION = "documentation"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Comment:
    """One `code_comment` entry as the model gave it, before anchoring."""

    path: str
    content: str
    existing_code: str
    severity: Severity
    category: Category
    suggestion_code: str | None = None
    # The quote or the suggestion was shortened to its bound: the suggestion no longer replaces
    # exactly the quoted lines, so it must not become a fix.
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class Fix:
    """Whole lines `start_line`..`end_line` (1-based, inclusive) of the reviewed file replaced by
    `replacement`: the new lines joined by "\n", without a final line break."""

    start_line: int
    end_line: int
    replacement: str

    def as_dict(self) -> dict[str, int | str]:
        """The JSON form, as the report and the result cache write it."""
        return {"start_line": self.start_line, "end_line": self.end_line, "replacement": self.replacement}


@dataclass(frozen=True, slots=True)
class Finding:
    """An anchored (or deliberately unanchored) comment: what every output reports."""

    path: str
    start_line: int  # 1-based; 0 when unanchored
    end_line: int
    severity: Severity
    category: Category
    message: str
    suggestion: str | None
    anchored: bool
    fingerprint: str
    existing_code: str = ""
    anchor_note: str | None = None  # e.g. "quoted code was deleted; shown where it was"
    suppressed: str | None = None  # None, "baseline", "inline" or "dismissed"
    suppression_reason: str | None = None  # why, when the team gave a reason (a dismissal's)
    fix: Fix | None = None  # the suggestion as an applicable edit (ocr_hook.findings.fixes), when it is one
    # Review memory (ocr_hook.findings.memory): "new", "carried" from the last review, or "late" (raised
    # now on lines unchanged since then). Not part of a finding's identity.
    status: str = field(default="new", compare=False, hash=False)
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)


def shown_suggestion(f: Finding) -> str | None:
    """The suggestion as reports show it: what the fix would write when there is one."""
    return f.fix.replacement if f.fix is not None else f.suggestion


_SPACE = re.compile(r"\s+")


def normalise_code(code: str) -> str:
    """Whitespace-insensitive form of quoted code, stable across re-indentation."""
    return "\n".join(_SPACE.sub(" ", line).strip() for line in code.splitlines() if line.strip())


def fingerprint(path: str, category: Category | str, existing_code: str, message: str = "") -> str:
    """Stable identity of a finding: path, category and the code it is about, never line numbers.

    The message only breaks ties when no code was quoted, because model wording varies run to run.
    """
    import hashlib  # here, not at the top: loading OpenSSL costs the idle run (nothing staged) ~3 ms

    code = normalise_code(existing_code)
    basis = code if code else normalise_code(message)
    digest = hashlib.sha256("\0".join([path, str(category), basis]).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:32]
