"""The publishing tests' reviewed change (tests/publish_support.py), with what the Bitbucket and Azure
DevOps tests need besides: reports with other findings (more than 100 or 1,000: the real report's
finding repeated under new fingerprints), a passing report, the clone a CI job makes of the repository,
and the model's script for running the review again (the recipes of docs/recipes/ run it as written).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import forked_cli
import yaml
from agent_support import main_opening
from conftest import TEST_API_KEY
from fake_api import FakeMessagesAPI, Reply, tool_use
from gitrepo import git
from publish_support import (
    AFTER,
    APP_COMMENTS,
    CONTEXT,
    FIXED,
    LIB_AFTER,
    LIB_COMMENTS,
    NEW_NAME,
    OLD_NAME,
    OUTSIDE,
    PATH,
    PLAIN,
    RENAMED,
    UNANCHORED,
    Reviewed,
)

__all__ = ["AFTER", "CONTEXT", "FIXED", "LIB_AFTER", "LONG_MESSAGE", "NEW_NAME", "OLD_NAME", "OUTSIDE", "PATH",
           "PLAIN", "RENAMED", "UNANCHORED", "ReportCase", "docs_block", "run_step", "script_review", "shared_case"]

LONG_MESSAGE = ("This message is long on purpose. " * 20).strip()  # 659 characters: over Bitbucket's 450


def script_review(fake: FakeMessagesAPI) -> None:
    """The model's answers for the two reviewed files (the same as publish_support's review)."""
    fake.script(main_opening(PATH), [Reply([tool_use("code_comment", {"comments": APP_COMMENTS})])])
    fake.script(main_opening(NEW_NAME), [Reply([tool_use("code_comment", {"comments": LIB_COMMENTS})])])


class ReportCase(Reviewed):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.root = root

    def with_findings(self, name: str, findings: list[dict[str, Any]] | None = None, **fields: Any) -> Path:
        """The report with other findings or top-level fields, written next to it."""
        data = json.loads(self.report_path.read_text(encoding="utf-8"))
        if findings is not None:
            data["findings"] = findings
        data.update(fields)
        path = self.root / f"{name}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    def many(self, count: int) -> list[dict[str, Any]]:
        """`count` findings on app.py's changed line 6, each with its own fingerprint."""
        plain = self.finding(PLAIN)
        return [{**plain, "message": f"Thought {n} on f3.", "fingerprint": hashlib.sha256(b"%d" % n).hexdigest()[:32]}
                for n in range(count)]

    def clean(self) -> Path:
        """What a passing review writes: no findings, exit 0."""
        return self.with_findings("clean", findings=[], exit_code=0, verdict="No problems found.")

    @staticmethod
    def sdk_env(fake: FakeMessagesAPI) -> dict[str, str]:
        """The SDK's variables for a run against `fake` (and nothing else of ANTHROPIC_*)."""
        return {**{k: "" for k in os.environ if k.startswith("ANTHROPIC_")}, "ANTHROPIC_BASE_URL": fake.url,
                "ANTHROPIC_API_KEY": TEST_API_KEY, "NO_PROXY": "127.0.0.1,localhost"}

    def ci_clone(self, root: Path, *, single_branch: bool) -> Path:
        """The repository as a CI job clones it from its `origin`, the feature branch checked out: with
        `single_branch` (Bitbucket Pipelines) no other branch, else (Azure Pipelines) origin/main too."""
        origin = root / "origin.git"
        git(root, "clone", "-q", "--bare", str(self.repo), str(origin))
        clone = root / "clone"
        args = ["--single-branch"] if single_branch else []
        git(root, "clone", "-q", *args, "--branch", "feature", str(origin), str(clone))
        return clone


_SHARED: list[ReportCase] = []


def shared_case(factory: Any) -> ReportCase:
    """One reviewed change per test process for the Bitbucket and Azure modules (the review is the costly
    part; the tests only read it and write report variants of their own names next to it)."""
    if not _SHARED:
        _SHARED.append(ReportCase(factory.mktemp("publish-report")))
    return _SHARED[0]


# --- the documentation's recipes, run as written -----------------------------------------------------------

DOCS = Path(__file__).resolve().parent.parent / "docs"


def docs_block(page: str, heading: str, language: str = "yaml") -> Any:
    """The first ```language block under `heading` (up to the next heading of its level) of docs/`page`."""
    text = (DOCS / page).read_text(encoding="utf-8")
    level = heading.split(" ", 1)[0]
    assert f"\n{heading}\n" in text, f"docs/{page} has no heading {heading}"
    section = text.split(f"\n{heading}\n", 1)[1]
    section = section.split(f"\n{level} ", 1)[0]
    block = re.search(rf"```{language}\n(.*?)\n```", section, re.S)
    assert block, f"no {language} block under {heading} in docs/{page}"
    return yaml.safe_load(block.group(1))


def expand(command: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: env.get(m.group(1), ""), command)


def run_step(commands: list[str], cwd: Path, env: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    """Each command as a shell would run it: `ocr-hook …` through the forked CLI, the rest through bash;
    the `pip install` of ocr-hook itself is what this checkout already is."""
    done = []
    for command in commands:
        if command.startswith("pip install"):
            assert "ocr-hook" in command
            continue
        if command.startswith("ocr-hook "):
            args = shlex.split(expand(command, env))[1:]
            done.append(forked_cli.run(args, cwd=cwd, env=env, timeout=120, errors="replace"))
        else:
            done.append(subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                                       timeout=60))
    return done
