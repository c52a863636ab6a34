"""Anchoring end to end: the model's quotes, perturbed as models perturb them, land on the right
lines of the JSON report; what cannot be placed is kept at line 0; a failing filter keeps all."""

from __future__ import annotations

import json

from agent_support import is_filter
from fake_api import Fault, Reply, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write

BEFORE = """\
import os


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


def load(path):
    fh = open(path)
    data = fh.read()
    return data


def total(items):
    result = 0
    for item in items:
        result += item.price * item.quantity
    if result < 0:
        raise ValueError("negative total")
    return result


def cleanup(tmp):
    return None
"""
# new-file lines: 5 fh = open(path) · 6 data = fh.read() · 7 return data · 13 result += … ·
# 14 if result < 0: · 15 raise · 16 return result (also line 2 of `total`, repeated at 20 `return None`)

CASES = {
    # label: (quoted existing_code, expected (start, end))
    "exact": ("    fh = open(path)\n    data = fh.read()", (5, 6)),
    "diff_markers": ("+    fh = open(path)\n+    data = fh.read()\n+    return data", (5, 7)),
    "line_prefixes": ("13|        result += item.price * item.quantity\n14|    if result < 0:", (13, 14)),
    "reindented": ("if result < 0:\n    raise ValueError(\"negative total\")", (14, 15)),
    "inner_spacing": ("result  +=  item.price*item.quantity", None),  # spacing inside tokens differs: see below
    "trailing_ws_cr": ("    data = fh.read()   \r\n    return data\r", (6, 7)),
    "blank_line_added": ("    result = 0\n\n    for item in items:", (11, 12)),
    "cut_short": ("    for item in items:\n        result += item.price * item.qua", (12, 13)),
    "elided": ("    result = 0\n    ...\n    return result", (11, 16)),
    "deleted_code": ("    os.remove(tmp)", None),  # old side: placed where the deletion happened
    "fabricated": ("    shutil.rmtree(tmp, ignore_errors=True)", (0, 0)),
    "repeated_line": ("    return result", (16, 16)),  # the only `return result` in the change is at 16
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
    fake_api.handle(is_filter, lambda body: Fault(status=500, times=100))
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

    # Spacing inside an expression is normalised away only where whitespace separates tokens.
    spaced = found["inner_spacing"]
    assert (spaced["start_line"], spaced["anchored"]) in {(13, True), (0, False)}
    deleted = found["deleted_code"]
    assert deleted["anchored"] and deleted["anchor_note"] and 19 <= deleted["start_line"] <= 20
