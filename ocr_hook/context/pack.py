"""One file's context pack: what its added lines use from other files, and the call sites of the
functions whose signatures it changed, ordered and cut to `context_tokens`.

Each language module (python_lang, tree_lang, grep_lang) reads the file and says what it wants (a
symbol in candidate files) and which functions' signature lines were added; this module finds those,
turns them into masked entries and keeps the budget. Everything comes from the reviewed snapshot
through `Reader`, which refuses sensitive, huge and generated files.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ocr_hook.context import ContextEntry, ContextPack
from ocr_hook.context.model import (  # noqa: F401  (the names the rest of the package and its tests read here)
    DEFINITION_LINES,
    Analysis,
    Follow,
    Language,
    Reader,
    Span,
    Want,
    degraded,
    distance,
    file_lines,
    is_test_path,
    reader_for,
)

if TYPE_CHECKING:
    from ocr_hook.changes.model import FileChange
    from ocr_hook.changes.snapshot_api import GrepHit, Snapshot
    from ocr_hook.settings import Settings

MAX_WANTS = 200  # names looked up per file (the most used first; the budget decides what is shown)
MAX_FOLLOW = 3  # re-export hops (a package's __init__, `export … from`) after the import itself
CALLER_SITES = 3
CALL_LINES = 10  # lines of one call site shown at most (a call over more lines is cut there)
MAX_SIGNATURES = 60  # changed functions whose callers are looked for (one grep for all of them)
MAX_LINE = 300  # characters of one line shown
MANY_SITES = 200  # call sites of one name that make it common: it is searched on its own
# Lines a file one search keeps: a search that keeps them all is used whole, so the higher, the fewer searches a
# cut one is split into (at 200, preparing Django 5.1's 2,802 Python files' packs at once took 146 searches).
SEARCH_LINES_PER_FILE = 1_000
GREP_HITS_CAP = 5_000  # the snapshot's own cap on one grep's hits (changes/snapshot.py)
_NAME = re.compile(r"\.?[A-Za-z_$][A-Za-z0-9_$]*")  # a changed function's name as callers are looked for


def language_for(path: str) -> Language:
    ext = posixpath.splitext(path)[1].lower()
    if ext in (".py", ".pyi"):
        from ocr_hook.context.python_lang import PYTHON

        return PYTHON
    from ocr_hook.context import tree_lang

    found = tree_lang.for_extension(ext)
    if found is not None:
        return found
    from ocr_hook.context.grep_lang import for_extension

    return for_extension(ext)


def added_lines(change: FileChange) -> frozenset[int]:
    return frozenset(line.new_no for hunk in change.hunks for line in hunk.lines
                     if line.kind == "+" and line.new_no is not None)


def build(change: FileChange, snapshot: Snapshot, settings: Settings) -> ContextPack | None:
    reader = reader_for(snapshot, settings)
    found = _analysis(change, reader)
    if found is None:
        return None
    lang, analysis = found
    definitions = _definitions(change.path, analysis.wants, lang, reader)
    callers = _callers(change.path, analysis.signatures[:MAX_SIGNATURES], lang, reader)
    return _fit(change.path, definitions, callers, settings.context_tokens)


def prepare(changes: Sequence[FileChange], snapshot: Snapshot, settings: Settings) -> None:
    """Analyse the change set's files and look for all their changed functions' call sites at once (one
    `git grep` per language instead of one per file); build() then reads what this found."""
    reader = reader_for(snapshot, settings)
    groups: dict[tuple[str, ...], set[str]] = {}
    for change in changes:
        try:
            found = _analysis(change, reader)
        except Exception:  # the file's own build() will degrade the same way; the others still prepare
            continue
        if found is not None:
            groups.setdefault(found[0].extensions, set()).update(found[1].signatures[:MAX_SIGNATURES])
    for extensions, names in groups.items():
        wanted = [n for n in sorted(names) if _NAME.fullmatch(n)]
        if wanted:
            _call_sites(wanted, extensions, reader)


def _analysis(change: FileChange, reader: Reader) -> tuple[Language, Analysis] | None:
    key = ("analysis", change.path, change.patch)
    if key in reader.memo:
        return reader.memo[key]  # type: ignore[return-value]
    result = None
    if reader.expired():
        return None  # the packs' time is up (not remembered: build() says so the same way)
    if not (change.is_binary or change.is_symlink or change.is_submodule or str(change.status) == "deleted"):
        added = added_lines(change)
        text = reader.text(change.path) if added else None
        if text is not None:
            lang = language_for(change.path)
            try:
                analysis = lang.analyse(change.path, text, added, reader)
            except (RecursionError, ValueError, UnicodeError):
                analysis = None  # a file the parser cannot take: no pack, never a failed review
            if analysis is not None:
                analysis.signatures += _removed_definitions(change, text, analysis.signatures)
                result = (lang, analysis)
    reader.memo[key] = result
    return result


_DEF_LINE = re.compile(r"^(\s*)(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:def|function\*?|func|fn|sub|proc)\s+"
                       r"(?:\([^)]*\)\s*)?([A-Za-z_$][A-Za-z0-9_$]*)\s*\(")
_BINDING_LINE = re.compile(r"^(\s*)(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][A-Za-z0-9_$]*)\s*=\s*(?:async\s*)?"
                           r"(?:function\b|\([^)]*\)\s*=>|[A-Za-z_$][A-Za-z0-9_$]*\s*=>)")
# `exports.name = function (`, `Foo.prototype.name = (a) =>`: called as `x.name(`.
_MEMBER_LINE = re.compile(r"^(\s*)(?:[A-Za-z_$][A-Za-z0-9_$]*\.)+([A-Za-z_$][A-Za-z0-9_$]*)\s*=\s*(?:async\s*)?"
                          r"(?:function\b|\([^)]*\)\s*=>|[A-Za-z_$][A-Za-z0-9_$]*\s*=>)")


def _removed_definitions(change: FileChange, text: str, known: Sequence[str]) -> list[str]:
    """Functions whose definition line the diff removed and the new text no longer defines under that name
    (removed or renamed): their callers still use the old name. Read from the removed lines as they are,
    for every language (a method, indented, as `.name`)."""
    out: list[str] = []
    for hunk in change.hunks:
        for line in hunk.lines:
            if line.kind != "-":
                continue
            member = _MEMBER_LINE.match(line.text)
            found = _DEF_LINE.match(line.text) or _BINDING_LINE.match(line.text) or member
            if found is None or found.group(2).startswith(("test", "__")) or found.group(2) == "exports":
                continue
            name = found.group(2)
            # An export is called bare once bound (`clone = require('./utils').clone`) or through its module.
            exported = member is not None and re.match(r"\s*(?:module\.)?exports\.", line.text) is not None
            label = name if exported else "." + name if member or (
                found.group(1) and not _BINDING_LINE.match(line.text)) else name
            still = re.search(rf"(?:def|function\*?|func|fn|sub|proc|const|let|var)\s+(?:\([^)]*\)\s*)?"
                              rf"{re.escape(name)}\b|\.{re.escape(name)}\s*=\s*(?:async\s*)?(?:function\b|\()", text)
            if still is None and label not in known and label not in out:
                out.append(label)
    return out


def _definitions(own: str, wants: Sequence[Want], lang: Language, reader: Reader) -> list[tuple[int, ContextEntry]]:
    found: dict[tuple[str, int], tuple[int, ContextEntry]] = {}
    order = sorted(wants, key=lambda w: (-w.uses, distance(own, w.paths[0]) if w.paths else 99, w.name))
    for want in order[:MAX_WANTS]:
        if reader.expired():
            break
        located = _locate(want.symbol, want.paths, own, lang, reader)
        if located is None:
            continue
        path, span, text = located
        key = (path, span.start)
        if key in found:
            uses, entry = found[key]
            found[key] = (uses + want.uses, entry)
            continue
        found[key] = (want.uses, _entry("definition", want.name, path, span, text))
    return list(found.values())


def _locate(symbol: str, paths: Sequence[str], own: str, lang: Language,
            reader: Reader) -> tuple[str, Span, str] | None:
    seen: set[tuple[str, str]] = set()
    queue = [(symbol, tuple(paths), 0)]
    while queue:
        symbol, candidates, hops = queue.pop(0)
        for path in candidates:
            if path == own or (symbol, path) in seen or reader.expired():
                continue
            seen.add((symbol, path))
            text = reader.text(path)
            if text is None:
                continue
            result = lang.find(path, text, symbol, reader)
            if isinstance(result, Span):
                return path, result, text
            if isinstance(result, Follow) and hops < MAX_FOLLOW:
                queue.append((result.symbol, result.paths, hops + 1))
                break
    return None


def _entry(kind: str, name: str, path: str, span: Span, text: str) -> ContextEntry:
    lines = file_lines(text)
    start, end = max(1, span.start), min(len(lines), span.end)
    return ContextEntry(kind, name, path, start, end, "\n".join(lines[start - 1:end]))


def _cut_lines(text: str) -> str:
    """Long lines cut to MAX_LINE characters: only ever after masking, so no part of a secret is sent."""
    return "\n".join(line if len(line) <= MAX_LINE else line[:MAX_LINE] + "…" for line in text.split("\n"))


def _call_sites(names: Sequence[str], extensions: tuple[str, ...], reader: Reader) -> dict[str, list[GrepHit]]:
    """Call sites of each name (`.name`: only `x.name(` calls) in files of these extensions, from bounded
    `git grep`s; kept for the run, so a later file asking for names searched before greps nothing, and one asking
    for new names greps only those (the change set is prepared in batches, in review order).

    A name's sites never depend on which other names were searched with it (issue 62.2): a scan prepares its
    packs 64 files at a time and the next run's cache lookup all at once, and sites kept by caps the other
    names filled made unchanged files' packs differ, and their reviews be sent again. So a name's sites are
    those of a search for it alone: taken from a search of many names only when that search was whole (no
    cap cut it), else the names are searched again in smaller groups, down to one name a search."""
    key = ("sites", extensions)
    known = reader.memo.get(key)
    searched: frozenset[str] = known[0] if known is not None else frozenset()  # type: ignore[index]
    by_name: dict[str, list[GrepHit]] = known[1] if known is not None else {}  # type: ignore[index]
    bare = sorted({n.lstrip(".") for n in names} - searched)
    if not bare:
        return by_name
    _settled_calls(bare, extensions, reader, by_name)
    reader.memo[key] = (searched | frozenset(bare), by_name)
    return by_name


# git grep refuses a Perl pattern past about 32,000 characters (PCRE2: "regular expression is too large"): a
# large change set's names are searched in batches of patterns at most this long (issue 55.4).
MAX_PATTERN_CHARS = 8_000


def _settled_calls(bare: Sequence[str], extensions: tuple[str, ...], reader: Reader,
                   by_name: dict[str, list[GrepHit]]) -> None:
    """Add the call sites of `bare` names to by_name (also under `.name` for `x.name(` calls), as searches of
    each name alone would find them. A search cut by a cap (SEARCH_LINES_PER_FILE, GREP_HITS_CAP) is done
    again for its names in smaller groups: the names it found at least MANY_SITES sites of each on its own (the
    common ones, `get`, `filter`), the rest in two halves; one name cut by the caps keeps what its own search
    found."""
    groups: list[list[str]] = []
    batch: list[str] = []
    size = 0
    for name in bare:
        if batch and size + len(re.escape(name)) + 1 > MAX_PATTERN_CHARS:
            groups.append(batch)
            batch, size = [], 0
        batch.append(name)
        size += len(re.escape(name)) + 1
    if batch:
        groups.append(batch)
    while groups:
        if reader.expired():
            return  # the packs' time is up: expired() marked them degraded, so none is remembered as whole
        group = groups.pop()
        alternatives = "|".join(re.escape(n) for n in group)
        result = reader.grep(rf"\b({alternatives})\s*\(", tuple(f"*{ext}" for ext in extensions),
                             SEARCH_LINES_PER_FILE)
        if len(group) == 1 or (not result.truncated_files and len(result.hits) < GREP_HITS_CAP
                               and result.error is None):
            _take_sites(result.hits, alternatives, reader, by_name)
            continue
        if result.error is not None:
            continue  # timed out, or git failed: reader.grep marked the packs degraded; smaller searches would too
        # A cut search's hits are only counted (one pass in C over their text), not read one by one as sites.
        written = Counter(re.findall(rf"\b({alternatives})\s*\(", "\n".join(h.text for h in result.hits)))
        common = [n for n in group if written[n] >= MANY_SITES]
        rest = [n for n in group if written[n] < MANY_SITES]
        groups += [[n] for n in common]
        if len(rest) > 1:
            groups += [rest[:len(rest) // 2], rest[len(rest) // 2:]]
        elif rest:
            groups.append(rest)


def _take_sites(hits: Sequence[GrepHit], alternatives: str, reader: Reader,
                by_name: dict[str, list[GrepHit]]) -> None:
    """The hits of one search that are calls of its names, under each name (and `.name` for `x.name(`)."""
    call = re.compile(rf"(\.\s*)?\b({alternatives})\s*\(")
    definition = _definition_line(alternatives)
    for hit in hits:
        if reader.expired():
            return  # thousands of hits can match: past the packs' deadline the search is cut short
        # Python's `ast` and a grammar's call nodes decide when a site is chosen (_site_end): parsing every
        # file a common name is written in would cost more than the pack.
        deferred = hit.path.endswith((".py", ".pyi")) or _grammar(hit.path) is not None
        if not deferred and definition.search(hit.text):
            continue
        code = hit.text if deferred else _code_part(hit.text)
        for match in call.finditer(code):
            for name in (match.group(2), "." + match.group(2)) if match.group(1) else (match.group(2),):
                sites = by_name.setdefault(name, [])
                if hit not in sites[-3:]:
                    sites.append(hit)


def _definition_line(alternatives: str) -> re.Pattern[str]:
    """A definition's own line, by the keyword right before the name (`var fn = router(` is a call)."""
    return re.compile(rf"\b(def|function\*?|func|fn|class|sub|proc|void|static|public|private)\s+"
                      rf"(\([^)]*\)\s*)?(\*\s*)?({alternatives})\s*\(")


def _grammar(path: str) -> Any:
    from ocr_hook.context import tree_lang

    return tree_lang.for_extension(posixpath.splitext(path)[1].lower())


def _tree_calls(path: str, text: str, reader: Reader) -> Callable[[int, str], int | None] | None:
    """For a file an installed grammar parses whole: (line, callee name) → the last line of a call of that
    name written on that line, or None when there is no such call; None for a file it cannot parse whole
    (the line's own reading decides there)."""
    key = ("tree-calls", path)
    if key in reader.memo:
        return reader.memo[key]  # type: ignore[return-value]
    from ocr_hook.context import tree_lang

    lang = _grammar(path)
    root = lang.tree(path, text, reader).root_node if lang is not None else None
    if root is None or root.has_error:
        reader.memo[key] = None
        return None
    lines = file_lines(text)

    def end(line: int, name: str) -> int | None:
        return tree_lang.call_end(root, lines[line - 1], line - 1, name) if 0 < line <= len(lines) else None

    reader.memo[key] = end
    return end


def _site_end(hit: GrepHit, name: str, text: str, reader: Reader) -> int | None:
    """The last line of the call of `name` a chosen hit shows, or None when the hit is no call: Python's
    `ast` and a grammar's call nodes say so; other languages by the line without its strings and comments."""
    if hit.path.endswith((".py", ".pyi")):
        calls = _python_calls(hit.path, text, reader)
        if calls is not None:
            return calls.get((hit.line_no, name))  # None: the word in a docstring, a string or a comment
    elif _grammar(hit.path) is not None:
        tree_calls = _tree_calls(hit.path, text, reader)
        if tree_calls is not None:
            return tree_calls(hit.line_no, name)
    # No parser read the file whole: the line decides (_take_sites already read a grep-only language's so).
    if _definition_line(re.escape(name)).search(hit.text) or \
            not re.search(rf"\b{re.escape(name)}\s*\(", _code_part(hit.text)):
        return None
    return _call_end(file_lines(text), hit.line_no, name)


def _python_calls(path: str, text: str, reader: Reader) -> dict[tuple[int, str], int] | None:
    """(line, callee name) → the call's last line, for every call and decorator in a Python file, from its
    `ast` (the line is where the callee's name is written); None when the file does not parse."""
    key = ("python-calls", path)
    if key in reader.memo:
        return reader.memo[key]  # type: ignore[return-value]
    import ast

    found: dict[tuple[int, str], int] | None = {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        found = None
    else:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                callee = node.func
                name = callee.id if isinstance(callee, ast.Name) else \
                    callee.attr if isinstance(callee, ast.Attribute) else None
                if name is not None:
                    line = callee.end_lineno or callee.lineno
                    found[(line, name)] = max(found.get((line, name), 0), node.end_lineno or node.lineno)
    reader.memo[key] = found
    return found


_STRING_OR_COMMENT = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`|//.*$|#.*$|/\*.*?(\*/|$)|^\s*\*.*$")


def _code_part(line: str) -> str:
    """The line without what it shows to be strings or comments (languages read without a grammar here)."""
    return _STRING_OR_COMMENT.sub(lambda m: " " * len(m.group(0)), line)


def _call_end(lines: list[str], line_no: int, name: str) -> int:
    """The last line of the call of `name` starting on `line_no`: where its brackets close, by counting them
    in the code part of each line (at most CALL_LINES lines)."""
    start = lines[line_no - 1] if 0 < line_no <= len(lines) else ""
    at = re.search(rf"\b{re.escape(name)}\s*\(", _code_part(start))
    depth = 0
    for offset in range(CALL_LINES):
        number = line_no + offset
        if number > len(lines):
            break
        code = _code_part(lines[number - 1])
        if offset == 0 and at is not None:
            code = code[at.start():]
        for ch in code:
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
                if depth <= 0:
                    return number
    return line_no


def _sureness(hit: GrepHit, name: str, stem: str, qualified: re.Pattern[str], reader: Reader) -> int:
    """0 for a call through the defining module's name; 1 for a bare call of a module-level function in a
    file that names the defining module (its import: `from ._streams import encode`); 2 for the rest, a
    same-named method of something else (`text.encode(`) among them."""
    if qualified.search(hit.text):
        return 0
    if not name.startswith(".") and re.search(rf"(?<![.\w$]){re.escape(name)}\s*\(", _code_part(hit.text)) \
            and _names_module(hit.path, stem, reader):
        return 1
    return 2


def _names_module(path: str, stem: str, reader: Reader) -> bool:
    """Whether the file spells the defining module's name: one scan of it a run, not one per call site (a
    file of a thousand call sites would be read through a thousand times)."""
    key = ("names-module", path, stem)
    found = reader.memo.get(key)
    if found is None:
        found = reader.memo[key] = re.search(rf"\b{re.escape(stem)}\b", reader.text(path) or "") is not None
    return bool(found)


def _callers(own: str, names: Sequence[str], lang: Language, reader: Reader) -> list[tuple[int, ContextEntry]]:
    """Up to CALLER_SITES call sites in other files per changed function, non-test and nearest first."""
    names = [n for n in dict.fromkeys(names) if _NAME.fullmatch(n)]
    if not names:
        return []
    by_name = _call_sites(names, lang.extensions, reader)
    stem = posixpath.splitext(posixpath.basename(own))[0]
    if stem in ("__init__", "index", "mod"):
        stem = posixpath.basename(posixpath.dirname(own)) or stem
    out: list[tuple[int, ContextEntry]] = []
    for rank, name in enumerate(names):
        # Surest first: a call qualified by the defining module's name (`_manylinux.platform_tags(`) before a
        # bare name that may be another definition's; then non-test and nearest.
        qualified = re.compile(rf"\b{re.escape(stem)}\s*\.\s*{re.escape(name.lstrip('.'))}\s*\(")
        hits = sorted(dict.fromkeys(h for h in by_name.get(name, ()) if h.path != own),
                      key=lambda h: (is_test_path(h.path), _sureness(h, name, stem, qualified, reader),
                                     distance(own, h.path), h.path, h.line_no))
        chosen: dict[GrepHit, int] = {}
        files: set[str] = set()
        bare = name.lstrip(".")
        for pass_no in (0, 1):  # distinct files first, then more sites in the same files
            for hit in hits:
                if len(chosen) >= CALLER_SITES or reader.expired():
                    break
                text = reader.text(hit.path)
                if (pass_no == 0 and hit.path in files) or hit in chosen or text is None:
                    continue
                end = _site_end(hit, bare, text, reader)
                if end is None:
                    continue  # a parser's or the line's reading: no call of the name here
                chosen[hit] = end
                files.add(hit.path)
        for site, (hit, end) in enumerate(chosen.items()):
            # The whole call (its arguments are what a changed signature breaks), a line before it.
            span = Span(hit.line_no - 1, max(hit.line_no + 1, min(end, hit.line_no + CALL_LINES - 1)))
            entry = _entry("caller", name.lstrip("."), hit.path, span, reader.text(hit.path) or "")
            out.append((site * len(names) + rank, entry))
    # Each changed function's first call site before any function's second: the budget cuts the thirds.
    out.sort(key=lambda item: item[0])
    return out


def _fit(own: str, definitions: list[tuple[int, ContextEntry]], callers: list[tuple[int, ContextEntry]],
         budget: int) -> ContextPack | None:
    """Most used and nearest first, definitions and call sites taking turns; masked; cut to the budget."""
    from ocr_hook.budget.tokens import estimate_tokens
    from ocr_hook.secrets_mask import mask_secrets

    defs = sorted(definitions, key=lambda item: (-item[0], distance(own, item[1].path), item[1].path))
    calls = list(callers)  # already in order: per changed function, non-test and nearest first
    merged: list[ContextEntry] = []
    # Three definitions to two call sites: a call site shows a whole call and costs more than a definition.
    taken = 0
    for i in range(max(len(defs), len(calls))):
        share = 2 if i % 2 == 0 else 1
        merged += [entry for _uses, entry in defs[taken:taken + share]]
        taken += share
        if i < len(calls):
            merged.append(calls[i][1])
    merged += [entry for _uses, entry in defs[taken:]]
    if not merged:
        return None
    # What is sent around the entries counts too: the section's heading, and the "left out" line if any.
    used = estimate_tokens(_heading(len(merged))) + 1
    kept: list[tuple[ContextEntry, int, int]] = []
    cut = 0
    for entry in merged:
        text, count = mask_secrets(entry.text)
        candidate = ContextEntry(entry.kind, entry.name, entry.path, entry.start, entry.end, _cut_lines(text))
        cost = estimate_tokens(candidate.render()) + 1
        if used + cost > budget:
            cut += 1
            continue
        used += cost
        kept.append((candidate, cost, count))
    while cut and kept and used + estimate_tokens(ContextPack((), cut, 0, budget).cut_line()) + 1 > budget:
        used -= kept.pop()[1]
        cut += 1
    return ContextPack(tuple(e for e, _c, _n in kept), cut=cut, masked=sum(n for _e, _c, n in kept), budget=budget)


def _heading(count: int) -> str:
    """The context section's heading as the prompt renders it around the entries (agent/prompts.py)."""
    from string import Template

    from ocr_hook import config_files

    return Template(config_files.read_text("prompts/context_pack.md")).safe_substitute(count=count, entries="")
