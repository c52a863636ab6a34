"""Ground truth for bench/bench_context.py: what a file's context pack ought to hold (DESIGN.md section 12).

Written apart from ocr_hook/context on purpose, so the bench cannot share the pack's blind spots: Python
through its own `ast` resolver of imports (relative, `import a.b as c`, re-exports through `__init__`),
JavaScript through its own regular-expression import map (`require`, ES `import` named / default /
namespace, relative specifiers). Pure functions over {path: text} of the reviewed snapshot.

* definitions: for each name called or referenced on an added line of a file that an import of that
  file binds to a definition in another file of the repository, that definition's path, line and
  signature line (its first line, stripped);
* callers: for each function whose signature lines hold an added line, its call sites in other files
  (module-level functions through the callers' imports; a method through `.name(` when no other
  function in the repository has its name, so the call cannot mean another one).
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

JS_SUFFIXES = (".js", ".mjs", ".cjs")
# Method names the standard libraries and runtimes use too: `x.open(...)` may well be `os.open`, and
# `transport.request(...)` Node's http; a method of such a name gets no caller expectation.
COMMON_METHODS = frozenset(
    "open close read write request get set send end emit on once call apply bind then catch push pop keys values "
    "items update copy run start stop format parse join split replace append extend remove add delete has clear "
    "next resolve reject from toString valueOf render load dump dumps loads flush handle process log debug info "
    "warn error exit listen filter map reduce find sort test match exec encode decode wrap close_all".split())
MAX_REEXPORT_HOPS = 4


@dataclass(frozen=True)
class Site:
    path: str
    line: int
    text: str  # the line, stripped


@dataclass(frozen=True)
class Definition:
    file: str  # the reviewed file whose first request should carry it
    name: str  # as written on the added line
    site: Site


@dataclass
class CallerGroup:
    file: str  # the reviewed file (it holds the changed function)
    name: str
    site: Site  # the changed function's signature line
    callers: list[Site] = field(default_factory=list)

    @property
    def needed(self) -> int:
        return min(3, len(self.callers))


@dataclass
class Truth:
    definitions: list[Definition] = field(default_factory=list)
    callers: list[CallerGroup] = field(default_factory=list)


def expected(files: Mapping[str, str], added: Mapping[str, set[int]]) -> Truth:
    """What each changed file's pack should hold. `files`: every text file of the snapshot; `added`: the
    new-side line numbers of each changed file's added lines."""
    truth = Truth()
    py = PythonRepo(files)
    js = JsRepo(files)
    for path in sorted(added):
        lines = added[path]
        if path not in files or generated(path, files[path]):
            continue  # a bundle or minified file: no reviewer's pack is expected to explain it
        if path.endswith(".py"):
            truth.definitions += py.definitions(path, lines)
            truth.callers += py.caller_groups(path, lines)
        elif path.endswith(JS_SUFFIXES):
            truth.definitions += js.definitions(path, lines)
            truth.callers += js.caller_groups(path, lines)
    return truth


def generated(path: str, text: str) -> bool:
    """A build output (a `dist/` bundle, minified code): left out of the truth, as subject and as source."""
    parts = path.split("/")
    lines = text.count("\n") + 1
    return "dist" in parts[:-1] or path.endswith((".min.js", ".bundle.js")) or len(text) / lines > 300


def _line(text: str, number: int) -> str:
    lines = text.split("\n")
    return lines[number - 1].strip() if 0 < number <= len(lines) else ""


# ------------------------------------------------------------------------------------------------ Python


@dataclass
class _Module:
    path: str
    name: str
    tree: ast.Module | None
    defs: dict[str, int] = field(default_factory=dict)  # top-level name -> line of its definition
    visible: list[ast.expr] = field(default_factory=list)  # Name/Attribute loads no function local shadows
    bindings: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # name -> (module, attribute)


class PythonRepo:
    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = files
        self.by_name: dict[str, str] = {}  # dotted module -> path
        self.modules: dict[str, _Module] = {}  # path -> module
        for path in files:
            if path.endswith(".py"):
                self.by_name.setdefault(self._dotted(path), path)
        self._call_index: dict[str, list[tuple[int, str | None, Site | None]]] = {}
        self.function_names: dict[str, int] = {}
        for path in files:
            if path.endswith(".py"):
                mod = self.module(path)
                for node in ast.walk(mod.tree) if mod.tree else ():
                    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                        self.function_names[node.name] = self.function_names.get(node.name, 0) + 1

    def _dotted(self, path: str) -> str:
        parts = path[:-3].split("/")
        dirs = parts[:-1]
        top = len(dirs)
        while top > 0 and "/".join(dirs[:top]) + "/__init__.py" in self.files:
            top -= 1
        chain = dirs[top:] + ([] if parts[-1] == "__init__" else [parts[-1]])
        return ".".join(chain)

    def module(self, path: str) -> _Module:
        if path in self.modules:
            return self.modules[path]
        name = self._dotted(path)
        try:
            tree: ast.Module | None = ast.parse(self.files[path])
        except (SyntaxError, ValueError):
            tree = None
        mod = _Module(path, name, tree)
        self.modules[path] = mod
        if tree is None:
            return mod
        package = name if path.endswith("/__init__.py") or path == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        mod.bindings[alias.asname] = (alias.name, None)
                    else:
                        top = alias.name.split(".")[0]
                        mod.bindings[top] = (top, None)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".") if package else []
                    parts = parts[:len(parts) - (node.level - 1)] if node.level > 1 else parts
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                for alias in node.names:
                    if alias.name != "*":
                        mod.bindings[alias.asname or alias.name] = (base, alias.name)
        mod.visible = list(_visible_loads(tree, frozenset()))
        for stmt in _top_level(tree.body):
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                mod.defs.setdefault(stmt.name, stmt.lineno)
            elif isinstance(stmt, ast.Assign | ast.AnnAssign):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        mod.defs.setdefault(target.id, stmt.lineno)
        return mod

    def resolve(self, module: str, attr: str | None, hops: int = 0) -> Site | None:
        """The definition `module.attr` names (following re-exports), or None (a module, or not here)."""
        if attr is None or hops > MAX_REEXPORT_HOPS or module not in self.by_name:
            return None
        mod = self.module(self.by_name[module])
        if attr in mod.defs:
            return Site(mod.path, mod.defs[attr], _line(self.files[mod.path], mod.defs[attr]))
        if attr in mod.bindings:
            return self.resolve(*mod.bindings[attr], hops + 1)
        return None

    def _target(self, mod: _Module, node: ast.expr, exact: bool = False) -> Site | None:
        """The definition a Name or a dotted Attribute chain refers to through `mod`'s imports (`exact`:
        the chain must end at it; `name.attr` is then an attribute of the definition, not the definition)."""
        chain: list[str] = []
        while isinstance(node, ast.Attribute):
            chain.insert(0, node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in mod.bindings:
            return None
        module, attr = mod.bindings[node.id]
        base = f"{module}.{attr}" if attr else module
        if base not in self.by_name:  # the name is a definition (attribute accesses are on it), or not ours
            return None if exact and chain else self.resolve(module, attr)
        for part in chain:  # walk down the chain while it names modules of the repository
            if f"{base}.{part}" not in self.by_name:
                return self.resolve(base, part)
            base = f"{base}.{part}"
        return None  # a module itself

    def definitions(self, path: str, added: set[int]) -> list[Definition]:
        mod = self.module(path)
        found: dict[tuple[str, int], Definition] = {}
        for node in mod.visible:
            line = (node.end_lineno or node.lineno) if isinstance(node, ast.Attribute) else node.lineno
            if line not in added:
                continue
            site = self._target(mod, node)
            if site is not None and site.path != path:
                found.setdefault((site.path, site.line), Definition(path, ast.unparse(node), site))
        return list(found.values())

    def caller_groups(self, path: str, added: set[int]) -> list[CallerGroup]:
        mod = self.module(path)
        groups = []
        for node, is_method in _functions(mod.tree):
            last = node.body[0].lineno - 1 if node.body[0].lineno > node.lineno else node.lineno
            if not added & set(range(node.lineno, last + 1)) or node.name.startswith("__"):
                continue
            if is_method and (self.function_names.get(node.name, 0) != 1 or node.name in COMMON_METHODS):
                continue  # `.name(` could mean another function of that name: no certain callers
            site = Site(path, node.lineno, _line(self.files[path], node.lineno))
            callers = list(dict.fromkeys(self._callers(site, node.name, is_method)))  # one site a line
            groups.append(CallerGroup(path, node.name, site, callers))
        return groups

    def _calls(self, path: str) -> list[tuple[int, str | None, Site | None]]:
        """(line, method name, resolved definition) of every call in a file, computed once. The method name
        is None unless the call is `receiver.name(...)` on something other than an imported name."""
        if path not in self._call_index:
            mod = self.module(path)
            visible = {id(node) for node in mod.visible}
            rows = []
            for node in ast.walk(mod.tree) if mod.tree else ():
                if isinstance(node, ast.Call):
                    func = node.func
                    method = func.attr if isinstance(func, ast.Attribute) and not (
                        isinstance(func.value, ast.Name) and func.value.id in mod.bindings) else None
                    target = self._target(mod, func, exact=True) if id(func) in visible else None
                    rows.append((node.lineno, method, target))
            self._call_index[path] = rows
        return self._call_index[path]

    def _callers(self, site: Site, name: str, is_method: bool) -> list[Site]:
        out = []
        for other in sorted(self.files):
            if other == site.path or not other.endswith(".py") or generated(other, self.files[other]):
                continue
            for line, attr, target in self._calls(other):
                if (attr == name) if is_method else (target == site):
                    out.append(Site(other, line, _line(self.files[other], line)))
        return out


def _visible_loads(node: ast.AST, hidden: frozenset[str]) -> Iterator[ast.expr]:
    """Name and Attribute loads whose root name no enclosing function binds locally (a parameter or an
    assignment): `def f(request): request.x` does not use an imported `request`."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        args = node.args
        local = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a}
        body = node.body if isinstance(node.body, list) else [node.body]
        local |= {n.id for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Name)
                  and isinstance(n.ctx, ast.Store)}
        for name, value in ast.iter_fields(node):  # decorators, defaults, annotations: the outer scope
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    yield from _visible_loads(child, hidden | local if name == "body" else hidden)
        return
    if isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load):
        root: ast.expr = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if not (isinstance(root, ast.Name) and root.id in hidden):
            yield node
    for child in ast.iter_child_nodes(node):
        yield from _visible_loads(child, hidden)


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module-level statements, looking into if/try/with blocks (conditional definitions) but not defs."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, ast.If | ast.With):
            out += _top_level(stmt.body) + _top_level(getattr(stmt, "orelse", []))
        elif isinstance(stmt, ast.Try):
            out += _top_level(stmt.body) + _top_level(stmt.orelse) + _top_level(stmt.finalbody)
            for handler in stmt.handlers:
                out += _top_level(handler.body)
    return out


def _functions(tree: ast.Module | None) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]]:
    """Module-level functions (False) and methods of module-level classes (True)."""
    out: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]] = []
    for stmt in _top_level(tree.body) if tree else []:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            out.append((stmt, False))
        elif isinstance(stmt, ast.ClassDef):
            out += [(s, True) for s in stmt.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
    return out


# -------------------------------------------------------------------------------------------- JavaScript

_ID = r"[A-Za-z_$][\w$]*"
_SPEC = r"""['"](\.{1,2}/[^'"]*|\.{1,2})['"]"""
_REQUIRE_WHOLE = re.compile(rf"(?:const|let|var)\s+({_ID})\s*=\s*require\(\s*{_SPEC}\s*\)(?:\.({_ID}))?")
_REQUIRE_NAMED = re.compile(rf"(?:const|let|var)\s*\{{([^}}]*)\}}\s*=\s*require\(\s*{_SPEC}\s*\)")
_IMPORT = re.compile(rf"import\s+([^'\";]*?)\s+from\s+{_SPEC}", re.S)
_EXPORT_FROM = re.compile(rf"export\s*\{{([^}}]*)\}}\s*from\s+{_SPEC}", re.S)
# The default export: a plain name (`module.exports = name;`, `export default name;`) is looked up; any other
# expression (a function, a class, an object) is defined on that very line.
_DEFAULT = re.compile(rf"^(?:module\.exports\s*=\s*(?:exports\s*=\s*)?|export\s+default\s+)(?:({_ID})\s*;?\s*$)?", re.M)
_REEXPORT_WHOLE = re.compile(rf"^module\.exports\s*=\s*require\(\s*{_SPEC}\s*\)", re.M)
_STRING_OR_COMMENT = re.compile(r"//.*$|'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"|`(?:\\.|[^`\\])*`")
_IMPORT_LINE = re.compile(r"^\s*(?:import\b|export\s*\{[^}]*\}\s*from\b|(?:const|let|var)\b.*\brequire\()")
_USE = re.compile(rf"(?<![\w$.])({_ID})(?:\s*\.\s*({_ID}))?")


def _def_patterns(name: str) -> list[re.Pattern[str]]:
    n = re.escape(name)
    return [
        re.compile(rf"^(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*{n}\s*\(", re.M),
        re.compile(rf"^(?:export\s+)?(?:const|let|var)\s+{n}\s*=", re.M),
        re.compile(rf"^(?:export\s+)?(?:const|let|var)\s+[\[{{][^\]}}=]*\b{n}\b[^\]}}=]*[\]}}]\s*=", re.M),
        re.compile(rf"^(?:export\s+)?(?:default\s+)?class\s+{n}\b", re.M),
        re.compile(rf"^(?:module\.)?exports\.{n}\s*=", re.M),
        re.compile(rf"^{_ID}\.{n}\s*=", re.M),  # Default.name = ..., proto.name = function ...
        re.compile(rf"^[ \t]+(?:static\s+)?(?:async\s+)?{n}\s*\([^)\n]*\)\s*\{{", re.M),  # a method
        re.compile(rf"^[ \t]+{n}\s*:\s*(?:async\s+)?function\b", re.M),  # a property holding a function
    ]


_SIGNATURE = re.compile(
    rf"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*({_ID})\s*\("
    rf"|^\s*(?:(?:module\.)?exports|{_ID})\.({_ID})\s*=\s*(?:async\s+)?function\b"
    rf"|^\s*(?:export\s+)?(?:const|let|var)\s+({_ID})\s*=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|{_ID}\s*=>)"
    rf"|^[ \t]+(?:static\s+)?(?:async\s+)?({_ID})\s*\([^)\n]*\)\s*\{{")
_KEYWORDS = {"if", "for", "while", "switch", "catch", "function", "return", "with", "constructor"}


class JsRepo:
    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = files
        self._bindings: dict[str, dict[str, tuple[str, str | None]]] = {}
        self._call_index: dict[str, list[tuple[int, str, str, list[tuple[str, Site]]]]] = {}
        self.function_names: dict[str, int] = {}
        for path, text in files.items():
            if path.endswith(JS_SUFFIXES) and not generated(path, text):
                for line in text.split("\n"):
                    name = _signature_name(line)
                    if name:
                        self.function_names[name] = self.function_names.get(name, 0) + 1

    def _file(self, base: str, spec: str) -> str | None:
        target = posixpath.normpath(posixpath.join(posixpath.dirname(base), spec))
        for candidate in (target, *(target + s for s in JS_SUFFIXES), *(f"{target}/index{s}" for s in JS_SUFFIXES)):
            if candidate in self.files and candidate.endswith(JS_SUFFIXES):
                return candidate
        return None

    def bindings(self, path: str) -> dict[str, tuple[str, str | None]]:
        """name -> (file, exported name; None for the whole module: a default or namespace import)."""
        if path in self._bindings:
            return self._bindings[path]
        text = self.files[path]
        out: dict[str, tuple[str, str | None]] = {}

        def bind(name: str, spec: str, attr: str | None) -> None:
            target = self._file(path, spec)
            if target is not None:
                out[name] = (target, attr)

        for m in _REQUIRE_WHOLE.finditer(text):
            bind(m.group(1), m.group(2), m.group(3))
        for m in _REQUIRE_NAMED.finditer(text):
            for part in m.group(1).split(","):
                exported, _, local = part.partition(":")
                if exported.strip():
                    bind((local or exported).strip(), m.group(2), exported.strip())
        for m in _IMPORT.finditer(text):
            clause, spec = m.group(1).strip(), m.group(2)
            named = re.search(r"\{([^}]*)\}", clause)
            for part in named.group(1).split(",") if named else []:
                exported, _, local = part.strip().partition(" as ")
                if exported.strip():
                    bind((local or exported).strip(), spec, None if exported.strip() == "default" else exported.strip())
            rest = re.sub(r"\{[^}]*\}", "", clause)
            if ns := re.search(rf"\*\s*as\s+({_ID})", rest):
                bind(ns.group(1), spec, None)
            if default := re.match(rf"\s*({_ID})", rest):
                bind(default.group(1), spec, None)
        self._bindings[path] = out
        return out

    def resolve(self, path: str, attr: str | None, hops: int = 0) -> Site | None:
        """The definition of export `attr` of `path` (None: its default export), following re-exports."""
        if hops > MAX_REEXPORT_HOPS:
            return None
        text = self.files[path]
        if attr is None:
            whole = _REEXPORT_WHOLE.search(text)
            if whole and (target := self._file(path, whole.group(1))):
                return self.resolve(target, None, hops + 1)
            default = _DEFAULT.search(text)
            if default is None:
                return None
            if not default.group(1):
                number = text.count("\n", 0, default.start()) + 1
                return Site(path, number, _line(text, number))
            attr = default.group(1)
        for pattern in _def_patterns(attr):
            if m := pattern.search(text):
                number = text.count("\n", 0, m.start()) + 1
                return Site(path, number, _line(text, number))
        if attr in self.bindings(path):  # imported, then exported again
            return self.resolve(*self.bindings(path)[attr], hops + 1)
        for m in _EXPORT_FROM.finditer(text):
            for part in m.group(1).split(","):
                exported, _, local = part.strip().partition(" as ")
                if (local or exported).strip() == attr and (target := self._file(path, m.group(2))):
                    return self.resolve(target, None if exported.strip() == "default" else exported.strip(), hops + 1)
        return None

    def _uses(self, path: str, line_text: str) -> list[tuple[str, Site]]:
        """(name as written, definition) for each import-bound name used on one line."""
        if _IMPORT_LINE.match(line_text):
            return []
        code = _STRING_OR_COMMENT.sub('""', line_text)
        out = []
        bindings = self.bindings(path)
        for m in _USE.finditer(code):
            name, member = m.group(1), m.group(2)
            if name not in bindings:
                continue
            target, attr = bindings[name]
            if attr is None and member:  # default or namespace import used as an object
                site = self.resolve(target, member)  # a member it cannot locate is not expected
                written = f"{name}.{member}"
            else:
                site = self.resolve(target, attr)
                written = name
            if site is not None and site.path != path:
                out.append((written, site))
        return out

    def definitions(self, path: str, added: set[int]) -> list[Definition]:
        found: dict[tuple[str, int], Definition] = {}
        for number, line_text in enumerate(self.files[path].split("\n"), 1):
            if number in added:
                for written, site in self._uses(path, line_text):
                    found.setdefault((site.path, site.line), Definition(path, written, site))
        return list(found.values())

    def caller_groups(self, path: str, added: set[int]) -> list[CallerGroup]:
        groups = []
        text = self.files[path]
        for number, line_text in enumerate(text.split("\n"), 1):
            name = _signature_name(line_text) if number in added else None
            if not name:
                continue
            site = Site(path, number, line_text.strip())
            exported = self.resolve(path, name) == site or self.resolve(path, None) == site
            if not exported and (self.function_names.get(name, 0) != 1 or name in COMMON_METHODS):
                continue
            groups.append(CallerGroup(path, name, site, self._callers(site, name, exported)))
        return groups

    def _call_lines(self, path: str) -> list[tuple[int, str, str, list[tuple[str, Site]]]]:
        """(number, line, code without strings and comments, import-bound uses) of each line with a call."""
        if path not in self._call_index:
            rows = []
            for number, line_text in enumerate(self.files[path].split("\n"), 1):
                code = _STRING_OR_COMMENT.sub('""', line_text)
                if "(" in code and not _IMPORT_LINE.match(line_text):
                    rows.append((number, line_text.strip(), code, self._uses(path, line_text)))
            self._call_index[path] = rows
        return self._call_index[path]

    def _callers(self, site: Site, name: str, exported: bool) -> list[Site]:
        out = []
        by_member = re.compile(rf"\.\s*{re.escape(name)}\s*\(")
        unique = self.function_names.get(name, 0) == 1 and name not in COMMON_METHODS
        for other in sorted(self.files):
            if other == site.path or not other.endswith(JS_SUFFIXES) or generated(other, self.files[other]):
                continue
            for number, stripped, code, uses in self._call_lines(other):
                hit = exported and any(s == site and re.search(rf"{re.escape(w)}\s*\(", code) for w, s in uses)
                if hit or (unique and by_member.search(code)):
                    out.append(Site(other, number, stripped))
        return out


def _signature_name(line: str) -> str | None:
    m = _SIGNATURE.match(line)
    if not m:
        return None
    name = next(g for g in m.groups() if g)
    return None if name in _KEYWORDS else name
