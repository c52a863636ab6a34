"""Text printed where a CI runner reads it: no line of ours may act as a GitHub Actions workflow command.

The runner reads a line whose first non-blank characters are `::` as a command, and `##[` anywhere in a line
as a legacy one, on standard output and standard error alike. Paths, model text and servers' messages reach
the lines we print, so every printed line passes `neutralize_commands` (the report writers, progress, the
one-line errors). Standard library only: the idle path of a hook imports this.
"""

from __future__ import annotations

_ZWSP = "\u200b"  # zero width: the text reads the same, the runner no longer sees a command


def neutralize_commands(text: str) -> str:
    """`text` with every `##[` and every line-leading `::` broken by a zero-width space."""
    text = text.replace("##[", f"#{_ZWSP}#[")
    if "::" not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith("::"):
            lines[i] = line[: len(line) - len(stripped)] + ":" + _ZWSP + stripped[1:]
    return "\n".join(lines)
