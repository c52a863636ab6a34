"""Issue 7, secrets: planted secrets never reach the API and never show up in any output, and the API key
never appears anywhere it could be read back.

A real repository gets sensitive files in the staged change (`.env`, `id_rsa`, `config/.npmrc`, a `.env`
file renamed to a harmless name) and a reviewed file full of secrets (an AWS access key id, GitHub tokens
on added and deleted lines, a PEM private key block, a long random password). The scripted model then
tries every way to see them: file_read and file_read_diff on the sensitive files, code_search for the
secrets' well-known prefixes, a comment on the password line (which also reaches the re-location and
filter prompts). Every request body the fake server received, and every output, is grepped.
"""

from __future__ import annotations

import json
import random
import re
import string
from pathlib import Path

import pytest
from agent_support import filter_keeps_all, main_opening
from e2e_support import assert_clean_stderr, run_review
from fake_api import FakeMessagesAPI, Fault, Reply, error_json, task_done, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write

_rng = random.Random(7)


def _random(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
AWS_KEY = "AKIA" + _random(string.ascii_uppercase + string.digits, 16)
GITHUB_TOKEN = "ghp_" + _random(ALNUM, 36)
OLD_GITHUB_TOKEN = "ghp_" + _random(ALNUM, 36)
PASSWORD = _random(ALNUM, 24)
PEM_LINES = [_random(ALNUM + "+/", 64) for _ in range(6)]
PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(PEM_LINES) + "\n-----END RSA PRIVATE KEY-----"
ENV_SECRET = _random(ALNUM, 32)
SSH_KEY_LINES = [_random(ALNUM + "+/", 70) for _ in range(4)]
NPM_TOKEN = "npm_" + _random(ALNUM, 36)
RENAMED_ENV_SECRET = _random(ALNUM, 30)
API_KEY = "sk-ant-api03-" + _random(ALNUM, 40) + "-TESTONLY"

PLANTED = {
    "aws key": AWS_KEY, "github token": GITHUB_TOKEN, "deleted github token": OLD_GITHUB_TOKEN,
    "password": PASSWORD, **{f"pem line {n}": line for n, line in enumerate(PEM_LINES)},
    ".env value": ENV_SECRET, **{f"id_rsa line {n}": line for n, line in enumerate(SSH_KEY_LINES)},
    ".npmrc token": NPM_TOKEN, "renamed .env value": RENAMED_ENV_SECRET,
}

SETTINGS_PATH = "app/settings.py"
SETTINGS_BEFORE = f'DEBUG = False\nOLD_TOKEN = "{OLD_GITHUB_TOKEN}"\n\n\ndef region():\n    return "eu"\n'
SETTINGS_AFTER = (
    "import os\n\n"
    f'AWS_ACCESS_KEY_ID = "{AWS_KEY}"\n'
    f'GITHUB_TOKEN = "{GITHUB_TOKEN}"\n'
    f'password = "{PASSWORD}"\n'
    f'PRIVATE_KEY = """{PEM}"""\n\n\n'
    "def region():\n    return os.environ.get('REGION', 'eu')\n"
)
SENSITIVE = {".env", "id_rsa", "config/.npmrc", "settings.txt"}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_repo(tmp_path_factory.mktemp("secrets") / "repo")
    write(root, SETTINGS_PATH, SETTINGS_BEFORE)
    write(root, "prod.env", f"DB_PASSWORD={RENAMED_ENV_SECRET}\n")
    commit_all(root, "base")
    write(root, SETTINGS_PATH, SETTINGS_AFTER)
    write(root, ".env", f"API_SECRET={ENV_SECRET}\n")
    write(root, "id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(SSH_KEY_LINES)
          + "\n-----END OPENSSH PRIVATE KEY-----\n")
    write(root, "config/.npmrc", f"//registry.npmjs.org/:_authToken={NPM_TOKEN}\n")
    git(root, "mv", "prod.env", "settings.txt")
    git(root, "add", "-A")
    return root


def _prying_model(fake: FakeMessagesAPI) -> None:
    filter_keeps_all(fake)
    fake.script(main_opening(SETTINGS_PATH), [
        Reply([
            tool_use("file_read", {"file_path": ".env"}),
            tool_use("file_read", {"file_path": "id_rsa"}),
            tool_use("file_read", {"file_path": "config/.npmrc"}),
            tool_use("file_read", {"file_path": "settings.txt"}),
            tool_use("file_read_diff", {"path_array": [".env", "id_rsa", "config/.npmrc", "settings.txt",
                                                       SETTINGS_PATH]}),
            tool_use("code_search", {"search_text": "AKIA"}),
            tool_use("code_search", {"search_text": "ghp_"}),
            tool_use("code_search", {"search_text": "PRIVATE KEY"}),
            tool_use("code_search", {"search_text": "PASSWORD"}),
            tool_use("code_search", {"search_text": "_authToken", "file_patterns": ["config/"]}),
            tool_use("code_search", {"search_text": "[A-Za-z0-9]{30}", "use_perl_regexp": True}),
            tool_use("file_find", {"query_name": "env"}),
            tool_use("file_read", {"file_path": SETTINGS_PATH}),
            # A range from the middle of the key block: without its BEGIN line it looks like data.
            tool_use("file_read", {"file_path": SETTINGS_PATH, "start_line": 8, "end_line": 11}),
        ]),
        Reply([tool_use("code_comment", {"comments": [
            # Quoted as the model saw it: masked. It must still land on line 5 of the real file.
            {"content": "A hard-coded password in source control.",
             "existing_code": 'password = "[MASKED-SECRET]"',
             "suggestion_code": 'password = os.environ["APP_PASSWORD"]', "severity": "high",
             "category": "security"},
            {"content": "A quote that matches nothing, so it goes to re-location.",
             "existing_code": "this line is not in the file at all", "severity": "low", "category": "other"},
        ]})]),
        task_done(),
    ])


def _leaks(haystack: str, secrets: dict[str, str]) -> list[str]:
    return [name for name, value in secrets.items() if value in haystack]


def _every_output(run_dir: Path, stdout: str, stderr: str) -> str:
    return "\n".join([stdout, stderr, *(p.read_text(encoding="utf-8") for p in sorted(run_dir.iterdir()))])


def test_planted_secrets_never_reach_the_api_or_any_output(repo: Path, tmp_path: Path, fake_api: FakeMessagesAPI,
                                                           sdk_env: dict[str, str]) -> None:
    _prying_model(fake_api)
    env = {**sdk_env, "ANTHROPIC_API_KEY": API_KEY}
    run = run_review(repo, env, tmp_path / "out")
    assert run.code == 1, run.proc.stderr

    requests = fake_api.requests
    assert len(requests) >= 4  # two review turns, task_done, re-location, filter
    # The key was in use (this SDK sends it as a bearer token; older ones as x-api-key).
    assert all(API_KEY in r.headers.get("x-api-key", "") + r.headers.get("authorization", "") for r in requests)
    for req in requests:
        assert _leaks(req.raw.decode("utf-8"), PLANTED) == [], req.first_user_text[:200]
    sent = "\n".join(r.raw.decode("utf-8") for r in requests)
    assert "[MASKED-SECRET]" in sent
    assert "is a sensitive file" in sent  # the tools said why they withheld the files

    # The sensitive files were never selected; the reviewed file was.
    skipped = {s["path"]: s for s in run.report["coverage"]["skipped"]}
    assert SENSITIVE <= set(skipped), skipped
    assert all(not skipped[p]["incomplete"] for p in SENSITIVE)
    assert run.report["coverage"]["reviewed"] == [SETTINGS_PATH]

    # The report says how many were masked.
    [note] = [n for n in run.report["notes"] if "were masked" in n]
    assert int(re.match(r"(\d+) likely secret", note).group(1)) >= 5  # type: ignore[union-attr]

    # The masked quote anchored on the real line; no output holds a secret or the key.
    finding = next(f for f in run.report["findings"] if f["category"] == "security")
    assert (finding["start_line"], finding["anchored"]) == (5, True)
    outputs = _every_output(run.out_dir, run.proc.stdout, run.proc.stderr)
    assert _leaks(outputs, {**PLANTED, "api key": API_KEY}) == []


def test_the_api_key_never_shows_in_errors_even_when_the_server_echoes_it(repo: Path, tmp_path: Path,
                                                                          fake_api: FakeMessagesAPI,
                                                                          sdk_env: dict[str, str]) -> None:
    fake_api.fail_all(Fault(status=401, body=error_json(401, f"invalid x-api-key: {API_KEY}")))
    env = {**sdk_env, "ANTHROPIC_API_KEY": API_KEY}
    run = run_review(repo, env, tmp_path / "out")
    assert run.code == 3
    [failed] = run.report["coverage"]["failed"]
    assert failed["reason"].startswith("API error 401") and "***" in failed["reason"]
    assert API_KEY not in _every_output(run.out_dir, run.proc.stdout, run.proc.stderr)


@pytest.mark.parametrize("failure", ["ok", "401"])
def test_the_sdk_debug_log_does_not_print_the_key(failure: str, repo: Path, tmp_path: Path,
                                                  fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    """ANTHROPIC_LOG=debug makes the SDK log every request it builds to standard error."""
    _prying_model(fake_api)
    if failure == "401":
        fake_api.fail_all(Fault(status=401))
    env = {**sdk_env, "ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_LOG": "debug"}
    run = run_review(repo, env, tmp_path / "out")
    assert "Request options" in run.proc.stderr  # the debug log really was on
    everything = _every_output(run.out_dir, run.proc.stdout, run.proc.stderr)
    assert API_KEY not in everything
    assert _leaks(everything, PLANTED) == []


def test_an_auth_token_is_never_printed_either(repo: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    fake_api.fail_all(Fault(status=401, body=error_json(401, f"bad bearer {API_KEY}")))
    monkeypatch.delenv("ANTHROPIC_API_KEY")  # run_cli starts from os.environ
    env = {k: v for k, v in sdk_env.items() if k != "ANTHROPIC_API_KEY"}
    env["ANTHROPIC_AUTH_TOKEN"] = API_KEY
    proc = run_cli(repo, "review", "--no-cache", "--format", "json", env=env)
    assert_clean_stderr(proc)
    assert proc.returncode == 3
    assert fake_api.requests and fake_api.requests[0].headers.get("authorization") == f"Bearer {API_KEY}"
    assert API_KEY not in proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["status"] == "incomplete"


KEY_FIXTURE = "fixtures/server_key.txt"  # not a sensitive name: its content is reviewed
KEY_BODY = [_random(ALNUM + "+/", 64) for _ in range(30)]


def test_a_hunk_inside_a_key_block_is_masked(tmp_path: Path, fake_api: FakeMessagesAPI,
                                            sdk_env: dict[str, str]) -> None:
    root = make_repo(tmp_path / "repo")
    block = ["-----BEGIN RSA PRIVATE KEY-----", *KEY_BODY, "-----END RSA PRIVATE KEY-----"]
    write(root, KEY_FIXTURE, "\n".join(block) + "\n")
    commit_all(root, "key fixture")
    edited = list(block)
    edited[16] = edited[16][::-1]  # one body line in the middle changes: the hunk shows lines 14-20
    write(root, KEY_FIXTURE, "\n".join(edited) + "\n")
    git(root, "add", KEY_FIXTURE)
    proc = run_cli(root, "review", "--no-cache", "--format", "json", env=sdk_env)
    assert proc.returncode == 0, proc.stderr
    sent = "\n".join(r.raw.decode("utf-8") for r in fake_api.requests)
    assert fake_api.requests and "[MASKED-SECRET]" in sent
    assert _leaks(sent, {f"key line {n}": line for n, line in enumerate([*KEY_BODY, edited[16]])}) == []
