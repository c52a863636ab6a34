"""provider: claude-code, what the CLI is given and what it leaves (DESIGN.md 15, amended in session 6; issue 52):
no `@path` in reviewed text, intent, guidance, tool results or the filter's and re-location's prompts is expanded
into a local file; the CLI gets an environment built for it (no NODE_OPTIONS, no telemetry switches) and a private
configuration and temporary directory, so HOME and TMPDIR are as they were; a CLI that exits at start-up fails the
step at once with its status and a masked stderr tail; an over-long output line is one FAILED line; a SIGKILLed
ocr-hook takes its CLIs with it; with both an OAuth token and an API key the notes say which one pays.

The real bundled CLI against the fake Messages API. One module fixture runs five reviews (about a second each) and
one SIGKILLed run; the tests assert on them."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_support import is_filter, is_relocate, keep_all
from e2e_support import assert_one_line, calc_repo, comment, popen_review, run_review
from fake_api import FakeMessagesAPI, Reply, text, tool_use
from gitrepo import commit_all, git, write
from test_claude_code_provider import _cost, _processes_with

from ocr_hook.agent.claude_code import cli_path

MAX_COST = 0.10
# What must never reach the model: the text of files that `@` mentions name, outside the repository and in it.
CANARY = "CANARY-OUTSIDE-51c7"          # a file outside the repository
DIR_CANARY = "CANARY-DIR-ENTRY-8e20"    # a file's name in a directory mentioned as `@dir/`
HOME_CANARY = "CANARY-HOME-3b9d"        # ~/notes.txt
ENV_CANARY = "CANARY-DOTENV-77aa"       # the repository's .env (not committed)
GIT_CANARY = "CANARY-GITCONFIG-4f02"    # the repository's .git/config
CANARIES = (CANARY, DIR_CANARY, HOME_CANARY, ENV_CANARY, GIT_CANARY)
MENTION_PATH, MENTION_MARKER = "mention.py", "MENTION-MARKER-2a61"
NOTES_PATH = "notes.py"  # committed, read with file_read: its mention comes back as a tool result
CLEAN_PATH, CLEAN_MARKER = "clean.py", "CLEAN-MARKER-9d03"
BIG_PATH, BIG_MARKER = "big.py", "BIG-LINE-MARKER-60c1"
HELD_PATH, HELD_MARKER = "held.py", "HELD-MARKER-1e5b"
BIG_TEXT_BYTES = 17 * 1024 * 1024  # one assistant message over the 16 MiB a stream-json line may carry
TOKEN, API_KEY = "sk-ant-oat01-test", "sk-ant-api03-isolation-test-key"
STDERR_SECRET = "sk-ant-api03-Zx9QwErTyUiOpAsDfGhJkLzXcVbNm1234567890abcdEFGH"  # what a broken CLI prints
TELEMETRY = {"CLAUDE_CODE_ENABLE_TELEMETRY": "1", "OTEL_METRICS_EXPORTER": "otlp", "OTEL_LOGS_EXPORTER": "otlp",
             "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_LOG_USER_PROMPTS": "1",
             "OTEL_METRIC_EXPORT_INTERVAL": "100", "OTEL_LOGS_EXPORT_INTERVAL": "100",
             "ANTHROPIC_CUSTOM_HEADERS": "x-leak: CANARY-HEADER"}


def _tree(root: Path) -> dict[str, str]:
    """Every file and directory under `root`, with a hash of each regular file's content."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            found[os.path.relpath(os.path.join(dirpath, name), root) + "/"] = "dir"
        for name in filenames:
            full = Path(dirpath, name)
            content = hashlib.sha256(full.read_bytes()).hexdigest() if full.is_file() else "not a file (socket)"
            found[os.path.relpath(full, root)] = content
    return found


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def _wait(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Until `condition` holds (processes gone, a directory removed: no event to wait on), or the deadline."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _mention_repo(base: Path) -> tuple[Path, str]:
    """A repository whose staged file, committed notes and REVIEW.md `@`-mention files outside it and in it."""
    outside = base / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "canary.txt").write_text(f"{CANARY}\n")
    (outside / "dir" / DIR_CANARY).write_text("x\n")
    (base / "home" / "notes.txt").write_text(f"{HOME_CANARY}\n")
    repo = base / "repo"
    mentions = (f"@{outside / 'canary.txt'} @{outside / 'dir'}/ @~/notes.txt @{repo / '.env'} "
                f"@{repo / '.git' / 'config'} @.env")
    calc_repo(repo)
    git(repo, "config", "ocr.canary", GIT_CANARY)
    write(repo, NOTES_PATH, f"# {mentions}\n")
    write(repo, "REVIEW.md", f"# Review rules\nCheck {mentions} too.\n")
    commit_all(repo, "notes and guidance")
    write(repo, ".env", f"SECRET={ENV_CANARY}\n")
    write(repo, MENTION_PATH, f"# {MENTION_MARKER} see {mentions}\nX = 1\n")
    write(repo, CLEAN_PATH, f"# {CLEAN_MARKER}\nY = 2\n")
    write(repo, BIG_PATH, f"# {BIG_MARKER}\nZ = 3\n")
    write(repo, HELD_PATH, f"# {HELD_MARKER}\nW = 4\n")
    git(repo, "add", MENTION_PATH, CLEAN_PATH, BIG_PATH, HELD_PATH)
    return repo, mentions


def _login(home: Path) -> None:
    """A Claude Code login as `claude login` keeps it on Linux (the review's only credential in the mentions run)."""
    (home / ".claude").mkdir(parents=True)
    login = {"claudeAiOauth": {"accessToken": "sk-ant-oat01-login", "refreshToken": "sk-ant-ort01-login",
                               "expiresAt": 4102444800000, "scopes": ["user:inference"], "subscriptionType": "pro"}}
    credentials = home / ".claude" / ".credentials.json"
    credentials.write_text(json.dumps(login))
    credentials.chmod(0o600)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("claude-code-isolation")
    home, tmp, dumps = base / "home", base / "tmp", base / "env-dumps"
    for directory in (home, tmp, dumps):
        directory.mkdir()
    _login(home)
    repo, mentions = _mention_repo(base)
    real = cli_path(None)
    planted_ran = base / "planted-ran"
    (base / "planted.js").write_text(f"require('fs').writeFileSync({json.dumps(str(planted_ran))}, 'ran');\n")
    # The CLI as ocr-hook starts it, its environment written down first.
    dumping = _script(base / "claude-dumping", f'env > "{dumps}/env.$$"\nexec "{real}" "$@"\n')
    # A CLI that fails at start-up (an option it does not know), after printing a secret on stderr.
    broken = _script(base / "claude-broken", f'[ "$1" = --version ] && exec "{real}" --version\n'
                                             f'echo "starting with ANTHROPIC_API_KEY={STDERR_SECRET}" >&2\n'
                                             f'exec "{real}" --no-such-option-52 "$@"\n')
    out: dict[str, Any] = {"mentions": mentions, "planted_ran": planted_ran, "dumps": dumps}
    with FakeMessagesAPI() as fake:
        env = {"HOME": str(home), "TMPDIR": str(tmp), "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "",
               "ANTHROPIC_AUTH_TOKEN": "", "CLAUDE_CODE_OAUTH_TOKEN": "", "XDG_CACHE_HOME": str(base / "cache"),
               "OCR_HOOK_PROVIDER": "claude-code", "PRE_COMMIT": "1"}
        # The mentioned line quoted as it is (anchors), and once as it is not (re-located): the filter's and
        # re-location's prompts carry the mentions too.
        line = f"# {MENTION_MARKER} see {mentions}"
        high = comment(content=f"Do not point at {mentions}.", code=line, severity="high", suggestion=None)
        lost = comment(content="Unclear reference.", code=f"see {mentions} nowhere", severity="high",
                       suggestion=None)
        fake.script(MENTION_MARKER, [
            Reply([tool_use("file_read", {"file_path": NOTES_PATH, "start_line": 1, "end_line": 1})]),
            Reply([tool_use("code_comment", {"comments": [high, lost]}), tool_use("task_done", {"state": "DONE"})])])
        fake.handle(is_filter, keep_all)
        fake.handle(is_relocate, lambda body: Reply([text(json.dumps({"locations": [{"comment": 1, "code": line}]}))]))
        fake.script(CLEAN_MARKER, [Reply([tool_use("task_done", {"state": "DONE"})])])
        fake.script(BIG_MARKER, [Reply([text("x" * BIG_TEXT_BYTES)])])

        # Code the CLI's runtime would load: NODE_OPTIONS for a claude run by Node, BUN_OPTIONS for the bundled one.
        hostile = {**env, **TELEMETRY, "NODE_OPTIONS": f"--require {base / 'planted.js'}",
                   "BUN_OPTIONS": f"--preload {base / 'planted.js'}",
                   "OTEL_EXPORTER_OTLP_ENDPOINT": fake.url, "OCR_HOOK_CLAUDE_CODE_PATH": dumping}
        out["before"] = _tree(home), _tree(tmp)
        out["mention"] = run_review(repo, hostile, base / "out-mention", MENTION_PATH, "--max-cost", str(MAX_COST),
                                    "--intent", f"Fix the parser; see {mentions}")
        out["after"] = _tree(home), _tree(tmp)
        out["mention_requests"] = fake.requests

        # SIGKILL while Claude Code waits on its reply: no handler of ocr-hook's runs, the guard must end the CLI.
        # A model that never stops: its first reply held until the CLI is gone (or is not, after 20 s), then
        # released; a CLI that outlived ocr-hook would go on sending requests while the later reviews run.
        kill_home, kill_tmp = base / "home-kill", base / "tmp-kill"
        for directory in (kill_home, kill_tmp):
            directory.mkdir()
        marker = f"HOME={kill_home}".encode()
        gate = threading.Event()
        fake.script(HELD_MARKER, [Reply([tool_use("file_read", {"file_path": HELD_PATH, "start_line": 1,
                                                                "end_line": n})], hold=gate if n == 1 else None)
                                  for n in range(1, 40)])
        token = {**env, "CLAUDE_CODE_OAUTH_TOKEN": TOKEN}
        killed = popen_review(repo, {**token, "HOME": str(kill_home), "TMPDIR": str(kill_tmp), "PRE_COMMIT": ""},
                              "--no-cache", HELD_PATH)
        out["arrived"] = fake.wait_for_requests(1, HELD_MARKER, timeout=60)
        out["running_before_kill"] = _processes_with(marker)
        killed.send_signal(signal.SIGKILL)
        killed.communicate(timeout=60)
        out["cli_gone"] = _wait(lambda: not _processes_with(marker), timeout=20)
        gate.set()
        out["scratch_removed"] = _wait(lambda: not any(kill_tmp.iterdir()))
        out["kill_tmp_left"] = sorted(p.name for p in kill_tmp.iterdir())

        mark = len(fake.requests)
        both = {**env, "CLAUDE_CODE_OAUTH_TOKEN": TOKEN, "ANTHROPIC_API_KEY": API_KEY}
        out["both"] = run_review(repo, both, base / "out-both", CLEAN_PATH)
        out["both_requests"] = [r for r in fake.requests[mark:] if HELD_MARKER not in r.first_user_text]

        mark = len(fake.requests)
        out["broken"] = run_review(repo, {**token, "OCR_HOOK_CLAUDE_CODE_PATH": broken}, base / "out-broken",
                                   CLEAN_PATH)
        out["broken_requests"] = [r for r in fake.requests[mark:] if HELD_MARKER not in r.first_user_text]
        out["big"] = run_review(repo, token, base / "out-big", BIG_PATH)
        out["held_requests"] = len(fake.requests_for(HELD_MARKER))
        survivors = _processes_with(marker)
        for pid in survivors:  # what outlived ocr-hook (the old code's CLI): ended here by its id
            os.kill(pid, signal.SIGKILL)
        out["survivors"] = survivors
    return out


def _all_text(requests: list[Any]) -> str:
    return "\n".join(r.path + "\n" + json.dumps(r.headers) + "\n" + r.raw.decode("utf-8", "replace")
                     for r in requests)


def test_no_mention_is_expanded_anywhere(runs: dict[str, Any]) -> None:
    run, requests = runs["mention"], runs["mention_requests"]
    sent = _all_text(requests)
    assert [c for c in CANARIES if c in sent] == []
    assert run.code == 1, run.proc.stdout
    # Only Messages requests: nothing counted or fetched for an attachment (count_tokens), nothing else.
    assert {r.path.split("?")[0] for r in requests} == {"/v1/messages"}, {r.path for r in requests}
    # Every kind of text ocr-hook hands over reached the model as written, mentions included: the change, the
    # intent, the guidance (system prompt), the tool result, and the filter's and re-location's prompts.
    mentions = runs["mentions"]
    [main, looked] = [r for r in requests if not is_filter(r.body) and not is_relocate(r.body)]
    assert f"{MENTION_MARKER} see {mentions}" in main.first_user_text
    assert f"Fix the parser; see {mentions}" in main.first_user_text
    assert f"Check {mentions} too." in json.dumps(main.body["system"])
    results = [b for m in looked.body["messages"] if isinstance(m["content"], list) for b in m["content"]
               if b.get("type") == "tool_result"]
    assert len(results) == 1 and mentions in json.dumps(results)
    for kind in (is_filter, is_relocate):
        [request] = [r for r in requests if kind(r.body)]
        assert mentions in json.dumps(request.body["messages"]), kind.__name__


def test_the_bill_stays_within_the_cap(runs: dict[str, Any]) -> None:
    from ocr_hook.settings import load

    usage = runs["mention"].report["usage"]
    requests = runs["mention_requests"]
    billed = sum(r.usage["input_tokens"] + r.usage.get("cache_creation_input_tokens", 0)
                 + r.usage.get("cache_read_input_tokens", 0) for r in requests if r.usage)
    assert usage["cost_usd"] <= MAX_COST and billed < 40_000, (usage, billed)
    prices = load(None, environ={}).pricing
    fake_cost = sum(_cost(r, prices) for r in requests if r.usage)
    assert fake_cost == pytest.approx(usage["cost_usd"], abs=1e-6) and fake_cost <= MAX_COST


def test_home_and_tmpdir_are_as_they_were(runs: dict[str, Any]) -> None:
    (home_before, tmp_before), (home_after, tmp_after) = runs["before"], runs["after"]
    assert home_after == home_before
    assert tmp_after == tmp_before == {}
    # ...and the login kept in ~/.claude still signed the requests (it is read where Claude Code keeps it).
    assert {r.headers.get("authorization") for r in runs["mention_requests"]} == {"Bearer sk-ant-oat01-login"}


def test_the_cli_gets_an_environment_built_for_it(runs: dict[str, Any]) -> None:
    assert not runs["planted_ran"].exists()  # NODE_OPTIONS=--require / BUN_OPTIONS=--preload planted.js
    dumps = sorted(runs["dumps"].iterdir())
    for dump in dumps:
        names = {line.split("=", 1)[0] for line in dump.read_text().splitlines() if "=" in line}
        leaked = {n for n in names if n.startswith("OTEL_") or n in TELEMETRY or n.endswith("_OPTIONS")}
        assert leaked == set(), (dump.name, leaked)
        assert {"CLAUDE_CONFIG_DIR", "TMPDIR", "ANTHROPIC_BASE_URL", "DISABLE_TELEMETRY"} <= names, names
    assert len(dumps) >= 4, dumps  # --version, the main loop, the filter, re-location
    assert all("x-leak" not in r.headers for r in runs["mention_requests"])


def test_with_a_token_and_an_api_key_the_notes_say_which_pays(runs: dict[str, Any]) -> None:
    run = runs["both"]
    assert run.code == 0, run.proc.stdout
    [request] = runs["both_requests"]
    assert request.headers.get("x-api-key") == API_KEY and "authorization" not in request.headers
    [note] = [n for n in run.report["notes"] if "CLAUDE_CODE_OAUTH_TOKEN" in n]
    assert "ANTHROPIC_API_KEY" in note and "billed" in note, note
    assert API_KEY not in json.dumps(run.report) and TOKEN not in run.proc.stdout


def test_a_cli_that_exits_at_start_up_fails_the_file_at_once(runs: dict[str, Any]) -> None:
    run = runs["broken"]
    assert run.code == 3, run.proc.stdout
    state, reason = run.coverage_state(CLEAN_PATH)
    assert state == "failed" and "at start-up with status 1" in reason and "no-such-option-52" in reason, reason
    assert STDERR_SECRET not in reason and "[MASKED-SECRET]" in reason, reason
    assert_one_line(reason)
    assert STDERR_SECRET not in run.proc.stdout + run.proc.stderr
    assert runs["broken_requests"] == []
    assert run.elapsed < 30, run.elapsed  # the SDK would wait 60 s for an answer to `initialize`


def test_an_over_long_output_line_is_one_failed_line(runs: dict[str, Any]) -> None:
    run = runs["big"]
    assert run.code == 3, run.proc.stdout
    state, reason = run.coverage_state(BIG_PATH)
    assert state == "failed" and "over 16 MiB" in reason, reason
    assert_one_line(reason)
    assert "Fatal error" not in run.proc.stderr + run.proc.stdout, run.proc.stderr
    assert run.proc.stderr.strip() == "", run.proc.stderr


def test_a_sigkilled_review_takes_its_claude_code_with_it(runs: dict[str, Any]) -> None:
    assert runs["arrived"] and runs["running_before_kill"], "the CLI never sent its request"
    assert runs["held_requests"] == 1  # the one it was waiting on when ocr-hook died: nothing after it
    assert runs["cli_gone"] and runs["survivors"] == []
    assert runs["scratch_removed"], runs["kill_tmp_left"]  # its private directories too


def test_the_guard_is_a_standalone_script() -> None:
    """cli_guard runs under `python -I -S`: the standard library only, nothing of ocr_hook's."""
    import ast

    from ocr_hook.agent import cli_guard

    tree = ast.parse(Path(cli_guard.__file__).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
