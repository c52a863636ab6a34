"""What code built to be slow and text built to leak did to the context pack (issue 41, items 16-20), through
the real CLI against the fake Messages API: a Go package that made the pack outlive --timeout, a secret across
the 300-character line cut and across the intent's cap, files the user excluded, and a context_tokens the
section's heading and "left out" line went over."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fake_api import FakeMessagesAPI, task_done
from gitrepo import commit_all, git, make_repo, run_cli, write
from slow_code import go_tree, py_callers_tree

from ocr_hook.budget.tokens import estimate_tokens
from ocr_hook.changes.collect import collect_changes
from ocr_hook.changes.scope import Scope
from ocr_hook.changes.snapshot import open_snapshot
from ocr_hook.context import build_pack
from ocr_hook.context.pack import degraded
from ocr_hook.settings import load

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
SECTION = "Context from other files at the reviewed revision"


def _first(fake_api: FakeMessagesAPI, path: str) -> str:
    firsts = [r.first_user_text for r in fake_api.requests if len(r.body.get("messages", [])) == 1
              and r.first_user_text.startswith(f"Review the change to `{path}`")]
    assert firsts, [r.first_user_text[:60] for r in fake_api.requests]
    return firsts[-1]


def test_a_go_package_of_large_files_is_packed_within_the_deadline(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    """Every used name was looked for with a whole tags query on every file of the package: here about
    1,600 queries, 8 s here, past --timeout 6 (before: the file was skipped at the time limit, exit 3)."""
    repo = go_tree(tmp_path / "go", files=8, size=40_000, identifiers=200)
    fake_api.script("big/file00.go", [task_done()])
    done = run_cli(repo, "review", "--timeout", "6", env=sdk_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "func Sum(total int) int" in _first(fake_api, "big/file00.go")
    took = re.search(r" · ([0-9.]+)s\n", done.stdout)  # the run's own wall time, as its summary prints it
    assert took is not None and float(took.group(1)) < 6, done.stdout


def test_call_sites_in_many_files_do_not_outlive_the_timeout(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    """A changed signature called from 400 Python files: each file holding a call site was read and parsed
    (to tell calls from mentions) whatever the deadline, about 20 s here, past --timeout 6 (before: the file
    was skipped at the time limit, exit 3). Past the packs' share of the timeout nothing more is parsed."""
    repo = py_callers_tree(tmp_path / "py", files=400, size=25_000, calls=1)
    fake_api.script("lib.py", [task_done()])
    done = run_cli(repo, "review", "--timeout", "6", env=sdk_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "def compute(a, b=0):" in _first(fake_api, "lib.py")
    took = re.search(r" · ([0-9.]+)s\n", done.stdout)
    assert took is not None and float(took.group(1)) < 6, done.stdout


def test_no_pack_outlives_its_share_of_the_timeout(tmp_path: Path) -> None:
    """The packs' own deadline (a share of --timeout): once it has passed nothing more is looked up, and
    the pack that was cut short is marked degraded, so the pack memo does not keep it."""
    repo = go_tree(tmp_path / "go", files=2, size=5_000, identifiers=5)
    write(repo, "big/file01.go", (repo / "big/file01.go").read_text() + "func missing3(v int) int { return v }\n")
    git(repo, "add", "-A")
    change_set = collect_changes(str(repo), Scope("staged"), [], {})
    change = next(c for c in change_set.files if c.path == "big/file00.go")
    for timeout, expect_entry in ((600.0, True), (1e-9, False)):
        settings = load(str(repo), None, {"timeout": timeout}, {})
        with open_snapshot(str(repo), change_set) as snapshot:
            pack = build_pack(change, snapshot, settings)
            assert (pack is not None and any(e.name == "missing3" for e in pack.entries)) is expect_entry
            assert degraded(snapshot, settings) is not expect_entry


def _python_repo(root: Path, lib: str, app_after: str, config: str = "",
                 others: dict[str, str] | None = None) -> Path:
    make_repo(root)
    write(root, "lib.py", lib)
    for path, content in (others or {}).items():
        write(root, path, content)
    write(root, "app.py", "from lib import normalise\n\n\ndef lookup(users, name):\n    return users.get(name)\n")
    if config:
        write(root, ".ocr-hook.yaml", config)
    commit_all(root, "base")
    write(root, "app.py", app_after)
    git(root, "add", "app.py")
    return root


APP_AFTER = "from lib import normalise\n\n\ndef lookup(users, name):\n    return users.get(normalise(name))\n"


def test_a_secret_across_the_line_cut_is_masked_before_the_cut(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    head = 'def normalise(name, key="'
    lib = head + "k" * (289 - len(head)) + " " + TOKEN + '"):\n    return name.strip().lower()\n'
    repo = _python_repo(tmp_path / "repo", lib, APP_AFTER)
    fake_api.script("app.py", [task_done()])
    done = run_cli(repo, "review", env=sdk_env)
    assert done.returncode == 0, done.stderr
    first = _first(fake_api, "app.py")
    assert "definition of `normalise`" in first and " [MASKED-SE…" in first
    assert TOKEN[:10] not in first  # before: 36 of its 40 characters, cut at 300 and so not recognised


def test_a_secret_across_the_intent_cap_is_masked_before_the_cap(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = _python_repo(tmp_path / "repo", "def normalise(name):\n    return name.strip().lower()\n", APP_AFTER)
    intent = "Why: " + "w" * (2_993 - len("Why: ")) + " " + TOKEN
    fake_api.script("app.py", [task_done()])
    done = run_cli(repo, "review", "--intent", intent, env=sdk_env)
    assert done.returncode == 0, done.stderr
    first = _first(fake_api, "app.py")
    assert "Why: www" in first and "[cut here: the description is" in first
    assert TOKEN[:6] not in first  # before: its first 6 characters, cut at the cap and so not recognised


LIB_HELPERS = "".join(f"def helper{i}(v):\n    \"\"\"Helper number {i}, documented at length.\"\"\"\n    return v\n\n\n"
                      for i in range(6))
APP_HELPERS = ("from lib import " + ", ".join(f"helper{i}" for i in range(6))
               + "\nfrom legacy.old import normalise\n\n\ndef lookup(users, name):\n    return "
               + "".join(f"helper{i}(" for i in range(6)) + "normalise(name)" + ")" * 6 + "\n")
LEGACY = {"legacy/old.py": "def normalise(name):\n    return name.lower()\n", "legacy/__init__.py": ""}


def test_files_matched_by_exclude_are_never_quoted(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                   sdk_env: dict[str, str]) -> None:
    repo = _python_repo(tmp_path / "repo", LIB_HELPERS, APP_HELPERS, config="exclude:\n  - legacy/\n", others=LEGACY)
    fake_api.script("app.py", [task_done()])
    done = run_cli(repo, "review", env=sdk_env)
    assert done.returncode == 0, done.stderr
    first = _first(fake_api, "app.py")
    assert "definition of `helper0`" in first and "legacy/old.py" not in first
    # The control: without the exclude, legacy/old.py's normalise is quoted.
    write(repo, ".ocr-hook.yaml", "context_tokens: 2000\n")
    fake_api.script("app.py", [task_done()])
    assert run_cli(repo, "review", env=sdk_env).returncode == 0
    assert "definition of `normalise` (legacy/old.py" in _first(fake_api, "app.py")


def test_context_tokens_covers_the_heading_and_the_cut_line(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                            sdk_env: dict[str, str]) -> None:
    repo = _python_repo(tmp_path / "repo", LIB_HELPERS, APP_HELPERS, config="context_tokens: 300\n", others=LEGACY)
    fake_api.script("app.py", [task_done()])
    done = run_cli(repo, "review", env=sdk_env)
    assert done.returncode == 0, done.stderr
    first = _first(fake_api, "app.py")
    section = first[first.index(SECTION):]
    assert "left out to stay within context_tokens 300" in section and "definition of `helper" in section
    assert estimate_tokens(section) <= 300  # before: the heading and this line on top, about 130 tokens more

    # A budget the heading alone fills sends no section at all (and the coverage says what was cut).
    write(repo, ".ocr-hook.yaml", "context_tokens: 100\n")
    fake_api.script("app.py", [task_done()])
    done = run_cli(repo, "review", "--format", "json", env=sdk_env)
    assert done.returncode == 0, done.stderr
    assert SECTION not in _first(fake_api, "app.py")
    assert json.loads(done.stdout)["coverage"]["context"]["app.py"]["entries"] == 0
