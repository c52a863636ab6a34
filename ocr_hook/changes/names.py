"""File names as people and the model see them.

git's paths are bytes; ocr-hook holds them as str decoded with surrogateescape, so a name that is not UTF-8
(a Latin-1 `caf\\xe9.py`) survives the round trip to git but cannot be sent as JSON or printed. Such a name is
shown as git shows it by default (core.quotePath): C-quoted, every byte above 0x7F and every control byte as
an octal escape, `"caf\\351.py"`. Names that are UTF-8 are shown as they are. `from_shown` reads a shown name
back (the model quotes it in a tool call), so the quoted form is never a second name for one file.
"""

from __future__ import annotations

_C_ESCAPES = {7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 34: '"', 92: "\\"}
_C_UNESCAPES = {v: k for k, v in _C_ESCAPES.items()}


def is_utf8(name: str) -> bool:
    if name.isascii():  # a flag of the string: most names, asked about hundreds of times a request's file list
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(name: str) -> str:
    """`name` as git's default quoting shows it when it is not UTF-8; otherwise unchanged."""
    return name if is_utf8(name) else c_quoted(name, escape_high=True)


def c_quoted(name: str, *, escape_high: bool) -> str:
    """git's C quoting: the name in double quotes, `\\n`-style escapes, control bytes as octal escapes, and with
    `escape_high` every byte above 0x7F too (what core.quotePath shows); without it those bytes stay as they
    are (a diff header that `git apply` reads)."""
    out = bytearray(b'"')
    for byte in name.encode("utf-8", "surrogateescape"):
        if byte in _C_ESCAPES:
            out += b"\\" + _C_ESCAPES[byte].encode()
        elif byte < 0x20 or byte == 0x7F or (escape_high and byte > 0x7F):
            out += f"\\{byte:03o}".encode()
        else:
            out.append(byte)
    out += b'"'
    return out.decode("utf-8", "surrogateescape")


def from_shown(text: str) -> str:
    """The name a shown (quoted) name stands for; any other text unchanged."""
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')) or "\\" not in text:
        return text
    body, raw, i = text[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            raw += char.encode("utf-8", "surrogateescape")
            i += 1
            continue
        octal = body[i + 1:i + 4]
        if len(octal) == 3 and all(c in "01234567" for c in octal) and int(octal, 8) < 256:
            raw.append(int(octal, 8))
            i += 4
        elif body[i + 1:i + 2] in _C_UNESCAPES:
            raw.append(_C_UNESCAPES[body[i + 1]])
            i += 2
        else:
            return text  # not git's quoting: taken literally
    name = raw.decode("utf-8", "surrogateescape")
    return name if not is_utf8(name) else text


def shown_patch(patch: str, path: str, old_path: str | None = None) -> str:
    """A file's patch with its header naming the file as git's default quoting does (only the header lines
    before the first hunk, `a/`/`b/` names and a rename's or copy's `from`/`to` lines alike; the content is
    the file's own)."""
    names = [n for n in dict.fromkeys([path, old_path or path]) if not is_utf8(n)]
    if not names:
        return patch
    import re

    head, sep, body = patch.partition("\n@@")
    # Longest first, so that `a/NAME` is quoted whole rather than NAME inside it.
    spelled = sorted({p + n for n in names for p in ("a/", "b/", "")}, key=len, reverse=True)
    head = re.sub("|".join(map(re.escape, spelled)), lambda m: shown(m.group(0)), head)
    return head + sep + body
