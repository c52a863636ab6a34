"""`ocr-hook dismiss ID` without --from: the id is looked up in the last review's memory (ocr_hook.store.memory,
review memory of DESIGN.md section 7) in the same cache directory the review uses. Real repositories, the real CLI,
the real memory store on disk: the review records itself, the dismiss reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from agent_support import filter_keeps_all
from e2e_support import CALC_PATH, calc_repo, comment, comment_turn
from fake_api import FakeMessagesAPI, task_done
from gitrepo import repo_state, run_cli

DISMISSALS = ".ocr-hook/dismissed.yaml"
REASON = "the caller validates the amount (api/validate.py)"


@pytest.fixture(autouse=True)
def _filter_keeps_everything(fake_api: FakeMessagesAPI) -> None:
    filter_keeps_all(fake_api)


def reviewed(tmp_path: Path, fake: FakeMessagesAPI, env: dict[str, str]) -> tuple[Path, Path, dict]:
    repo = calc_repo(tmp_path / "repo")
    fake.script(f"Review the change to `{CALC_PATH}`", [comment_turn(comment(severity="high")), task_done()])
    cache = tmp_path / "cache"
    proc = run_cli(repo, "review", "--cache-dir", str(cache), "--format", "json", env=env)
    assert proc.returncode == 1, proc.stderr
    return repo, cache, json.loads(proc.stdout)


def test_review_then_dismiss_by_the_short_id_without_from_then_the_review_passes(tmp_path, fake_api, sdk_env):
    repo, cache, report = reviewed(tmp_path, fake_api, sdk_env)
    fingerprint = report["findings"][0]["fingerprint"]
    env = {**sdk_env, "OCR_HOOK_CACHE_DIR": str(cache)}
    before = repo_state(repo)
    proc = run_cli(repo, "dismiss", fingerprint[:8], "--reason", REASON, env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"dismissed {fingerprint[:8]} ({CALC_PATH}, high bug): {REASON}" in proc.stdout
    [entry] = yaml.safe_load((repo / DISMISSALS).read_text())["dismissed"]
    assert (entry["fingerprint"], entry["reason"]) == (fingerprint, REASON)
    after = repo_state(repo)
    assert after["index_entries"] == before["index_entries"] and after["staged_diff"] == before["staged_diff"]
    assert after["head"] == before["head"] and after["refs"] == before["refs"]

    again = run_cli(repo, "review", "--format", "json", env=env)  # the result cache answers; memory too
    assert again.returncode == 0, again.stderr
    [finding] = json.loads(again.stdout)["findings"]
    assert (finding["suppressed"], finding["suppression_reason"]) == ("dismissed", REASON)


def test_without_a_remembered_review_dismiss_says_how_to_give_one(tmp_path, sdk_env):
    repo = calc_repo(tmp_path / "repo")
    proc = run_cli(repo, "dismiss", "0123abcd", "--reason", REASON,
                   env={**sdk_env, "OCR_HOOK_CACHE_DIR": str(tmp_path / "c")})
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert "no review of this repository is remembered" in line and "--from" in line
    assert not (repo / DISMISSALS).exists()
