"""GitHub's `primaryLocationLineHash`, computed the way github/codeql-action does it.

For every line, a polynomial rolling hash (base 37, 64-bit two's-complement wrap-around) over the
next 100 characters of the file counted from the start of that line, where spaces and tabs are left
out and every line ending (CR, LF, CRLF) counts as one LF. The end of the file adds a 65535 marker
and zero padding, so the last lines still see 100 values. The value is printed as unsigned hex
without leading zeros, followed by `:N`, the N-th time that value occurs in the file. Characters
are UTF-16 code units, as in JavaScript, because GitHub compares our value with its own.
"""

from __future__ import annotations

_BLOCK = 100
_BASE = 37
_MASK = (1 << 64) - 1
_FIRST_MOD = pow(_BASE, _BLOCK, 1 << 64)
_TAB, _SPACE, _LF, _CR = 9, 32, 10, 13
_EOF = 65535


def _utf16_units(text: str) -> list[int]:
    # Lone surrogates come from bytes that were not UTF-8 (surrogateescape); GitHub's reader turns
    # those into U+FFFD, so round-trip through the bytes to see the same characters.
    if any("\udc80" <= ch <= "\udcff" for ch in text):
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    data = text.encode("utf-16-le", "surrogatepass")
    return [data[i] | (data[i + 1] << 8) for i in range(0, len(data), 2)]


def line_hashes(text: str) -> list[str]:
    """The hash of every line of `text`; element i belongs to line i + 1.

    A text ending with a line break has one more (empty) line than it has breaks, as on GitHub.
    """
    window = [0] * _BLOCK
    starts = [0] * _BLOCK  # line number starting at this window slot, 0 for none
    value = 0
    index = 0
    line_number = 0
    at_line_start = True
    after_cr = False
    counts: dict[str, int] = {}
    hashes: list[str] = []

    def emit() -> None:
        key = format(value, "x")
        counts[key] = counts.get(key, 0) + 1
        # Lines come out in order, so the list index is always line number - 1.
        hashes.append(f"{key}:{counts[key]}")
        starts[index] = 0

    def push(unit: int) -> None:
        nonlocal value, index
        oldest = window[index]
        window[index] = unit
        value = (_BASE * value + unit - _FIRST_MOD * oldest) & _MASK
        index = (index + 1) % _BLOCK

    for unit in [*_utf16_units(text), _EOF]:
        if unit in (_SPACE, _TAB) or (after_cr and unit == _LF):
            after_cr = False
            continue
        if unit == _CR:
            unit = _LF
            after_cr = True
        else:
            after_cr = False
        if starts[index]:
            emit()
        if at_line_start:
            at_line_start = False
            line_number += 1
            starts[index] = line_number
        if unit == _LF:
            at_line_start = True
        push(unit)

    for _ in range(_BLOCK):
        if starts[index]:
            emit()
        push(0)
    return hashes


def line_hash(text: str, line: int) -> str | None:
    """The hash of one 1-based line, or None when the text has no such line."""
    hashes = line_hashes(text)
    return hashes[line - 1] if 1 <= line <= len(hashes) else None
