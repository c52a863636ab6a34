"""Issue 58 item 26: `ocr-hook outcomes` on the history it will really meet.

* Linear: the counting's work is measured (accesses to the entries, not a clock) on 2,000 and 20,000 entries,
  the documented cap; the code before walked every finding so far for each entry (193 s at the cap).
* Through the real CLI, on a history in the cache directory: one wrongly typed entry is skipped with a note
  (it was exit 4); a dismissal withdrawn (raised again without it, in the same pull request) is not counted
  as dismissed nor makes a candidate rule; a path with control characters and a `::error::` workflow command
  reaches no output raw, and the SVG stays valid XML.
* A real review in a `pull_request_target` job records its pull request (GITHUB_REF names the base branch
  there), and its history is the repository's: a fresh clone elsewhere counts it (it was keyed by the
  checkout's absolute path).
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from fake_api import FakeMessagesAPI, Reply, task_done, text, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write

from ocr_hook.store import history
from ocr_hook.store.memory import repository_id
from ocr_hook.tally.count import track

# ------------------------------------------------------------------------------------------------ linear


class Counted(dict):  # type: ignore[type-arg]
    """An entry that counts every field read from it: the counting's work, whatever the machine's speed."""

    reads = 0

    def get(self, key: Any, default: Any = None) -> Any:
        Counted.reads += 1
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        Counted.reads += 1
        return super().__getitem__(key)


def _reads_for(n: int) -> int:
    """Reads to count `n` entries of the shape that was quadratic: each its own change, one finding in the same
    file, each a complete review of that file (so every open finding so far was compared with it)."""
    entries = [Counted(at=float(i), source="commit", change=f"branch:b{i}", request="", model="m",
                       findings=[{"fp": f"fp{i}", "path": "app.py", "severity": "high", "category": "bug"}],
                       resolved=[], complete=["app.py"]) for i in range(n)]
    Counted.reads = 0
    tracked, reviews = track(entries)
    assert reviews == n and len(tracked) == n and all(t.state == "open" for t in tracked)
    return Counted.reads


def test_counting_is_linear_in_the_history() -> None:
    small, big = _reads_for(500), _reads_for(5_000)  # (the cap, 20,000, is a quarter of a second more)
    assert big <= 11 * small, (small, big)  # ten times the entries, about ten times the work (quadratic: 100)


# ----------------------------------------------------------------------------------- through the CLI

HOSTILE_PATH = "src/\x1b[2J\x07evil\n::error::pwned.py"


def _f(fp: str, path: str = "app/a.py", category: str = "style", **more: str) -> dict[str, str]:
    return {"fp": fp, "path": path, "severity": "low", "category": category, "effort": "quick", **more}


def _entry(at: float, findings: list[dict[str, str]], request: str = "5", **more: Any) -> dict[str, Any]:
    return {"at": at, "source": "ci", "change": "branch:feature", "request": request, "model": "claude-x",
            "findings": findings, "resolved": [], "complete": [], **more}


@pytest.fixture(scope="module")
def counted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A repository whose history holds the hostile and the broken entries; `outcomes` run once per format."""
    tmp = tmp_path_factory.mktemp("outcomes-history")
    repo = make_repo(tmp / "repo")
    write(repo, "a.py", "x = 1\n")
    commit_all(repo, "initial")
    cache = tmp / "cache"
    key = repository_id(repo)  # what the history was kept under before: the code before reads it too
    for entry in (
        # Two style findings dismissed on the forge; the second one's thread unresolved again: raised again,
        # undismissed, by a later review of the same pull request.
        _entry(1000, [_f("s1", dismissed="forge", by="ann"), _f("s2", dismissed="forge", by="ann")]),
        _entry(2000, [_f("s1", dismissed="forge", by="ann"), _f("s2")]),
        _entry(3000, [_f("h1", path=HOSTILE_PATH, category="::warning::x\x1b]0;title\x07", by="\x1b[31mbob"),
                      _f("h2", category="##[error]legacy")]),
        {**_entry(4000, [_f("bad")]), "complete": 5},  # one wrongly typed entry
    ):
        assert history.record(cache, key, entry) is None
    env = {"OCR_HOOK_CACHE_DIR": str(cache)}
    return {fmt: run_cli(repo, "outcomes", "--since", "all", "--format", fmt, env=env)
            for fmt in ("text", "json", "svg", "html")}


def test_a_wrongly_typed_entry_is_skipped_with_a_note(counted: dict[str, Any]) -> None:
    for proc in counted.values():
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.startswith("ocr-hook: note: 1 history entry skipped"), proc.stderr
        assert "Traceback" not in proc.stderr
    assert json.loads(counted["json"].stdout)["reviews"] == 3


def test_a_withdrawn_dismissal_is_open_and_drives_no_candidate_rule(counted: dict[str, Any]) -> None:
    doc = json.loads(counted["json"].stdout)
    assert doc["total"]["raised"] == 4 and doc["total"]["dismissed"] == 1 and doc["total"]["open"] == 3, doc["total"]
    assert doc["dismissed_by"] == {"ann (forge)": 1}
    assert doc["candidate_rules"] == []  # one of two style findings still dismissed: not "mostly dismissed"


def test_no_control_character_or_workflow_command_reaches_an_output_raw(counted: dict[str, Any]) -> None:
    for fmt in ("text", "svg", "html", "json"):
        out = counted[fmt].stdout
        assert not any(ch in out for ch in "\x1b\x07"), fmt
        assert not any(line.lstrip().startswith("::") for line in out.splitlines()) and "##[" not in out, fmt
    assert "\\x1b" in counted["text"].stdout  # shown, escaped
    root = ET.fromstring(counted["svg"].stdout)  # the code before wrote a raw ESC: not well-formed XML
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    # JSON keeps the real text, escaped as JSON escapes it.
    doc = json.loads(counted["json"].stdout)
    assert "::warning::x\x1b]0;title\x07" in doc["by"]["category"] and "##[error]legacy" in doc["by"]["category"]


# ------------------------------------------------------------- a pull_request_target job, another checkout


def test_a_pull_request_target_review_records_its_request_under_the_repository(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    from agent_support import is_filter

    fake_api.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
    origin = make_repo(tmp_path / "origin")
    write(origin, "shop.py", "def total(items):\n    return sum(items)\n")
    commit_all(origin, "initial")
    job = tmp_path / "runner-1" / "work"
    git(tmp_path, "clone", "-q", str(origin), str(job))  # then named as a forge's URL (no network is used)
    git(job, "remote", "set-url", "origin", "https://user:secret-token@example.invalid/acme/shop.git")
    git(job, "checkout", "-q", "-b", "feature")
    write(job, "shop.py", "def total(items):\n    return eval(items)\n")
    commit_all(job, "feature")
    git(job, "update-ref", "refs/heads/main", git(job, "rev-parse", "origin/main").strip())
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "number": 7, "pull_request": {"number": 7}}))
    cache = tmp_path / "cache"
    env = {**sdk_env, "OCR_HOOK_CACHE_DIR": str(cache), "GITHUB_ACTIONS": "true", "CI": "true",
           "GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_EVENT_PATH": str(event),
           "GITHUB_REF": "refs/heads/main", "GITHUB_BASE_REF": "main", "GITHUB_HEAD_REF": "feature"}
    fake_api.script("eval(items)", [Reply([tool_use("code_comment", {"comments": [
        {"content": "eval() runs its input", "existing_code": "return eval(items)", "severity": "critical",
         "category": "security"}]})]), task_done()])
    proc = run_cli(job, "review", "--base", "main", "--format", "json", env=env)
    assert proc.returncode == 1, proc.stderr
    stored = [p.read_text() for p in (cache / "history").rglob("*") if p.is_file()]
    assert stored and not any("secret-token" in s for s in stored)  # the remote's credential is never kept
    # Another checkout of the same repository, elsewhere (the next job's workspace, a developer's clone).
    other = tmp_path / "runner-2" / "elsewhere"
    git(tmp_path, "clone", "-q", str(origin), str(other))
    git(other, "remote", "set-url", "origin", "git@example.invalid:acme/shop")
    out = run_cli(other, "outcomes", "--pr", "7", "--format", "json",
                  env={"OCR_HOOK_CACHE_DIR": str(cache)})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["total"]["raised"] == 1, out.stdout
    assert os.path.isdir(job)  # (the first checkout is still there: the key is not its path, not its absence)
