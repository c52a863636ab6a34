"""JavaScript, TypeScript, Go, Rust, Java, C, C++, C# and Ruby through tree-sitter and the tree-sitter
project's grammar wheels (the `context` extra), with each wheel's own `queries/tags.scm` for definitions
and references (every wheel pinned in pyproject ships one), and for JavaScript/TypeScript a walk of the
top-level statements for what tags.scm leaves out (plain `const` bindings, exports, TypeScript types).
Imports are followed precisely for JavaScript/TypeScript (relative `require` and `import`) and Go
(packages of the repository's own module); the other languages find a name's definition among the
files of the same language that one bounded `git grep -w` names.

Nothing here is imported unless a changed file is in one of these languages and the grammar is installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import posixpath
import re
from collections import Counter
from functools import cache
from typing import Any

from ocr_hook.context.model import CLASS_LINES, DEFINITION_LINES, Analysis, Follow, Reader, Span, Want

# extension → (grammar module, its language function, our name, the extensions its code lives in)
_JS = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
_GRAMMARS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    **{ext: ("tree_sitter_javascript", "language", "javascript", _JS) for ext in (".js", ".jsx", ".mjs", ".cjs")},
    **{ext: ("tree_sitter_typescript", "language_typescript", "typescript", _JS) for ext in (".ts", ".mts", ".cts")},
    ".tsx": ("tree_sitter_typescript", "language_tsx", "tsx", _JS),
    ".go": ("tree_sitter_go", "language", "go", (".go",)),
    ".rs": ("tree_sitter_rust", "language", "rust", (".rs",)),
    ".java": ("tree_sitter_java", "language", "java", (".java",)),
    ".c": ("tree_sitter_c", "language", "c", (".c", ".h")),
    ".h": ("tree_sitter_c", "language", "c", (".c", ".h")),
    **{ext: ("tree_sitter_cpp", "language", "cpp", (".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".h"))
       for ext in (".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx")},
    ".cs": ("tree_sitter_c_sharp", "language", "c_sharp", (".cs",)),
    ".rb": ("tree_sitter_ruby", "language", "ruby", (".rb",)),
}
MAX_GREP_NAMES = 25  # names one combined `git grep -w` looks for (languages without import resolution)
MAX_CANDIDATES = 6  # files per name whose definitions are parsed
DOC_LINES = 4  # lines of a leading doc comment shown before a definition
# A grammar's definition entry, its doc comment's tail included: one line under DEFINITION_LINES, so the
# budget fits more definitions (bench_context: axios 45/45 at 7, 43/45 at 8; Python's stay at 8).
ENTRY_LINES = DEFINITION_LINES - 1
_JS_SUFFIXES = ("", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts", "/index.ts", "/index.tsx", "/index.js",
                "/index.jsx", "/index.mjs")
_IDENTIFIERS = ("identifier", "type_identifier", "field_identifier", "property_identifier", "constant")


def for_extension(ext: str) -> TreeLanguage | None:
    spec = _GRAMMARS.get(ext)
    if spec is None:
        return None
    return _language(*spec)


def installed(ext: str) -> str:
    """Which grammar (and tree-sitter) files of an extension's language are installed, as a short text
    that changes when one is installed, removed or upgraded: part of the pack memo's key. Found without
    importing them."""
    spec = _GRAMMARS.get(ext)
    if spec is None:
        return "grep"
    modules = ["tree_sitter", spec[0]] + (["tree_sitter_javascript"] if spec[2] in ("typescript", "tsx") else [])
    out = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            found = None
        origin = found.origin if found is not None else None
        try:
            stat = os.stat(origin) if origin else None
        except OSError:
            stat = None
        out.append(f"{module}:{origin}:{stat.st_size}:{stat.st_mtime_ns}" if stat is not None else f"{module}:-")
    return "|".join(out)


@cache
def _language(module: str, function: str, name: str, extensions: tuple[str, ...]) -> TreeLanguage | None:
    try:
        import tree_sitter

        grammar = importlib.import_module(module)
        language = tree_sitter.Language(getattr(grammar, function)())
    except (ImportError, AttributeError, ValueError):
        return None  # the grammar is not installed (the `context` extra): git grep instead
    return TreeLanguage(name, language, _query_text(module, name), extensions)


def _query_text(module: str, name: str) -> str:
    """The grammar wheel's tags.scm (TypeScript's extends JavaScript's, as the grammar does)."""
    parts = []
    if name in ("typescript", "tsx"):
        parts.append(_wheel_tags("tree_sitter_javascript"))
    parts.append(_wheel_tags(module))
    return "\n".join(parts)


def _wheel_tags(module: str) -> str:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return ""
    here = os.path.dirname(spec.origin)
    # tree-sitter-c-sharp ships its queries beside the package, under the distribution's own name.
    for directory in (here, os.path.join(os.path.dirname(here), module.replace("_", "-").replace("tree-sitter-c-sharp",
                                                                                              "tree_sitter_c-sharp"))):
        path = os.path.join(directory, "queries", "tags.scm")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                return handle.read()
    return ""


class TreeLanguage:
    def __init__(self, name: str, language: Any, query_text: str, extensions: tuple[str, ...]) -> None:
        import tree_sitter

        self.name = name
        self.extensions = extensions
        self._language = language
        self._parser = tree_sitter.Parser(language)
        self._tags = tree_sitter.Query(language, query_text)

    # --- parsing -------------------------------------------------------------------------------------

    def tree(self, path: str, text: str, reader: Reader) -> Any:
        key = ("tree", self.name, path)
        if key not in reader.memo:
            reader.memo[key] = self._parser.parse(text.encode("utf-8", "surrogateescape"))
        return reader.memo[key]

    def tags(self, root: Any, rows: tuple[int, int] | None = None) -> list[tuple[str, str, Any, Any]]:
        """(kind, name, name node, tagged node) for every definition.* and reference.* match."""
        import tree_sitter

        cursor = tree_sitter.QueryCursor(self._tags)
        if rows is not None:
            cursor.set_point_range((rows[0], 0), (rows[1] + 1, 0))
        out = []
        for _index, captures in cursor.matches(root):
            names = captures.get("name")
            if not names:
                continue
            for label, nodes in captures.items():
                if label.startswith(("definition.", "reference.")):
                    out.append((label, _text(names[0]), names[0], nodes[0]))
        return out

    # --- the reviewed file ---------------------------------------------------------------------------

    def analyse(self, path: str, text: str, added: frozenset[int], reader: Reader) -> Analysis | None:
        root = self.tree(path, text, reader).root_node
        local = {name for label, name, _n, _t in self.tags(root) if label.startswith("definition.")}
        used: Counter[str] = Counter()
        members: Counter[tuple[str, str]] = Counter()
        signatures: list[str] = []
        for rows in _runs(added):
            if reader.expired():
                break
            tagged_names = set()
            for label, name, node, tagged in self.tags(root, rows):
                is_function = label.startswith("definition.") and label.endswith(("function", "method"))
                if is_function and (node.start_point[0] + 1 in added or tagged.start_point[0] + 1 in added):
                    # A function inside another (a factory's) is reachable only as a member: `x.name(`.
                    method = label.endswith("method") or _nested(tagged)
                    signatures.append("." + name if method else name)
                elif label.startswith("reference.") and node.start_point[0] + 1 in added:
                    used[name] += 1
                    tagged_names.add(node.id)
            for node in _nodes_in(root, rows):
                if node.start_point[0] + 1 not in added:
                    continue
                if node.type in _IDENTIFIERS and node.id not in tagged_names:
                    used[_text(node)] += 1
                elif node.type in ("member_expression", "selector_expression", "scoped_identifier"):
                    pair = _member(node)
                    if pair is not None:
                        members[pair] += 1
        wants = self._wants(path, text, root, local, used, members, reader)
        return Analysis(wants, [s for s in dict.fromkeys(signatures) if not s.lstrip(".").startswith("test")])

    def _wants(self, path: str, text: str, root: Any, local: set[str], used: Counter[str],
               members: Counter[tuple[str, str]], reader: Reader) -> list[Want]:
        if self.name in ("javascript", "typescript", "tsx"):
            return _js_wants(path, root, used, members, reader)
        if self.name == "go":
            return _go_wants(path, root, local, used, members, reader)
        names = [n for n, c in used.most_common() if c and n not in local and len(n) > 1]
        return _grep_wants(path, names[:MAX_GREP_NAMES], reader, self.extensions)

    # --- another file ----------------------------------------------------------------------------------

    def find(self, path: str, text: str, symbol: str, reader: Reader) -> Span | Follow | None:
        is_js = self.name in ("javascript", "typescript", "tsx")
        if not is_js and symbol not in text:
            return None  # only JavaScript re-exports a name it never spells (`export * from`): parse nothing
        root = self.tree(path, text, reader).root_node
        if is_js:
            found = _js_find(path, root, symbol, reader)
            if found is not None:
                return found
        tagged = self.definitions(path, root, reader).get(symbol)
        return _span_of(tagged) if tagged is not None else None

    def definitions(self, path: str, root: Any, reader: Reader) -> dict[str, Any]:
        """Name → its outermost definition's node in the file, from ONE tags query per file for the run: a
        change using 200 names of a 20-file Go package would otherwise query every file 200 times."""
        key = ("tree-defs", self.name, path)
        index = reader.memo.get(key)
        if index is None:
            best: dict[str, tuple[int, Any]] = {}
            for label, name, _node, tagged in self.tags(root):
                if label.startswith("definition."):
                    depth = _depth(tagged)
                    if name not in best or depth < best[name][0]:
                        best[name] = (depth, tagged)
            reader.memo[key] = index = {name: node for name, (_d, node) in best.items()}
        return index  # type: ignore[return-value]


# --- helpers shared by the languages ----------------------------------------------------------------------

def _text(node: Any) -> str:
    return node.text.decode("utf-8", "surrogateescape") if node.text is not None else ""


def _runs(lines: frozenset[int]) -> list[tuple[int, int]]:
    """Contiguous runs of 1-based lines as 0-based (first, last) rows."""
    runs: list[tuple[int, int]] = []
    for line in sorted(lines):
        if runs and runs[-1][1] == line - 2:
            runs[-1] = (runs[-1][0], line - 1)
        else:
            runs.append((line - 1, line - 1))
    return runs


def _nodes_in(root: Any, rows: tuple[int, int]) -> list[Any]:
    """Every node that starts within `rows`, found by descending only into nodes that overlap them."""
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.end_point[0] < rows[0] or node.start_point[0] > rows[1]:
            continue
        if node.start_point[0] >= rows[0]:
            out.append(node)
        stack.extend(node.children)
    return out


def _member(node: Any) -> tuple[str, str] | None:
    """`ns.name` (JS member, Go selector, Rust path) as (ns, name) when the object is a plain identifier."""
    obj = node.child_by_field_name("object") or node.child_by_field_name("operand") \
        or node.child_by_field_name("path")
    prop = node.child_by_field_name("property") or node.child_by_field_name("field") \
        or node.child_by_field_name("name")
    if obj is None or prop is None or obj.type not in ("identifier", "package_identifier"):
        return None
    return _text(obj), _text(prop)


def _nested(node: Any) -> bool:
    """A function inside another function's body: nothing in another file can call it."""
    if node.type.endswith("declarator"):  # C/C++ tag a function's declarator: its own definition holds it
        while node.parent is not None and node.parent.type.endswith("declarator"):
            node = node.parent
        if node.parent is not None and node.parent.type == "function_definition":
            node = node.parent
    parent = node.parent
    while parent is not None:
        if any(word in parent.type for word in ("function", "method_definition", "method_declaration", "arrow",
                                               "lambda", "closure", "func_literal")) \
                and parent.type not in ("function_signature",):
            return True
        parent = parent.parent
    return False


def _depth(node: Any) -> int:
    depth = 0
    while node.parent is not None:
        depth += 1
        node = node.parent
    return depth


def _span_of(node: Any) -> Span:
    start = node.start_point[0] + 1
    # A leading doc comment belongs to the definition (JSDoc, Go doc, Rust ///).
    top = node
    while top.parent is not None and top.parent.type in ("export_statement", "decorated_definition"):
        top = top.parent
    start = top.start_point[0] + 1
    previous = top.prev_sibling
    if previous is not None and previous.type in ("comment", "line_comment", "block_comment") \
            and previous.end_point[0] + 1 >= start - 1:
        # Its last lines only: a long doc comment must not push the signature out of the entry.
        start = max(previous.start_point[0] + 1, start - DOC_LINES)
    end = node.end_point[0] + 1
    # A class is called through its constructor: what a caller must match is that signature, not a doc comment.
    through = _constructor_end(node) if "class" in node.type else None
    if through is not None and through - start < CLASS_LINES:
        return Span(start, max(through, min(end, start + ENTRY_LINES - 1)))
    return Span(start, min(end, start + ENTRY_LINES - 1))


def _constructor_end(node: Any) -> int | None:
    """The last line (1-based) of a class's constructor signature: JavaScript's `constructor(`, Java's and C#'s
    constructor declaration, Ruby's `initialize`."""
    body = node.child_by_field_name("body")
    for child in body.named_children if body is not None else ():
        name = child.child_by_field_name("name")
        if child.type == "constructor_declaration" or (
                child.type in ("method_definition", "method") and name is not None
                and _text(name) in ("constructor", "initialize")):
            params = child.child_by_field_name("parameters")
            return int((params or name or child).end_point[0]) + 1
    return None


# A grammar's call nodes (JS/TS, Go, Rust, C/C++: call_expression; JS/C++: new_expression; Java:
# method_invocation, object_creation_expression; C#: invocation_expression; Ruby: call, method_call), the
# fields naming their callee, and the fields that lead from a callee expression to the name it calls.
_CALLS = frozenset({"call_expression", "new_expression", "method_invocation", "object_creation_expression",
                    "invocation_expression", "call", "method_call"})
_CALLEE_FIELDS = ("function", "constructor", "method", "name", "type")
_NAME_FIELDS = ("property", "field", "name", "function", "type")
_GENERIC = frozenset({"generic_name", "index_expression"})  # `fetch<int>` (C#), `fetch[int]` (Go)


def _callee_name(node: Any) -> Any:
    """The node naming what a callee expression calls: `b` in `a.b`, `a::b`, `a->b`, `b<T>`."""
    for _ in range(6):
        inner = next((c for f in _NAME_FIELDS if (c := node.child_by_field_name(f)) is not None), None)
        if inner is None and node.type in _GENERIC and node.named_child_count:
            inner = node.named_children[0]
        if inner is None:
            return node
        node = inner
    return node


def call_end(root: Any, line: str, row: int, name: str) -> int | None:
    """The last line (1-based) of a call of `name` whose callee is written on `row` (0-based) of the parsed
    file, `line` being that row's text; None when no call node has the name as its callee there (a
    definition, a declaration, a string, a comment, a mere reference)."""
    ends = []
    for match in re.finditer(rf"(?<![\w$]){re.escape(name)}\b", line):
        col = len(line[:match.start()].encode("utf-8", "surrogateescape"))
        node = root.named_descendant_for_point_range((row, col), (row, col + len(name.encode("utf-8"))))
        up = node
        for _ in range(5):  # the callee's name is at most a few nodes under its call (a.b, a::b<T>)
            if up is None:
                break
            if up.type in _CALLS:
                callee = next((c for f in _CALLEE_FIELDS if (c := up.child_by_field_name(f)) is not None), None)
                target = _callee_name(callee) if callee is not None else None
                if target is not None and (target.start_byte, target.end_byte) == (node.start_byte, node.end_byte):
                    ends.append(int(up.end_point[0]) + 1)
                break
            up = up.parent
    return max(ends) if ends else None


def _grep_wants(path: str, names: list[str], reader: Reader, extensions: tuple[str, ...]) -> list[Want]:
    """One bounded `git grep -w` for all names at once; the files naming each are its candidates."""
    from ocr_hook.context.model import distance, is_test_path

    names = [n for n in names if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*[?!]?", n)]
    if not names:
        return []
    pattern = r"\b(" + "|".join(re.escape(n) for n in names) + r")\b"
    result = reader.grep(pattern, tuple(f"*{e}" for e in extensions), 50)
    files: dict[str, set[str]] = {}
    word = re.compile(pattern)
    for hit in result.hits:
        if hit.path == path:
            continue
        for match in word.finditer(hit.text):
            files.setdefault(match.group(1), set()).add(hit.path)
    wants = []
    for rank, name in enumerate(names):
        found = sorted(files.get(name, ()), key=lambda p: (is_test_path(p), distance(path, p), p))
        if found:
            wants.append(Want(name, name, tuple(found[:MAX_CANDIDATES]), max(1, len(names) - rank)))
    return wants


# --- JavaScript and TypeScript ---------------------------------------------------------------------------

def _string_value(node: Any) -> str | None:
    if node is None or node.type not in ("string", "template_string"):
        return None
    return _text(node).strip("'\"`")


def _require_of(node: Any) -> str | None:
    """The module of `require('./m')` (also `require('./m').x`'s object)."""
    if node is None:
        return None
    if node.type == "call_expression":
        fn = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if fn is not None and _text(fn) == "require" and args is not None and args.named_child_count:
            return _string_value(args.named_children[0])
    return None


def _js_imports(root: Any) -> dict[str, tuple[str, str]]:
    """Local name → (module specifier, imported name | "default" | "*")."""
    out: dict[str, tuple[str, str]] = {}
    for stmt in root.named_children:
        if stmt.type == "import_statement":
            source = _string_value(stmt.child_by_field_name("source"))
            if source is None:
                continue
            for clause in (c for c in stmt.named_children if c.type == "import_clause"):
                for part in clause.named_children:
                    if part.type == "identifier":
                        out[_text(part)] = (source, "default")
                    elif part.type == "namespace_import":
                        ids = [c for c in part.named_children if c.type == "identifier"]
                        if ids:
                            out[_text(ids[0])] = (source, "*")
                    elif part.type == "named_imports":
                        for spec in (s for s in part.named_children if s.type == "import_specifier"):
                            name = spec.child_by_field_name("name")
                            alias = spec.child_by_field_name("alias") or name
                            if name is not None and alias is not None:
                                out[_text(alias)] = (source, _text(name))
        elif stmt.type in ("lexical_declaration", "variable_declaration"):
            for decl in (d for d in stmt.named_children if d.type == "variable_declarator"):
                name, value = decl.child_by_field_name("name"), decl.child_by_field_name("value")
                if name is None or value is None:
                    continue
                source, member = _require_of(value), None
                if source is None and value.type == "member_expression":
                    source = _require_of(value.child_by_field_name("object"))
                    prop = value.child_by_field_name("property")
                    member = _text(prop) if prop is not None else None
                if source is None:
                    continue
                if name.type == "identifier":  # the whole module: what `module.exports =` is, or its members
                    out[_text(name)] = (source, member or "default")
                elif name.type == "object_pattern":
                    for prop in name.named_children:
                        if prop.type == "shorthand_property_identifier_pattern":
                            out[_text(prop)] = (source, _text(prop))
                        elif prop.type == "pair_pattern":
                            key, val = prop.child_by_field_name("key"), prop.child_by_field_name("value")
                            if key is not None and val is not None and val.type == "identifier":
                                out[_text(val)] = (source, _text(key))
    return out


def _js_resolve(from_path: str, spec: str, reader: Reader) -> tuple[str, ...]:
    if not spec.startswith("."):
        return ()  # a package from node_modules (not in the repository) or an alias we do not know
    base = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), spec))
    stems = [base]
    if base.endswith((".js", ".jsx", ".mjs", ".cjs")):
        stems.append(base.rsplit(".", 1)[0])  # TypeScript's ESM style: import './m.js' for m.ts
    found = []
    for stem in stems:
        for suffix in _JS_SUFFIXES:
            candidate = stem + suffix
            if reader.exists(candidate) and candidate not in found:
                found.append(candidate)
        if found:
            break
    return tuple(found[:2])


def _js_wants(path: str, root: Any, used: Counter[str], members: Counter[tuple[str, str]],
              reader: Reader) -> list[Want]:
    imports = _js_imports(root)
    wants = []
    with_members = {obj for obj, _prop in members}
    member_uses: Counter[str] = Counter()
    for (obj, _prop), uses in members.items():
        member_uses[obj] += uses
    for name, count in used.items():
        if not count or name not in imports:
            continue
        if name in with_members and imports[name][1] == "default" and count <= member_uses.get(name, 0):
            continue  # only `utils.isBlob`: the member's definition says more than the default export's object
        spec, imported = imports[name]
        files = _js_resolve(path, spec, reader)
        if files and imported != "*":
            wants.append(Want(name, imported, files, count))
    for (obj, prop), count in members.items():
        if obj in imports and imports[obj][1] in ("*", "default"):
            files = _js_resolve(path, imports[obj][0], reader)
            if files:
                wants.append(Want(f"{obj}.{prop}", prop, files, count))
    return wants


_JS_DECLARATIONS = ("function_declaration", "generator_function_declaration", "class_declaration",
                    "abstract_class_declaration", "interface_declaration", "type_alias_declaration",
                    "enum_declaration", "lexical_declaration", "variable_declaration", "function_signature")


def _declared_names(node: Any) -> list[str]:
    if node.type in ("lexical_declaration", "variable_declaration"):
        names = []
        for decl in (d for d in node.named_children if d.type == "variable_declarator"):
            name = decl.child_by_field_name("name")
            if name is not None and name.type == "identifier":
                names.append(_text(name))
            elif name is not None and name.type in ("array_pattern", "object_pattern"):  # `const [a, b] = …`
                names += [_text(n) for n in _walk(name)
                          if n.type in ("identifier", "shorthand_property_identifier_pattern")]
        return names
    name = node.child_by_field_name("name")
    return [_text(name)] if name is not None else []


def _js_find(path: str, root: Any, symbol: str, reader: Reader) -> Span | Follow | None:
    """A top-level declaration, export or CommonJS assignment of `symbol` (or the default export)."""
    stars: list[str] = []
    for stmt in root.named_children:
        target = stmt
        if stmt.type == "export_statement":
            source = _string_value(stmt.child_by_field_name("source"))
            declaration = stmt.child_by_field_name("declaration")
            value = stmt.child_by_field_name("value")
            is_default = any(c.type == "default" for c in stmt.children)
            if source is not None:  # a re-export: `export {a as b} from './n'`, `export * from './n'`
                files = _js_resolve(path, source, reader)
                clause = next((c for c in stmt.named_children if c.type == "export_clause"), None)
                if clause is None:
                    stars.extend(files)
                    continue
                for spec in (s for s in clause.named_children if s.type == "export_specifier"):
                    name = spec.child_by_field_name("name")
                    alias = spec.child_by_field_name("alias") or name
                    if alias is not None and name is not None and _text(alias) == symbol:
                        return Follow(_text(name), files)
                continue
            if symbol == "default" and is_default:
                if value is not None and value.type == "identifier":
                    return Follow(_text(value), (path,))
                return _span_of(declaration or value or stmt)
            if declaration is None:
                clause = next((c for c in stmt.named_children if c.type == "export_clause"), None)
                for spec in (s for s in clause.named_children if s.type == "export_specifier") if clause else ():
                    name = spec.child_by_field_name("name")
                    alias = spec.child_by_field_name("alias") or name
                    if alias is not None and name is not None and _text(alias) == symbol and _text(name) != symbol:
                        return Follow(_text(name), (path,))
                continue
            target = declaration
        if target.type in _JS_DECLARATIONS and symbol in _declared_names(target):
            return _span_of(target)
        if target.type == "expression_statement" and target.named_child_count:
            assign = target.named_children[0]
            if assign.type != "assignment_expression":
                continue
            left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
            lhs = _text(left) if left is not None else ""
            named = lhs in (f"exports.{symbol}", f"module.exports.{symbol}")
            if named or (symbol == "default" and lhs == "module.exports"):
                if right is not None and right.type == "identifier":
                    return Follow(_text(right), (path,))
                required = _require_of(right)
                if required is not None:
                    return Follow(symbol, _js_resolve(path, required, reader))
                return _span_of(target)
            if lhs == "module.exports" and right is not None and right.type == "object":
                for pair in right.named_children:
                    key = pair.child_by_field_name("key") if pair.type == "pair" else pair
                    if key is not None and _text(key) == symbol:
                        value = pair.child_by_field_name("value") if pair.type == "pair" else pair
                        if value is not None and value.type == "identifier" and pair.type == "pair":
                            return Follow(_text(value), (path,))
                        if pair.type == "pair":
                            return _span_of(pair)
                        return None  # shorthand `{symbol}`: the declaration above would have matched
    if stars:
        return Follow(symbol, tuple(stars))
    return None


# --- Go ------------------------------------------------------------------------------------------------------

def _go_module(path: str, reader: Reader) -> tuple[str, str] | None:
    """(the directory of the nearest go.mod, its module path)."""
    directory = posixpath.dirname(path)
    while True:
        mod = posixpath.join(directory, "go.mod") if directory else "go.mod"
        if reader.exists(mod):
            text = reader.text(mod) or ""
            match = re.search(r"^module\s+(\S+)", text, re.M)
            return (directory, match.group(1).strip('"')) if match else None
        if not directory:
            return None
        directory = posixpath.dirname(directory)


def _go_dir_files(directory: str, reader: Reader, own: str) -> tuple[str, ...]:
    key = ("go-dirs",)
    index = reader.memo.get(key)
    if index is None:
        built: dict[str, list[str]] = {}
        for p in reader.paths():
            if p.endswith(".go"):
                built.setdefault(posixpath.dirname(p), []).append(p)
        reader.memo[key] = index = built
    files = [p for p in index.get(directory, ()) if p != own]  # type: ignore[union-attr]
    files.sort(key=lambda p: (p.endswith("_test.go"), p))
    return tuple(files)


def _go_wants(path: str, root: Any, local: set[str], used: Counter[str], members: Counter[tuple[str, str]],
              reader: Reader) -> list[Want]:
    module = _go_module(path, reader)
    packages: dict[str, str] = {}  # local name → repository directory
    for decl in (n for n in root.named_children if n.type == "import_declaration"):
        specs = [s for s in _walk(decl) if s.type == "import_spec"]
        for spec in specs:
            where = spec.child_by_field_name("path")
            alias = spec.child_by_field_name("name")
            import_path = _text(where).strip('"`') if where is not None else ""
            if module is None or not (import_path == module[1] or import_path.startswith(module[1] + "/")):
                continue
            rel = import_path[len(module[1]):].lstrip("/")
            directory = posixpath.join(module[0], rel) if module[0] else rel
            packages[_text(alias) if alias is not None else posixpath.basename(import_path)] = directory
    wants = []
    for (pkg, name), count in members.items():
        if pkg in packages:
            files = _go_dir_files(packages[pkg], reader, path)
            if files:
                wants.append(Want(f"{pkg}.{name}", name, files, count))
    same_package = _go_dir_files(posixpath.dirname(path), reader, path)
    if same_package:
        for name, count in used.items():
            if count and name not in local and name not in packages and name not in _GO_BUILTINS:
                wants.append(Want(name, name, same_package, count))
    return wants


_GO_BUILTINS = frozenset("append cap clear close complex copy delete imag len make max min new panic print println "
                         "real recover bool byte complex64 complex128 error float32 float64 int int8 int16 int32 "
                         "int64 rune string uint uint8 uint16 uint32 uint64 uintptr any comparable true false "
                         "iota nil".split())


def _walk(node: Any) -> list[Any]:
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(current.named_children)
    return out
