"""A real reviewed change for the publishing tests (`ocr-hook publish`, every forge).

A scratch repository whose feature branch changes `app.py` and renames `lib/old_name.py` to
`lib/new_name.py` (changing one line), reviewed for real: the CLI (forked, tests/forked_cli.py) and the
Anthropic SDK against the scripted fake Messages API, `--format json`. Its findings are of every kind a
publisher meets: a fix over a range (lines 3-4), a plain finding on an added line (6), one on an
unchanged context line (5), one on the renamed file's changed line, one about the whole file, and one
far outside the diff (36).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import forked_cli
from agent_support import main_opening
from ci_repos import ci_free_env
from conftest import TEST_API_KEY
from fake_api import FakeMessagesAPI, Reply, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write

PATH = "app.py"
OLD_NAME, NEW_NAME = "lib/old_name.py", "lib/new_name.py"
BEFORE = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(1, 21))  # 40 lines
AFTER = BEFORE.replace("    return x + 2\n", "    return x - 2\n").replace("    return x + 3\n", "    return x * 3\n")
LIB_BEFORE = "".join(f"VALUE_{i} = {i}\n" for i in range(1, 13))
LIB_AFTER = LIB_BEFORE.replace("VALUE_6 = 6\n", "VALUE_6 = 60\n")

FIXED = "f2 subtracts where every other function adds."
PLAIN = "f3 multiplies; was that meant? @property-style mentions must not ping anyone."
CONTEXT = "f3's name no longer says what it does."
RENAMED = "VALUE_6 is ten times what the pattern says."
UNANCHORED = "Somewhere this deletes a tree without checking the path."
OUTSIDE = "f18 is unchanged but has the same off-by-one."


def comment(content: str, code: str, severity: str, suggestion: str | None = None) -> dict[str, Any]:
    entry = {"content": content, "existing_code": code, "severity": severity, "category": "bug"}
    if suggestion is not None:
        entry["suggestion_code"] = suggestion
    return entry


APP_COMMENTS = [
    comment(FIXED, "def f2(x):\n    return x - 2", "high", "def f2(x):\n    return x + 2"),
    comment(PLAIN, "return x * 3", "medium"),
    comment(CONTEXT, "def f3(x):", "low"),
    comment(UNANCHORED, "shutil.rmtree(path)", "low"),
    comment(OUTSIDE, "return x + 18", "medium", "    return x + 18  # checked"),
]
LIB_COMMENTS = [comment(RENAMED, "VALUE_6 = 60", "medium", "VALUE_6 = 6")]


def script(fake: FakeMessagesAPI) -> None:
    """The model's answers for the two changed files."""
    fake.script(main_opening(PATH), [Reply([tool_use("code_comment", {"comments": APP_COMMENTS})])])
    fake.script(main_opening(NEW_NAME), [Reply([tool_use("code_comment", {"comments": LIB_COMMENTS})])])


def messages_env(fake: FakeMessagesAPI) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": TEST_API_KEY, "NO_PROXY": "127.0.0.1,localhost"}


class Reviewed:
    """The repository (checked out on the feature head), its base and head, the report, and the diffs."""

    def __init__(self, root: Path) -> None:
        self.repo = make_repo(root / "repo")
        write(self.repo, PATH, BEFORE)
        write(self.repo, OLD_NAME, LIB_BEFORE)
        self.base = commit_all(self.repo, "base")
        git(self.repo, "checkout", "-q", "-b", "feature")
        write(self.repo, PATH, AFTER)
        git(self.repo, "mv", OLD_NAME, NEW_NAME)
        write(self.repo, NEW_NAME, LIB_AFTER)
        self.head = commit_all(self.repo, "feature")
        self.report_path = root / "report.json"
        with FakeMessagesAPI() as fake:
            script(fake)
            env = {k: v for k, v in ci_free_env().items() if not k.startswith("ANTHROPIC_")}
            env.update(messages_env(fake))
            proc = run_cli(self.repo, "review", "--base", "main", "--no-cache", "--no-review-filter", "--filter-mode",
                           "nofilter", "-q", "--format", "json", "--json-output", str(self.report_path), env=env)
        assert proc.returncode == 1, proc.stderr
        self.report: dict[str, Any] = json.loads(self.report_path.read_text(encoding="utf-8"))
        self.unified = git(self.repo, "diff", "-M", "main...feature")  # what Gitea's .diff answers

    def finding(self, message: str) -> dict[str, Any]:
        return next(f for f in self.report["findings"] if f["message"] == message)

    def patch(self, path: str) -> str:
        """The hunks of one file without its header (GitHub's `patch`, GitLab's `diff`)."""
        diff = git(self.repo, "diff", "-M", "main...feature", "--", *( [OLD_NAME, NEW_NAME] if path == NEW_NAME
                                                                       else [path]))
        return diff[diff.index("@@"):]

    def variant(self, tmp: Path, name: str, edit: Any) -> Path:
        """A copy of the report changed by `edit(report_dict)` (e.g. what memory writes on a later run)."""
        data = json.loads(self.report_path.read_text(encoding="utf-8"))
        edit(data)
        path = tmp / name
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    def fixed(self, tmp: Path, *messages: str) -> Path:
        """The report of a later push that fixed the findings with these messages: review memory resolved them."""
        gone = {self.finding(m)["fingerprint"] for m in messages}
        keys = ("path", "fingerprint", "severity", "category", "message", "start_line", "end_line")

        def edit(data: dict[str, Any]) -> None:
            data["resolved"] = [{k: f[k] for k in keys} for f in data["findings"] if f["fingerprint"] in gone]
            data["findings"] = [f for f in data["findings"] if f["fingerprint"] not in gone]
        return self.variant(tmp, "fixed-" + "-".join(sorted(gone))[:40] + ".json", edit)


def publish_cli(repo: Path, env: dict[str, str], *args: str) -> Any:
    """`ocr-hook publish ARGS` in the reviewed checkout with exactly `env` on top of a CI-free environment."""
    return ocr_hook(repo, env, "publish", *args)


# The publishing tests assert which findings go inline; routing (summary_below, whose default sends the low
# finding to the summary) is pinned off here, and tests of routing set it themselves.
ROUTING_OFF = {"OCR_HOOK_SUMMARY_BELOW": "low"}


def ocr_hook(repo: Path, env: dict[str, str], *args: str) -> Any:
    """`ocr-hook ARGS` with `env` on a CI-free environment without tokens or Anthropic settings (routing off
    unless `env` sets it)."""
    full = {k: v for k, v in ci_free_env(NO_PROXY="127.0.0.1,localhost").items()
            if not k.endswith("_TOKEN") and k != "SYSTEM_ACCESSTOKEN" and not k.startswith("ANTHROPIC_")}
    full.update(ROUTING_OFF)
    full.update(env)
    # Not gitrepo.run_cli: that starts from os.environ, and the suite's own CI variables must not leak in.
    return forked_cli.run(list(args), cwd=repo, env=full, timeout=120, errors="replace")


def run_lines(lines: list[str], repo: Path, env: dict[str, str]) -> list[Any]:
    """A recipe's script lines as written: `pip install` skipped (this checkout is installed), each `ocr-hook`
    line run in the repository; any other line fails the test, since it would go untested."""
    results = []
    for line in lines:
        argv = shlex.split(line)
        if argv[:2] == ["pip", "install"]:
            continue
        assert argv[0] == "ocr-hook", f"a recipe line this test cannot run: {line}"
        results.append(ocr_hook(repo, env, *argv[1:]))
    return results
