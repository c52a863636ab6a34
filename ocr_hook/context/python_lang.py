"""Python, through the standard `ast` module: the names the added lines use, resolved one hop through
the file's imports (`import a.b as c`, `from . import x`, `from .m import x`, re-exports through a
package's `__init__`), and the functions whose signature lines were added."""

from __future__ import annotations

import ast
import builtins
import posixpath
from collections import Counter
from dataclasses import dataclass

from ocr_hook.context.model import CLASS_LINES, DEFINITION_LINES, Analysis, Follow, Reader, Span, Want

_BUILTINS = frozenset(dir(builtins))
BASE_CLASS_WEIGHT = 10  # uses a base class on an added `class` line counts for, in the pack's order
_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True, slots=True)
class _Target:
    """What an imported name stands for: a module (dotted parts, relative to `anchor` when not None)
    plus, for `from M import x`, the name x in it."""

    parts: tuple[str, ...]
    anchor: str | None  # the directory a relative import starts from; None for an absolute import


class _Python:
    name = "python"
    extensions = (".py",)

    def analyse(self, path: str, text: str, added: frozenset[int], reader: Reader) -> Analysis | None:
        tree = _parse(text)
        if tree is None:
            return None  # a syntax error: no pack for this file
        local, imports, stars, signatures = _bindings(tree, path, added)
        uses: Counter[tuple[str, ...]] = Counter()
        for node in _on_lines(tree, added):
            if isinstance(node, ast.ClassDef):  # a base class says more about the class than one use does
                for base in node.bases:
                    chain = _chain(base) if isinstance(base, ast.Attribute) else \
                        (base.id,) if isinstance(base, ast.Name) else None
                    if chain:
                        uses[chain] += BASE_CLASS_WEIGHT
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                uses[(node.id,)] += 1
            elif isinstance(node, ast.Attribute):
                chain = _chain(node)
                if chain is not None and len(chain) > 1:
                    uses[chain] += 1
        wants: list[Want] = []
        for chain, count in uses.items():
            head = chain[0]
            target = imports.get(head)
            if target is None:
                if stars and head not in local and head not in _BUILTINS:  # maybe from `from m import *`
                    files = tuple(f for parts, anchor in stars for f in _module_files(parts, anchor, reader, path))
                    if files:
                        wants.append(Want(".".join(chain), head, files, count))
                continue  # defined here, a builtin or a local variable
            want = _want(".".join(chain), target.parts + chain[1:], target.anchor, count, reader, path)
            if want is not None:
                wants.append(want)
        return Analysis(wants, signatures)

    def find(self, path: str, text: str, symbol: str, reader: Reader) -> Span | Follow | None:
        key = ("python-tree", path)
        if key not in reader.memo:
            reader.memo[key] = _parse(text)
        tree = reader.memo[key]
        if not isinstance(tree, ast.Module):
            return None
        follow: Follow | None = None
        stars: list[str] = []
        for node in _top_level(tree.body):
            if isinstance(node, _Def) and node.name == symbol:
                return _span(node)
            if isinstance(node, ast.Assign | ast.AnnAssign) and symbol in _assigned(node):
                return Span(node.lineno, min(node.end_lineno or node.lineno, node.lineno + DEFINITION_LINES - 1))
            if isinstance(node, ast.ImportFrom) and follow is None:
                anchor = _anchor(path, node.level)
                parts = tuple(node.module.split(".")) if node.module else ()
                for alias in node.names:
                    if alias.name == "*":
                        stars.extend(_module_files(parts, anchor, reader, path))
                    elif (alias.asname or alias.name) == symbol:
                        sub = _module_files((*parts, alias.name), anchor, reader, path)
                        if sub:
                            return None  # a submodule, not a definition
                        follow = Follow(alias.name, tuple(_module_files(parts, anchor, reader, path)))
        if follow is not None:
            return follow
        if stars:
            return Follow(symbol, tuple(stars))
        return None


PYTHON = _Python()


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module-level statements, looking into top-level `if`/`try` blocks (TYPE_CHECKING, fallbacks)."""
    out: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.If):
            out += _top_level(node.body) + _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            out += _top_level(node.body) + _top_level(node.orelse)
            for handler in node.handlers:
                out += _top_level(handler.body)
        else:
            out.append(node)
    return out


def _assigned(node: ast.Assign | ast.AnnAssign) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names: set[str] = set()
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                names.add(sub.id)
    return names


def _span(node: _Def) -> Span:
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    end = node.end_lineno or node.lineno
    if isinstance(node, ast.ClassDef):  # what a caller must match: the constructor, not the docstring
        through = _constructor_end(node)
        if through is not None and through - start < CLASS_LINES:
            return Span(start, max(through, min(end, start + DEFINITION_LINES - 1)))
    return Span(start, min(end, start + DEFINITION_LINES - 1))


def _constructor_end(node: ast.ClassDef) -> int | None:
    """The last line of the class's `__init__` signature, else of its annotated fields (a dataclass, attrs,
    a NamedTuple or TypedDict): what calling the class takes."""
    fields = [item for item in node.body if isinstance(item, ast.AnnAssign)]
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == "__init__":
            return item.body[0].lineno - 1 if item.body and item.body[0].lineno > item.lineno else item.lineno
    if fields:
        return fields[-1].end_lineno or fields[-1].lineno
    return None


def _chain(node: ast.Attribute) -> tuple[str, ...] | None:
    parts: list[str] = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    if not isinstance(current, ast.Name):
        return None
    parts.append(current.id)
    return tuple(reversed(parts))


def _anchor(path: str, level: int) -> str | None:
    if not level:
        return None
    directory = posixpath.dirname(path)
    for _ in range(level - 1):
        directory = posixpath.dirname(directory)
    return directory


def _statements(tree: ast.Module) -> list[ast.stmt]:
    """Every statement of the file, nested ones included, without visiting expressions: imports and
    definitions are statements, and a file has many times more expression nodes."""
    out: list[ast.stmt] = []
    stack: list[list[ast.stmt]] = [tree.body]
    while stack:
        for node in stack.pop():
            out.append(node)
            for name in ("body", "orelse", "finalbody"):
                block = getattr(node, name, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    stack.append(block)
            for handler in getattr(node, "handlers", ()) or ():
                stack.append(handler.body)
            for case in getattr(node, "cases", ()) or ():
                stack.append(case.body)
    return out


def _on_lines(tree: ast.Module, added: frozenset[int]) -> list[ast.AST]:
    """The nodes that start on an added line, descending only into statements that span one; an
    attribute chain `a.b.c` is given once, as its outermost node (the name `a` still comes on its own)."""
    first, last = min(added), max(added)
    out: list[ast.AST] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        start = getattr(node, "lineno", None)
        if start is not None:
            end = getattr(node, "end_lineno", None) or start
            if end < first or start > last or (isinstance(node, ast.stmt) and not any(
                    line in added for line in range(start, end + 1))):
                continue
            if start in added:
                out.append(node)
        if isinstance(node, ast.Attribute):
            current: ast.expr = node.value
            while isinstance(current, ast.Attribute):  # the inner links of a chain are not uses of their own
                current = current.value
            stack.append(current)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def _bindings(tree: ast.Module, path: str, added: frozenset[int]) -> tuple[
        set[str], dict[str, _Target], list[tuple[tuple[str, ...], str | None]], list[str]]:
    """Names defined in the file (functions, classes, module-level assignments), what each imported name
    stands for, and the modules of its star imports. A name the file both imports and defines counts as defined
    here (it adds nothing)."""
    local: set[str] = set()
    imports: dict[str, _Target] = {}
    stars: list[tuple[tuple[str, ...], str | None]] = []
    signatures: list[str] = []
    statements = _statements(tree)
    # A method binds no bare name (it is reached as an attribute): `def loads(self)` leaves `loads` imported.
    methods = {id(item) for node in statements if isinstance(node, ast.ClassDef) for item in node.body}
    for node in statements:
        if isinstance(node, _Def):
            if id(node) not in methods:
                local.add(node.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = tuple(alias.name.split("."))
                if alias.asname:
                    imports[alias.asname] = _Target(parts, None)
                else:
                    imports[parts[0]] = _Target(parts[:1], None)  # `import a.b` binds `a`
        elif isinstance(node, ast.ImportFrom):
            anchor = _anchor(path, node.level)
            base = tuple(node.module.split(".")) if node.module else ()
            for alias in node.names:
                if alias.name == "*":
                    stars.append((base, anchor))
                else:
                    imports[alias.asname or alias.name] = _Target((*base, alias.name), anchor)
    for stmt in _top_level(tree.body):  # functions and methods others can call (not nested ones)
        if isinstance(stmt, _Def):
            _signature(stmt, added, signatures)
            if isinstance(stmt, ast.ClassDef):
                for item in _top_level(stmt.body):
                    if isinstance(item, _Def):
                        _signature(item, added, signatures, method=True)
    for stmt in _top_level(tree.body):  # module-level assignments (a function's own variables may shadow
        if isinstance(stmt, ast.Assign | ast.AnnAssign):  # an import there; showing its definition is harmless)
            local |= _assigned(stmt)
    for name in local:
        imports.pop(name, None)
    return local, imports, stars, signatures


def _want(name: str, full: tuple[str, ...], anchor: str | None, uses: int, reader: Reader,
          own: str) -> Want | None:
    """The longest prefix of `full` that is a module of the repository, and the next part as the symbol."""
    for k in range(len(full) - 1, 0, -1):
        files = _module_files(full[:k], anchor, reader, own)
        if files:
            return Want(name, full[k], tuple(files), uses)
    if anchor is not None and len(full) >= 1:  # `from . import x`: x in the package's __init__
        init = posixpath.join(anchor, "__init__.py") if anchor else "__init__.py"
        if reader.exists(init):
            return Want(name, full[0], (init,), uses)
    return None


def _module_files(parts: tuple[str, ...], anchor: str | None, reader: Reader, own: str) -> list[str]:
    """The file(s) a dotted module name may be: relative to `anchor`, else wherever the repository has
    it (a src/ layout, a monorepo's packages), the one sharing most of `own`'s path first."""
    if not parts:
        if anchor is None:
            return []
        init = posixpath.join(anchor, "__init__.py") if anchor else "__init__.py"
        return [init] if reader.exists(init) else []
    rel = "/".join(parts)
    if anchor is not None:
        base = posixpath.join(anchor, rel) if anchor else rel
        return [p for p in (base + ".py", base + "/__init__.py") if reader.exists(p)]
    index = _suffix_index(reader)
    found = [p for p in index.get(parts[-1], ()) if p in (rel + ".py", rel + "/__init__.py")
             or p.endswith(("/" + rel + ".py", "/" + rel + "/__init__.py"))]
    found.sort(key=lambda p: (-len(posixpath.commonprefix([p, own])), len(p), p))
    return found[:3]


def _suffix_index(reader: Reader) -> dict[str, list[str]]:
    """Module name (a file's stem, a package's directory) → the Python files that may be it."""
    key = "python-suffix-index"
    index = reader.memo.get(key)
    if index is None:
        built: dict[str, list[str]] = {}
        for p in reader.paths():
            if not p.endswith(".py"):
                continue
            stem = posixpath.basename(p)[:-3]
            name = posixpath.basename(posixpath.dirname(p)) if stem == "__init__" else stem
            built.setdefault(name, []).append(p)
        reader.memo[key] = index = built
    return index  # type: ignore[return-value]


def _signature(node: _Def, added: frozenset[int], out: list[str], method: bool = False) -> None:
    """Functions whose signature lines (the `def` line through the colon) include an added line, a
    method as `.name` (called as `x.name(...)`); a changed `__init__` stands for its class."""
    if isinstance(node, ast.ClassDef):
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == "__init__" \
                    and _signature_added(item, added):
                out.append(node.name)
    elif not node.name.startswith(("__", "test_")) and not _accessor(node) and _signature_added(node, added):
        out.append("." + node.name if method else node.name)


def _accessor(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A property (or its setter): read as an attribute, never called, so a grep for calls finds others'."""
    for decorator in node.decorator_list:
        name = decorator.attr if isinstance(decorator, ast.Attribute) else getattr(decorator, "id", "")
        if name in ("property", "cached_property", "setter", "getter", "deleter"):
            return True
    return False


def _signature_added(node: ast.FunctionDef | ast.AsyncFunctionDef, added: frozenset[int]) -> bool:
    last = node.body[0].lineno - 1 if node.body else node.lineno
    if node.body and isinstance(node.body[0], ast.Expr) and node.body[0].lineno == node.lineno:
        last = node.lineno  # `def f(): ...` on one line
    return any(line in added for line in range(node.lineno, max(node.lineno, last) + 1))
