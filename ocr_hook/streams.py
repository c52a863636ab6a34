"""Standard streams that never crash on what their encoding cannot show.

pre-commit reads a hook's output through a pipe, and on Windows Python writes a pipe in the ANSI code
page (cp1252) unless UTF-8 mode is on; a console or CI runner can also be plain ASCII. Python's default
there is `strict`: one box-drawing character or one line of a model's Chinese and the hook dies with a
UnicodeEncodeError traceback and exit 1, which reads as "findings". So the entry points make stdout and
stderr replace what their encoding cannot encode: ocr-hook's own decorations by plain ASCII stand-ins, any
other character by a `\\uXXXX` escape (surrogate pairs above the BMP, so the escape is also valid JSON
inside a string). A UTF encoding is left alone; so is a stream that cannot be reconfigured.
"""

from __future__ import annotations

import codecs
from typing import Any

HANDLER = "ocr-hook-stand-in"

# What ocr-hook's own text prints, and typography a model likes, as ASCII.
STAND_INS = {
    "—": "-", "–": "-", "‒": "-", "−": "-", "·": "-", "•": "*", "…": "...", "→": "->", "←": "<-",
    "↔": "<->", "⇒": "=>", "✓": "ok", "✔": "ok", "✗": "x", "✘": "x", "×": "x", "⚠": "!", "≥": ">=",
    "≤": "<=", "≠": "!=", "“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "‚": "'", "«": '"', "»": '"',
    "─": "-", "━": "-", "│": "|", "┃": "|", "┌": "+", "┐": "+", "└": "+", "┘": "+", "├": "+", "┤": "+",
    "┬": "+", "┴": "+", "┼": "+", "╭": "+", "╮": "+", "╯": "+", "╰": "+", "▸": ">", "▶": ">", "◆": "*",
    "\u00a0": " ", "\u2009": " ", "\u202f": " ",
}


def _escape(char: str) -> str:
    code = ord(char)
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def stand_in(error: UnicodeError) -> tuple[str, int]:
    """The codec error handler: what replaces each character the encoding could not encode."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start:error.end]
    return "".join(STAND_INS.get(c) or _escape(c) for c in text), error.end


def _registered() -> None:
    try:
        codecs.lookup_error(HANDLER)
    except LookupError:
        codecs.register_error(HANDLER, stand_in)


def _is_utf(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return False


def make_safe(stream: Any) -> None:
    """Make a text stream replace what its encoding cannot show (see the module's docstring)."""
    encoding = getattr(stream, "encoding", None)
    reconfigure = getattr(stream, "reconfigure", None)
    if not encoding or reconfigure is None or _is_utf(encoding):
        return
    _registered()
    try:
        reconfigure(errors=HANDLER)
    except (ValueError, OSError):  # closed, or a stream that refuses: it keeps what it had
        pass


def safe_text(text: str, encoding: str) -> str:
    """`text` as a stream in `encoding` made safe would write it (for callers that write bytes themselves)."""
    if _is_utf(encoding):
        return text
    _registered()
    return text.encode(encoding, HANDLER).decode(encoding)
