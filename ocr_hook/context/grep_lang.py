"""A language without a grammar (or without the `context` extra installed): the names called on added
lines, looked for with one bounded `git grep -w` at the reviewed revision among files of the same
extension, and a definition recognised by its line (`def NAME`, `function NAME`, `fn NAME`, ...)."""

from __future__ import annotations

import re

from ocr_hook.context.model import DEFINITION_LINES, Analysis, Follow, Reader, Span, file_lines

_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_KEYWORDS = frozenset("if for while switch return sizeof catch elif else and or not in function def fn func sub "
                      "proc print typeof new class struct match when case do end then lambda".split())
_DEFINES = r"\b(def|function|func|fn|sub|proc|class|struct|interface|trait|module|type|macro|defun|defn|let|const)\s+"
MAX_NAMES = 25


class GrepLanguage:
    name = "grep"

    def __init__(self, ext: str) -> None:
        self.extensions = (ext,) if ext else ()

    def analyse(self, path: str, text: str, added: frozenset[int], reader: Reader) -> Analysis | None:
        from ocr_hook.context.tree_lang import _grep_wants

        if not self.extensions:
            return None
        lines = file_lines(text)
        local = {m.group(2) for m in re.finditer(_DEFINES + r"([A-Za-z_][A-Za-z0-9_]*)", text)}
        counts: dict[str, int] = {}
        signatures = []
        for number in sorted(added):
            if number > len(lines):
                continue
            line = lines[number - 1]
            defined = re.search(_DEFINES + r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", line)
            if defined:
                signatures.append(defined.group(2))
            for match in _CALL.finditer(line):
                name = match.group(1)
                if name not in _KEYWORDS and name not in local:
                    counts[name] = counts.get(name, 0) + 1
        names = sorted(counts, key=lambda n: -counts[n])[:MAX_NAMES]
        return Analysis(_grep_wants(path, names, reader, self.extensions), signatures)

    def find(self, path: str, text: str, symbol: str, reader: Reader) -> Span | Follow | None:
        pattern = re.compile(_DEFINES + re.escape(symbol) + r"\b")
        for number, line in enumerate(file_lines(text), start=1):
            if pattern.search(line):
                return Span(number, number + DEFINITION_LINES - 1)
        return None


def for_extension(ext: str) -> GrepLanguage:
    return GrepLanguage(ext)
