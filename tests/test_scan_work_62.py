"""Issue 62 item 8, the work a review does a file, through the real CLI on one staged change of a real repository
(the CPU figure itself is bench/bench_scale.py's: these pin down two of the causes it found):

- a new file went out twice in its first main-loop request: as its diff (every line added) and as its numbered
  lines. A new file shown whole is now sent once, numbered, and a changed file keeps its diff; preview's estimate
  follows;
- each file git called binary was read again by a git process of its own to check its content (1,344 processes on
  Django's tree): the heads of all of them now come from one `git cat-file --batch`, and a file marked binary by a
  `.gitattributes` of the change but not binary by content is still reviewed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import TEST_API_KEY
from fake_api import FakeMessagesAPI, task_done
from gitrepo import commit_all, git, logging_git, make_repo, run_cli, subcommands, write

PNG = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256))
NEW = "def shiny(x):\n    return x * 2\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("work")
    repo = make_repo(base / "repo")
    write(repo, "old.py", "def kept(x):\n    return x\n")
    commit_all(repo, "base")
    write(repo, "old.py", "def kept(x):\n    return x + 1\n")
    write(repo, "new.py", NEW)
    write(repo, "disguised.py", "def hidden(x):\n    return eval(x)\n")
    write(repo, ".gitattributes", "disguised.py binary\n")
    for i in range(12):
        write(repo, f"img/i{i:02}.png", PNG + bytes([i]))
    git(repo, "add", "-A")
    with FakeMessagesAPI() as api:
        api.script("Review the change", [task_done()])
        home = base / "home"
        env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": TEST_API_KEY, "ANTHROPIC_AUTH_TOKEN": "",
               "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), "NO_PROXY": "*", "no_proxy": "*"}
        logged, log = logging_git(base, env)
        proc = run_cli(repo, "review", "--format", "json", "--no-review-filter", "--no-cache", env=logged)
        firsts = {r.first_user_text.split("`")[1]: r.first_user_text for r in api.requests
                  if r.path.endswith("/messages") and r.first_user_text.startswith("Review the change")}
        preview = run_cli(repo, "preview", "--format", "json", env=env)
    return {"proc": proc, "report": json.loads(proc.stdout or "{}"), "firsts": firsts,
            "git": subcommands(log), "preview": json.loads(preview.stdout or "{}"), "repo": repo}


def test_a_new_file_goes_out_once_numbered(run: dict[str, Any]) -> None:
    assert run["proc"].returncode == 0, run["proc"].stderr
    first = run["firsts"]["new.py"]
    assert "1|def shiny(x):\n2|    return x * 2" in first
    assert "+def shiny(x):" not in first and "```diff" not in first
    assert "`new.py` is a new file, so every one of its lines is added" in first


def test_a_changed_file_keeps_its_diff(run: dict[str, Any]) -> None:
    first = run["firsts"]["old.py"]
    assert "```diff" in first and "-    return x\n+    return x + 1" in first and "2|    return x + 1" in first


def test_the_heads_of_binaries_come_from_one_git_process(run: dict[str, Any]) -> None:
    # The sizes, the heads, the snapshot's reader (twice): before, one `git cat-file blob` more for each of the 12
    # images and the disguised file, 16 in all.
    assert run["git"].count("cat-file") <= 5, " ".join(run["git"])
    assert sorted(run["report"]["coverage"]["reviewed"]) == [".gitattributes", "disguised.py", "new.py", "old.py"]
    skipped = {f["path"] for f in run["report"]["coverage"]["skipped"]}
    assert {f"img/i{i:02}.png" for i in range(12)} <= skipped


def test_preview_counts_a_short_new_file_once(run: dict[str, Any]) -> None:
    from ocr_hook.budget.tokens import estimate_tokens
    from ocr_hook.commands.preview import SYSTEM_ALLOWANCE, TURN_FACTORS

    repo = Path(run["repo"])
    reviewed = [f for f in run["preview"]["files"] if f["action"] == "review"]
    assert {"new.py", "old.py", "disguised.py"} <= {f["path"] for f in reviewed}
    expected = 0
    for f in reviewed:
        text = (repo / f["path"]).read_text()
        # Only the changed file's diff is counted: the new ones are sent once, numbered.
        patch = estimate_tokens(git(repo, "diff", "--cached", "--", f["path"])) if f["status"] != "added" else 0
        expected += (SYSTEM_ALLOWANCE + estimate_tokens(text) + patch) * TURN_FACTORS[f["effort"]]
    assert run["preview"]["estimate"]["input_tokens"] == pytest.approx(expected, rel=0.01)
