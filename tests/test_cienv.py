"""`--base auto`: each CI system's variables on a real clone whose base branch moved on after the
feature forked; the preview must list exactly the feature's files (never the base's later changes).

Detection is also checked as the pure function it is (a dict in, a Guess out) for the edge cases
the clone runs do not reach.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ci_repos import FEATURE_FILES, MAIN_ONLY, Forked, ci_clone, ci_free_env, forked_history, preview_json
from gitrepo import git

from ocr_hook import cienv
from ocr_hook.cienv import azure, buildkite, github, gitlab
from ocr_hook.errors import FatalError


@pytest.fixture
def forked(tmp_path: Path) -> Forked:
    return forked_history(tmp_path)


@pytest.fixture
def clone(forked: Forked, tmp_path: Path) -> Path:
    return ci_clone(forked, tmp_path / "clone")


def preview_doc(repo: Path, **variables: str) -> dict[str, Any]:
    proc = preview_json(repo, ci_free_env(**variables))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def one_line_error(repo: Path, **variables: str) -> str:
    proc = preview_json(repo, ci_free_env(**variables))
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ocr-hook: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


BRANCH_CASES = {
    "github-pull-request": ({"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request",
                             "GITHUB_BASE_REF": "main", "GITHUB_HEAD_REF": "feature"},
                            "GitHub Actions (pull request)", "GITHUB_BASE_REF=main"),
    "gitea-pull-request": ({"GITHUB_ACTIONS": "true", "GITEA_ACTIONS": "true", "GITHUB_BASE_REF": "main"},
                           "Gitea Actions (pull request)", "GITHUB_BASE_REF=main"),
    "forgejo-pull-request": ({"GITHUB_ACTIONS": "true", "GITEA_ACTIONS": "true", "FORGEJO_ACTIONS": "true",
                              "GITHUB_BASE_REF": "main"},
                             "Forgejo Actions (pull request)", "GITHUB_BASE_REF=main"),
    "gitlab-target-branch": ({"GITLAB_CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
                              "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"},
                             "GitLab CI (merge request)", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME=main"),
    "bitbucket": ({"BITBUCKET_BUILD_NUMBER": "12", "BITBUCKET_PR_ID": "3", "BITBUCKET_BRANCH": "feature",
                   "BITBUCKET_PR_DESTINATION_BRANCH": "main"},
                  "Bitbucket Pipelines (pull request)", "BITBUCKET_PR_DESTINATION_BRANCH=main"),
    "azure": ({"TF_BUILD": "True", "BUILD_REASON": "PullRequest",
               "SYSTEM_PULLREQUEST_TARGETBRANCH": "refs/heads/main"},
              "Azure Pipelines (pull request)", "SYSTEM_PULLREQUEST_TARGETBRANCH=refs/heads/main"),
    "jenkins": ({"JENKINS_URL": "http://jenkins.invalid/", "CHANGE_ID": "7", "CHANGE_TARGET": "main",
                 "BRANCH_NAME": "PR-7"},
                "Jenkins (change request)", "CHANGE_TARGET=main"),
    "buildkite": ({"BUILDKITE": "true", "BUILDKITE_PULL_REQUEST": "7", "BUILDKITE_BRANCH": "feature",
                   "BUILDKITE_PULL_REQUEST_BASE_BRANCH": "main"},
                  "Buildkite (pull request)", "BUILDKITE_PULL_REQUEST_BASE_BRANCH=main"),
}


@pytest.mark.parametrize("case", sorted(BRANCH_CASES))
def test_each_ci_reviews_exactly_the_feature_against_origin(clone: Path, forked: Forked, case: str) -> None:
    variables, ci_name, source = BRANCH_CASES[case]
    assert git(clone, "branch", "--list", "main").strip() == ""  # only origin/main: a CI clone
    doc = preview_doc(clone, **variables)
    assert doc["ci"] == {"name": ci_name, "base": "origin/main", "source": source}
    assert [f["path"] for f in doc["files"]] == FEATURE_FILES
    assert {f["status"] for f in doc["files"]} == {"added"}
    assert f"merge base {forked.fork_point[:12]}" in doc["scope"]


def test_gitlab_diff_base_sha_wins_over_the_branch(clone: Path, forked: Forked) -> None:
    doc = preview_doc(clone, CI_MERGE_REQUEST_DIFF_BASE_SHA=forked.feature_first,
                      CI_MERGE_REQUEST_TARGET_BRANCH_NAME="main")
    assert doc["ci"]["base"] == forked.feature_first
    assert [f["path"] for f in doc["files"]] == FEATURE_FILES[1:]


def test_text_preview_says_what_was_detected(clone: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "ocr_hook", "preview", "--base", "auto"], cwd=clone,
                          env=ci_free_env(CHANGE_TARGET="main"), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "--base auto detected Jenkins (change request): origin/main from CHANGE_TARGET=main" in proc.stdout
    assert MAIN_ONLY not in proc.stdout and all(p in proc.stdout for p in FEATURE_FILES)


def push_payload(path: Path, forked: Forked, before: str) -> Path:
    """The parts of GitHub's push webhook payload a workflow's GITHUB_EVENT_PATH file carries."""
    payload = {
        "ref": "refs/heads/feature",
        "before": before,
        "after": forked.feature_tip,
        "created": set(before) == {"0"},
        "deleted": False,
        "forced": False,
        "base_ref": None,
        "compare": f"https://github.com/octo/app/compare/{before[:12]}...{forked.feature_tip[:12]}",
        "commits": [{"id": forked.feature_tip, "message": "feature: util", "distinct": True,
                     "added": [FEATURE_FILES[1]], "removed": [], "modified": []}],
        "head_commit": {"id": forked.feature_tip, "message": "feature: util"},
        "repository": {"name": "app", "full_name": "octo/app", "default_branch": "main",
                       "owner": {"login": "octo"}},
        "pusher": {"name": "octo"},
        "sender": {"login": "octo", "type": "User"},
    }
    path.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    return path


def test_github_push_reviews_what_the_push_added(clone: Path, forked: Forked, tmp_path: Path) -> None:
    event = push_payload(tmp_path / "event.json", forked, before=forked.feature_first)
    doc = preview_doc(clone, GITHUB_ACTIONS="true", GITHUB_EVENT_NAME="push", GITHUB_EVENT_PATH=str(event),
                      GITHUB_REF="refs/heads/feature", GITHUB_BASE_REF="")
    assert doc["ci"] == {"name": "GitHub Actions (push)", "base": forked.feature_first,
                         "source": f"push event before={forked.feature_first[:12]}"}
    assert [f["path"] for f in doc["files"]] == FEATURE_FILES[1:]


def test_github_push_creating_a_branch_is_exit_2_with_a_hint(clone: Path, forked: Forked, tmp_path: Path) -> None:
    event = push_payload(tmp_path / "event.json", forked, before="0" * 40)
    line = one_line_error(clone, GITHUB_ACTIONS="true", GITHUB_EVENT_NAME="push", GITHUB_EVENT_PATH=str(event))
    assert "all zeros" in line and "--base origin/main" in line


def test_nothing_detected_is_exit_2_naming_what_was_looked_for(clone: Path) -> None:
    line = one_line_error(clone)
    for name in ("GITHUB_BASE_REF", "GITHUB_EVENT_PATH", "CI_MERGE_REQUEST_DIFF_BASE_SHA",
                 "CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "BITBUCKET_PR_DESTINATION_BRANCH",
                 "SYSTEM_PULLREQUEST_TARGETBRANCH", "CHANGE_TARGET", "BUILDKITE_PULL_REQUEST_BASE_BRANCH"):
        assert name in line
    assert "--base REF" in line


def test_buildkite_branch_build_is_not_a_pull_request(clone: Path) -> None:
    line = one_line_error(clone, BUILDKITE="true", BUILDKITE_PULL_REQUEST="false",
                          BUILDKITE_PULL_REQUEST_BASE_BRANCH="")
    assert "no pull/merge request base" in line


def test_local_branch_when_there_is_no_origin(forked: Forked) -> None:
    git(forked.work, "checkout", "-q", "feature")
    doc = preview_doc(forked.work, GITHUB_BASE_REF="main")
    assert doc["ci"]["base"] == "main"
    assert [f["path"] for f in doc["files"]] == FEATURE_FILES


def test_missing_base_branch_says_what_to_fetch(clone: Path) -> None:
    line = one_line_error(clone, CHANGE_TARGET="release")
    assert "neither 'origin/release' nor 'release'" in line and "git fetch origin release" in line


def test_shallow_single_branch_clone_gets_the_fetch_history_hint(forked: Forked, tmp_path: Path) -> None:
    shallow = ci_clone(forked, tmp_path / "shallow", depth=1, single_branch=True)
    line = one_line_error(shallow, GITHUB_ACTIONS="true", GITHUB_BASE_REF="main")
    assert "`fetch-depth: 0` in the actions/checkout step" in line


def test_shallow_clone_without_the_merge_base_gets_the_fetch_history_hint(forked: Forked, tmp_path: Path) -> None:
    shallow = ci_clone(forked, tmp_path / "shallow", depth=1)
    assert git(shallow, "rev-parse", "--verify", "origin/main").strip() == forked.main_tip
    line = one_line_error(shallow, BITBUCKET_BUILD_NUMBER="7", BITBUCKET_PR_DESTINATION_BRANCH="main")
    assert "shallow clone" in line and "`clone: depth: full` in bitbucket-pipelines.yml" in line
    assert "fetch-depth" not in line


def test_a_shallow_gitlab_clone_is_told_gitlab_s_own_setting(forked: Forked, tmp_path: Path) -> None:
    """Issue 54 item 10: GitLab's GIT_DEPTH: 0, not the fetch-depth of GitHub's actions/checkout."""
    shallow = ci_clone(forked, tmp_path / "shallow", depth=1)
    line = one_line_error(shallow, GITLAB_CI="true", CI="true", CI_PIPELINE_SOURCE="merge_request_event",
                          CI_MERGE_REQUEST_TARGET_BRANCH_NAME="main")
    assert "shallow clone" in line and "`GIT_DEPTH: 0` in the job's `variables:`" in line
    assert "fetch-depth" not in line and "actions/checkout" not in line


def test_a_branch_named_auto_is_still_reachable_by_its_full_name(forked: Forked) -> None:
    git(forked.work, "branch", "auto", forked.fork_point)
    git(forked.work, "checkout", "-q", "feature")
    proc = preview_json(forked.work, ci_free_env())
    assert proc.returncode == 2  # `auto` means detection
    proc = subprocess.run([sys.executable, "-m", "ocr_hook", "preview", "--base", "refs/heads/auto", "--format",
                           "json"], cwd=forked.work, env=ci_free_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [f["path"] for f in json.loads(proc.stdout)["files"]] == FEATURE_FILES


# --- detection as a pure function -------------------------------------------------------------------------


def test_detection_order_and_candidates() -> None:
    assert cienv.detect({"GITHUB_BASE_REF": "dev", "CHANGE_TARGET": "main"}).refs == ("origin/dev", "dev")
    assert gitlab.detect({"CI_MERGE_REQUEST_DIFF_BASE_SHA": "abc123", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"}
                         ) == cienv.Guess("GitLab CI (merge request)", ("abc123", "origin/main", "main"),
                                          "CI_MERGE_REQUEST_DIFF_BASE_SHA=abc123")
    assert gitlab.detect({"CI_MERGE_REQUEST_DIFF_BASE_SHA": "abc123"}).refs == ("abc123",)  # type: ignore[union-attr]


@pytest.mark.parametrize(("raw", "branch"), [("refs/heads/main", "main"), ("release/2.0", "release/2.0"),
                                             ("refs/heads/feature/x", "feature/x")])
def test_azure_strips_refs_heads(raw: str, branch: str) -> None:
    found = azure.detect({"SYSTEM_PULLREQUEST_TARGETBRANCH": raw})
    assert found is not None and found.refs == (f"origin/{branch}", branch)


@pytest.mark.parametrize("environ", [
    {"BUILDKITE_PULL_REQUEST": "false", "BUILDKITE_PULL_REQUEST_BASE_BRANCH": "main"},
    {"BUILDKITE_PULL_REQUEST": "false", "BUILDKITE_PULL_REQUEST_BASE_BRANCH": ""},
    {"BUILDKITE_PULL_REQUEST_BASE_BRANCH": "false"},
    {"BUILDKITE_PULL_REQUEST_BASE_BRANCH": "  "},
])
def test_buildkite_not_a_pull_request(environ: dict[str, str]) -> None:
    assert buildkite.detect(environ) is None


def test_github_push_payload_problems(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(FatalError, match="cannot read the push event payload"):
        github.detect({"GITHUB_EVENT_NAME": "push", "GITHUB_EVENT_PATH": str(bad)})
    bad.write_text(json.dumps({"ref": "refs/heads/x"}), encoding="utf-8")
    with pytest.raises(FatalError, match="no `before` commit"):
        github.detect({"GITHUB_EVENT_NAME": "push", "GITHUB_EVENT_PATH": str(bad)})
    # Other events (workflow_dispatch, schedule) name no base.
    assert github.detect({"GITHUB_EVENT_NAME": "schedule", "GITHUB_EVENT_PATH": str(bad)}) is None
    assert github.detect({"GITHUB_BASE_REF": ""}) is None


@pytest.mark.parametrize(("environ", "number"), [
    ({"GITHUB_ACTIONS": "true", "GITHUB_REF": "refs/pull/7/merge"}, "7"),
    ({"GITHUB_ACTIONS": "true", "GITHUB_REF": "refs/heads/main"}, None),
    ({"CI_MERGE_REQUEST_IID": "3"}, "3"),
    ({"BITBUCKET_PR_ID": "12"}, "12"),
    ({"SYSTEM_PULLREQUEST_PULLREQUESTID": "41"}, "41"),
    ({"CHANGE_ID": "5"}, "5"),
    ({"BUILDKITE_PULL_REQUEST": "false"}, None),
    ({"BUILDKITE_PULL_REQUEST": "9"}, "9"),
    ({}, None),
])
def test_the_request_number_each_ci_system_names(environ: dict[str, str], number: str | None) -> None:
    from ocr_hook.cienv import request_number

    assert request_number(environ) == number
