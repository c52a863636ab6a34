"""A sparse checkout keeps the repository's settings (issue 62.7): `git sparse-checkout set --no-cone '/src/*'`
leaves the root `.ocr-hook.yaml` out of the work tree, and a review there ran with no settings at all, so a file
they call sensitive was sent to the model. The index still holds the file (the next commit keeps it): the
settings are read from there; so is the team's dismissals file (`.ocr-hook/dismissed.yaml`), left out too.
One staged change in a real sparse checkout, the real CLI and SDK, the fake API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from agent_support import filter_keeps_all
from conftest import TEST_API_KEY
from fake_api import FakeMessagesAPI, Reply, task_done, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write

from ocr_hook.findings.model import fingerprint

SECRET_CODE = "SIGNING_KEY_MATERIAL = load_from_vault('prod')  # v2\n"
FINDING = {"content": "handler() returns a constant.", "existing_code": "return 2", "severity": "high",
           "category": "bug"}
DISMISSED = ("dismissed:\n"
             f"- fingerprint: {fingerprint('src/app.py', 'bug', 'return 2')}\n  path: src/app.py\n  category: bug\n"
             "  severity: high\n  message: handler() returns a constant.\n  reason: by design\n  on: 2026-12-01\n")


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as api:
        filter_keeps_all(api)
        api.script("def handler", [Reply([tool_use("code_comment", {"comments": [FINDING]})]), task_done()])
        yield api


@pytest.fixture(scope="module")
def run(fake: FakeMessagesAPI, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("home")
    env = {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": TEST_API_KEY, "ANTHROPIC_AUTH_TOKEN": "",
           "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), "NO_PROXY": "*", "no_proxy": "*"}
    repo = make_repo(tmp_path_factory.mktemp("sparse") / "repo")
    write(repo, ".ocr-hook.yaml", "sensitive:\n  - src/keys.py\n")
    write(repo, "src/keys.py", "SIGNING_KEY_MATERIAL = load_from_vault('prod')\n")
    write(repo, "src/app.py", "def handler():\n    return 1\n")
    write(repo, "docs/readme.md", "docs\n")
    write(repo, ".ocr-hook/dismissed.yaml", DISMISSED)  # the nested file the team's dismissals are kept in
    commit_all(repo, "base")
    git(repo, "sparse-checkout", "set", "--no-cone", "/src/*")
    assert not (repo / ".ocr-hook.yaml").exists() and not (repo / ".ocr-hook").exists()
    assert (repo / "src" / "app.py").exists()
    write(repo, "src/keys.py", SECRET_CODE)
    write(repo, "src/app.py", "def handler():\n    return 2\n")
    git(repo, "add", "src")
    seen = run_cli(repo, "preview", "--format", "json", env=env)  # what a review would do, as review reads it
    proc = run_cli(repo, "review", "--format", "json", env=env)
    return {"proc": proc, "report": json.loads(proc.stdout), "sent": list(fake.requests),
            "preview": {f["path"]: f for f in json.loads(seen.stdout)["files"]}}


def test_the_sensitive_file_is_never_sent(run: dict[str, Any]) -> None:
    assert run["proc"].returncode == 0, run["proc"].stdout + run["proc"].stderr
    assert run["sent"], "app.py was reviewed"
    assert not any("load_from_vault" in json.dumps(r.body) for r in run["sent"])
    skipped = {s["path"]: s["reason"] for s in run["report"]["coverage"]["skipped"]}
    assert "sensitive" in skipped.get("src/keys.py", ""), run["report"]["coverage"]
    assert run["report"]["coverage"]["reviewed"] == ["src/app.py"]


def test_the_report_says_where_the_settings_came_from(run: dict[str, Any]) -> None:
    assert ".ocr-hook.yaml read from the index: the sparse checkout leaves it out of the work tree" in \
        run["report"]["notes"], run["report"]["notes"]


def test_preview_reads_them_as_the_review_does(run: dict[str, Any]) -> None:
    assert run["preview"]["src/keys.py"]["action"] == "skip", run["preview"]
    assert "sensitive" in run["preview"]["src/keys.py"]["reason"]


def test_the_teams_dismissals_still_apply(run: dict[str, Any]) -> None:
    """The nested dismissals file is left out of the work tree too: the finding it dismisses does not block."""
    (finding,) = run["report"]["findings"]
    assert (finding["path"], finding["suppressed"]) == ("src/app.py", "dismissed"), finding
