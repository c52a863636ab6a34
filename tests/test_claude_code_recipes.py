"""docs/claude-code.md's recipes (issue 42), run as written: the GitHub Actions job's and the GitLab CI job's
`ocr-hook` lines in a real pull-request checkout (a bare `origin`, a feature branch) with the variables their
runners set and only CLAUDE_CODE_OAUTH_TOKEN as credential, through the real Claude Code CLI against the fake
Messages API; the pre-commit entry checked by pre-commit's own validator and its hook's command run under
PRE_COMMIT=1. Only the install lines (`pip install …`, pre-commit's build of the hook's environment, which would
fetch the 180 MB CLI) are not run: the test's environment is the install."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from agent_support import is_filter
from e2e_support import CALC_AFTER, CALC_BEFORE, CALC_LINE, CALC_PATH, CALC_QUOTE, comment
from fake_api import FakeMessagesAPI, Reply, text, tool_use
from gitrepo import commit_all, git, make_repo, write
from publish_support import ocr_hook, run_lines

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "claude-code.md"
TOKEN = "sk-ant-oat01-recipe"


def recipe(name: str) -> Any:
    match = re.search(rf"<!-- recipe: {name} -->\n```yaml\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert match, f"{PAGE.name} has no {name} recipe"
    return yaml.safe_load(match.group(1))


def _section_yaml(heading: str) -> str:
    page = PAGE.read_text(encoding="utf-8")
    section = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", page, re.S | re.M)
    assert section, heading
    [block] = re.findall(r"```yaml\n(.*?)```", section.group(1), re.S)
    return block


@pytest.fixture(scope="module")
def pull_request(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A checkout of a pull request's head (feature) whose target (main) is on `origin`; the fake model finds
    calc.py's subtraction, as a high finding."""
    base = tmp_path_factory.mktemp("claude-code-recipes")
    remote = base / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo = make_repo(base / "repo")
    write(repo, CALC_PATH, CALC_BEFORE)
    base_sha = commit_all(repo, "base")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, CALC_PATH, CALC_AFTER)
    commit_all(repo, "feature")
    return {"repo": repo, "base": base_sha, "home": base / "home"}


@pytest.fixture
def fake() -> Any:
    with FakeMessagesAPI() as api:
        high = comment(content="add() subtracts.", severity="high", suggestion=None)
        api.script(CALC_QUOTE, [Reply([tool_use("code_comment", {"comments": [high]}),
                                       tool_use("task_done", {"state": "DONE"})])])
        api.handle(is_filter, lambda body: Reply([text(json.dumps({"wrong": []}))]))
        yield api


def _runner_env(fake: FakeMessagesAPI, home: Path, runner: dict[str, str]) -> dict[str, str]:
    """What the runner sets, the job's own variables, and what points Claude Code at the fake (a fresh HOME, so
    no login of this machine's counts)."""
    return {**runner, "ANTHROPIC_BASE_URL": fake.url, "HOME": str(home)}


def _assert_through_claude_code(fake: FakeMessagesAPI) -> None:
    assert fake.requests, "nothing was reviewed"
    for request in fake.requests:
        assert request.headers["user-agent"].startswith("claude-cli/"), request.headers
        assert request.headers.get("authorization") == f"Bearer {TOKEN}"


def test_the_github_actions_job(pull_request: dict[str, Any], fake: FakeMessagesAPI) -> None:
    workflow = recipe("claude-code-github")
    assert workflow.get("on", workflow.get(True)) == "pull_request"  # YAML 1.1 reads a bare `on` as True
    steps = workflow["jobs"]["review"]["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0
    runner = {"GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_EVENT_NAME": "pull_request",
              "GITHUB_BASE_REF": "main", "GITHUB_HEAD_REF": "feature", "GITHUB_REPOSITORY": "octo/app"}
    results = []
    for step in (s for s in steps if "run" in s):
        env = _runner_env(fake, pull_request["home"], runner)
        for name, value in (step.get("env") or {}).items():
            env[name] = re.sub(r"\$\{\{\s*secrets\.CLAUDE_CODE_OAUTH_TOKEN\s*\}\}", TOKEN, str(value))
        results += run_lines([step["run"]], pull_request["repo"], env)
    [review] = results
    assert review.returncode == 1, review.stdout + review.stderr  # the job fails: the gate
    assert f"::error file={CALC_PATH},line={CALC_LINE}" in review.stdout, review.stdout
    _assert_through_claude_code(fake)


def test_the_gitlab_ci_job(pull_request: dict[str, Any], fake: FakeMessagesAPI) -> None:
    job = recipe("claude-code-gitlab")["ocr-hook"]
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert job["variables"]["GIT_DEPTH"] == 0
    runner = {"GITLAB_CI": "true", "CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
              "CI_MERGE_REQUEST_DIFF_BASE_SHA": pull_request["base"], "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
              "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "feature", "CLAUDE_CODE_OAUTH_TOKEN": TOKEN,
              **{k: str(v) for k, v in job["variables"].items()}}
    [review] = run_lines(job["script"], pull_request["repo"], _runner_env(fake, pull_request["home"], runner))
    assert review.returncode == 1, review.stdout + review.stderr
    report = pull_request["repo"] / job["artifacts"]["reports"]["codequality"]
    try:
        [entry] = json.loads(report.read_text(encoding="utf-8"))
    finally:
        report.unlink(missing_ok=True)  # the checkout stays as the other job found it
    assert (entry["location"]["path"], entry["location"]["lines"]["begin"]) == (CALC_PATH, CALC_LINE)
    assert job["artifacts"]["when"] == "always"  # the report is kept when the gate fails the job
    _assert_through_claude_code(fake)


def test_the_pre_commit_entry(pull_request: dict[str, Any], fake: FakeMessagesAPI, tmp_path: Path) -> None:
    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text(_section_yaml("Pre-commit"), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "validate-config", str(config)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [hook] = yaml.safe_load(config.read_text(encoding="utf-8"))["repos"][0]["hooks"]
    # the extra it names is this project's, and holds the Claude Agent SDK (which bundles the CLI)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert hook["additional_dependencies"] == [f"{project['name']}[claude-code]"]
    assert any(dep.startswith("claude-agent-sdk") for dep in project["optional-dependencies"]["claude-code"])
    # what pre-commit runs at commit time: the hook's entry and the recipe's args, in a repository with a change
    # staged, under PRE_COMMIT=1
    [declared] = [h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
                  if h["id"] == hook["id"]]
    repo = make_repo(tmp_path / "target")
    write(repo, CALC_PATH, CALC_BEFORE)
    commit_all(repo, "base")
    write(repo, CALC_PATH, CALC_AFTER)
    git(repo, "add", CALC_PATH)
    argv = [*shlex.split(declared["entry"]), *hook["args"]]
    assert argv[0] == "ocr-hook", declared["entry"]
    env = {"PRE_COMMIT": "1", "ANTHROPIC_BASE_URL": fake.url, "HOME": str(pull_request["home"]),
           "CLAUDE_CODE_OAUTH_TOKEN": TOKEN}
    commit = ocr_hook(repo, env, *argv[1:])
    assert commit.returncode == 1, commit.stdout + commit.stderr  # the commit is blocked
    assert CALC_PATH in commit.stdout + commit.stderr
    _assert_through_claude_code(fake)
