"""Issue 22, `ocr-hook doctor`: every check through the real CLI in a real scratch repository, the real SDK
over HTTP to the fake API (Models API and Messages API), the real pre-commit for the hook check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from agent_support import main_opening
from conftest import TEST_API_KEY
from e2e_support import CALC_PATH, calc_repo, comment, comment_turn, run_review
from fake_api import FakeMessagesAPI, Fault, Reply, ServerMode, error_json, task_done, tool_use
from gitrepo import make_repo, run_cli, write

from ocr_hook.agent import diagnostics
from ocr_hook.settings import load

MODEL = "claude-sonnet-5-5"
SAMPLE_QUOTE = "    return total / (len(values) - 1)"
SECRET_KEY = "sk-ant-doctor-0123456789abcdef-never-print-me"


def doctor(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = run_cli(repo, "doctor", *args, env={"NO_COLOR": "1", **env}, timeout=90)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


def doctor_json(repo: Path, env: dict[str, str], *args: str) -> tuple[int, dict[str, dict[str, str]]]:
    proc = doctor(repo, env, "--format", "json", *args)
    doc = json.loads(proc.stdout)
    assert doc["exit_code"] == proc.returncode
    checks = {c["name"]: c for c in doc["checks"]}
    assert all(c["status"] in ("OK", "WARN", "FAIL") and c["message"] and "\n" not in c["message"]
               for c in doc["checks"])
    return proc.returncode, checks


def script_sample(fake: FakeMessagesAPI) -> None:
    """The model reviews the probe's sample as a good model would: a comment, then task_done."""
    fake.script(main_opening(diagnostics.SAMPLE_PATH), [
        Reply([tool_use("code_comment", {"comments": [comment("Divides by len - 1: the mean is off.",
                                                              code=SAMPLE_QUOTE.strip(), severity="high",
                                                              suggestion=None)]}),
               tool_use("task_done", {"state": "DONE"})])])


# --- no key: nothing is sent -------------------------------------------------------------------------


@pytest.mark.parametrize("args", [(), ("--probe",), ("--probe", "--format", "json")])
def test_without_a_key_doctor_fails_naming_the_variable_and_sends_nothing(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env_without_key: dict[str, str], args: tuple[str, ...]) -> None:
    repo = calc_repo(tmp_path / "repo")
    proc = doctor(repo, sdk_env_without_key, *args)

    assert proc.returncode == 2
    assert "FAIL" in proc.stdout and "ANTHROPIC_API_KEY" in proc.stdout
    assert fake_api.requests == [] and fake_api.models.requests == []


# --- a compatible server: no Models API --------------------------------------------------------------


def test_models_api_404_is_a_warning_and_reviews_still_work(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                            sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    code, checks = doctor_json(repo, sdk_env)

    assert code == 0
    line = checks[f"model {MODEL}"]
    assert line["status"] == "WARN" and "404" in line["message"] and "capabilities unknown" in line["message"]
    assert checks["credentials"]["status"] == "OK" and "ANTHROPIC_API_KEY is set" in checks["credentials"]["message"]
    assert checks["endpoint"]["status"] == "OK" and fake_api.url in checks["endpoint"]["message"]
    assert len(fake_api.models.requests) == 1 and fake_api.requests == []  # a lookup, no Messages request

    fake_api.script(main_opening(CALC_PATH), [comment_turn(), task_done()])
    run = run_review(repo, sdk_env, tmp_path / "out")
    assert run.code == 0 and run.report["status"] == "complete"
    assert run.report["findings"]


def test_a_model_the_models_api_knows_is_reported_with_its_context_window(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    fake_api.models.register(MODEL, max_input_tokens=1_000_000, max_tokens=128_000)
    code, checks = doctor_json(repo, sdk_env)

    assert code == 0
    line = checks[f"model {MODEL}"]
    assert line["status"] == "OK"
    assert "1,000,000 input tokens" in line["message"] and "adaptive thinking" in line["message"]
    # The answer is kept for the day: the second doctor asks nothing.
    doctor_json(repo, sdk_env)
    assert len(fake_api.models.requests) == 1


def test_an_openai_shaped_model_object_is_a_warning(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                   sdk_env: dict[str, str]) -> None:
    """Ollama answers /v1/models/{id} with OpenAI's model object: no capabilities to read."""
    repo = calc_repo(tmp_path / "repo")
    fake_api.mode = ServerMode(openai_models=True)
    code, checks = doctor_json(repo, sdk_env)
    assert code == 0
    line = checks[f"model {MODEL}"]
    assert line["status"] == "WARN" and "no capabilities" in line["message"]
    assert "context_window" in line["message"]


def test_an_endpoint_ending_in_v1_is_flagged(tmp_path: Path, fake_api: FakeMessagesAPI,
                                            sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    _, checks = doctor_json(repo, {**sdk_env, "ANTHROPIC_BASE_URL": fake_api.url + "/v1"})
    assert checks["endpoint"]["status"] == "WARN" and fake_api.url in checks["endpoint"]["fix"]


def test_an_unreachable_server_fails(tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    url = fake_api.url
    fake_api.close()
    code, checks = doctor_json(repo, {**sdk_env, "ANTHROPIC_BASE_URL": url})
    assert code == 2
    assert checks[f"model {MODEL}"]["status"] == "FAIL" and "could not" in checks[f"model {MODEL}"]["message"]


# --- the probe --------------------------------------------------------------------------------------


def test_probe_reviews_the_sample_within_three_requests_and_the_cap(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                     sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    script_sample(fake_api)
    code, checks = doctor_json(repo, sdk_env, "--probe")

    assert code == 0, checks
    assert 1 <= len(fake_api.requests) <= 3
    assert fake_api.billed_cost(load(None, None, {}, {}).pricing) <= diagnostics.PROBE_MAX_COST
    assert checks["probe: tools"]["status"] == "OK" and "called 2 tool(s)" in checks["probe: tools"]["message"]
    assert checks["probe: caching"]["status"] == "OK" and "tokens written" in checks["probe: caching"]["message"]
    assert "first reply after" in checks["probe: speed"]["message"]
    # The normal loop: the same tools and system prompt as a review.
    first = fake_api.requests[0].body
    assert {t["name"] for t in first["tools"]} >= {"task_done", "code_comment", "file_read"}
    assert "stats.py" in json.dumps(first["messages"])


def test_probe_on_a_server_without_caching_warns(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                 sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    script_sample(fake_api)
    fake_api.mode = ServerMode(prompt_cache=False)
    code, checks = doctor_json(repo, sdk_env, "--probe")
    assert code == 0
    assert checks["probe: caching"]["status"] == "WARN" and "does not cache" in checks["probe: caching"]["message"]


def test_probe_flags_a_server_that_counts_part_of_the_prompt(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                             sdk_env: dict[str, str]) -> None:
    """The sample's prompt is under the review's 4,000-token rule; the probe still sees a cut prompt."""
    repo = calc_repo(tmp_path / "repo")
    script_sample(fake_api)
    fake_api.mode = ServerMode(input_fraction=0.4, prompt_cache=False)
    code, checks = doctor_json(repo, sdk_env, "--probe")
    assert code == 0
    line = checks["probe: context"]
    assert line["status"] == "WARN" and "OLLAMA_CONTEXT_LENGTH" in line["fix"]

    fake_api.mode = ServerMode(prompt_cache=False)
    _, checks = doctor_json(repo, sdk_env, "--probe")
    assert checks["probe: context"]["status"] == "OK"


def test_probe_with_a_model_without_tool_use_fails(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                   sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    fake_api.mode = ServerMode(text_only=True)
    code, checks = doctor_json(repo, sdk_env, "--probe")

    assert code == 2
    assert checks["probe: tools"]["status"] == "FAIL"
    assert "may not support tool use" in checks["probe: tools"]["message"]
    assert len(fake_api.requests) <= 3


def test_probe_after_a_rejected_cache_marker_says_so(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                     sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    script_sample(fake_api)
    fake_api.mode = ServerMode(reject_fields=("cache_control",), prompt_cache=False)
    code, checks = doctor_json(repo, sdk_env, "--probe")

    assert code == 0
    assert checks["probe: tools"]["status"] == "OK"
    assert checks["probe: caching"]["status"] == "WARN" and "rejected" in checks["probe: caching"]["message"]
    assert len(fake_api.requests) <= 3


def test_rejected_fields_are_remembered_with_the_capabilities(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                              sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    fake_api.mode = ServerMode(reject_fields=("cache_control",))
    doctor_json(repo, sdk_env)  # the day's capability record (a 404: unknown)
    fake_api.script(main_opening(CALC_PATH), [comment_turn(), task_done()])

    first = run_review(repo, sdk_env, tmp_path / "first")
    assert first.report["status"] == "complete"
    assert sum(1 for r in fake_api.requests if r.status == 400) == 1

    _, checks = doctor_json(repo, sdk_env)
    assert "rejected `cache_control`" in checks[f"model {MODEL}"]["message"]

    before = len(fake_api.requests)
    second = run_review(repo, sdk_env, tmp_path / "second")
    later = fake_api.requests[before:]
    assert second.report["status"] == "complete"
    assert later and all(r.status == 200 and "cache_control" not in json.dumps(r.body) for r in later)
    assert any("rejected it on an earlier run" in n for n in second.report["notes"])


# --- the key never shows ------------------------------------------------------------------------------


@pytest.mark.parametrize("variable", ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"])
@pytest.mark.parametrize("args", [(), ("--format", "json"), ("--probe",), ("--probe", "--format", "json")])
def test_the_key_never_appears_in_doctor_output(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                sdk_env_without_key: dict[str, str], variable: str,
                                                args: tuple[str, ...]) -> None:
    repo = calc_repo(tmp_path / "repo")
    # A server that echoes the key back in its errors, as some proxies do.
    fake_api.fail_all(Fault(status=401, body=error_json(401, f"invalid credential {SECRET_KEY} for this proxy")))
    proc = doctor(repo, {**sdk_env_without_key, variable: SECRET_KEY}, *args)

    assert SECRET_KEY not in proc.stdout + proc.stderr
    assert SECRET_KEY[:20] not in proc.stdout + proc.stderr
    assert variable in proc.stdout
    if "--probe" in args:
        assert fake_api.requests, "the probe must have met the echoing server"
        assert "***" in proc.stdout


# --- settings, prices, cache, pre-commit -----------------------------------------------------------------


def test_settings_sources_and_a_free_local_model(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    free = {"input": 0, "output": 0, "cache_write": 0, "cache_read": 0}
    write(repo, ".ocr-hook.yaml", json.dumps({"model": "qwen3-coder:30b", "pricing": {"qwen3-coder:30b": free}}))
    code, checks = doctor_json(repo, {**sdk_env, "OCR_HOOK_MAX_COST": "0.5"})

    assert code == 0
    assert ".ocr-hook.yaml" in checks["settings"]["message"] and "OCR_HOOK_MAX_COST" in checks["settings"]["message"]
    assert checks["prices"]["status"] == "OK" and "priced 0: qwen3-coder:30b" in checks["prices"]["message"]


def test_a_model_without_a_price_fails(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    write(repo, ".ocr-hook.yaml", "filter_model: my-proxy-model\n")
    code, checks = doctor_json(repo, sdk_env)
    assert code == 2
    assert checks["prices"]["status"] == "FAIL" and "my-proxy-model" in checks["prices"]["message"]


def test_bad_settings_and_no_repository_fail(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    write(repo, ".ocr-hook.yaml", "max_cost: lots\n")
    code, checks = doctor_json(repo, sdk_env)
    assert code == 2 and checks["settings"]["status"] == "FAIL" and "max_cost" in checks["settings"]["message"]
    # A rule's entries are parsed by the guidance package, not when the settings load: doctor still checks them.
    write(repo, ".ocr-hook.yaml", "rules: [{paths: ['a/**'], effort: max}]\n")
    code, checks = doctor_json(repo, sdk_env)
    assert code == 2 and checks["settings"]["status"] == "FAIL"
    assert "'effort' must be one of" in checks["settings"]["message"]

    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    code, checks = doctor_json(outside, sdk_env)
    assert code == 2 and checks["git"]["status"] == "FAIL" and "not a git repository" in checks["git"]["message"]


def test_an_unwritable_cache_dir_fails(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    code, checks = doctor_json(repo, {**sdk_env, "OCR_HOOK_CACHE_DIR": str(blocker / "cache")})
    assert code == 2 and checks["cache"]["status"] == "FAIL"


PRE_COMMIT = [sys.executable, "-m", "pre_commit"]
HOOKS_CONFIG = """repos:
  - repo: https://github.com/YOUR-ORG/ocr-hook
    rev: v0.1.0
    hooks:
      - id: ocr-hook
      - id: ocr-hook-push
"""


def test_pre_commit_configuration_and_installation(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    _, checks = doctor_json(repo, sdk_env)
    assert checks["pre-commit"]["status"] == "WARN" and "no .pre-commit-config.yaml" in checks["pre-commit"]["message"]

    write(repo, ".pre-commit-config.yaml", "repos: []\n")
    _, checks = doctor_json(repo, sdk_env)
    assert checks["pre-commit"]["status"] == "WARN" and "no ocr-hook hook" in checks["pre-commit"]["message"]

    write(repo, ".pre-commit-config.yaml", HOOKS_CONFIG)
    subprocess.run([*PRE_COMMIT, "install", "--hook-type", "pre-commit"], cwd=repo, env=sdk_env, check=True,
                   capture_output=True)
    _, checks = doctor_json(repo, sdk_env)
    line = checks["pre-commit"]
    assert line["status"] == "WARN" and "not installed for pre-push" in line["message"]
    assert line["fix"] == "pre-commit install --hook-type pre-push"

    subprocess.run([*PRE_COMMIT, "install", "--hook-type", "pre-push"], cwd=repo, env=sdk_env, check=True,
                   capture_output=True)
    _, checks = doctor_json(repo, sdk_env)
    line = checks["pre-commit"]
    assert line["status"] == "OK"
    assert "ocr-hook (pre-commit)" in line["message"] and "ocr-hook-push (pre-push)" in line["message"]


def test_text_output_lists_every_check_with_fixes(tmp_path: Path, sdk_env_without_key: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    proc = doctor(repo, sdk_env_without_key)
    lines = proc.stdout.splitlines()
    assert lines[0] == "ocr-hook doctor"
    for name in ("git", "settings", "prices", "credentials", "endpoint", "cache", "pre-commit"):
        assert any(line.split()[1:2] == [name] for line in lines if line.startswith("  ")), name
    assert any(line.strip().startswith("fix:") for line in lines)
    assert "1 FAIL" in lines[-1]
    assert TEST_API_KEY not in proc.stdout


def test_in_github_actions_it_says_what_resolving_threads_needs(tmp_path: Path,
                                                                sdk_env_without_key: dict[str, str]) -> None:
    # Issue 53: the job token's permissions cannot be read from inside the job; doctor says what resolving
    # the threads of fixed findings needs, and how the gate sees a maintainer's resolve.
    repo = calc_repo(tmp_path / "repo")
    token = "ghs_doctorToken0123456789abcdefABCDEFgh"
    actions = {**sdk_env_without_key, "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request"}
    proc = doctor(repo, {**actions, "GITHUB_TOKEN": token}, "--format", "json")
    [line] = [c for c in json.loads(proc.stdout)["checks"] if c["name"] == "github"]
    assert line["status"] == "OK" and "`permissions: contents: write`" in line["message"]
    assert "re-run the job" in line["message"] and token not in proc.stdout
    _, checks = doctor_json(repo, actions)
    assert checks["github"]["status"] == "WARN" and "GITHUB_TOKEN" in checks["github"]["fix"]
    _, checks = doctor_json(repo, {**actions, "GITHUB_EVENT_NAME": "push"})
    assert checks["github"]["status"] == "OK" and "not a pull request" in checks["github"]["message"]
    _, checks = doctor_json(repo, {**actions, "GITEA_ACTIONS": "true"})
    assert "github" not in checks
