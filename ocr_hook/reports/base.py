"""What every report writer shares: the context it is given and the text hygiene it applies.

Model text is hostile input: it can carry terminal escape sequences, GitHub workflow commands or
markup. Writers for people (text, github) pass it through `sanitize_text` and `neutralize_commands`;
writers for machines (json, sarif, gitlab) keep it intact but serialise it with `dumps_json`, which
leaves only ASCII and no `<`, `>` or `&`.
"""

import json
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from ocr_hook import gate
from ocr_hook.ci_log import neutralize_commands  # shared with progress and the CLI's error lines
from ocr_hook.outcome import FileCoverage, ReviewResult

if TYPE_CHECKING:
    from ocr_hook.findings import Finding

TOOL_NAME = "ocr-hook"


class ReportContext(NamedTuple):
    """Everything a writer needs besides the result; the caller decides colour and paths."""

    repo_root: str = ""
    tool_version: str = ""
    fail_on: str = "high"
    on_error: str = "fail"
    exit_code: int | None = None  # None: what the gate says for fail_on and on_error
    sarif_category: str = "ocr-hook"
    color: bool = False
    file_texts: Mapping[str, str] = MappingProxyType({})  # path → reviewed snapshot text
    step_summary_path: str | None = None  # $GITHUB_STEP_SUMMARY
    next_steps: tuple[str, ...] = ()  # what to do about a blocked run (ocr_hook.reports.hints), one line each
    brief: bool = False  # a passing text report in one line per finding and one summary line (pre-commit)
    filter_mode: str = "diff_context"  # the run's, to say in words what it dropped
    gate: "gate.Verdict | None" = None  # the gate's one decision (None: decided from fail_on and on_error when read)
    program: str = "ocr-hook"  # how the user's shell runs ocr-hook, for the commands a report names (hookenv.program)


# ESC sequences first (CSI, OSC/DCS/PM/APC strings, two-character escapes), then every remaining
# C0/C1 control except tab and newline, then bidirectional overrides that can reorder what is shown.
# The patterns are kept as text and compiled by `re` on first use (and cached there): compiling these
# character classes takes about a millisecond, which a run that writes no text for people never needs.
_ESCAPES = (
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b[\]P^_X][^\x07\x1b\n]*(?:\x07|\x1b\\)?"
    r"|\x1b[ -/]*[0-~]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c\n]*(?:\x07|\x9c|\x1b\\)?"
)
_CONTROLS = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"


def sanitize_text(text: str) -> str:
    """Text safe to show on a terminal: line breaks normalised, escapes and controls removed."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicode_only(re.sub(_CONTROLS, "", re.sub(_ESCAPES, "", text)))


def unicode_only(text: str) -> str:
    """`text` with each byte of a name that was not UTF-8 (git's paths are bytes, held as lone surrogates by
    surrogateescape) written as git's quoting writes it, a backslash and three octal digits (`caf\\351.py`),
    and any other lone surrogate as U+FFFD: text every reader takes, where a lone surrogate fails a UTF-8
    stream and is no Unicode in JSON (issue 62.10). Names are shown whole where a report has a field for them
    (ocr_hook.changes.names); this is for the free text around them (notes, reasons)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return re.sub("[\ud800-\udfff]", _byte_escape, text)


def _byte_escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\{code - 0xDC00:03o}" if 0xDC80 <= code <= 0xDCFF else "\ufffd"


def _unicode_only_data(data: Any) -> Any:
    if isinstance(data, str):
        return unicode_only(data)
    if isinstance(data, dict):
        return {unicode_only(k) if isinstance(k, str) else k: _unicode_only_data(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_unicode_only_data(v) for v in data]
    return data


# What `escape_hidden` shows as an escape: C0 controls but tab and line feed, DEL, C1 controls, the
# Arabic letter mark, zero-width and direction marks, line/paragraph separators, bidi embeddings,
# overrides and isolates, word joiner and invisible operators, the byte-order mark.
_HIDDEN = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
_HIDDEN_IN_NAMES = _HIDDEN[:-1] + r"\t\n]"


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_hidden(text: str, *, newlines: bool = True) -> str:
    """Every control, bidi and invisible character as a visible escape (`\\x1b`, `\\u202e`, `\\x00`), so
    nothing is reordered or silently dropped: a path with U+202E still names that path, readably. CRLF
    and CR become LF first; `newlines=False` escapes line feeds and tabs too (file names)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n") if newlines else text
    return re.sub(_HIDDEN if newlines else _HIDDEN_IN_NAMES, _escape_char, text)


def has_hidden(text: str) -> bool:
    """Whether text holds a character escape_hidden shows as an escape (tab and line feed are not)."""
    return re.search(_HIDDEN, text) is not None


def safe_for_log(text: str) -> str:
    """sanitize_text and neutralize_commands together: for anything printed to a CI log."""
    return neutralize_commands(sanitize_text(text))


def dumps_json(data: Any, indent: int | None = 2) -> str:
    """JSON that is safe anywhere it is pasted: ASCII only, no raw `<`, `>` or `&`."""
    text = json.dumps(data, indent=indent, ensure_ascii=True)
    if "\\ud" in text:  # a surrogate escape: an astral character's pair, or a lone one that no reader may take
        text = json.dumps(_unicode_only_data(data), indent=indent, ensure_ascii=True)
    # These characters only occur inside JSON strings, where \\uXXXX means the same thing.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n"


def decision(result: ReviewResult, ctx: ReportContext) -> gate.Verdict:
    """The gate's verdict every writer reads: the one the run decided, else decided here once per writer."""
    return ctx.gate if ctx.gate is not None else gate.decide(result, ctx.fail_on, ctx.on_error)


def exit_code_for(result: ReviewResult, ctx: ReportContext) -> int:
    """The exit code a report states: the caller's, else the gate's."""
    if ctx.exit_code is not None:
        return ctx.exit_code
    return decision(result, ctx).exit_code


def finding_order(f: "Finding") -> tuple[Any, ...]:
    """Reading order: by file, then line, worst first, then a stable tie-break."""
    return (f.path, f.start_line, -f.severity.rank, f.category.value, f.fingerprint, f.message)


def severity_order(f: "Finding") -> tuple[Any, ...]:
    """Importance order: unsuppressed before suppressed, worst first, then reading order."""
    return (f.suppressed is not None, -f.severity.rank, *finding_order(f))


def sorted_findings(findings: "Iterable[Finding]") -> "list[Finding]":
    return sorted(findings, key=finding_order)


def coverage_groups(result: ReviewResult) -> dict[str, list[FileCoverage]]:
    """Files by outcome: reviewed (fresh or from cache), skipped, failed; each sorted by path."""
    groups: dict[str, list[FileCoverage]] = {"reviewed": [], "skipped": [], "failed": []}
    for f in sorted(result.files, key=lambda c: c.path):
        if f.state in ("reviewed", "cached"):
            groups["reviewed"].append(f)
        elif f.state == "skipped":
            groups["skipped"].append(f)
        else:  # "failed", and any state we do not know is not a success either
            groups["failed"].append(f)
    return groups


def line_range(f: "Finding") -> tuple[int, int]:
    """1-based start and end lines fit for every format; an unanchored finding points at line 1."""
    if not f.anchored or f.start_line < 1:
        return 1, 1
    return f.start_line, max(f.start_line, f.end_line)
