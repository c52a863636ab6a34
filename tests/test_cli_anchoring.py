"""Anchoring end to end: the model's quotes, perturbed as models perturb them, land on the right
lines of the JSON report; what cannot be placed is kept at line 0; a failing filter keeps all."""

from __future__ import annotations

import json

from agent_support import is_filter
from fake_api import Fault, Reply, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write

BEFORE = """\
import os


def first(items):
    if not items:
        return None
    return items[0]


def load(path):
    with open(path) as fh:
        return fh.read()


def total(items):
    result = 0
    for item in items:
        result += item
    return result


def cleanup(tmp):
    os.remove(tmp)
    return None
"""

AFTER = """\
import os


def first(items):
    if not items:
        return None
    return items[0]


def load(path):
    fh = open(path)
    data = fh.read()
    return data


def total(items):
    if not items:
        return None
    result = 0
    for item in items:
        result += item.price * item.quantity
    if result < 0:
        raise ValueError("negative total")
    return result


def cleanup(tmp):
    return None
"""


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based number of the nth line of `text` that contains `needle`."""
    hits = [n for n, line in enumerate(text.splitlines(), 1) if needle in line]
    return hits[nth - 1]


def R(first: str, last: str | None = None) -> tuple[int, int]:
    """The new-file range from the line containing `first` to the one containing `last`."""
    return line_of(AFTER, first), line_of(AFTER, last or first)
ADDED_GUARD = line_of(AFTER, "if not items:", 2)  # the occurrence the change adds, not the one in `first`

_ADD, _IF = line_of(AFTER, "result += item"), line_of(AFTER, "if result < 0")
CASES = {
    # label: (quoted existing_code, expected (start, end))
    "exact": ("    fh = open(path)\n    data = fh.read()", R("fh = open(path)", "data = fh.read()")),
    "diff_markers": ("+    fh = open(path)\n+    data = fh.read()\n+    return data",
                     R("fh = open(path)", "return data")),
    "line_prefixes": (f"{_ADD}|        result += item.price * item.quantity\n{_IF}|    if result < 0:",
                      (_ADD, _IF)),
    "reindented": ("if result < 0:\n    raise ValueError(\"negative total\")", R("if result < 0", "raise ValueError")),
    "inner_spacing": ("result  +=  item.price*item.quantity", (_ADD, _ADD)),
    "trailing_ws_cr": ("    data = fh.read()   \r\n    return data\r", R("data = fh.read()", "return data")),
    "blank_line_added": ("    result = 0\n\n    for item in items:", R("result = 0", "for item in items")),
    "cut_short": ("    for item in items:\n        result += item.price * item.qua",
                  R("for item in items", "result += item")),
    "elided": ("    result = 0\n    ...\n    return result", R("result = 0", "return result")),
    "deleted_code": ("    os.remove(tmp)", None),  # old side: placed where the deletion happened
    "fabricated": ("    shutil.rmtree(tmp, ignore_errors=True)", (0, 0)),
    # Quoted without indentation, it matches `first` too: the added occurrence must win.
    "repeated_line": ("if not items:\n    return None", (ADDED_GUARD, ADDED_GUARD + 1)),
}


def _comments() -> list[dict]:
    return [{"content": f"{label}: a finding.", "existing_code": code, "severity": "low", "category": "bug"}
            for label, (code, _) in CASES.items()]


def test_each_perturbation_lands_on_the_right_lines(tmp_path, fake_api, sdk_env):
    repo = make_repo(tmp_path / "repo")
    write(repo, "store.py", BEFORE)
    commit_all(repo, "initial")
    write(repo, "store.py", AFTER)
    git(repo, "add", "store.py")
    # retry-after-ms: the SDK retries at once instead of backing off for seconds (the failure is the point).
    fake_api.handle(is_filter, lambda body: Fault(status=500, headers={"retry-after-ms": "10"}, times=100))
    fake_api.script("store.py", [Reply([tool_use("code_comment", {"comments": _comments()})])])

    proc = run_cli(repo, "review", "--format", "json", "--filter-mode", "nofilter", env=sdk_env)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    found = {f["message"].split(":")[0]: f for f in report["findings"]}
    # The filter failed on every attempt: every comment is still there (each quotes other lines,
    # so none is a duplicate of another).
    assert set(found) == set(CASES)
    assert report["dropped"].get("review_filter", 0) == 0
    for label, (_, expected) in CASES.items():
        if expected is None:
            continue
        f = found[label]
        assert (f["start_line"], f["end_line"]) == expected, label
        assert f["anchored"] is (expected != (0, 0)), label

    deleted = found["deleted_code"]
    cleanup = line_of(AFTER, "def cleanup")
    assert deleted["anchored"] and deleted["anchor_note"]
    assert cleanup <= deleted["start_line"] <= cleanup + 1
