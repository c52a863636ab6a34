"""`ocr-hook preview` as a user runs it: every changed file listed, reasons, estimate, no model."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_repo, repo_state, run_cli, write

from ocr_hook.changes.collect import collect_changes
from ocr_hook.changes.scope import Scope
from ocr_hook.commands import preview


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    write(repo, "app.py", "def add(a, b):\n    return a + b\n")
    write(repo, "old.py", "x = 1\n")
    commit_all(repo, "initial")
    write(repo, "app.py", "def add(a, b):\n    return a - b\n")
    write(repo, "new module.py", "".join(f"v{i} = {i}\n" for i in range(40)))
    write(repo, ".env", "API_KEY=secret\n")
    write(repo, "poetry.lock", "lock\n")
    write(repo, "logo.png", bytes(range(256)))
    git(repo, "rm", "-q", "old.py")
    git(repo, "add", "-A")
    return repo


EXPECTED = {
    "new module.py": ("added", "review"),
    "app.py": ("modified", "review"),
    ".env": ("added", "skip"),
    "logo.png": ("added", "skip"),
    "old.py": ("deleted", "skip"),
    "poetry.lock": ("added", "skip"),
}


def test_json_lists_every_file_with_action_and_reason(repo: Path) -> None:
    before = repo_state(repo, exact_index=True)
    proc = run_cli(repo, "preview", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert repo_state(repo, exact_index=True) == before
    doc = json.loads(proc.stdout)
    assert {"files", "estimate"} <= set(doc)
    files = doc["files"]
    assert [f["path"] for f in files] == ["new module.py", "app.py", ".env", "logo.png", "old.py", "poetry.lock"]
    for f in files:
        assert {"path", "status", "action", "reason"} <= set(f)
        assert (f["status"], f["action"]) == EXPECTED[f["path"]]
        assert (f["reason"] == "") == (f["action"] == "review")
    reasons = {f["path"]: f["reason"] for f in files}
    assert reasons[".env"].startswith("sensitive") and reasons["logo.png"] == "binary"
    assert reasons["old.py"] == "deleted" and reasons["poetry.lock"].startswith("lock file")
    assert doc["files"][0]["added"] == 40
    estimate = doc["estimate"]
    assert isinstance(estimate["input_tokens"], int) and estimate["input_tokens"] > 2 * preview.SYSTEM_ALLOWANCE
    assert 0 < estimate["max_cost_usd"] <= 2.0


def test_text_lists_every_file_and_the_estimate(repo: Path) -> None:
    proc = run_cli(repo, "preview")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for path, (status, action) in EXPECTED.items():
        row = next(line for line in out.splitlines() if f"  {path} " in line or line.endswith(f"  {path}"))
        assert action in row and status in row
    assert "6 changed files: 2 to review, 4 skipped" in out
    assert "sensitive ('" in out and "never sent to the model" in out
    assert "Estimate: about" in out and "at most $" in out


def test_estimate_formula(repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(repo)
    assert preview.run(Scope("staged"), ("app.py",), None, "json", environ={}) == 0
    doc = json.loads(capsys.readouterr().out)
    change = collect_changes(str(repo), Scope("staged"), ("app.py",), {}).files[0]
    text = "def add(a, b):\n    return a - b\n"
    expected = (preview.SYSTEM_ALLOWANCE + math.ceil(len(change.patch.encode()) / 3)
                + math.ceil(len(text.encode()) / 3)) * preview.TURN_FACTOR
    assert doc["estimate"]["input_tokens"] == expected
    cost = (expected * 3.0 + preview.OUTPUT_ALLOWANCE * 15.0) / 1_000_000  # default model's list price
    assert doc["estimate"]["max_cost_usd"] == round(cost, 4)


def test_max_cost_caps_the_estimate_and_unknown_prices_fall_back_to_it(repo: Path) -> None:
    write(repo, ".ocr-hook.yaml", "max_cost: 0.01\n")
    doc = json.loads(run_cli(repo, "preview", "--format", "json").stdout)
    assert doc["estimate"]["max_cost_usd"] == 0.01
    write(repo, ".ocr-hook.yaml", "max_cost: 0.5\nmodel: some-unpriced-model\n")
    proc = run_cli(repo, "preview")
    assert "no price for model 'some-unpriced-model'" in proc.stdout and "$0.50" in proc.stdout
    doc = json.loads(run_cli(repo, "preview", "--format", "json").stdout)
    assert doc["estimate"]["max_cost_usd"] == 0.5


def test_paths_are_relative_to_the_current_directory(repo: Path) -> None:
    write(repo, "pkg/mod.py", "m = 1\n")
    git(repo, "add", "pkg/mod.py")
    proc = run_cli(repo / "pkg", "preview", "--format", "json", "mod.py", "../app.py")
    assert proc.returncode == 0, proc.stderr
    assert sorted(f["path"] for f in json.loads(proc.stdout)["files"]) == ["app.py", "pkg/mod.py"]


def test_limits_are_reported_as_incomplete(repo: Path) -> None:
    write(repo, ".ocr-hook.yaml", "max_diff_lines: 10\n")
    proc = run_cli(repo, "preview")
    assert "too large: 40 changed lines (max_diff_lines 10)  [incomplete]" in proc.stdout
    assert "INCOMPLETE" in proc.stdout
    doc = json.loads(run_cli(repo, "preview", "--format", "json").stdout)
    assert doc["complete"] is False


def test_nothing_staged(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "clean")
    write(repo, "a.py", "a = 1\n")
    commit_all(repo)
    proc = run_cli(repo, "preview")
    assert proc.returncode == 0 and "nothing to review" in proc.stdout
    doc = json.loads(run_cli(repo, "preview", "--format", "json").stdout)
    assert doc["files"] == [] and doc["estimate"]["input_tokens"] == 0 and doc["estimate"]["max_cost_usd"] == 0


def test_preview_needs_no_key_and_never_imports_the_sdk(repo: Path) -> None:
    script = ("import sys\nfrom ocr_hook.cli import main\ntry:\n    main(['preview'])\nexcept SystemExit as e:\n"
              "    code = e.code\nprint('SDK' if 'anthropic' in sys.modules else 'NO-SDK', code)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    proc = subprocess.run([sys.executable, "-c", script], cwd=repo, env=env, capture_output=True, text=True)
    assert proc.stdout.splitlines()[-1] == "NO-SDK 0", proc.stdout + proc.stderr


def test_odd_names_print_on_one_line_each(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "odd")
    names = ["new\nline.py", "tab\tname.py", "ünï.py"]
    for name in names:
        write(repo, name, "x = 1\n")
    (repo / os.fsdecode(b"bad\xff.py")).write_bytes(b"y = 1\n")
    git(repo, "add", "-A")
    proc = run_cli(repo, "preview")
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("  review")]
    assert len(rows) == 4
    assert any("new\\nline.py" in r for r in rows) and any("tab\\tname.py" in r for r in rows)
    assert any("ünï.py" in r for r in rows) and any('"bad\\377.py"' in r for r in rows)  # as git quotes it (issue 55.1)
    doc = json.loads(run_cli(repo, "preview", "--format", "json").stdout)
    assert sorted(f["path"] for f in doc["files"]) == sorted([*names, '"bad\\377.py"'])
