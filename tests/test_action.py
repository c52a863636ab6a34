"""The GitHub Action (action.yml + action/run.sh), outside GitHub.

Its metadata and every workflow that uses it (tests/workflows/, the docs' recipes) pass
SchemaStore's schemas (check-jsonschema's vendored copies, no network) and actionlint; its script
passes shellcheck. The script then runs as the composite step would: the environment action.yml maps
from its inputs, a simulated runner (event payload, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, RUNNER_TEMP)
and a shallow checkout of a pull request's merge commit, installing ocr-hook from this checkout and
reviewing against the fake Messages API through the real SDK, and publishing the pull-request review
and the SARIF upload to the fake GitHub REST API (tests/fake_github.py) at GITHUB_API_URL.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from agent_support import filter_keeps_all, is_filter
from ci_repos import FEATURE_FILES, Forked, ci_free_env, forked_history
from e2e_support import comment, comment_turn
from fake_api import FakeMessagesAPI
from fake_github import FakeGitHub
from gitrepo import git
from validators import validate_sarif

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
WORKFLOWS = sorted((ROOT / "tests" / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent  # the test extra's console scripts live next to the interpreter


def tool(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[test]'"
    return found


def action() -> dict[str, Any]:
    return yaml.safe_load(ACTION.read_text(encoding="utf-8"))


# The pages whose GitHub workflows (a ```yaml block with `jobs:` and `runs-on:`) are checked, and how many
# each holds: a recipe that goes missing fails the test.
WORKFLOW_PAGES = {"docs/recipes/github.md": 3, "docs/recipes/gitea.md": 1, "docs/recipes/reviewdog.md": 1,
                  "docs/scan.md": 1, "docs/claude-code.md": 1, "docs/index.md": 1}


def _workflows(page: Path) -> list[str]:
    blocks = re.findall(r"```ya?ml\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    return [b for b in blocks if re.search(r"^jobs:", b, re.M) and "runs-on:" in b]


def docs_workflows() -> list[str]:
    """Every GitHub workflow in the pages of docs/: a page that gains one must be listed above."""
    holding = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md") if _workflows(p)}
    assert holding == set(WORKFLOW_PAGES), holding ^ set(WORKFLOW_PAGES)
    found = []
    for page, count in WORKFLOW_PAGES.items():
        workflows = _workflows(ROOT / page)
        assert len(workflows) == count, f"{page}: {len(workflows)} workflows, expected {count}"
        found += workflows
    return found


# --- metadata and workflows --------------------------------------------------------------------------


# A proxy that refuses every connection: a schema check that tried to download anything would fail.
NO_NETWORK = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}


def schema_check(schema: str, *paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool("check-jsonschema"), "--builtin-schema", schema, *map(str, paths)],
                          capture_output=True, text=True, timeout=120, env={**ci_free_env(), **NO_NETWORK})


def test_action_metadata_passes_the_schemastore_schema() -> None:
    proc = schema_check("vendor.github-actions", ACTION)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_schema_check_is_offline_and_can_fail(tmp_path: Path) -> None:
    # The schemas ship inside the wheel (schema_check runs with a proxy that refuses everything); the
    # same check fails on a broken copy.
    import check_jsonschema

    vendored = Path(check_jsonschema.__file__).parent / "builtin_schemas" / "vendor"
    assert (vendored / "github-actions.json").is_file() and (vendored / "github-workflows.json").is_file()
    broken = action()
    broken["runs"]["using"] = "kubernetes"
    bad = tmp_path / "action.yml"
    bad.write_text(yaml.safe_dump(broken), encoding="utf-8")
    assert schema_check("vendor.github-actions", bad).returncode == 1


def test_inputs_and_outputs_of_the_contract() -> None:
    meta = action()
    assert {"anthropic-api-key", "base", "fail-on", "max-cost", "timeout", "model", "effort", "args", "upload-sarif",
            "sarif-category", "require-key", "cache", "pr-review", "github-token"} <= set(meta["inputs"])
    assert meta["inputs"]["base"]["default"] == "auto"
    assert meta["inputs"]["upload-sarif"]["default"] == "auto"
    assert meta["inputs"]["pr-review"]["default"] == "true"
    assert meta["inputs"]["github-token"]["default"] == "${{ github.token }}"
    assert meta["inputs"]["require-key"]["default"] == "false"
    assert set(meta["outputs"]) == {"exit-code", "status", "findings", "sarif-file"}
    text_ = ACTION.read_text(encoding="utf-8")
    for name in meta["inputs"]:
        assert f"inputs.{name}" in text_, f"input {name} is declared but never used"
    steps = meta["runs"]["steps"]
    assert meta["runs"]["using"] == "composite"
    upload = next(s for s in steps if s.get("id") == "upload")
    assert upload["if"].startswith("always()")  # uploaded also when the gate fails
    assert "inputs.upload-sarif != 'false'" in upload["if"]
    assert [s["id"] for s in steps if s.get("id") in ("review", "upload")] == ["review", "upload"]
    assert steps[-1]["if"] == "always()" and "OCR_ACTION_EXIT_CODE" in steps[-1]["run"]  # the gate comes last
    # the cache (review memory and the history `ocr-hook outcomes` reads) is saved also when the gate fails, and a
    # re-run saves its own (actions/cache saves only after a job that succeeded, and never under a key it found)
    [restore] = [s for s in steps if str(s.get("uses", "")).startswith("actions/cache/restore@")]
    [save] = [s for s in steps if str(s.get("uses", "")).startswith("actions/cache/save@")]
    assert save["if"].startswith("always()") and steps.index(restore) < steps.index(save) < len(steps) - 1
    assert save["with"]["key"] == restore["with"]["key"] and "github.run_attempt" in save["with"]["key"]
    assert save["with"]["path"] == restore["with"]["path"]


def lint_project(tmp_path: Path, workflows: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """actionlint checks `uses: ./` against action.yml only for workflows under a project's
    .github/workflows, so the workflows are linted inside a scratch project holding this action.yml."""
    project = tmp_path / "project"
    (project / ".github" / "workflows").mkdir(parents=True)
    git(project, "init", "-q")
    shutil.copy(ACTION, project / "action.yml")
    for name, body in workflows.items():
        (project / ".github" / "workflows" / name).write_text(body, encoding="utf-8")
    return subprocess.run([tool("actionlint"), "-shellcheck", tool("shellcheck"), "-no-color"], cwd=project,
                          capture_output=True, text=True, timeout=120)


def test_sample_workflows_pass_the_schema_and_actionlint(tmp_path: Path) -> None:
    assert WORKFLOWS
    proc = schema_check("vendor.github-workflows", *WORKFLOWS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert all("uses: ./" in p.read_text(encoding="utf-8") for p in WORKFLOWS)
    lint = lint_project(tmp_path, {p.name: p.read_text(encoding="utf-8") for p in WORKFLOWS})
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_actionlint_catches_an_unknown_input(tmp_path: Path) -> None:
    body = WORKFLOWS[0].read_text(encoding="utf-8").replace("fail-on:", "fail-onn:")
    lint = lint_project(tmp_path, {"bad.yml": body})
    assert lint.returncode == 1 and 'input "fail-onn" is not defined' in lint.stdout, lint.stdout


def test_docs_workflows_pass_the_schema_and_actionlint(tmp_path: Path) -> None:
    snippets = docs_workflows()
    assert len(snippets) >= 2  # the Action's minimal workflow and the reviewdog/plain recipes
    files = []
    for i, body in enumerate(snippets):
        path = tmp_path / f"docs-{i}.yml"
        path.write_text(body, encoding="utf-8")
        files.append(path)
    proc = schema_check("vendor.github-workflows", *files)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The docs name the action by its published name; point it at this checkout so that actionlint
    # checks the snippets' inputs against action.yml.
    local = {p.name: re.sub(r"uses: [\w.-]+/ocr-hook@[\w.-]+", "uses: ./", p.read_text(encoding="utf-8"))
             for p in files}
    assert any("uses: ./" in body for body in local.values())
    lint = lint_project(tmp_path, local)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_run_script_passes_shellcheck() -> None:
    proc = subprocess.run([tool("shellcheck"), "--severity=style", str(ROOT / "action" / "run.sh")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout


# --- the script on a simulated runner --------------------------------------------------------------------

_INPUT_EXPR = re.compile(r"^\$\{\{\s*inputs\.([a-z-]+)\s*\}\}$")
_OUTPUT_EXPR = re.compile(r"^\$\{\{\s*steps\.review\.outputs\.([a-z-]+)\s*\}\}$")
_CACHE_EXPR = "${{ inputs.cache == 'true' && format('{0}/ocr-hook-cache', runner.temp) || '' }}"
GITHUB_TOKEN = "ghs_simulatedRunnerToken0123456789abcd"  # what ${{ github.token }} gives the simulated job


def step_env(inputs: dict[str, str], runner_temp: Path, step_id: str = "review",
             outputs: dict[str, str] | None = None) -> dict[str, str]:
    """A step's env exactly as action.yml maps it, with the given inputs over the defaults (and, for the
    steps after the review, the review step's outputs)."""
    meta = action()
    values = {name: str(spec.get("default", "")) for name, spec in meta["inputs"].items()}
    values = {name: GITHUB_TOKEN if v == "${{ github.token }}" else v for name, v in values.items()}
    unknown = set(inputs) - set(values)
    assert not unknown, f"not inputs of action.yml: {unknown}"
    values.update(inputs)
    step = next(s for s in meta["runs"]["steps"] if s.get("id") == step_id)
    assert step["run"] == 'bash "$GITHUB_ACTION_PATH/action/run.sh"' + (" upload-sarif" if step_id == "upload" else "")
    env: dict[str, str] = {}
    for name, expr in step["env"].items():
        if match := _INPUT_EXPR.match(expr):
            env[name] = values[match.group(1)]
        elif (match := _OUTPUT_EXPR.match(expr)) and outputs is not None:
            env[name] = outputs[match.group(1)]
        elif expr == _CACHE_EXPR:
            env[name] = f"{runner_temp}/ocr-hook-cache" if values["cache"] == "true" else ""
        elif expr == "${{ steps.python.outputs.python-path }}":
            env[name] = sys.executable  # what actions/setup-python reports
        else:
            raise AssertionError(f"the test does not know how to evaluate {name}: {expr}")
    return env


def gate(exit_code: str) -> int:
    """action.yml's last step, run as the runner would."""
    step = action()["runs"]["steps"][-1]
    return subprocess.run(["bash", "-c", step["run"]], env={**ci_free_env(), "OCR_ACTION_EXIT_CODE": exit_code},
                          timeout=30).returncode


def pull_request_event(forked: Forked, merge: str, head_repo: str = "octo/app") -> dict[str, Any]:
    """The parts of GitHub's pull_request payload the action and ocr-hook read."""
    base_repo = {"full_name": "octo/app", "name": "app", "fork": False, "owner": {"login": "octo"}}
    head = {"full_name": head_repo, "name": "app", "fork": head_repo != "octo/app",
            "owner": {"login": head_repo.split("/")[0]}}
    return {
        "action": "synchronize",
        "number": 1,
        "pull_request": {
            "number": 1,
            "merge_commit_sha": merge,
            "head": {"ref": "feature", "sha": forked.feature_tip, "repo": head},
            "base": {"ref": "main", "sha": forked.main_tip, "repo": base_repo},
        },
        "repository": base_repo,
        "sender": {"login": head["owner"]["login"]},
    }


class Runner:
    """A simulated GitHub runner for one job: a shallow checkout of refs/pull/1/merge (what
    actions/checkout does by default for pull_request events) and the files the runner provides."""

    def __init__(self, tmp_path: Path, forked: Forked, github: FakeGitHub, pip_cache: Path,
                 tool_cache: Path) -> None:
        self.pip_cache = pip_cache
        self.tool_cache = tool_cache  # RUNNER_TOOL_CACHE
        self.github = github  # GITHUB_API_URL: nothing set up there answers 404, as for an unknown pull request
        github.tokens[GITHUB_TOKEN] = "write"
        work = forked.work
        git(work, "checkout", "-q", "--detach", forked.main_tip)
        git(work, "merge", "-q", "--no-ff", "--no-edit", "feature")
        self.merge = git(work, "rev-parse", "HEAD").strip()
        git(work, "push", "-q", str(forked.origin), f"{self.merge}:refs/pull/1/merge",
            f"{forked.feature_tip}:refs/pull/1/head")
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        git(self.workspace, "init", "-q")
        git(self.workspace, "remote", "add", "origin", forked.origin.as_uri())
        git(self.workspace, "fetch", "-q", "--no-tags", "--depth=1", "origin",
            "+refs/pull/1/merge:refs/remotes/pull/1/merge")
        git(self.workspace, "checkout", "-q", "--detach", "refs/remotes/pull/1/merge")
        self.temp = tmp_path / "runner-temp"
        self.temp.mkdir()
        self.output = tmp_path / "github_output"
        self.summary = tmp_path / "step_summary"
        self.event = tmp_path / "event.json"
        self.forked = forked

    def run(self, inputs: dict[str, str], sdk: dict[str, str], *, head_repo: str = "octo/app",
            key: bool = True, push: bool = False) -> subprocess.CompletedProcess[str]:
        if push:
            # A push event: the checkout is the pushed branch's tip, `before` its previous tip.
            event = {"ref": "refs/heads/feature", "before": self.forked.feature_first,
                     "after": self.forked.feature_tip, "repository": {"full_name": "octo/app"}}
            git(self.workspace, "fetch", "-q", "--no-tags", "--depth=1", "origin",
                "+refs/heads/feature:refs/remotes/origin/feature")
            git(self.workspace, "checkout", "-q", "--detach", "refs/remotes/origin/feature")
            names = {"GITHUB_EVENT_NAME": "push", "GITHUB_BASE_REF": "", "GITHUB_HEAD_REF": "",
                     "GITHUB_REF": "refs/heads/feature", "GITHUB_SHA": self.forked.feature_tip}
        else:
            event = pull_request_event(self.forked, self.merge, head_repo)
            names = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_BASE_REF": "main", "GITHUB_HEAD_REF": "feature",
                     "GITHUB_REF": "refs/pull/1/merge", "GITHUB_SHA": self.merge}
        self.event.write_text(json.dumps(event), encoding="utf-8")
        env = ci_free_env(
            **names, GITHUB_ACTIONS="true", CI="true", GITHUB_EVENT_PATH=str(self.event),
            GITHUB_REPOSITORY="octo/app", GITHUB_ACTOR="octo", GITHUB_API_URL=self.github.url,
            GITHUB_WORKSPACE=str(self.workspace), GITHUB_ACTION_PATH=str(ROOT), GITHUB_OUTPUT=str(self.output),
            GITHUB_STEP_SUMMARY=str(self.summary), RUNNER_TEMP=str(self.temp), RUNNER_TOOL_CACHE=str(self.tool_cache),
            ANTHROPIC_BASE_URL=sdk["ANTHROPIC_BASE_URL"], NO_PROXY=sdk.get("NO_PROXY", ""),
            PIP_CACHE_DIR=str(self.pip_cache),
        )
        for name in [n for n in env if n.startswith("ANTHROPIC_") and n != "ANTHROPIC_BASE_URL"]:
            del env[name]
        self.job_env = dict(env)
        # The key reaches the script only as the input (a secret), as in the docs' workflows.
        env.update(step_env({"anthropic-api-key": sdk["ANTHROPIC_API_KEY"] if key else "", **inputs}, self.temp))
        return subprocess.run(["bash", str(ROOT / "action" / "run.sh")], cwd=self.workspace, env=env,
                              capture_output=True, text=True, timeout=300)

    def upload(self, inputs: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """action.yml's upload step after `run`, with the review step's outputs."""
        env = {**self.job_env, **step_env(inputs, self.temp, "upload", self.outputs())}
        step = next(s for s in action()["runs"]["steps"] if s.get("id") == "upload")
        return subprocess.run(["bash", "-c", step["run"]], cwd=self.workspace, env=env, capture_output=True,
                              text=True, timeout=120)

    def outputs(self) -> dict[str, str]:
        lines = self.output.read_text(encoding="utf-8").splitlines() if self.output.exists() else []
        return dict(line.split("=", 1) for line in lines)


@pytest.fixture(scope="module")
def pip_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pip cache for the module's installs, made empty for this run: the dependencies are downloaded once."""
    return tmp_path_factory.mktemp("pip-cache")


@pytest.fixture(scope="module")
def tool_cache(tmp_path_factory: pytest.TempPathFactory, pip_cache: Path) -> Path:
    """The runners' RUNNER_TOOL_CACHE, as a self-hosted runner keeps it between jobs: a first job of the
    action (a push, no key: it installs, then the review stops for the key) installs ocr-hook into it,
    and the module's other runs reuse that install. test_a_locked_tool_cache_gets_an_install_of_its_own
    installs from scratch again."""
    root = tmp_path_factory.mktemp("first-job")
    cache = root / "tool-cache"
    cache.mkdir()
    with FakeGitHub() as github:
        first = Runner(root, forked_history(root / "history"), github, pip_cache, cache)
        proc = first.run({}, {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}, key=False, push=True)
    assert proc.returncode == 0 and "Reusing the install" not in proc.stdout, proc.stdout + proc.stderr
    installed = installed_from(cache)
    assert (first.temp / "ocr-hook" / "venv").resolve() == installed.resolve()
    assert not (installed.parent / f"{installed.name}.lock").exists()
    return cache


def installed_from(cache: Path) -> Path:
    [complete] = (cache / "ocr-hook").glob("*.complete")
    return complete.with_suffix("")


def assert_reused(runner: Runner, proc: subprocess.CompletedProcess[str]) -> None:
    """The run used the tool cache's install: no second install of the same sources."""
    installed = installed_from(runner.tool_cache)
    assert f"Reusing the install in {installed}" in proc.stdout, proc.stdout
    assert (runner.temp / "ocr-hook" / "venv").resolve() == installed.resolve()


def assert_not_installed(runner: Runner, proc: subprocess.CompletedProcess[str]) -> None:
    assert "Installing ocr-hook" not in proc.stdout, proc.stdout
    assert not (runner.temp / "ocr-hook" / "venv").exists()


@pytest.fixture
def runner(tmp_path: Path, pip_cache: Path, tool_cache: Path) -> Iterator[Runner]:
    with FakeGitHub() as github:
        yield Runner(tmp_path, forked_history(tmp_path / "history"), github, pip_cache, tool_cache)


def test_pull_request_review_in_a_shallow_checkout(runner: Runner, fake_api: FakeMessagesAPI,
                                                   sdk_env: dict[str, str]) -> None:
    filter_keeps_all(fake_api)
    fake_api.script("def api():", [comment_turn(comment(
        "api() returns a constant string.", code="return 'api'", severity="high", suggestion="    return API"))])
    assert git(runner.workspace, "rev-parse", "--is-shallow-repository").strip() == "true"

    fake_api.models.register("claude-sonnet-5-5")
    proc = runner.run({"fail-on": "high", "max-cost": "2.50", "effort": "quick",
                       "args": "--concurrency 1 --no-review-filter"}, sdk_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # the gate is the last step, not the script
    assert_reused(runner, proc)
    assert "Traceback" not in proc.stderr
    out = runner.outputs()
    assert out["exit-code"] == "1" and out["status"] == "complete" and out["findings"] == "1", (out, proc.stderr)
    assert gate(out["exit-code"]) == 1

    # Annotations on standard output, the job summary, the SARIF file.
    assert re.search(r"^::error file=feature/api\.py,line=2[,:]", proc.stdout, re.M), proc.stdout
    summary = runner.summary.read_text(encoding="utf-8")
    assert "## ocr-hook review" in summary and "feature/api\\.py:2" in summary, summary
    sarif = Path(out["sarif-file"])
    assert sarif.parent == runner.temp / "ocr-hook"
    log = validate_sarif(sarif)
    assert [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]] \
        == [FEATURE_FILES[0]]

    # --base auto against origin/main (fetched by the script): exactly the pull request's files.
    report = json.loads((runner.temp / "ocr-hook" / "ocr-hook.json").read_text(encoding="utf-8"))
    assert sorted(report["coverage"]["reviewed"]) == FEATURE_FILES
    assert "GitHub Actions (pull request)" in report["scope"]
    assert git(runner.workspace, "rev-parse", "--is-shallow-repository").strip() == "false"
    # Inputs and `args` reached the command line; the cache input chose the result cache directory.
    assert not [r for r in fake_api.requests if is_filter(r.body)]  # --no-review-filter from `args`
    # The effort input: quick, although CI=true would make auto standard.
    assert set(report["coverage"]["effort"].values()) == {"quick"}
    assert all("thinking" not in r.body and r.body["output_config"] == {"effort": "low"} for r in fake_api.requests)
    assert any((runner.temp / "ocr-hook-cache").rglob("*"))
    # On a pull request the review reads what maintainers did with its threads (issue 53), with the token.
    reads = [r for r in runner.github.requests if r.path == "/graphql"]
    assert reads and {r.headers["authorization"] for r in reads} == {f"Bearer {GITHUB_TOKEN}"}


def test_fork_without_key_is_skipped_with_a_notice(runner: Runner, fake_api: FakeMessagesAPI,
                                                   sdk_env: dict[str, str]) -> None:
    proc = runner.run({}, sdk_env, head_repo="someone/app", key=False)
    assert proc.returncode == 0, proc.stderr
    assert runner.outputs() == {"exit-code": "0", "status": "skipped", "findings": "0", "sarif-file": ""}
    assert re.search(r"^::notice title=ocr-hook skipped::no API key: the pull request comes from the fork "
                     r"someone/app", proc.stdout, re.M), proc.stdout
    assert "skipped" in runner.summary.read_text(encoding="utf-8")
    assert gate("0") == 0
    assert_not_installed(runner, proc)
    assert fake_api.requests == []


def test_fork_without_key_fails_when_the_key_is_required(runner: Runner, fake_api: FakeMessagesAPI,
                                                         sdk_env: dict[str, str]) -> None:
    proc = runner.run({"require-key": "true"}, sdk_env, head_repo="someone/app", key=False)
    assert proc.returncode == 0, proc.stderr
    out = runner.outputs()
    assert (out["exit-code"], out["status"]) == ("2", "error")
    assert re.search(r"^::error title=ocr-hook::no API key", proc.stdout, re.M), proc.stdout
    assert gate(out["exit-code"]) == 2
    assert fake_api.requests == []


def _support() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("action_support", ROOT / "action" / "support.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_install_key_changes_with_the_installed_sources_only(tmp_path: Path) -> None:
    support = _support()
    copy = tmp_path / "action"
    copy.mkdir()
    for name in support.INSTALLED_SOURCES:
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, copy / name)
    key = support.install_key(str(copy))
    assert key == support.install_key(str(ROOT)) and key.startswith("0.1.0-py3.")
    (copy / "README.md").write_text("not part of the install\n", encoding="utf-8")
    (copy / "ocr_hook" / "__pycache__").mkdir(exist_ok=True)
    (copy / "ocr_hook" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert support.install_key(str(copy)) == key
    (copy / "ocr_hook" / "cli.py").write_text("# changed\n", encoding="utf-8")
    assert support.install_key(str(copy)) != key
    assert support.main(["install-key", str(tmp_path / "missing")]) == 2  # one line, no traceback: no tool cache


def test_who_gets_no_secrets(tmp_path: Path) -> None:
    support = _support()
    event = tmp_path / "event.json"

    def reason(payload: dict[str, Any], actor: str = "octo") -> str:
        event.write_text(json.dumps(payload), encoding="utf-8")
        return support.skip_reason({"GITHUB_EVENT_PATH": str(event), "GITHUB_ACTOR": actor})

    same = {"full_name": "octo/app", "fork": False}
    pr = {"pull_request": {"head": {"repo": same}, "base": {"repo": same}}, "repository": same}
    assert reason(pr) == ""
    assert reason(pr, actor="dependabot[bot]").startswith("the run was triggered by dependabot[bot]")
    fork = {"pull_request": {"head": {"repo": {"full_name": "x/app", "fork": True}}, "base": {"repo": same}}}
    assert "fork x/app" in reason(fork)
    deleted = {"pull_request": {"head": {"repo": None}, "base": {"repo": same}}}
    assert "(deleted)" in reason(deleted)
    assert reason({"before": "abc", "repository": same}) == ""  # a push is never a fork's


@pytest.mark.parametrize(("args", "words"), [("--on-error warn", ["--on-error", "warn"]),
                                             ("'src dir/' --fail-on low", ["src dir/", "--fail-on", "low"]),
                                             ("", [])])
def test_args_input_is_split_like_shell_words(args: str, words: list[str]) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "action" / "support.py"), "split-args", args],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0
    assert proc.stdout.split("\0")[:-1] == words


def test_unbalanced_args_input_is_refused() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "action" / "support.py"), "split-args", "--model 'x"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "not valid shell words" in proc.stderr


def test_bad_args_input_fails_before_installing(runner: Runner, fake_api: FakeMessagesAPI,
                                                 sdk_env: dict[str, str]) -> None:
    proc = runner.run({"args": "--model 'unclosed"}, sdk_env)
    assert proc.returncode == 0, proc.stderr
    out = runner.outputs()
    assert (out["exit-code"], out["status"], out["sarif-file"]) == ("2", "error", "")
    assert re.search(r"^::error title=ocr-hook::the args input is not valid shell words", proc.stdout, re.M)
    assert gate(out["exit-code"]) == 2
    assert_not_installed(runner, proc)


def test_push_event_review_in_a_shallow_checkout(runner: Runner, fake_api: FakeMessagesAPI,
                                                 sdk_env: dict[str, str]) -> None:
    proc = runner.run({"cache": "false", "upload-sarif": "false"}, sdk_env, push=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_reused(runner, proc)
    out = runner.outputs()
    assert (out["exit-code"], out["status"], out["findings"]) == ("0", "complete", "0"), (out, proc.stderr)
    assert gate(out["exit-code"]) == 0
    report = json.loads((runner.temp / "ocr-hook" / "ocr-hook.json").read_text(encoding="utf-8"))
    assert report["coverage"]["reviewed"] == FEATURE_FILES[1:]  # what the push added, after `before`
    assert "GitHub Actions (push)" in report["scope"]
    assert "PASSED" in runner.summary.read_text(encoding="utf-8")
    assert not (runner.temp / "ocr-hook-cache").exists()  # cache: false → --no-cache
    assert runner.github.requests == [] and "github-review" not in proc.stderr  # a pull-request review needs one


def test_a_locked_tool_cache_gets_an_install_of_its_own(runner: Runner, fake_api: FakeMessagesAPI,
                                                        sdk_env: dict[str, str], tmp_path: Path) -> None:
    """Another job installing into the tool cache (its .lock) is not waited for, nor written over."""
    key = installed_from(runner.tool_cache).name
    runner.tool_cache = tmp_path / "busy-tool-cache"
    lock = runner.tool_cache / "ocr-hook" / f"{key}.lock"
    lock.mkdir(parents=True)
    proc = runner.run({"cache": "false", "upload-sarif": "false"}, sdk_env, push=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"::notice title=ocr-hook::{lock} exists: another job is installing there" in proc.stdout, proc.stdout
    venv = runner.temp / "ocr-hook" / "venv"
    assert venv.is_dir() and not venv.is_symlink()
    assert sorted(p.name for p in (runner.tool_cache / "ocr-hook").iterdir()) == [lock.name]  # untouched
    out = runner.outputs()
    assert (out["exit-code"], out["status"]) == ("0", "complete"), (out, proc.stderr)


# --- the pull-request review and the SARIF upload (issue 23) -------------------------------------------------


def pull_request_files(forked: Forked) -> dict[str, str | None]:
    """The pull request's files as GitHub's pulls/files lists them: each file's hunks of base...head."""
    files: dict[str, str | None] = {}
    for path in FEATURE_FILES:
        diff = git(forked.work, "diff", f"{forked.main_tip}...{forked.feature_tip}", "--", path)
        files[path] = diff[diff.index("@@"):].rstrip("\n")
    return files


def test_pull_request_gets_a_review_and_the_sarif_is_uploaded(runner: Runner, fake_api: FakeMessagesAPI,
                                                              sdk_env: dict[str, str]) -> None:
    pull = runner.github.add_pull(1, runner.forked.feature_tip, pull_request_files(runner.forked))
    filter_keeps_all(fake_api)
    fake_api.script("def api():", [comment_turn(comment(
        "api() returns a constant string.", code="return 'api'", severity="high", suggestion="return API"))])

    proc = runner.run({"cache": "false"}, sdk_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_reused(runner, proc)
    out = runner.outputs()
    assert (out["exit-code"], out["findings"]) == ("1", "1"), (out, proc.stderr)
    assert "ocr-hook: github-review: published a review on octo/app#1: 1 inline comment(s)" in proc.stderr
    [review] = pull.reviews
    [inline] = [c for c in pull.comments if c["pull_request_review_id"] == review["id"]]
    assert (inline["path"], inline["line"], review["commit_id"]) == (FEATURE_FILES[0], 2, runner.forked.feature_tip)
    report = json.loads((runner.temp / "ocr-hook" / "ocr-hook.json").read_text(encoding="utf-8"))
    assert report["findings"][0]["fix"]["replacement"] == "    return API"
    assert inline["body"].endswith("```suggestion\n    return API\n```")
    assert "FAILED" in review["body"]

    upload = runner.upload({"upload-sarif": "true"})
    assert upload.returncode == 0, upload.stdout + upload.stderr
    [sent] = runner.github.sarif_uploads
    assert (sent["commit_sha"], sent["ref"]) == (runner.merge, "refs/pull/1/merge")
    run_ = sent["log"]["runs"][0]
    assert run_["automationDetails"]["id"] == "ocr-hook/"  # the sarif-category input, as codeql-action sets it
    assert [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run_["results"]] \
        == [FEATURE_FILES[0]]
    assert gate(out["exit-code"]) == 1
    # The token went to the GitHub fake only, in its Authorization header, and was printed nowhere.
    assert {r.headers["authorization"] for r in runner.github.requests} == {f"Bearer {GITHUB_TOKEN}"}
    assert all(GITHUB_TOKEN not in json.dumps(r.body) for r in fake_api.requests)
    for text_ in (proc.stdout, proc.stderr, upload.stdout, upload.stderr, runner.output.read_text(),
                  runner.summary.read_text()):
        assert GITHUB_TOKEN not in text_


def test_clean_review_without_code_scanning_ends_green_with_a_notice(runner: Runner, fake_api: FakeMessagesAPI,
                                                                     sdk_env: dict[str, str]) -> None:
    pull = runner.github.add_pull(1, runner.forked.feature_tip, pull_request_files(runner.forked))
    runner.github.code_scanning = "not-enabled"  # a private repository without GitHub Code Security

    proc = runner.run({"cache": "false", "args": "--no-review-filter"}, sdk_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_reused(runner, proc)
    out = runner.outputs()
    assert (out["exit-code"], out["status"], out["findings"]) == ("0", "complete", "0"), (out, proc.stderr)
    [review] = pull.reviews  # the verdict is on the pull request, with no comment
    assert "PASSED" in review["body"] and pull.comments == []

    upload = runner.upload({})  # upload-sarif: auto, the default
    assert upload.returncode == 0, upload.stdout + upload.stderr
    assert re.search(r"^::notice title=ocr-hook SARIF upload::SARIF not uploaded: code scanning is not available "
                     r"in this repository \(Code scanning is not enabled", upload.stdout, re.M), upload.stdout
    assert gate(out["exit-code"]) == 0  # green: the job's result is the review's verdict

    runner.github.code_scanning = "no-ghas"
    assert runner.upload({}).returncode == 0
    # `true` fails the job on the same answer; any other refusal fails `auto` too.
    strict = runner.upload({"upload-sarif": "true"})
    assert strict.returncode == 1 and "::error title=ocr-hook SARIF upload::" in strict.stdout
    runner.github.code_scanning = "enabled"
    runner.github.tokens[GITHUB_TOKEN] = "read"
    refused = runner.upload({})
    assert refused.returncode == 1, refused.stdout
    assert "SARIF upload failed: HTTP 403: Resource not accessible by integration" in refused.stdout
    assert runner.github.sarif_uploads == []


def test_pr_review_false_posts_nothing(runner: Runner, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    runner.github.add_pull(1, runner.forked.feature_tip, pull_request_files(runner.forked))
    proc = runner.run({"cache": "false", "pr-review": "false"}, sdk_env)
    assert proc.returncode == 0 and runner.outputs()["exit-code"] == "0", proc.stderr
    assert_reused(runner, proc)
    assert "github-review" not in proc.stderr
    assert runner.github.requests == []


def test_a_windows_runner_stops_at_once_with_one_line(tmp_path: Path) -> None:
    output = tmp_path / "output"
    env = ci_free_env(RUNNER_OS="Windows", GITHUB_ACTIONS="true", RUNNER_TEMP=str(tmp_path), GITHUB_OUTPUT=str(output),
                      GITHUB_ACTION_PATH=str(ROOT), INPUT_ANTHROPIC_API_KEY="sk-test")
    proc = subprocess.run(["bash", str(ROOT / "action" / "run.sh")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 1 and "Linux and macOS runners" in errors[0], proc.stdout
    out = dict(line.split("=", 1) for line in output.read_text(encoding="utf-8").splitlines())
    assert (out["exit-code"], out["status"]) == ("2", "error") and gate(out["exit-code"]) == 2
    assert not (tmp_path / "ocr-hook" / "venv").exists()  # stopped before installing anything


def test_the_repository_workflow_passes_the_schema_and_actionlint(tmp_path: Path) -> None:
    """The matrix that runs the README's test command on Linux, macOS and Windows (.github/workflows)."""
    workflow = ROOT / ".github" / "workflows" / "test.yml"
    proc = schema_check("vendor.github-workflows", workflow)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    body = workflow.read_text(encoding="utf-8")
    assert all(f"runs-on: {os_}-latest" in body for os_ in ("ubuntu", "macos", "windows"))
    lint = lint_project(tmp_path, {"test.yml": body})
    assert lint.returncode == 0, lint.stdout + lint.stderr
