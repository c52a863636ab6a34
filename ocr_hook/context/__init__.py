"""The context pack (DESIGN.md section 12): what a changed file's added lines use from other files, and
who calls the functions whose signatures it changed, read from the reviewed snapshot before the first
request. Importing this package is cheap; the builders (ast, tree-sitter, git grep) load on use.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ocr_hook.changes.model import FileChange
    from ocr_hook.changes.snapshot_api import Snapshot
    from ocr_hook.settings import Settings

__all__ = ["ContextEntry", "ContextPack", "PackSummary", "build_pack", "packs_key", "prepare_packs"]

_KIND_LABEL = {"definition": "definition of", "caller": "call site of"}


# NamedTuples, not dataclasses: this package is loaded on every review, a fully cached one too, and a dataclass
# compiles its methods from source when it is defined.
class ContextEntry(NamedTuple):
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


class ContextPack(NamedTuple):
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
            parts.append(self.cut_line())
        return "\n".join(parts)

    def cut_line(self) -> str:
        return (f"[{self.cut} more context entr{'y' if self.cut == 1 else 'ies'} left out to stay within "
                f"context_tokens {self.budget}; file_read and code_search find the rest]")

    @property
    def names(self) -> frozenset[str]:
        return frozenset(e.name for e in self.entries)

    def summary(self, complete: bool = True) -> PackSummary:
        return PackSummary(self.key_text(), len(self.entries), self.cut, complete)

    def key_text(self) -> str:
        """What a cached review is checked against: the entries as render() sends them but for their line
        numbers (each entry's kind, name, path and lines, in order, and the cut). The numbers stay in what is
        sent, where they let the model read on around an entry with file_read; here they would make every user
        of a definition look changed when a line added above it only moved it (issue 62.2: one comment at the
        top of a module re-sent every unchanged file whose pack quotes it)."""
        import json

        shown = [[e.kind, e.name, e.path, e.text] for e in self.entries]
        return json.dumps([shown, self.cut, self.budget], separators=(",", ":"))


class PackSummary(NamedTuple):
    """What a run's result-cache lookup and coverage need of a pack: what the pack memo keeps."""

    text: str  # ContextPack.key_text(): what a cached review is checked against (ocr_hook.agent.run)
    entries: int
    cut: int
    # False when the packs' deadline (or a failed search) cut this pack short: then it tells nothing definite.
    complete: bool = True


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


def packs_key(changes: Sequence[FileChange], snapshot: Snapshot, settings: Settings) -> str | None:
    """A digest of everything the packs of `changes`, prepared together, are made from, for the pack memo
    (ocr_hook.store.result_cache): the snapshot's content as it names it (a commit, or the index's whole
    listing with every blob's id), the files' paths, states and diffs in order (the call-site search is
    shared by the change set, so one file's pack may depend on the others), the settings the packs read,
    the Python version (its ast parses) and, for other languages, which grammar is installed; the package
    version stands for the builders' code and shipped data. None when the snapshot cannot name its content.

    Not in it: core.ignorecase (asking git costs a process on every run). Toggling it between two runs on the
    same index could leave the key of a file whose pack shows a path in another case unchanged: the memo
    only ever decides a result-cache key, never what is sent, so at worst that file's earlier review is
    reused."""
    identity = getattr(snapshot, "identity", None)
    named = identity() if identity is not None else None
    if named is None:
        return None
    import json
    import posixpath
    import sys

    from ocr_hook import __version__
    from ocr_hook.digest import sha256_hex

    others = sorted({posixpath.splitext(c.path)[1].lower() for c in changes} - {".py", ".pyi"})
    if others:
        from ocr_hook.context.tree_lang import installed
    grammars = {ext: installed(ext) for ext in others}
    parts = {
        "version": __version__, "python": list(sys.version_info[:2]), "snapshot": named,
        "files": [[c.path, str(c.status), c.is_binary, c.is_symlink, c.is_submodule, c.patch] for c in changes],
        "settings": [settings.context_tokens, list(settings.exclude), list(settings.sensitive)],
        "grammars": grammars,
    }
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return sha256_hex(canonical.encode("ascii"))
