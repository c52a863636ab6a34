"""`ocr-hook review` end to end: real repository, real SDK, fake Messages API, every exit code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_support import filter_keeps_all
from fake_api import Fault, Reply, tool_use
from gitrepo import commit_all, git, make_repo, repo_state, run_cli, write
from validators import DeferredSarif, validate_gitlab


@pytest.fixture(scope="module")
def sarif_checks() -> Iterator[DeferredSarif]:
    """The SARIF every test here writes: the schema at once, GitHub's rules in one multitool run at the end."""
    checks = DeferredSarif()
    yield checks
    checks.finish()


@pytest.fixture(autouse=True)
def _filter_keeps_everything(fake_api):
    """The review filter, when asked, proves no comment wrong."""
    filter_keeps_all(fake_api)


def _comment(severity: str, code: str = "return a - b", category: str = "bug") -> Reply:
    return Reply([tool_use("code_comment", {"comments": [{
        "content": f"A {severity} problem here.", "existing_code": code,
        "suggestion_code": "    return a + b", "severity": severity, "category": category}]})])


def _repo(tmp_path: Path, new_body: str = "    return a - b\n") -> Path:
    repo = make_repo(tmp_path / "repo")
    write(repo, "calc.py", "def add(a, b):\n    return a + b\n")
    commit_all(repo, "initial")
    write(repo, "calc.py", "def add(a, b):\n" + new_body)
    git(repo, "add", "calc.py")
    return repo


def _json(proc) -> dict:
    return json.loads(proc.stdout)


def test_clean_review_exits_0(tmp_path, fake_api, sdk_env):
    repo = _repo(tmp_path)
    proc = run_cli(repo, "review", "--format", "json", env=sdk_env)
    assert proc.returncode == 0, proc.stderr
    report = _json(proc)
    assert report["status"] == "complete"
    assert report["findings"] == []
    assert report["coverage"]["reviewed"] == ["calc.py"]


def test_blocking_finding_exits_1_and_every_output_agrees(tmp_path, fake_api, sdk_env, sarif_checks):
    repo = _repo(tmp_path)
    fake_api.script("calc.py", [_comment("high")])
    sarif, gitlab = tmp_path / "out.sarif", tmp_path / "gl.json"
    before = repo_state(repo)
    proc = run_cli(repo, "review", "--format", "json", "--sarif-output", str(sarif),
                   "--gitlab-output", str(gitlab), env=sdk_env)
    assert proc.returncode == 1, proc.stderr
    finding = _json(proc)["findings"][0]
    assert (finding["path"], finding["start_line"], finding["end_line"]) == ("calc.py", 2, 2)
    log = sarif_checks.check(sarif)
    region = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == 2
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is True
    entries = json.loads(gitlab.read_text())
    validate_gitlab(entries)
    assert entries[0]["location"]["lines"]["begin"] == 2
    assert repo_state(repo) == before


def test_finding_below_the_threshold_exits_0(tmp_path, fake_api, sdk_env):
    repo = _repo(tmp_path)
    fake_api.script("calc.py", [_comment("medium")])
    proc = run_cli(repo, "review", "--format", "json", env=sdk_env)
    assert proc.returncode == 0, proc.stderr
    assert [f["severity"] for f in _json(proc)["findings"]] == ["medium"]
    assert run_cli(repo, "review", "--fail-on", "medium", "--no-cache", env=sdk_env).returncode == 1


def test_api_failure_is_incomplete_exit_3_and_warn_makes_it_0(tmp_path, fake_api, sdk_env, sarif_checks):
    repo = _repo(tmp_path)
    fake_api.fail_all(Fault(status=400))
    proc = run_cli(repo, "review", "--format", "json", env=sdk_env)
    assert proc.returncode == 3, proc.stderr
    report = _json(proc)
    assert report["status"] == "incomplete"
    assert [f["path"] for f in report["coverage"]["failed"]] == ["calc.py"]
    sarif = tmp_path / "o.sarif"
    warned = run_cli(repo, "review", "--on-error", "warn", "--sarif-output", str(sarif), env=sdk_env)
    assert warned.returncode == 0
    assert "REVIEW INCOMPLETE" in warned.stdout
    assert sarif_checks.check(sarif)["runs"][0]["invocations"][0]["executionSuccessful"] is False


def test_budget_too_small_for_any_request_is_incomplete(tmp_path, fake_api, sdk_env):
    repo = _repo(tmp_path)
    proc = run_cli(repo, "review", "--format", "json", "--max-cost", "0.0001", env=sdk_env)
    assert proc.returncode == 3, proc.stderr
    report = _json(proc)
    assert report["status"] == "incomplete"
    assert report["usage"]["requests"] == 0
    assert fake_api.requests == []


def test_usage_errors_exit_2_on_one_line(tmp_path, sdk_env):
    repo = _repo(tmp_path)
    for args in (["review", "--fail-on", "sometimes"], ["review", "--base", "no-such-ref"],
                 ["review", "--staged", "--commit", "HEAD"]):
        proc = run_cli(repo, *args, env=sdk_env)
        assert proc.returncode == 2, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith("ocr-hook: error: ")


def test_missing_key_is_exit_2_naming_the_variable(tmp_path, sdk_env_without_key):
    repo = _repo(tmp_path)
    proc = run_cli(repo, "review", env=sdk_env_without_key)
    assert proc.returncode == 2
    assert "ANTHROPIC_API_KEY" in proc.stderr
    # provider auto found neither a key nor Claude Code: one short block, the three ways in (test_provider_auto)
    assert len(proc.stderr.strip().splitlines()) == 4 and proc.stderr.startswith("ocr-hook: error: ")


def test_baseline_suppresses_a_known_finding(tmp_path, fake_api, sdk_env, sarif_checks):
    repo = _repo(tmp_path)
    fake_api.script("calc.py", [_comment("critical")])
    baseline = tmp_path / "baseline.json"
    made = run_cli(repo, "baseline", "-o", str(baseline), env=sdk_env)
    assert made.returncode == 0, made.stderr
    assert len(json.loads(baseline.read_text())["findings"]) == 1
    sarif = tmp_path / "b.sarif"
    proc = run_cli(repo, "review", "--no-cache", "--baseline", str(baseline), "--format", "json",
                   "--sarif-output", str(sarif), env=sdk_env)
    assert proc.returncode == 0, proc.stderr
    assert _json(proc)["findings"][0]["suppressed"] == "baseline"
    assert sarif_checks.check(sarif)["runs"][0]["results"][0]["suppressions"]


def test_inline_marker_suppresses_a_finding(tmp_path, fake_api, sdk_env):
    repo = _repo(tmp_path, new_body="    return a - b  # ocr-hook: ignore\n")
    fake_api.script("calc.py", [_comment("critical", code="return a - b  # ocr-hook: ignore")])
    proc = run_cli(repo, "review", "--format", "json", env=sdk_env)
    assert proc.returncode == 0, proc.stderr
    assert _json(proc)["findings"][0]["suppressed"] == "inline"


def test_nothing_staged_is_a_clean_complete_run_without_a_key(tmp_path, sdk_env_without_key):
    repo = make_repo(tmp_path / "repo")
    write(repo, "a.txt", "x\n")
    commit_all(repo, "initial")
    proc = run_cli(repo, "review", "--format", "json", env=sdk_env_without_key)
    assert proc.returncode == 0, proc.stderr
    assert _json(proc)["status"] == "complete"


def test_a_cached_rerun_sends_nothing_and_reports_the_same(tmp_path, fake_api, sdk_env):
    repo = _repo(tmp_path)
    fake_api.script("calc.py", [_comment("high")])
    first = run_cli(repo, "review", "--format", "json", env=sdk_env)
    sent = len(fake_api.requests)
    second = run_cli(repo, "review", "--format", "json", env=sdk_env)
    assert second.returncode == first.returncode == 1
    assert len(fake_api.requests) == sent
    assert _json(second)["findings"] == _json(first)["findings"]
    assert _json(second)["coverage"]["cached"] == ["calc.py"]


@pytest.mark.parametrize("fmt", ["text", "github", "gitlab", "sarif"])
def test_every_stdout_format_renders(tmp_path, fake_api, sdk_env, fmt, sarif_checks):
    repo = _repo(tmp_path)
    fake_api.script("calc.py", [_comment("high")])
    proc = run_cli(repo, "review", "--format", fmt, env={**sdk_env, "NO_COLOR": "1"})
    assert proc.returncode == 1, proc.stderr
    assert "calc.py" in proc.stdout
    if fmt == "sarif":
        sarif_checks.check(json.loads(proc.stdout))
    if fmt == "gitlab":
        validate_gitlab(json.loads(proc.stdout))
    if fmt == "github":
        assert "::error file=calc.py,line=2" in proc.stdout
    if fmt == "text":
        assert "calc.py:2" in proc.stdout and "\x1b[" not in proc.stdout


def test_shards_cover_every_file_once_and_merge_into_one_valid_run(tmp_path, fake_api, sdk_env, sarif_checks):
    repo = make_repo(tmp_path / "repo")
    names = [f"mod{n}.py" for n in range(5)]
    for name in names:
        write(repo, name, "def f(a, b):\n    return a + b\n")
    commit_all(repo, "initial")
    for name in names:
        write(repo, name, "def f(a, b):\n    return a - b\n")
        fake_api.script(name, [_comment("high")])
    git(repo, "add", ".")
    outputs = []
    reviewed: list[str] = []
    for shard in ("1/2", "2/2"):
        out = tmp_path / f"shard-{shard[0]}.sarif"
        proc = run_cli(repo, "review", "--shard", shard, "--format", "json", "--sarif-output", str(out), env=sdk_env)
        assert proc.returncode == 1, proc.stderr
        reviewed += _json(proc)["coverage"]["reviewed"]
        outputs.append(str(out))
    assert sorted(reviewed) == names  # every file in exactly one shard
    merged = tmp_path / "merged.sarif"
    proc = run_cli(repo, "merge-sarif", *outputs, "-o", str(merged), env=sdk_env)
    assert proc.returncode == 0, proc.stderr
    log = sarif_checks.check(merged)
    assert len(log["runs"]) == 1
    assert sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                  for r in log["runs"][0]["results"]) == names
    bad = run_cli(repo, "review", "--shard", "3/2", env=sdk_env)
    assert bad.returncode == 2 and "--shard" in bad.stderr
