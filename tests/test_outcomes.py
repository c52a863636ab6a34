"""`ocr-hook outcomes` (DESIGN.md 18): what share of the findings people acted on.

The counting is pure (ocr_hook.tally.count) and checked on a scripted history whose figures are worked out by
hand; the whole path runs through the real CLI: reviews record their history in the cache directory, a fix
is resolved by review memory, a finding is dismissed with `ocr-hook dismiss`, and `outcomes` counts both.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from e2e_support import assert_clean_stderr
from fake_api import FakeMessagesAPI, Reply, task_done, text, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write

from ocr_hook.tally.count import tally, track
from ocr_hook.tally.render import render

DAY = 86_400.0


def _f(fp: str, path: str = "app/a.py", severity: str = "high", category: str = "bug", **more: str) -> dict:
    return {"fp": fp, "path": path, "severity": severity, "category": category, "effort": "quick", **more}


def _entry(at: float, findings: list[dict], resolved: list[dict] | None = None, *, source: str = "commit",
           change: str = "branch:main", request: str = "", complete: list[str] | None = None,
           feedback: dict | None = None) -> dict[str, Any]:
    out = {"at": at, "source": source, "change": change, "request": request, "model": "claude-x",
           "findings": findings, "resolved": resolved or [], "complete": complete or []}
    if feedback:
        out["feedback"] = feedback
    return out


HISTORY = [
    # Before the period: raised and never counted in it, whatever happens later.
    _entry(1 * DAY, [_f("old")]),
    # The period starts at day 10.
    _entry(10 * DAY, [_f("a"), _f("b", severity="low", category="style"), _f("c", severity="low", category="style"),
                      _f("d", path="web/x.js", severity="medium"), _f("old")]),
    # a fixed (memory resolved it); b dismissed in the file; c dismissed on the forge by a maintainer.
    _entry(11 * DAY, [_f("b", severity="low", category="style", dismissed="dismissals file", by="ann"),
                      _f("c", severity="low", category="style", dismissed="forge", by="bob")],
           [_f("a")]),
    # A pull request in CI without memory: e raised, then a complete review of its file no longer raises it.
    _entry(12 * DAY, [_f("e", path="svc/s.py", severity="critical", category="security")], source="ci",
           change="branch:feature", request="7", complete=["svc/s.py"],
           feedback={"e": {"thumbs_up": 2, "thumbs_down": 1, "replies": 1}}),
    _entry(13 * DAY, [], source="ci", change="branch:feature", request="7", complete=["svc/s.py"]),
    # Another change's complete review of web/x.js says nothing about d: d stays open.
    _entry(14 * DAY, [], source="ci", change="branch:other", request="8", complete=["web/x.js"]),
]


def test_the_history_is_counted_as_worked_out_by_hand() -> None:
    tracked, reviews = track(HISTORY, since=10 * DAY)
    states = {t.fp: (t.state, t.where, t.by) for t in tracked}
    assert states == {"a": ("fixed", "", ""), "b": ("dismissed", "dismissals file", "ann"),
                      "c": ("dismissed", "forge", "bob"), "d": ("open", "", ""), "e": ("fixed", "", "")}
    t = tally(tracked, reviews)
    assert reviews == 5
    assert t.total.as_dict() == {"raised": 5, "fixed": 2, "dismissed": 2, "open": 1, "addressed_rate": 0.8,
                                 "fixed_rate": 0.4}
    assert t.by["severity"]["low"].as_dict()["dismissed"] == 2
    assert t.by["path"]["web"].open == 1 and t.by["path"]["svc"].fixed == 1
    assert t.dismissed_by == {"ann (dismissals file)": 1, "bob (forge)": 1}
    assert (t.thumbs_up, t.thumbs_down, t.replies) == (2, 1, 1)
    # Both style findings were dismissed: a candidate rule, shown and never applied.
    [candidate] = t.candidates
    assert (candidate.paths, candidate.category, candidate.dismissed, candidate.raised) == ("", "style", 2, 2)
    assert "ignore_categories: [style]" in candidate.rule()


def test_a_finding_raised_again_after_its_fix_is_open_and_filters_hold() -> None:
    history = [*HISTORY, _entry(15 * DAY, [_f("a")])]
    tracked, _ = track(history, since=10 * DAY)
    assert {t.fp: t.state for t in tracked}["a"] == "open"
    only_pr, reviews = track(HISTORY, requests=["7"])
    assert [t.fp for t in only_pr] == ["e"] and reviews == 2
    commit_only, _ = track(HISTORY, since=10 * DAY, sources=["commit"])
    assert sorted(t.fp for t in commit_only) == ["a", "b", "c", "d"]
    before, _ = track(HISTORY, until=5 * DAY)
    assert [t.fp for t in before] == ["old"]


def test_every_format_renders_the_same_figures() -> None:
    t = tally(*track(HISTORY, since=10 * DAY))
    doc = json.loads(render("json", t, "p"))
    assert doc["total"]["addressed_rate"] == 0.8 and doc["candidate_rules"][0]["category"] == "style"
    shown = render("text", t, "p")
    assert "5 finding(s) raised in 5 review(s): 2 fixed, 2 dismissed, 1 open; addressed 80% (fixed 40%)" in shown
    svg = ET.fromstring(render("svg", t, "p"))
    ns = "{http://www.w3.org/2000/svg}"
    bars = [r.find(f"{ns}title").text for r in svg.iter(f"{ns}rect") if r.find(f"{ns}title") is not None]
    assert bars[:3] == ["fixed: 2", "dismissed: 2", "open: 1"]  # the row of all findings, stacked in that order
    assert render("html", t, "p").startswith("<!doctype html>")


# ---------------------------------------------------------------------------------------- through the CLI

PATH = "shop.py"
HIGH = "return price - price * pct / 10"
LOW = 'return "Item: " + name'


def _shop(version: int, fixed: bool = False) -> str:
    discount = "return price - price * pct / 100" if fixed else HIGH
    return f"# version {version}\ndef discount(price, pct):\n    {discount}\n\n\ndef label(name):\n    {LOW}\n"


def _comment(code: str, severity: str, category: str) -> dict[str, str]:
    return {"content": f"A {severity} problem", "existing_code": code, "severity": severity, "category": category}


def test_reviews_record_their_history_and_outcomes_counts_a_fix_and_a_dismissal(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    from agent_support import is_filter

    fake_api.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
    repo = make_repo(tmp_path / "repo")
    write(repo, PATH, "def discount(price, pct):\n    return price\n")
    commit_all(repo, "initial")
    env = {**sdk_env, "OCR_HOOK_CACHE_DIR": str(tmp_path / "cache")}

    def review(version: int, fixed: bool, turns: list) -> dict[str, Any]:
        write(repo, PATH, _shop(version, fixed))
        git(repo, "add", PATH)
        fake_api.script(f"+# version {version}", turns)
        proc = run_cli(repo, "review", "--format", "json", env=env)
        assert_clean_stderr(proc)
        return json.loads(proc.stdout)

    first = review(1, False, [Reply([tool_use("code_comment", {"comments": [
        _comment(HIGH, "high", "bug"), _comment(LOW, "low", "style")]})]), task_done()])
    assert len(first["findings"]) == 2
    low = next(f["fingerprint"] for f in first["findings"] if f["severity"] == "low")
    second = review(2, True, [task_done()])
    assert [r["severity"] for r in second["resolved"]] == ["high"]
    git(repo, "config", "user.email", "ann@example.com")  # who dismisses, as `dismiss` records it
    proc = run_cli(repo, "dismiss", low[:8], "--reason", "labels are built once", env=env)
    assert proc.returncode == 0, proc.stderr
    third = run_cli(repo, "review", "--format", "json", env=env)
    assert [f["suppressed"] for f in json.loads(third.stdout)["findings"]] == ["dismissed"]

    out = run_cli(repo, "outcomes", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    # The same review again (a hook run on an unchanged index, answered from the cache) is no new event.
    assert run_cli(repo, "review", "--format", "json", env=env).returncode == 0
    assert json.loads(run_cli(repo, "outcomes", "--format", "json", env=env).stdout)["reviews"] == doc["reviews"] == 3
    assert doc["total"] == {"raised": 2, "fixed": 1, "dismissed": 1, "open": 0, "addressed_rate": 1.0,
                            "fixed_rate": 0.5}
    assert doc["by"]["severity"]["high"]["fixed"] == 1 and doc["by"]["severity"]["low"]["dismissed"] == 1
    assert doc["dismissed_by"] == {"ann@example.com (dismissals file)": 1}
    text_out = run_cli(repo, "outcomes", env=env)
    assert "addressed 100% (fixed 50%)" in text_out.stdout
    chart = tmp_path / "outcomes.svg"
    svg = run_cli(repo, "outcomes", "--format", "svg", "-o", str(chart), env=env)
    assert svg.returncode == 0 and ET.parse(chart).getroot().tag == "{http://www.w3.org/2000/svg}svg"


def test_a_bad_period_is_one_line_and_exit_2(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "a.py", "x = 1\n")
    commit_all(repo, "initial")
    proc = run_cli(repo, "outcomes", "--since", "last tuesday", env=sdk_env)
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert "--since 'last tuesday'" in line and "30d" in line
    empty = run_cli(repo, "outcomes", env={**sdk_env, "OCR_HOOK_CACHE_DIR": str(tmp_path / "c")})
    assert empty.returncode == 0 and "0 finding(s) raised" in empty.stdout
