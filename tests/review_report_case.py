"""A real review report for the publishing tests of Bitbucket and Azure DevOps (issue 29).

A real scratch repository: `main` has app.py (40 lines) and old_name.py; the `feature` branch changes two
lines of app.py and renames old_name.py to new_name.py with one line changed. The real CLI (forked, see
forked_cli) and SDK review `--base main` against the scripted fake Messages API and write the
`--format json` report: a finding with a fix (lines 3-4), a plain one (line 6), one about the whole file,
one on an unchanged line far from the change (36) and one on the renamed file (line 2). Larger reports
(more than 100 or 1,000 findings) are this report with its findings repeated under new fingerprints.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from agent_support import main_opening
from ci_repos import ci_free_env
from conftest import TEST_API_KEY
from fake_api import FakeMessagesAPI, Reply, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write

PATH = "app.py"
OLD_NAME, NEW_NAME = "old_name.py", "new_name.py"
BEFORE = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(1, 21))  # 40 lines
AFTER = BEFORE.replace("    return x + 2\n", "    return x - 2\n").replace("    return x + 3\n", "    return x * 3\n")
RENAMED_BEFORE = "".join(f"LIMIT_{i} = {i}\n" for i in range(1, 13))
RENAMED_AFTER = RENAMED_BEFORE.replace("LIMIT_2 = 2\n", "LIMIT_2 = -2\n")

FIXED_MESSAGE = "f2 subtracts where every other function adds."
PLAIN_MESSAGE = "f3 multiplies; was that meant? @property-style mentions must not ping anyone."
UNANCHORED_MESSAGE = "Somewhere this deletes a tree without checking the path."
OUTSIDE_MESSAGE = "f18 is unchanged but has the same off-by-one."
RENAMED_MESSAGE = "LIMIT_2 is negative now; every other limit is positive."
LONG_MESSAGE = ("This message is long on purpose. " * 20).strip()  # 659 characters: over Bitbucket's 450


def _comment(content: str, code: str, severity: str, suggestion: str | None = None) -> dict[str, Any]:
    entry = {"content": content, "existing_code": code, "severity": severity, "category": "bug"}
    if suggestion is not None:
        entry["suggestion_code"] = suggestion
    return entry


APP_COMMENTS = [
    _comment(FIXED_MESSAGE, "def f2(x):\n    return x - 2", "high", "def f2(x):\n    return x + 2"),
    _comment(PLAIN_MESSAGE, "return x * 3", "medium"),
    _comment(UNANCHORED_MESSAGE, "shutil.rmtree(path)", "low"),
    _comment(OUTSIDE_MESSAGE, "return x + 18", "medium"),
]
RENAMED_COMMENTS = [_comment(RENAMED_MESSAGE, "LIMIT_2 = -2", "medium")]


def script_review(fake: FakeMessagesAPI) -> None:
    """The model's answers for the two reviewed files."""
    fake.script(main_opening(PATH), [Reply([tool_use("code_comment", {"comments": APP_COMMENTS})])])
    fake.script(main_opening(NEW_NAME), [Reply([tool_use("code_comment", {"comments": RENAMED_COMMENTS})])])


class ReportCase:
    """The reviewed repository, its report, the feature head and the merge base."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repo = make_repo(root / "repo")
        write(self.repo, PATH, BEFORE)
        write(self.repo, OLD_NAME, RENAMED_BEFORE)
        self.base = commit_all(self.repo, "base")
        git(self.repo, "checkout", "-q", "-b", "feature")
        write(self.repo, PATH, AFTER)
        (self.repo / OLD_NAME).unlink()
        write(self.repo, NEW_NAME, RENAMED_AFTER)
        self.head = commit_all(self.repo, "feature")
        self.report_path = root / "report.json"
        with FakeMessagesAPI() as fake:
            script_review(fake)
            env = {**ci_free_env(), **self.sdk_env(fake)}
            proc = run_cli(self.repo, "review", "--base", "main", "--no-cache", "--no-review-filter",
                           "--filter-mode", "nofilter", "-q", "--format", "json", "--json-output",
                           str(self.report_path), env=_only(env))
        assert proc.returncode == 1, proc.stderr
        self.report: dict[str, Any] = json.loads(self.report_path.read_text(encoding="utf-8"))

    @staticmethod
    def sdk_env(fake: FakeMessagesAPI) -> dict[str, str]:
        """The SDK's variables for a run against `fake` (and nothing else of ANTHROPIC_*)."""
        return {**{k: "" for k in os.environ if k.startswith("ANTHROPIC_")}, "ANTHROPIC_BASE_URL": fake.url,
                "ANTHROPIC_API_KEY": TEST_API_KEY, "NO_PROXY": "127.0.0.1,localhost"}

    def ci_clone(self, root: Path, *, single_branch: bool) -> Path:
        """The repository as a CI job clones it from its `origin`: the feature branch checked out; with
        `single_branch` (Bitbucket Pipelines) no other branch, else (Azure Pipelines) origin/main too."""
        origin = root / "origin.git"
        git(root, "clone", "-q", "--bare", str(self.repo), str(origin))
        clone = root / "clone"
        args = ["--single-branch"] if single_branch else []
        git(root, "clone", "-q", *args, "--branch", "feature", str(origin), str(clone))
        return clone

    def finding(self, message: str) -> dict[str, Any]:
        return next(f for f in self.report["findings"] if f["message"] == message)

    def variant(self, name: str, *, findings: list[dict[str, Any]] | None = None, **fields: Any) -> Path:
        """The report with other findings or top-level fields, written next to it."""
        data = json.loads(self.report_path.read_text(encoding="utf-8"))
        if findings is not None:
            data["findings"] = findings
        data.update(fields)
        path = self.root / f"{name}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    def many(self, count: int) -> list[dict[str, Any]]:
        """`count` findings on app.py's changed lines, each with its own fingerprint."""
        plain = self.finding(PLAIN_MESSAGE)
        return [{**plain, "message": f"Thought {n} on f3.", "fingerprint": hashlib.sha256(b"%d" % n).hexdigest()[:32]}
                for n in range(count)]

    def clean(self) -> Path:
        """What a passing review writes: no findings, exit 0."""
        return self.variant("clean", findings=[], exit_code=0, verdict="No problems found.")


def _only(env: dict[str, str]) -> dict[str, str]:
    # run_cli lays `env` over os.environ: CI variables of the surrounding run are blanked.
    return {**{k: "" for k in os.environ if k not in env}, **env}
