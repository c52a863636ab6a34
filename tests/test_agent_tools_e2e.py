"""Every review tool through the whole loop: real SDK, fake API over HTTP, a real scratch repository.

Asserts on the tool_result blocks the loop actually sent back: found, not found, over the limit, bad
input, and attempts to read outside the reviewed snapshot.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from agent_support import main_opening, review_job, staged_repo
from fake_api import FakeMessagesAPI, RecordedRequest, Reply, task_done, tool_use
from gitrepo import git, write

from ocr_hook.agent import review_files
from ocr_hook.agent.tools import FILE_NOT_FOUND

OUTSIDE_SECRET = "OUTSIDE-THE-REPO-7731"
UNSTAGED_MARK = "UNSTAGED-EDIT-5512"
TOKEN = "ghp_" + "Zy9xW8vU7tS6rQ5pO4nM3lK2jI1hG0fE9dC8"
PATH = "src/service.py"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    outside = tmp_path / "outside.txt"
    outside.write_text(f"{OUTSIDE_SECRET}\n")
    before = {
        PATH: "def handler(request):\n    return request\n",
        "src/helpers.py": "def helper():\n    return 1\n",
        "big.txt": "".join(f"big line {n}\n" for n in range(1, 601)),
        "hits.txt": "".join("needle here\n" for _ in range(150)),
        "docs/usage.md": "Run it with -v for more output.\n",
        **{f"gen/item_{n:03d}.py": "x = 1\n" for n in range(120)},
    }
    after: dict[str, str | None] = {
        PATH: "import subprocess\n\n\ndef handler(request):\n    return subprocess.run(request.cmd, shell=True)\n",
        "src/helpers.py": "def helper():\n    return 2\n",
        "src/config.py": f"GITHUB_TOKEN = \"{TOKEN}\"\n",
    }
    root = staged_repo(tmp_path / "repo", before, after)
    os.symlink(outside, root / "link_out")
    git(root, "add", "link_out")  # a symlink in the index, pointing outside the repository
    write(root, "src/helpers.py", f"# {UNSTAGED_MARK}\n")  # never part of the reviewed snapshot
    return root


def results_of(req: RecordedRequest) -> list[tuple[str, bool]]:
    blocks = req.body["messages"][-1]["content"]
    return [(b["content"], bool(b.get("is_error"))) for b in blocks if b["type"] == "tool_result"]


def turn(*calls: tuple[str, Any]) -> Reply:
    return Reply([tool_use(name, tool_input) for name, tool_input in calls])


def test_every_tool_through_the_loop(repo: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    fake_api.script(main_opening(PATH), [
        turn(("file_read", {"file_path": PATH, "start_line": 4, "end_line": 5}),
             ("file_read", {"file_path": "nope/missing.py"}),
             ("file_read", {"file_path": "big.txt", "end_line": 600}),
             ("file_read", {"file_path": PATH, "start_line": 0}),
             ("file_read", {"file_path": "src/helpers.py"})),
        turn(("file_read_diff", {"path_array": ["src/helpers.py", "not/changed.py"]}),
             ("file_find", {"query_name": "zzz_nothing"}),
             ("file_find", {"query_name": "item_"}),
             ("file_find", {"query_name": "helpers", "case_sensitive": True, "extra": 1})),
        turn(("code_search", {"search_text": "-v"}),
             ("code_search", {"search_text": "needle"}),
             ("code_search", {"search_text": "def (handler|helper)", "use_perl_regexp": True,
                              "file_patterns": ["src/", ":(exclude)src/helpers.py"]}),
             ("code_search", {"search_text": "x", "file_patterns": ["../outside"]})),
        turn(("file_read", {"file_path": "../outside.txt"}),
             ("file_read", {"file_path": str(repo.parent / "outside.txt")}),
             ("file_read", {"file_path": ".git/config"}),
             ("file_read", {"file_path": "link_out"}),
             ("file_read", {"file_path": "src/config.py"})),
        task_done(),
    ])
    with review_job(repo, sdk_env) as job:
        result = review_files(job)
    requests = fake_api.requests_for(main_opening(PATH))
    assert len(requests) == 5
    assert next(f for f in result.files if f.path == PATH).state == "reviewed"

    found, missing, over, bad, staged_only = results_of(requests[1])
    assert found == ("4|def handler(request):\n5|    return subprocess.run(request.cmd, shell=True)", False)
    assert missing[1] and "was not found" in missing[0] and '"query_name": "missing.py"' in missing[0]
    over_lines = over[0].splitlines()
    assert over_lines[0] == "1|big line 1" and over_lines[499] == "500|big line 500"
    assert "at most 500 lines" in over_lines[500] and not over[1]
    assert bad[1] and "`start_line`" in bad[0] and "A correct call looks like this" in bad[0]
    assert staged_only == ("1|def helper():\n2|    return 2", False)  # the index, not the work tree

    diff, none_found, capped, wrong_field = results_of(requests[2])
    assert "+    return 2" in diff[0] and "not/changed.py" not in diff[0] and not diff[1]
    assert none_found == (FILE_NOT_FOUND, False)
    capped_lines = capped[0].splitlines()
    assert len(capped_lines) == 101 and "100 of 120" in capped_lines[-1]
    assert wrong_field[1] and "`extra`: unknown field" in wrong_field[0]

    dash, many, perl, escape = results_of(requests[3])
    assert dash == ("docs/usage.md:1:Run it with -v for more output.", False)
    assert "Only the first 100 matches are shown for: hits.txt" in many[0]
    assert sum(1 for line in many[0].splitlines() if line.startswith("hits.txt:")) == 100
    assert perl == ("src/service.py:4:def handler(request):", False)
    assert escape[1]

    outside_rel, outside_abs, git_config, link, secret = results_of(requests[4])
    for content, is_error in (outside_rel, outside_abs, git_config, link):
        assert is_error and OUTSIDE_SECRET not in content and "[core]" not in content
    assert TOKEN not in secret[0] and "[MASKED-SECRET]" in secret[0]
    sent = b"".join(r.raw for r in fake_api.requests).decode()
    assert OUTSIDE_SECRET not in sent and UNSTAGED_MARK not in sent and TOKEN not in sent
    assert any("secret" in note for note in result.notes)
