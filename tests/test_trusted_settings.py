"""Settings a pull request chooses (issue 52 items 2, 6 and 17; DESIGN.md 5's session-6 amendment): a review of a
range reads `.ocr-hook.yaml` at the trusted revision, never a program to run or a cache directory from the
repository's file, and a relative claude_code_path is resolved where it was given. Through the real CLI, real git
and the fake Messages API (the real Claude Code CLI where a CLI runs)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from e2e_support import CALC_AFTER, CALC_BEFORE, CALC_PATH, CALC_QUOTE, comment, run_review
from fake_api import FakeMessagesAPI, Reply, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write

BASE_SETTINGS = "fail_on: high\nmax_cost: 5\n"
HIGH = comment(content="add() subtracts.", severity="high", suggestion=None)


def _evil(repo: Path, marker: Path) -> None:
    """A program a pull request commits: it leaves `marker` when run, and passes for a Claude Code CLI."""
    script = write(repo, "tools/evil.sh", f"#!/bin/sh\necho ran > '{marker}'\necho '2.1.999 (Claude Code)'\n")
    script.chmod(0o755)


def _pull_request(tmp_path: Path, pr_settings: str, marker: Path) -> Path:
    """main: calc.py and the base's settings; branch pr (checked out): the bug, tools/evil.sh, its own settings."""
    repo = make_repo(tmp_path / "repo")
    write(repo, CALC_PATH, CALC_BEFORE)
    write(repo, ".ocr-hook.yaml", BASE_SETTINGS)
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "pr")
    write(repo, CALC_PATH, CALC_AFTER)
    _evil(repo, marker)
    write(repo, ".ocr-hook.yaml", pr_settings)
    commit_all(repo, "the pull request")
    return repo


def _script_high(fake: FakeMessagesAPI) -> None:
    fake.script(CALC_QUOTE, [Reply([tool_use("code_comment", {"comments": [HIGH]}),
                                    tool_use("task_done", {"state": "DONE"})])])


PR_SETTINGS = {
    "its own program": "provider: claude-code\nclaude_code_path: tools/evil.sh\n",
    "a lower gate": ("fail_on: never\nexclude: ['*']\nmax_cost: 0.000001\non_error: warn\n"
                     "pricing:\n  claude-sonnet-4-6: {input: 0, output: 0, cache_write: 0, cache_read: 0}\n"),
}


@pytest.mark.parametrize("what", list(PR_SETTINGS))
def test_a_pull_request_meets_the_gate_and_provider_of_its_base(what: str, tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                sdk_env: dict[str, str]) -> None:
    marker = tmp_path / "evil-ran"
    repo = _pull_request(tmp_path, PR_SETTINGS[what], marker)
    _script_high(fake_api)

    run = run_review(repo, {**sdk_env, "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-ci-secret"}, tmp_path / "out",
                     "--base", "main", "--no-review-filter")

    assert not marker.exists(), "the pull request's program ran"
    assert run.code == 1, run.proc.stdout + run.proc.stderr
    assert [f["message"] for f in run.report["findings"]] == [HIGH["content"]]
    assert run.report["fail_on"] == "high" and run.report["status"] == "complete"
    assert CALC_PATH in run.report["coverage"]["reviewed"]
    assert any(r.path.endswith("/v1/messages") for r in fake_api.requests)  # the base's provider: the API
    note = next(n for n in run.report["notes"] if n.startswith("this change edits .ocr-hook.yaml"))
    assert "its version at the trusted revision" in note and "apply once merged" in note
    assert "this change edits .ocr-hook.yaml" in run.proc.stdout


def test_every_review_of_a_range_reads_the_settings_at_its_trusted_revision(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = _pull_request(tmp_path, PR_SETTINGS["a lower gate"], tmp_path / "unused")
    main = git(repo, "rev-parse", "main").strip()
    _script_high(fake_api)
    scopes: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
        "--commit": (("--commit", "HEAD"), {}),
        "--from/--to": (("--from", "main", "--to", "HEAD"), {}),
        "--push (pre-commit)": (("--push",), {"PRE_COMMIT": "1", "PRE_COMMIT_FROM_REF": main,
                                              "PRE_COMMIT_TO_REF": "HEAD"}),
        "--base auto (GitLab CI)": (("--base", "auto"), {"GITLAB_CI": "true",
                                                         "CI_MERGE_REQUEST_DIFF_BASE_SHA": main}),
    }
    for name, (args, extra) in scopes.items():
        run = run_review(repo, {**sdk_env, **extra}, tmp_path / name.replace(" ", "_").replace("/", "_"),
                         "--no-review-filter", *args)
        assert run.code == 1 and run.report["fail_on"] == "high", (name, run.proc.stdout + run.proc.stderr)
        assert CALC_PATH in run.report["coverage"]["reviewed"], name


def test_the_repository_file_never_names_the_program_to_run_even_in_the_work_tree(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    """The staged side keeps the work tree's settings, but never its claude_code_path (or cache_dir)."""
    marker = tmp_path / "evil-ran"
    repo = make_repo(tmp_path / "repo")
    _evil(repo, marker)
    write(repo, ".ocr-hook.yaml", "provider: claude-code\nclaude_code_path: tools/evil.sh\n")
    env = {**sdk_env, "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-test", "HOME": str(tmp_path / "home")}
    proc = run_cli(repo, "doctor", "--format", "json", env=env)
    assert not marker.exists(), "the repository's program ran"
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert "evil" not in json.dumps(checks["claude-code"])


def test_a_staged_review_keeps_the_work_trees_settings(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                       sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, CALC_PATH, CALC_BEFORE)
    write(repo, ".ocr-hook.yaml", BASE_SETTINGS)
    commit_all(repo, "base")
    write(repo, CALC_PATH, CALC_AFTER)
    write(repo, ".ocr-hook.yaml", "fail_on: critical\n")  # the committer's own choice
    git(repo, "add", CALC_PATH)
    _script_high(fake_api)
    run = run_review(repo, sdk_env, tmp_path / "out", "--no-review-filter")
    assert run.code == 0 and run.report["fail_on"] == "critical", run.proc.stdout + run.proc.stderr
    assert len(run.report["findings"]) == 1


def test_a_scan_does_not_say_the_settings_moved(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                sdk_env: dict[str, str]) -> None:
    """Issue 55 item 10 / issue 54 item 9: a scan changes nothing, so no note says the settings file changed."""
    repo = make_repo(tmp_path / "repo")
    write(repo, CALC_PATH, CALC_AFTER)
    write(repo, "REVIEW.md", "Check the arithmetic.\n")
    write(repo, ".ocr-hook.yaml", BASE_SETTINGS)
    commit_all(repo, "base")
    proc = run_cli(repo, "scan", "--no-cache", "--format", "json", env=sdk_env)
    assert proc.returncode in (0, 1), proc.stderr
    notes = json.loads(proc.stdout)["notes"]
    assert not [n for n in notes if ".ocr-hook.yaml" in n or "REVIEW.md" in n], notes


def _bundled_claude() -> str:
    from ocr_hook.agent.claude_code import cli_path

    return cli_path(None)


@pytest.mark.parametrize("given", ["config", "variable"])
def test_a_relative_claude_code_path_is_resolved_where_it_was_given(given: str, tmp_path: Path) -> None:
    """Issue 52 item 6: the CLI runs from a temporary directory, so a path relative to where it was given must
    be made absolute once, not looked up again from there."""
    wrapper = write(tmp_path / "tools", "bin/claude", f"#!/bin/sh\nexec '{_bundled_claude()}' \"$@\"\n")
    wrapper.chmod(0o755)
    repo = make_repo(tmp_path / "repo")
    write(repo, CALC_PATH, CALC_BEFORE)
    commit_all(repo, "base")
    write(repo, CALC_PATH, CALC_AFTER)
    git(repo, "add", CALC_PATH)
    with FakeMessagesAPI() as fake:
        _script_high(fake)
        env = {"HOME": str(tmp_path / "home"), "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "",
               "ANTHROPIC_AUTH_TOKEN": "", "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-test",
               "XDG_CACHE_HOME": str(tmp_path / "cache"), "OCR_HOOK_PROVIDER": "claude-code", "PRE_COMMIT": "1"}
        args: tuple[str, ...] = ()
        if given == "config":  # relative to the config file's directory
            write(tmp_path / "tools", "ocr.yaml", "claude_code_path: bin/claude\n")
            args = ("--config", os.path.relpath(tmp_path / "tools" / "ocr.yaml", repo))
        else:  # relative to the directory the command runs in
            env["OCR_HOOK_CLAUDE_CODE_PATH"] = os.path.relpath(wrapper, repo)
        run = run_review(repo, env, tmp_path / "out", "--no-review-filter", *args)
    assert run.code == 1, run.proc.stdout + run.proc.stderr
    assert [f["message"] for f in run.report["findings"]] == [HIGH["content"]]
