"""The callers a change breaks (issue 45), from a real git repository: a renamed function's callers found by
its old name (read from the diff's removed def line), a multi-line call shown to its closing bracket, the
name in a docstring, a string or a comment never taken for a call, and a call qualified by the defining
module ranked before a bare name."""

from __future__ import annotations

from pathlib import Path

from gitrepo import commit_all, git, make_repo, write

from ocr_hook.changes.collect import collect_changes
from ocr_hook.changes.scope import Scope
from ocr_hook.changes.snapshot import open_snapshot
from ocr_hook.context import ContextEntry, ContextPack, build_pack
from ocr_hook.settings import load

TAGS_BEFORE = "def platform_tags(arch):\n    return [arch]\n\n\ndef fetch(url, timeout):\n    return url\n"
TAGS_AFTER = TAGS_BEFORE.replace("(arch)", "(arch, linux=True)").replace("fetch(url, timeout)",
                                                                           "download(url, *, timeout)")
USER = '''"""Helpers. Call fetch(url, timeout) or platform_tags(arch) to get going."""
import tags


def platform_tags():  # its own, unrelated
    return []


def go(url):
    # fetch(url, 3) used to be here
    message = "fetch(url) failed"
    first = platform_tags()
    return tags.fetch(
        url,
        3,
    ), tags.platform_tags("x86_64"), message, first
'''
JS_BEFORE = "function fetch(url, timeout) {\n  return url\n}\nmodule.exports = { fetch }\n"
JS_AFTER = "function download(url, opts) {\n  return url\n}\nmodule.exports = { download }\n"
JS_USER = "const { fetch } = require('./net')\n// fetch(url) is the old way\nconst s = 'fetch(x)'\n" \
          "const r = fetch(\n  'https://x',\n  5000,\n)\n"


def _packs(tmp_path: Path, before: dict[str, str], after: dict[str, str]) -> dict[str, ContextPack | None]:
    """Each staged file's pack, `before` committed and `after` staged in a fresh repository."""
    repo = make_repo(tmp_path / "repo")
    for path, text in before.items():
        write(repo, path, text)
    commit_all(repo, "base")
    for path, text in after.items():
        write(repo, path, text)
    git(repo, "add", "-A")
    settings = load(str(repo), None, {}, {})
    change_set = collect_changes(str(repo), Scope("staged"), [], {})
    with open_snapshot(str(repo), change_set) as snapshot:
        return {change.path: build_pack(change, snapshot, settings) for change in change_set.files}


def _entries(tmp_path: Path, before: dict[str, str] | None = None,
             after: dict[str, str] | None = None) -> dict[str, list[ContextEntry]]:
    before = before or {"tags.py": TAGS_BEFORE, "user.py": USER, "net.js": JS_BEFORE, "user.js": JS_USER}
    packs = _packs(tmp_path, before, after or {"tags.py": TAGS_AFTER, "net.js": JS_AFTER})
    return {path: [e for e in pack.entries if e.kind == "caller"] if pack is not None else []
            for path, pack in packs.items()}


def test_renamed_functions_whole_calls_real_calls_only_and_qualified_first(tmp_path: Path) -> None:
    entries = _entries(tmp_path)
    python = entries["tags.py"]
    fetch = [e for e in python if e.name == "fetch"]  # renamed to download: found by its old name
    assert [(e.path, e.start, e.end) for e in fetch] == [("user.py", 12, 16)]
    assert "3,\n    ), tags.platform_tags" in fetch[0].text  # the whole call, to its closing bracket
    tags = [e for e in python if e.name == "platform_tags"]
    assert 'tags.platform_tags("x86_64")' in tags[0].text  # the call qualified by the module first,
    assert [e.start for e in tags] == [15, 11]  # then the bare one (maybe the file's own); never the docstring
    js = [e for e in entries["net.js"] if e.name == "fetch"]
    assert [(e.path, e.start, e.end) for e in js] == [("user.js", 3, 7)]  # not the comment or the string


def test_a_renamed_export_and_an_imported_bare_call_before_same_named_methods(tmp_path: Path) -> None:
    utils = "exports.clone = function(obj){\n  return obj\n};\n"
    view = "var clone = require('./utils').clone\n\nmodule.exports = function (h) {\n  return clone(h)\n}\n"
    streams = "def encode(data):\n    return data\n"
    users = {f"a{i}.py": f"def f{i}(s):\n    return s.encode('utf-8')\n" for i in range(3)}
    models = "from ._streams import encode\n\n\ndef g(x):\n    return encode(x)\n"
    entries = _entries(tmp_path, {"utils.js": utils, "view.js": view, "_streams.py": streams, "z/models.py": models,
                                  **users},
                       {"utils.js": utils.replace("clone", "copy"), "_streams.py": streams.replace("encode", "enc")})
    # `exports.clone = function` is read from the removed line; its bound name's bare call is a call site
    assert [(e.path, e.start) for e in entries["utils.js"]] == [("view.js", 3)]
    # the call of the name the file imports from the defining module before three `str.encode(` calls
    assert [(e.path, e.start) for e in entries["_streams.py"]][:1] == [("z/models.py", 4)]


def test_a_class_is_shown_by_what_calling_it_takes(tmp_path: Path) -> None:
    doc = '    """A client.\n\n' + "    More words about it.\n" * 4 + '    """\n\n'
    models = "from dataclasses import dataclass\n\n\nclass Client:\n" + doc + \
        "    def __init__(self, base_url,\n                 verify=True):\n        self.base_url = base_url\n\n\n" \
        "@dataclass\nclass Options:\n" + doc + "    retries: int\n    backoff: float = 0.5\n"
    pack = _packs(tmp_path, {"models.py": models, "app.py": "from models import Client, Options\n"},
                  {"app.py": "from models import Client, Options\n\nc = Client('x', verify=Options(3))\n"})["app.py"]
    assert pack is not None
    shown = {e.name: e.text for e in pack.entries if e.kind == "definition"}
    assert "def __init__(self, base_url,\n                 verify=True):" in shown["Client"]
    assert shown["Options"].endswith("    retries: int\n    backoff: float = 0.5")


def test_a_grammar_language_s_call_sites_are_its_call_nodes(tmp_path: Path) -> None:
    # The name as a method's or a prototype's definition, in a block comment or a template literal over
    # several lines: none is a call, which the line alone cannot show; the grammar's call node can.
    net = "function fetch(url, timeout) {\n  return url\n}\nmodule.exports = { fetch }\n"
    user = ("const { fetch } = require('./net')\n/* the old way:\n   fetch(url, 5000) */\nconst help = `call\n"
            "  fetch(url) first`\nclass Cache {\n  fetch(key) {\n    return key\n  }\n}\nconst r = fetch(\n"
            "  'https://x',\n  5000,\n)\n")
    util_c = "int compute(int a) {\n  return a;\n}\n"
    header = "int compute(int a);\n"
    other_c = '#include "util.h"\n\nint total(void) {\n  return compute(\n    1);\n}\n'
    broken = "const { fetch } = require('./net')\nlet x = ) (\n// fetch(url) is the old way\nconst r = fetch(\n  1)\n"
    before = {"net.js": net, "user.js": user, "util.c": util_c, "util.h": header, "other.c": other_c,
              "broken.js": broken}
    after = {"net.js": net.replace("timeout", "opts"), "util.c": util_c.replace("(int a)", "(int a, int b)")}
    entries = _entries(tmp_path, before, after)
    # the whole call only; a file the grammar cannot parse is read line by line (its comment is no call)
    assert [(e.path, e.start, e.end) for e in entries["net.js"]] == [("broken.js", 3, 5), ("user.js", 10, 14)]
    assert [(e.path, e.start, e.end) for e in entries["util.c"]] == [("other.c", 3, 5)]  # not the prototype


def test_a_grammar_language_s_class_is_shown_to_its_constructor(tmp_path: Path) -> None:
    client = ("/**\n * A client.\n */\nexport class Client {\n  static retries = 3\n  timeout = 5\n  headers = {}\n"
              "  agent = null\n  constructor(baseUrl,\n              verify = true) {\n    this.baseUrl = baseUrl\n"
              "  }\n}\n")
    pack = _packs(tmp_path, {"client.js": client, "app.js": "import { Client } from './client.js'\n"},
                  {"app.js": "import { Client } from './client.js'\n\nconst c = new Client('x', false)\n"})["app.js"]
    assert pack is not None
    shown = {e.name: e for e in pack.entries if e.kind == "definition"}
    assert shown["Client"].text.endswith("  constructor(baseUrl,\n              verify = true) {")
