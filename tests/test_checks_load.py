"""Check files (DESIGN 20): parsed, validated, read from the trusted revision, and which apply to a change."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_repo, write

from ocr_hook.checks.load import applicable, load_at, load_worktree, matches, parse_check

ENDPOINT = "---\npaths: [\"api/**\"]\nmode: block\n---\nEvery new endpoint has a test that calls it.\n"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_repo(tmp_path_factory.mktemp("checks") / "repo")
    write(root, ".ocr-hook/checks/endpoint-test.md", ENDPOINT)
    write(root, ".ocr-hook/checks/bad.md", "---\nmode: nope\nfoo: 1\n---\n")
    write(root, "svc/.ocr-hook/checks/svc-docs.md", "Public functions have docstrings.\n")
    write(root, "svc/.ocr-hook/checks/endpoint-test.md", "---\nmode: warn\n---\nagain\n")
    commit_all(root, "checks")
    return root


def test_a_revision_s_checks_with_one_line_per_problem(repo: Path) -> None:
    loaded = load_at(str(repo), "HEAD")
    assert [(c.name, c.scope, c.mode, c.paths) for c in loaded.checks] == [
        ("endpoint-test", "", "block", ("api/**",)), ("svc-docs", "svc", "warn", ())]
    assert sorted(p.split(":")[0] for p in loaded.problems) == [".ocr-hook/checks/bad.md"] * 3 + [
        "svc/.ocr-hook/checks/endpoint-test.md"]
    assert any("unknown front matter key 'foo'" in p for p in loaded.problems)
    assert any("must be unique" in p for p in loaded.problems)


def test_the_trusted_revision_not_the_work_tree(repo: Path) -> None:
    write(repo, ".ocr-hook/checks/endpoint-test.md", "---\nmode: off\n---\nnothing\n")
    try:
        assert load_at(str(repo), "HEAD").checks[0].mode == "block"
        assert load_worktree(str(repo)).checks[0].mode == "off"
    finally:
        write(repo, ".ocr-hook/checks/endpoint-test.md", ENDPOINT)


def test_applicability_by_paths_subtree_and_when(repo: Path) -> None:
    checks = load_at(str(repo), "HEAD").checks
    run, decided = applicable(checks, ["api/users.py"], commit_time=False)
    assert [c.name for c in run] == ["endpoint-test"]
    assert [(v.name, v.verdict) for v in decided] == [("svc-docs", "not_applicable")]
    assert not matches(checks[1], "other/svc/x.py") and matches(checks[1], "svc/x.py")
    assert applicable(checks, ["api/users.py"], commit_time=True) == ([], [])  # both are `when: ci`


def test_an_over_long_instruction_is_refused() -> None:
    check, problems = parse_check(".ocr-hook/checks/long.md", "x" * 4001)
    assert check is None and "at most 4,000" in problems[0]


def test_a_change_that_deletes_its_check_is_still_judged_by_it(tmp_path: Path) -> None:
    import os

    from ocr_hook.changes.collect import collect_changes
    from ocr_hook.changes.scope import Scope
    from ocr_hook.checks.load import change_notes, trusted_checks

    root = make_repo(tmp_path / "repo")
    write(root, ".ocr-hook/checks/endpoint-test.md", ENDPOINT)
    write(root, "api/__init__.py", "")
    commit_all(root, "base")
    git(root, "checkout", "-q", "-b", "feature")
    git(root, "rm", "-q", ".ocr-hook/checks/endpoint-test.md")
    write(root, "api/users.py", "x = 1\n")
    commit_all(root, "no check, new endpoint")
    change_set = collect_changes(str(root), Scope("base", base="main"), [], os.environ)
    loaded = trusted_checks(change_set)
    assert [(c.name, c.mode) for c in loaded.checks] == [("endpoint-test", "block")]
    assert applicable(loaded.checks, ["api/users.py"], commit_time=False)[0] == list(loaded.checks)
    assert "edits check file .ocr-hook/checks/endpoint-test.md" in change_notes(loaded, change_set)[0]
