"""Suggested fixes: a finding's suggestion turned into an edit that applies (DESIGN.md section 6).

A fix replaces the finding's anchored lines with the suggestion. It exists only when that is safe:
the finding is anchored on the new side, its quote was read literally (as written, without a code
fence, without `N|` prefixes or without diff markers: the anchoring's exact readings, so quote line i
is the file's non-blank line i; `...` gaps and cut-short lines say the quote is not the whole range),
neither the quote nor the suggestion was shortened, and the suggestion holds no masked secret and no
control or bidirectional-override character.

Models quote code dedented (or indented differently): the difference between the quote's and the
file's leading whitespace is one change, "replace prefix P by prefix Q", found from the quoted lines
and applied to every non-blank suggestion line, so tabs stay tabs and relative indentation is kept.
The suggestion loses the same decorations the quote did (fence, `N|` prefixes, `+`/`-` markers); a
suggestion decorated where its quote was not gets no fix.
Anything that does not fit that one change gives no fix; a wrong edit is worse than none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ocr_hook.findings import Finding, Fix

if TYPE_CHECKING:
    from ocr_hook.findings.normalise import Reading

# Only computing a fix reads quotes: a cached re-run settles and applies fixes without loading the quote
# readings (ocr_hook.findings.normalise) or compiling these patterns.
# Control characters and bidirectional overrides: never written into a file by a one-click fix (they
# can make code read differently from what it does); such a suggestion stays text in the report.
_UNSAFE = r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]"
_DIFF_HEADER = r"^(?:@@ .* @@|\+\+\+ (?:b/|/dev/null)|--- (?:a/|/dev/null))"


def _keys(lines: Iterable[str]) -> list[str]:
    """The lines as a fix must find them: only leading and trailing whitespace may differ (that is what
    re-indentation explains), blank lines count, blank lines around the quote do not. Spacing inside a
    line or a left-out blank line would otherwise be silently rewritten by the fix."""
    keys = [line.strip() for line in lines]
    while keys and not keys[0]:
        keys.pop(0)
    while keys and not keys[-1]:
        keys.pop()
    return keys


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _matching_reading(quote: str, block: Sequence[str]) -> Reading | None:
    """The first literal reading of the quote whose lines are exactly the block's (indentation aside).

    The model saw secrets masked, so a quote may match the masked block only."""
    from ocr_hook.findings.normalise import readings
    from ocr_hook.secrets_mask import mask_secrets  # here: settling cached findings needs none of it

    wanted = [_keys(block)]
    masked, count = mask_secrets("\n".join(block))
    if count:
        wanted.append(_keys(masked.split("\n")))
    for reading in readings(quote):
        if _keys(reading.lines) in wanted:
            return reading
    return None


def _pairs(reading: Reading, block: Sequence[str]) -> list[tuple[str, str]]:
    """(quote indentation, file indentation) of each non-blank line, in order."""
    quoted = [_indent(line) for line in reading.lines if line.strip()]
    present = [_indent(line) for line in block if line.strip()]
    return list(zip(quoted, present, strict=True))


def _mixes(old: str, new: str) -> bool:
    """Swapping a prefix of spaces for one of tabs (or back) would leave lines indented with both."""
    return bool(old) and bool(new) and ("\t" in old) != ("\t" in new)


def _shift(pairs: Sequence[tuple[str, str]], marked: bool) -> tuple[str, str] | None:
    """(old prefix, new prefix): file indentation = quote indentation with `old` replaced by `new`,
    for every quoted line. In a diff-marked quote a context line may carry the diff's extra space.
    The smallest change that fits wins."""

    def variants(q: str) -> list[str]:
        return [q, q[1:]] if marked and q.startswith(" ") else [q]

    def fits(q: str, f: str, old: str, new: str) -> bool:
        return any(v.startswith(old) and f == new + v[len(old):] for v in variants(q))

    first_q, first_f = pairs[0]
    for q0 in variants(first_q):
        common = 0
        while common < min(len(q0), len(first_f)) and q0[-1 - common] == first_f[-1 - common]:
            common += 1
        for keep in range(common, -1, -1):
            old, new = q0[: len(q0) - keep], first_f[: len(first_f) - keep]
            if not _mixes(old, new) and all(fits(q, f, old, new) for q, f in pairs):
                return old, new
    return None


def _undiffed(lines: list[str]) -> list[str]:
    """A suggestion written as a diff: its new side (added and context lines, markers removed)."""
    body = [line for line in lines if line.strip()]
    if not any(line[:1] in "+-" for line in body) or not all(line[:1] in "+- " for line in body):
        return lines
    out = []
    for line in lines:
        if re.match(_DIFF_HEADER, line) or line[:1] == "-":
            continue
        out.append(line[1:] if line[:1] in "+ " else line)
    return out


def _suggestion_lines(suggestion: str, reading: Reading, block: Sequence[str]) -> list[str]:
    """The suggestion's lines without the decorations the quote carried, blank lines around it dropped."""
    from ocr_hook.findings.normalise import clean_lines, unfenced, without_line_numbers

    lines = list(clean_lines(suggestion))
    if unfenced(tuple(block)) is None:  # a fence in the file itself (Markdown) is content
        inner = unfenced(tuple(lines))
        if inner is not None:
            lines = list(inner)
    if reading.numbered:
        numbered = without_line_numbers(tuple(lines))
        if numbered is not None:
            lines = list(numbered[0])
    if reading.marked:
        lines = _undiffed(lines)
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def _marker_lines(lines: Sequence[str]) -> bool:
    """Some line starts with a lone diff marker (`--` and `++` are code: comments, increments)."""
    return any(line[:1] in ("+", "-") and line[:2] not in ("++", "--") for line in lines if line.strip())


def _decorated_beyond_quote(suggestion: str, reading: Reading) -> bool:
    """The suggestion carries diff markers or `N|` prefixes that the quote, read literally, did not:
    stripping them would be a guess and keeping them would write them into the file."""
    from ocr_hook.findings.normalise import clean_lines, without_line_numbers

    lines = clean_lines(suggestion)
    if not reading.marked and _marker_lines(lines) and not _marker_lines(reading.lines):
        return True
    return (not reading.numbered and without_line_numbers(lines) is not None
            and without_line_numbers(reading.lines) is None)


def _reindented(lines: Sequence[str], old: str, new: str) -> list[str] | None:
    out = []
    for line in lines:
        if not line.strip():
            out.append("")
        elif line.startswith(old):
            out.append(new + line[len(old):])
        else:  # less indented than the quote it replaces: no single shift explains it
            return None
    return out


def compute_fix(quote: str, suggestion: str | None, text: str, start_line: int, end_line: int) -> Fix | None:
    """The fix for a suggestion on lines `start_line`..`end_line` of `text`, which the literal `quote`
    anchored to; None when there is none to give (see the module's docstring)."""
    from ocr_hook.secrets_mask import MARKER

    if not suggestion or not suggestion.strip() or MARKER in suggestion:
        return None
    if re.search(_UNSAFE, suggestion.replace("\r\n", "\n")):
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not 1 <= start_line <= end_line <= len(lines):
        return None
    block = [line.removesuffix("\r") for line in lines[start_line - 1 : end_line]]
    reading = _matching_reading(quote, block)
    if reading is None or _decorated_beyond_quote(suggestion, reading):
        return None
    pairs = _pairs(reading, block)
    shift = _shift(pairs, reading.marked) if pairs else None
    if shift is None:
        return None
    new_lines = _suggestion_lines(suggestion, reading, block)
    if not new_lines:
        return None
    replacement = _reindented(new_lines, *shift)
    if replacement is None or replacement == [line.rstrip() for line in block]:
        return None
    return Fix(start_line, end_line, "\n".join(replacement))


def settle(findings: Iterable[Finding]) -> list[Finding]:
    """The findings with only the fixes that will be offered: none on suppressed findings, and of
    fixes overlapping in one file the most severe one (then the earliest); the others keep their
    suggestion as text only."""
    items = list(findings)
    ranked = sorted(
        (i for i, f in enumerate(items) if f.fix is not None and f.suppressed is None),
        key=lambda i: (items[i].path, -items[i].severity.rank, _span(items[i]), items[i].fingerprint),
    )
    taken: dict[str, list[tuple[int, int]]] = {}
    kept: set[int] = set()
    for i in ranked:
        start, end = _span(items[i])
        spans = taken.setdefault(items[i].path, [])
        if all(end < s or start > e for s, e in spans):
            spans.append((start, end))
            kept.add(i)
    return [f if f.fix is None or i in kept else f._replace(fix=None) for i, f in enumerate(items)]


def _span(f: Finding) -> tuple[int, int]:
    assert f.fix is not None
    return f.fix.start_line, f.fix.end_line


def split_keeping_ends(text: str) -> list[str]:
    """Lines as git counts them (split on LF only), each with its own line break."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _line_break(old: Sequence[str], lines: Sequence[str]) -> str:
    """The line break of the replaced lines, else (the last line of a file without a final one) the file's."""
    for line in (*old, *lines):
        if line.endswith("\n"):
            return "\r\n" if line.endswith("\r\n") else "\n"
    return "\n"


def apply_fixes(text: str, fixes: Iterable[Fix]) -> str:
    """`text` with non-overlapping fixes applied. Replacement lines take the line break of the lines
    they replace (CRLF stays CRLF), and a file without a final line break keeps it that way."""
    lines = split_keeping_ends(text)
    for fix in sorted(fixes, key=lambda f: f.start_line, reverse=True):
        old = lines[fix.start_line - 1 : fix.end_line]
        eol = _line_break(old, lines)
        new = [line + eol for line in fix.replacement.split("\n")]
        if not old[-1].endswith("\n"):
            new[-1] = new[-1][: -len(eol)]
        lines[fix.start_line - 1 : fix.end_line] = new
    return "".join(lines)
