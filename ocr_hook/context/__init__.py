"""The context pack (DESIGN.md section 12): what a changed file's added lines use from other files, and
who calls the functions whose signatures it changed, read from the reviewed snapshot before the first
request. Importing this package is cheap; the builders (ast, tree-sitter, git grep) load on use.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocr_hook.changes.model import FileChange
    from ocr_hook.changes.snapshot_api import Snapshot
    from ocr_hook.settings import Settings

__all__ = ["ContextEntry", "ContextPack", "build_pack", "prepare_packs"]

_KIND_LABEL = {"definition": "definition of", "caller": "call site of"}


@dataclass(frozen=True, slots=True)
class ContextEntry:
    kind: str  # "definition" | "caller"
    name: str  # the name it is for
    path: str  # repo-relative path it was read from
    start: int  # 1-based first line shown
    end: int  # last line shown
    text: str  # the lines shown (already masked)

    def render(self) -> str:
        numbered = "\n".join(f"{self.start + i}|{line}" for i, line in enumerate(self.text.split("\n")))
        where = f"{self.path} line {self.start}" if self.end == self.start else \
            f"{self.path} lines {self.start}-{self.end}"
        return f"{_KIND_LABEL.get(self.kind, self.kind)} `{self.name}` ({where}):\n{_fence(numbered)}"


@dataclass(frozen=True, slots=True)
class ContextPack:
    entries: tuple[ContextEntry, ...]
    cut: int = 0  # entries left out for the budget (the pack says so in one line)
    masked: int = 0  # likely secrets masked in the entries' text
    budget: int = 0  # the context_tokens the pack was built for (named in the cut line)

    def render(self, names: Collection[str] | None = None) -> str:
        """The text sent; only the entries for `names` when given ("" when nothing is left). A name
        matches an entry for it as written (`core.normalise`) or for its last part (`normalise`)."""
        shown = [e for e in self.entries
                 if names is None or e.name in names or e.name.rsplit(".", 1)[-1] in names]
        if not shown:
            return ""
        parts = [e.render() for e in shown]
        if self.cut and names is None:
            parts.append(f"[{self.cut} more context entr{'y' if self.cut == 1 else 'ies'} left out to stay within "
                         f"context_tokens {self.budget}; file_read and code_search find the rest]")
        return "\n".join(parts)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(e.name for e in self.entries)


def _fence(text: str) -> str:
    """A code fence longer than any backtick run in `text` (as the prompts fence data), so a quoted
    line cannot close it early."""
    import re

    longest = max((len(m.group(0)) for m in re.finditer(r"`+", text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}\n{text}\n{marks}"


def build_pack(change: FileChange, snapshot: Snapshot, settings: Settings) -> ContextPack | None:
    """The pack for one changed file, or None when there is none to build (no added lines, a language
    without support and no grep hit, a syntax error, a sensitive file). Never raises for bad input."""
    from ocr_hook.context.pack import build

    return build(change, snapshot, settings)


def prepare_packs(changes: Sequence[FileChange], snapshot: Snapshot, settings: Settings) -> None:
    """Work the change set's packs share, done once before build_pack is called for each file (optional:
    build_pack gives the same packs without it, only with more `git grep` runs)."""
    from ocr_hook.context.pack import prepare

    prepare(changes, snapshot, settings)
