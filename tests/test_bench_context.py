"""bench/bench_context.py's own counting: the ground truth (bench/context_truth.py) on a tiny synthetic
repository in Python and JavaScript, the staged change's added lines from a real git repository, and the
scoring of a first request with and without a pack. The bench must not count wrong silently."""

from __future__ import annotations

import sys
from pathlib import Path

from fake_api import RecordedRequest

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

from bench_context import RunResult, added_lines, pack_text, score, stage_release  # noqa: E402
from context_truth import Truth, expected  # noqa: E402

OLD = {
    "pkg/__init__.py": "from .core import normalise\n",
    "pkg/core.py": "import os\n\n\ndef normalise(s):\n    return s.strip()\n",
    "pkg/util.py": "def helper(x, y):\n    return x + y\n\n\nclass Box:\n    def unpack_box(self):\n        return 1\n",
    "pkg/cli.py": "from .util import helper\nfrom . import core\n\n\ndef main():\n    return helper(1, 2)\n",
    "app.py": "import pkg.util as u\nfrom pkg import normalise\n\n\ndef local():\n    return 0\n",
    "tests/test_util.py": "from pkg.util import helper\n\n\ndef test_helper():\n    assert helper(1, 2) == 3\n",
    "lib/utils.js": "function merge(a, b) {\n  return Object.assign(a, b);\n}\nmodule.exports = { merge };\n",
    "lib/d.js": "export default function makeThing(opts) {\n  return opts;\n}\n",
    "lib/ns.js": "export function tool(a) {\n  return a;\n}\n",
    "lib/x.js": "export const x = (v) => v * 2;\n",
    "lib/a.js": ("'use strict';\nconst { merge } = require('./utils');\nimport def from './d.js';\n"
                 "import * as ns from './ns.js';\nimport { x as y } from './x.js';\n\n"
                 "function run() {\n  return 1;\n}\n"),
}
NEW = {
    **OLD,
    "pkg/util.py": ("def helper(x, y, z=None):\n    return x + y\n\n\nclass Box:\n"
                    "    def unpack_box(self, strict=False):\n        return 1\n"),
    "app.py": ("import os\nimport pkg.util as u\nfrom pkg import normalise\n\n\ndef local():\n    return 0\n\n\n"
               "def go(v):\n    os.path.join('a', 'b')\n    local()\n    return u.helper(normalise(v), 1)\n\n\n"
               "def boxed(b):\n    return b.unpack_box()\n"),
    "pkg/cli.py": ("from .util import helper\nfrom . import core\n\n\ndef main():\n    return helper(1, 2)\n\n\n"
                   "def other(s):\n    return core.normalise(s)  # a comment\n\n\n"
                   "def shadowed(helper):\n    return helper(3)  # the parameter, not the import\n"),
    "lib/a.js": OLD["lib/a.js"] + ("\nfunction go(o) {\n  // merge(o) in a comment is no use\n"
                                   "  const t = def(merge(o, {}), 'y(1)');\n  return ns.tool(y(t)) + run();\n}\n"),
}


def _pairs(truth: Truth) -> set[tuple[str, str, int]]:
    return {(d.file, d.site.path, d.site.line) for d in truth.definitions}


def test_ground_truth_finds_definitions_and_callers_through_every_import_form(tmp_path) -> None:
    repo = tmp_path / "repo"
    stage_release(repo, OLD, NEW)
    added = added_lines(repo)
    assert sorted(added) == ["app.py", "lib/a.js", "pkg/cli.py", "pkg/util.py"]
    assert added["pkg/util.py"] == {1, 6}
    truth = expected(NEW, added)

    assert _pairs(truth) == {
        ("app.py", "pkg/util.py", 1),  # u.helper through `import pkg.util as u`
        ("app.py", "pkg/core.py", 4),  # normalise re-exported by pkg/__init__.py; os and local() add nothing
        ("pkg/cli.py", "pkg/core.py", 4),  # core.normalise through `from . import core`; not the shadowed helper
        ("lib/a.js", "lib/utils.js", 1),  # merge, destructured from require (not the one in a comment)
        ("lib/a.js", "lib/d.js", 1),  # the default import: `export default function` on its own line
        ("lib/a.js", "lib/ns.js", 1),  # ns.tool through a namespace import
        ("lib/a.js", "lib/x.js", 1),  # `x as y`; run() is in the same file, y(1) is in a string
    }
    signature = next(d.site.text for d in truth.definitions if d.site.path == "pkg/core.py")
    assert signature == "def normalise(s):"

    groups = {g.name: g for g in truth.callers if g.file != "lib/a.js"}
    assert {(g.file, g.name) for g in truth.callers} == {
        ("pkg/util.py", "helper"), ("pkg/util.py", "unpack_box"), ("app.py", "go"), ("app.py", "boxed"),
        ("pkg/cli.py", "other"), ("pkg/cli.py", "shadowed"), ("lib/a.js", "go")}
    helper = groups["helper"]
    assert helper.file == "pkg/util.py" and helper.site.line == 1
    assert {(c.path, c.line) for c in helper.callers} == {("app.py", 13), ("pkg/cli.py", 6), ("tests/test_util.py", 5)}
    assert helper.needed == 3
    assert [(c.path, c.line) for c in groups["unpack_box"].callers] == [("app.py", 17)]  # a uniquely named method
    assert groups["go"].needed == 0  # new functions nobody calls: nothing to expect

    # Scoring: a pack that names normalise's file and signature, and two of helper's three callers.
    def request(path: str, body: str) -> RecordedRequest:
        content = f"Review the change to `{path}`\n<diff>\n{NEW[path]}\n</diff>\n{body}"
        return RecordedRequest("/v1/messages", {}, {"messages": [{"role": "user", "content": content}]}, 0.0,
                               usage={"input_tokens": 100 + len(body) // 4})

    pack = {"app.py": "context:\npkg/core.py:4-5\ndef normalise(s):\n    return s.strip()\n",
            "pkg/util.py": "callers:\napp.py:13\n    return u.helper(normalise(v), 1)\npkg/cli.py:6\n"
                           "    return helper(1, 2)\n"}
    with_pack = {p: request(p, pack.get(p, "")) for p in added}
    without = {p: request(p, "") for p in added}
    assert pack_text(with_pack["app.py"].first_user_text, without["app.py"].first_user_text).strip() == \
        pack["app.py"].strip()
    fig = score("synthetic", truth, [RunResult(1.0, 0, with_pack)], [RunResult(1.0, 0, without)])
    assert fig.files == 4
    assert (fig.defs_expected, fig.defs_found) == (7, 1)  # only normalise for app.py; u.helper is missed
    assert {(d.file, d.site.path) for d, _ in fig.missed_defs} >= {("app.py", "pkg/util.py")}
    assert (fig.callers_expected, fig.callers_found) == (3 + 1 + 0, 2)  # helper 2 of 3; unpack_box 0 of 1
    assert sorted(fig.tokens_added) == [0, 0, len(pack["app.py"]) // 4, len(pack["pkg/util.py"]) // 4]
