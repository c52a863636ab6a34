"""The documentation's publishing recipes (issue 29), run as written: the GitLab CI job and the Gitea Actions
workflow are read from their pages in docs/recipes/, and their command lines run in a real reviewed repository with the
variables those runners set, against the fake Messages API and the fake forge. Only the install line
(`pip install …`) is skipped: the test's environment is the install.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake_api import FakeMessagesAPI
from fake_gitea import FakeGitea
from fake_gitlab import FakeGitLab
from publish_support import NEW_NAME, OLD_NAME, PATH, Reviewed, messages_env, run_lines, script
from validators import validate_gitlab

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "fakeForgeToken0123456789abcdefABCDEF"


PAGES = {"gitlab-publish": "docs/recipes/gitlab.md", "gitea-publish": "docs/recipes/gitea.md",
         "gitlab-code-quality": "docs/recipes/gitlab.md"}


def recipe(name: str) -> Any:
    text = (ROOT / PAGES[name]).read_text(encoding="utf-8")
    match = re.search(rf"<!-- recipe: {name} -->\n```yaml\n(.*?)```", text, re.S)
    assert match, f"{PAGES[name]} has no {name} recipe"
    return yaml.safe_load(match.group(1))


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Reviewed:
    return Reviewed(tmp_path_factory.mktemp("publish-recipes"))


@pytest.fixture
def messages() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as fake:
        script(fake)
        yield fake


def test_the_gitlab_ci_job(case: Reviewed, messages: FakeMessagesAPI) -> None:
    job = recipe("gitlab-publish")["ocr-hook"]
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    with FakeGitLab() as gitlab:
        gitlab.tokens[TOKEN] = "write"
        mr = gitlab.add_mr(3, case.head, case.base, [
            {"old_path": PATH, "new_path": PATH, "diff": case.patch(PATH)},
            {"old_path": OLD_NAME, "new_path": NEW_NAME, "diff": case.patch(NEW_NAME), "renamed_file": True}])
        env = {**messages_env(messages), **{k: str(v) for k, v in job["variables"].items()},
               "GITLAB_CI": "true", "CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
               "CI_API_V4_URL": gitlab.api, "CI_PROJECT_ID": "42", "CI_PROJECT_PATH": "group/app",
               "CI_MERGE_REQUEST_IID": "3", "CI_MERGE_REQUEST_DIFF_BASE_SHA": case.base,
               "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main", "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "feature",
               "GITLAB_TOKEN": TOKEN, "CI_JOB_TOKEN": "job-token-not-for-notes"}
        [review] = run_lines(job["script"], case.repo, env)
        assert review.returncode == 1, review.stderr  # the job fails: the gate
        [publish] = run_lines(job["after_script"], case.repo, env)
        assert publish.returncode == 0 and "Traceback" not in publish.stderr
        listed = len(json.loads((case.repo / "ocr.json").read_text())["findings"]) - 4  # the recipe's own report
        assert f"published comments on group/app!3: 4 inline comment(s), {listed} finding(s) in the note" \
            in publish.stderr
        assert len([d for d in mr.discussions if d["notes"][0]["position"]]) == 4
        assert {r.headers.get("private-token") for r in gitlab.requests} == {TOKEN}


def test_the_gitlab_code_quality_job(case: Reviewed, messages: FakeMessagesAPI) -> None:
    """The README's CI-gate quickstart, as docs/recipes/gitlab.md has it: the gate fails the job and the
    report the job hands GitLab's widget is there, valid, at the changed lines."""
    job = recipe("gitlab-code-quality")["ocr-hook"]
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    env = {**messages_env(messages), **{k: str(v) for k, v in job["variables"].items()},
           "GITLAB_CI": "true", "CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
           "CI_MERGE_REQUEST_DIFF_BASE_SHA": case.base, "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"}
    [review] = run_lines(job["script"], case.repo, env)
    assert review.returncode == 1, review.stderr
    assert job["artifacts"]["when"] == "always"  # the report is kept although the gate failed the job
    report = case.repo / job["artifacts"]["reports"]["codequality"]
    entries = json.loads(report.read_text(encoding="utf-8"))
    validate_gitlab(entries)
    assert {e["location"]["path"] for e in entries} == {PATH, NEW_NAME}


def test_the_gitea_actions_workflow(case: Reviewed, messages: FakeMessagesAPI, tmp_path: Path) -> None:
    workflow = recipe("gitea-publish")
    assert workflow.get("on", workflow.get(True)) == "pull_request"  # YAML 1.1 reads a bare `on` as True
    steps = workflow["jobs"]["review"]["steps"]
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": 7, "pull_request": {"number": 7, "head": {"sha": case.head}}}))
    with FakeGitea() as gitea:
        gitea.tokens[TOKEN] = "write"
        pull = gitea.add_pull(7, case.head, case.unified)
        runner = {**messages_env(messages), "GITEA_ACTIONS": "true", "GITHUB_ACTIONS": "true", "CI": "true",
                  "GITHUB_REPOSITORY": "octo/app", "GITHUB_EVENT_NAME": "pull_request",
                  "GITHUB_EVENT_PATH": str(event), "GITHUB_BASE_REF": "main", "GITHUB_HEAD_REF": "feature",
                  "GITHUB_API_URL": gitea.api, "GITHUB_SERVER_URL": gitea.url, "GITHUB_TOKEN": "job-token"}
        secrets = {"ANTHROPIC_API_KEY": messages_env(messages)["ANTHROPIC_API_KEY"], "OCR_HOOK_TOKEN": TOKEN}
        results = []
        for step in steps:
            if "run" not in step:
                continue
            env = {**runner, **{k: _expand(v, secrets) for k, v in (step.get("env") or {}).items()}}
            results += run_lines([step["run"]], case.repo, env)
        review, publish = results
        assert review.returncode == 1, review.stderr
        assert publish.returncode == 0 and "Traceback" not in publish.stderr
        listed = len(json.loads((case.repo / "ocr.json").read_text())["findings"]) - 4
        assert f"published a review on octo/app#7: 4 inline comment(s), {listed} finding(s) in the body" \
            in publish.stderr
        assert pull.reviews[-1]["comments_count"] == 4
        assert {r.headers["authorization"] for r in gitea.requests} == {f"token {TOKEN}"}


def _expand(value: str, secrets: dict[str, str]) -> str:
    return re.sub(r"\$\{\{\s*secrets\.(\w+)\s*\}\}", lambda m: secrets[m.group(1)], str(value))
