"""Checks in every way in (issue 59 item 7, DESIGN.md 15 and 20): delegate mode and the MCP server.

Delegate, through the CLI with no key (no request may reach the fake Messages API): `start` gives the host the
applicable checks (the pass's brief, check_verdict with the names as its enum; a check the change does not
touch is not there); the host answers them through `delegate call SESSION --file :checks`; `finish` refuses,
exit 3, while an applicable check has no verdict, and then reports the host's verdict and gates on it. The MCP
server's `review` returns the verdicts: test_mcp_server's review test (its server, no second one).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import forked_cli
import pytest
from fake_api import FakeMessagesAPI
from gitrepo import commit_all, git, make_repo, write

BEFORE = "import os\n\n\ndef total(values):\n    return sum(values)\n"
AFTER = ("import os\n\n\ndef total(values):\n    return sum(values)\n\n\n"
         "def run(expression):\n    value = eval(expression)\n    return value\n")
EVAL_LINE = 9
TESTS_CHECK = "---\npaths: [\"calc.py\"]\nmode: block\nwhen: commit\n---\nEvery new function in calc.py has a test.\n"
DOCS_CHECK = "---\npaths: [\"docs/**\"]\nmode: block\nwhen: commit\n---\nNew settings are documented.\n"
FAIL = {"check": "calc-tests", "verdict": "fail", "reason": "run() is new and no test calls it.",
        "evidence": [{"path": "calc.py", "code": "def run(expression):"}]}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo")
    write(root, "calc.py", BEFORE)
    write(root, ".ocr-hook/checks/calc-tests.md", TESTS_CHECK)
    write(root, ".ocr-hook/checks/docs-settings.md", DOCS_CHECK)
    write(root, ".ocr-hook.yaml", "memory: false\n")
    commit_all(root, "base")
    write(root, "calc.py", AFTER)
    git(root, "add", "calc.py")
    return root


def delegate(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = forked_cli.run(["delegate", *args], cwd=repo, env=env, timeout=120, errors="replace")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_the_host_answers_the_checks_and_finish_refuses_until_it_has(repo: Path, fake_api: FakeMessagesAPI,
                                                                     sdk_env_without_key: dict[str, str]) -> None:
    env = sdk_env_without_key
    started = json.loads(delegate(repo, env, "start").stdout)
    session, checks = started["session"], started["checks"]
    assert checks["file"] == ":checks" and [c["name"] for c in checks["checks"]] == ["calc-tests"]
    assert "Every new function in calc.py has a test." in checks["brief"]
    assert "New settings are documented" not in checks["brief"]  # docs-settings: not applicable, never asked
    tools = {t["name"]: t for t in checks["tools"]}
    assert tools["check_verdict"]["input_schema"]["properties"]["check"]["enum"] == ["calc-tests"]
    assert "code_comment" not in tools and {"file_read", "task_done"} <= set(tools)

    done = delegate(repo, env, "call", session, "--file", "calc.py", "task_done", '{"state": "DONE"}')
    assert done.returncode == 0, done.stderr
    refused = delegate(repo, env, "finish", session, "-q", "--format", "json")
    assert refused.returncode == 3 and refused.stdout == ""
    assert "no verdict for the check(s) calc-tests" in refused.stderr and len(refused.stderr.splitlines()) == 1

    read = delegate(repo, env, "call", session, "--file", ":checks", "file_read",
                    '{"file_path": "calc.py", "start_line": 8, "end_line": 8}')
    assert read.stdout == "8|def run(expression):\n"
    said = delegate(repo, env, "call", session, "--file", ":checks", "check_verdict", json.dumps(FAIL))
    assert said.stdout == "Recorded fail for calc-tests. Every check has a verdict: call task_done.\n"

    finished = delegate(repo, env, "finish", session, "-q", "--format", "json")
    assert finished.returncode == 1, finished.stderr  # the failed block check blocks
    report = json.loads(finished.stdout)
    [verdict] = [c for c in report["checks"] if c["name"] == "calc-tests"]
    assert (verdict["verdict"], verdict["mode"], verdict["reason"]) == ("fail", "block", FAIL["reason"])
    [evidence] = verdict["evidence"]
    assert (evidence["path"], evidence["start_line"], evidence["anchored"]) == ("calc.py", EVAL_LINE - 1, True)
    assert {c["name"]: c["verdict"] for c in report["checks"]}["docs-settings"] == "not_applicable"
    assert report["usage"]["requests"] == 0 and fake_api.requests == []
