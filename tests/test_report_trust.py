"""Issue 41, items 1 and 7: which report `publish` trusts, through the real CLI (`ocr-hook review` in a real
repository, then `ocr-hook publish` against the fake GitLab API). Every report here is one a pull request
can write by hand; none of them is reviewed, so no Messages API is needed.

A pull request controls every file it commits: an `ocr.json` saying PASSED, a link to /dev/zero, a
`.ocr-hook.yaml` that makes the review step stop with exit 2 before it writes anything. The publish step
runs whatever the review's exit code (the recipes' `always()`), so `review` must leave no report but its
own where it was told to write, and `publish` must take only a report that this run wrote of this head.
Each test failed on the code before (the old report stayed, publish posted PASSED or read /dev/zero).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_gitlab import FakeGitLab
from gitrepo import commit_all, git, make_repo, write
from publish_support import ocr_hook, publish_cli

TOKEN = "glpat-fakeTokenValue0123456789abcd"
OUTPUTS = {"--json-output": "ocr.json", "--sarif-output": "ocr.sarif", "--gitlab-output": "ocr-quality.json"}


class Repo:
    """A pull request's CI checkout: `main`, and the feature branch checked out."""

    def __init__(self, root: Path) -> None:
        self.repo = make_repo(root / "repo")
        write(self.repo, "app.py", "def f(x):\n    return x + 1\n")
        self.base = commit_all(self.repo, "base")
        git(self.repo, "checkout", "-q", "-b", "feature")
        write(self.repo, "app.py", "def f(x):\n    return x - 1\n")
        self.head = commit_all(self.repo, "feature")

    def report(self, path: Path, **fields: Any) -> Path:
        """A passing report of the head, as anyone can write one."""
        data = {"tool": {"name": "ocr-hook"}, "status": "complete", "exit_code": 0, "verdict": "PASSED",
                "scope": f"main...HEAD (merge base {self.base[:12]}..{self.head[:12]})", "findings": [], **fields}
        path.write_text(json.dumps(data), encoding="utf-8")
        return path


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    return Repo(tmp_path_factory.mktemp("trust"))


@pytest.fixture(scope="module")
def hostile(case: Repo) -> tuple[Path, str]:
    """The pull request commits a passing ocr.json of its own head's parent (stale SARIF and Code Quality
    files too) and a `.ocr-hook.yaml` the review would refuse, were it read (a review of a range reads the
    settings at the trusted revision: DESIGN.md 5); its head."""
    clone = case.repo
    case.report(clone / "ocr.json")
    write(clone, "ocr.sarif", '{"runs": []}')
    write(clone, "ocr-quality.json", "[]")
    write(clone, ".ocr-hook.yaml", "no_such_setting: 1\n")
    return clone, commit_all(clone, "the pull request's own verdict")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeGitLab]:
    with FakeGitLab() as fake:
        yield fake


@pytest.fixture
def gitlab(server: FakeGitLab) -> Iterator[FakeGitLab]:
    yield server.fresh(TOKEN)
    server.assert_conforms()  # off-contract traffic fails the test that sent it


def ci(gitlab: FakeGitLab) -> dict[str, str]:
    return {"GITLAB_CI": "true", "CI_API_V4_URL": gitlab.api, "CI_PROJECT_ID": "42", "CI_PROJECT_PATH": "group/app",
            "CI_MERGE_REQUEST_IID": "3", "GITLAB_TOKEN": TOKEN}


def refused(proc: Any, code: int) -> str:
    """The one line a refusal prints, with its exit code; nothing on standard output, no traceback."""
    assert proc.returncode == code, proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ocr-hook: "), proc.stderr
    return lines[0]


def test_a_review_that_stops_early_leaves_no_old_report(hostile: tuple[Path, str], gitlab: FakeGitLab,
                                                        case: Repo) -> None:
    clone, head = hostile
    outputs = [arg for pair in OUTPUTS.items() for arg in pair]
    broken = {"OCR_HOOK_NO_SUCH_SETTING": "1"}  # the run stops on the job's own settings, before any review
    proc = ocr_hook(clone, broken, "review", "--base", "main", "-q", *outputs)
    assert proc.returncode == 2 and "no_such_setting" in proc.stderr, proc.stderr
    assert [name for name in OUTPUTS.values() if os.path.lexists(clone / name)] == []
    gitlab.add_mr(3, head, case.base, [])
    # The recipe's publish step then finds no report of its own: exit 2, one line, nothing sent to GitLab.
    line = refused(publish_cli(clone, ci(gitlab), "--from", "ocr.json"), 2)
    assert "ocr.json: git tracks this file" in line
    git(clone, "checkout", "--", *OUTPUTS.values())  # the clone as it was, for the next tests
    # A report an earlier job left in a reused workspace (not tracked) goes the same way.
    leftover = clone / "leftover.json"
    leftover.write_text((clone / "ocr.json").read_text(encoding="utf-8"), encoding="utf-8")
    assert ocr_hook(clone, {}, "review", "--base", "main", "-q", "--json-output", "leftover.json").returncode == 2
    assert not leftover.exists()
    assert "leftover.json: cannot read it" in refused(publish_cli(clone, ci(gitlab), "--from", "leftover.json"), 2)
    assert gitlab.requests == []


def test_a_report_git_tracks_is_refused(hostile: tuple[Path, str], gitlab: FakeGitLab, case: Repo) -> None:
    clone, head = hostile
    gitlab.add_mr(3, head, case.base, [])
    line = refused(publish_cli(clone, ci(gitlab), "--from", "ocr.json"), 2)
    assert line == ("ocr-hook: error: publish: ocr.json: git tracks this file, so the change itself can write it; give "
                    "the review's --json-output a path no commit holds")
    sub = clone / "sub"
    sub.mkdir(exist_ok=True)  # the same file named from a subdirectory of the checkout
    assert "git tracks this file" in refused(publish_cli(sub, ci(gitlab), "--from", "../ocr.json"), 2)
    assert gitlab.requests == []


def test_a_link_a_fifo_or_a_huge_file_is_never_read(case: Repo, gitlab: FakeGitLab, tmp_path: Path) -> None:
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    (tmp_path / "report-link.json").symlink_to(case.report(tmp_path / "report.json"))
    os.mkfifo(tmp_path / "fifo.json")  # no writer ever comes: an open() that waits for one hangs
    with open(tmp_path / "huge.json", "wb") as fh:
        fh.truncate(32 * 1024 * 1024 + 1)  # sparse: costs no disk
    expected = {"zero.json": "it is a symbolic link", "report-link.json": "it is a symbolic link",
                "fifo.json": "it is not a regular file", "huge.json": "it is larger than 33554432 bytes"}
    for name, why in expected.items():
        line = refused(publish_cli(case.repo, ci(gitlab), "--from", str(tmp_path / name)), 2)
        assert line.endswith(f"{name}: not read: {why}"), line
    assert gitlab.requests == []


def test_a_report_that_names_no_reviewed_commit_publishes_nothing(case: Repo, gitlab: FakeGitLab,
                                                                  tmp_path: Path) -> None:
    gitlab.add_mr(3, case.head, case.base, [])
    staged = case.report(tmp_path / "staged.json", scope="staged changes")
    line = refused(publish_cli(case.repo, ci(gitlab), "--from", str(staged)), 0)
    assert line.startswith("ocr-hook: publish: nothing published on group/app!3: the report names no reviewed "
                           "commit"), line
    assert gitlab.writes() == []


MALFORMED = {
    "tool.json": '{"tool": "ocr-hook", "status": "complete", "exit_code": 0, "findings": []}',
    "coverage.json": '{"tool": {"name": "ocr-hook"}, "status": "complete", "exit_code": 0, "findings": [], '
                     '"coverage": [1]}',
    "findings.json": '{"tool": {"name": "ocr-hook"}, "status": "complete", "exit_code": 0, "findings": {}}',
    "finding.json": '{"tool": {"name": "ocr-hook"}, "status": "complete", "exit_code": 0, "findings": ["x"]}',
    "huge-number.json": '{"tool": {"name": "ocr-hook"}, "status": "complete", "exit_code": 1e400, "findings": []}',
    "deep.json": "[" * 100_000 + "]" * 100_000,
    "deep-finding.json": '{"tool": {"name": "ocr-hook"}, "status": "complete", "exit_code": 0, "findings": '
                         + "[" * 50_000 + "]" * 50_000 + "}",
}


def test_a_malformed_report_is_exit_2_with_one_line(case: Repo, gitlab: FakeGitLab, tmp_path: Path) -> None:
    for name, text in MALFORMED.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        line = refused(publish_cli(case.repo, ci(gitlab), "--from", str(tmp_path / name)), 2)
        assert name in line and ("not an ocr-hook --format json report" in line or "not a JSON report" in line), line
        assert len(line) < 400, line
    assert gitlab.requests == []
