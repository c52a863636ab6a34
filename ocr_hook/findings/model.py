"""Review comments and findings: the small frozen types every report reads. Annotations are evaluated (no
`from __future__ import annotations`): a NamedTuple's string annotations are each compiled as its class is made."""

import operator
import re
from enum import StrEnum
from typing import Any, NamedTuple

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


class Comment(NamedTuple):
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


class Fix(NamedTuple):
    """Whole lines `start_line`..`end_line` (1-based, inclusive) of the reviewed file replaced by
    `replacement`: the new lines joined by "\n", without a final line break."""

    start_line: int
    end_line: int
    replacement: str

    def as_dict(self) -> dict[str, int | str]:
        """The JSON form, as the report and the result cache write it."""
        return {"start_line": self.start_line, "end_line": self.end_line, "replacement": self.replacement}


_FIELDS = ("path", "start_line", "end_line", "severity", "category", "message", "suggestion", "anchored",
           "fingerprint", "existing_code", "anchor_note", "suppressed", "suppression_reason", "fix", "status", "extra")
_values = operator.attrgetter(*_FIELDS)
_identity = operator.attrgetter(*_FIELDS[:-2])  # all but status and extra
_set = object.__setattr__  # Finding refuses assignment; its __init__ goes around that


class Finding:
    """An anchored (or deliberately unanchored) comment: what every output reports.

    Immutable; change one with `_replace`, as the NamedTuples beside it. Equal and hashable on every field
    but `status` and `extra`, so it cannot be a NamedTuple; nor is it a frozen dataclass, whose methods
    Python compiles from source when the class is created (about a millisecond, on every cached run)."""

    __slots__ = _FIELDS

    path: str
    start_line: int  # 1-based; 0 when unanchored
    end_line: int
    severity: Severity
    category: Category
    message: str
    suggestion: str | None
    anchored: bool
    fingerprint: str
    existing_code: str
    anchor_note: str | None  # e.g. "quoted code was deleted; shown where it was"
    suppressed: str | None  # None, "baseline", "inline" or "dismissed"
    suppression_reason: str | None  # why, when the team gave a reason (a dismissal's)
    fix: Fix | None  # the suggestion as an applicable edit (ocr_hook.findings.fixes), when it is one
    # Review memory (ocr_hook.findings.memory): "new", "carried" from the last review, or "late" (raised
    # now on lines unchanged since then). Not part of a finding's identity, nor is `extra`.
    status: str
    extra: dict[str, str]

    def __init__(self, path: str, start_line: int, end_line: int, severity: Severity, category: Category,
                 message: str, suggestion: str | None, anchored: bool, fingerprint: str, existing_code: str = "",
                 anchor_note: str | None = None, suppressed: str | None = None,
                 suppression_reason: str | None = None, fix: Fix | None = None, status: str = "new",
                 extra: dict[str, str] | None = None) -> None:
        values = (path, start_line, end_line, severity, category, message, suggestion, anchored, fingerprint,
                  existing_code, anchor_note, suppressed, suppression_reason, fix, status,
                  {} if extra is None else extra)
        for name, value in zip(_FIELDS, values, strict=True):
            _set(self, name, value)

    def _replace(self, **changes: Any) -> "Finding":
        """A copy with the given fields changed (TypeError for a name that is not a field)."""
        return type(self)(**{**dict(zip(_FIELDS, _values(self), strict=True)), **changes})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Finding):
            return NotImplemented
        return bool(_identity(self) == _identity(other))

    def __hash__(self) -> int:
        return hash(_identity(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in zip(_FIELDS, _values(self), strict=True))
        return f"{type(self).__name__}({shown})"

    def __reduce__(self) -> "tuple[type[Finding], tuple[Any, ...]]":
        # copy and pickle would otherwise restore the slots through __setattr__, which refuses
        return type(self), _values(self)


def shown_suggestion(f: Finding) -> str | None:
    """The suggestion as reports show it: what the fix would write when there is one."""
    return f.fix.replacement if f.fix is not None else f.suggestion


_SPACE = r"\s+"  # compiled by re on first use: a cached re-run fingerprints nothing


def normalise_code(code: str) -> str:
    """Whitespace-insensitive form of quoted code, stable across re-indentation."""
    return "\n".join(re.sub(_SPACE, " ", line).strip() for line in code.splitlines() if line.strip())


def fingerprint(path: str, category: Category | str, existing_code: str, message: str = "") -> str:
    """Stable identity of a finding: path, category and the code it is about, never line numbers.

    The code counts without any whitespace (issue 55.6): a formatter that re-wraps or re-spaces the quoted lines
    leaves it, as anchoring ignores whitespace too. The message only breaks ties when no code was quoted,
    because model wording varies run to run. Fingerprints of the earlier form (legacy_fingerprint), in baselines,
    dismissals and memory written before, still match: a finding carries them as aliases (all_fingerprints)."""
    from ocr_hook.digest import sha256_hex  # here: the idle run (nothing staged) makes no fingerprint

    code = "".join(existing_code.split())
    basis = "2\0" + (code if code else "".join(message.split()))
    return sha256_hex("\0".join([path, str(category), basis]).encode("utf-8", "surrogateescape"))[:32]


def legacy_fingerprint(path: str, category: Category | str, existing_code: str, message: str = "") -> str:
    """The fingerprint ocr-hook wrote before (whitespace collapsed per line, the line breaks kept)."""
    from ocr_hook.digest import sha256_hex

    code = normalise_code(existing_code)
    basis = code if code else normalise_code(message)
    return sha256_hex("\0".join([path, str(category), basis]).encode("utf-8", "surrogateescape"))[:32]


ALIASES = "fingerprint_aliases"  # Finding.extra's key: other fingerprints that name the same finding


def fingerprint_aliases(path: str, old_path: str | None, category: Category | str, existing_code: str,
                        message: str = "") -> str:
    """The other names of a finding, space-separated, for Finding.extra[ALIASES]: the earlier form's fingerprint,
    and both forms under the file's path before a rename (the diff knows it), so a baseline, a dismissal or review
    memory written for `old.py` still matches after `git mv old.py new.py`."""
    names = [legacy_fingerprint(path, category, existing_code, message)]
    if old_path and old_path != path:
        names += [fingerprint(old_path, category, existing_code, message),
                  legacy_fingerprint(old_path, category, existing_code, message)]
    return " ".join(dict.fromkeys(names))


def all_fingerprints(f: Finding) -> tuple[str, ...]:
    """Every fingerprint that names `f`: its own first, then its aliases."""
    return (f.fingerprint, *f.extra.get(ALIASES, "").split())
