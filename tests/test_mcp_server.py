"""`ocr-hook mcp` end to end: the MCP SDK's own stdio client starts `python -m ocr_hook mcp` in a real
scratch repository; reviews go through the real pipeline and the real Anthropic SDK to the fake API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from agent_support import filter_keeps_all
from e2e_support import CALC_LINE, CALC_PATH, calc_repo, comment, comment_turn
from fake_api import FakeMessagesAPI, Reply, check_verdict, task_done
from gitrepo import git, run_cli, write
from jsonschema import Draft202012Validator
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ocr_hook.changes.scope import Scope
from ocr_hook.install_command import add_extra_hint
from ocr_hook.mcp_server.arguments import ReviewCall
from ocr_hook.mcp_server.runner import capped
from ocr_hook.settings import load

CALL_TIMEOUT_S = 60


class Client:
    """One server subprocess and the SDK's client session on it; records what is not protocol."""

    def __init__(self, session: ClientSession, stray: list[object]) -> None:
        self.session = session
        self.stray = stray  # stdout lines that failed to parse as JSON-RPC (reported by the transport)

    async def call(self, name: str, arguments: dict[str, Any] | None = None,
                   progress: list[tuple[float, str | None]] | None = None) -> types.CallToolResult:
        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            if progress is not None:
                progress.append((value, message))

        with anyio.fail_after(CALL_TIMEOUT_S):
            return await self.session.call_tool(name, arguments or {}, progress_callback=on_progress)


CHECKS_OPENING = "Evaluate the team's checks"


@asynccontextmanager
async def serving(repo: Path, env: Mapping[str, str], errlog: Path, *extra: str) -> AsyncIterator[Client]:
    stray: list[object] = []

    async def on_message(message: object) -> None:
        if isinstance(message, Exception):
            stray.append(message)

    params = StdioServerParameters(command=sys.executable, args=["-m", "ocr_hook", "mcp", *extra],
                                   env=dict(env), cwd=str(repo))
    with errlog.open("a", encoding="utf-8") as err:
        async with stdio_client(params, errlog=err) as (read, write_), \
                ClientSession(read, write_, message_handler=on_message) as session:
            with anyio.fail_after(CALL_TIMEOUT_S):
                await session.initialize()
            client = Client(session, stray)
            yield client
            assert stray == [], f"the server wrote something other than protocol messages: {stray}"


def error_text(result: types.CallToolResult) -> str:
    assert result.is_error, result
    assert result.structured_content is None
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    assert "\n" not in block.text and block.text.startswith("ocr-hook: error: "), block.text
    return block.text


def stderr_of(errlog: Path) -> str:
    text_ = errlog.read_text(encoding="utf-8") if errlog.exists() else ""
    assert "Traceback" not in text_, text_
    return text_


def _filter_keeps_everything(fake_api: FakeMessagesAPI) -> None:
    filter_keeps_all(fake_api)


# ------------------------------------------------------------------------------------------------ tools/list


def assert_tools_have_schemas_a_model_can_follow(tools: list[types.Tool]) -> None:
    """tools/list: what test_review_of_a_staged_change_returns_the_cli_document_with_progress's server lists
    before its review (one server start for both)."""
    listed = {tool.name: tool for tool in tools}
    assert set(listed) == {"review", "preview", "delegate_start", "delegate_call", "delegate_finish"}
    review, preview = listed["review"], listed["preview"]
    for tool in (review, preview):
        Draft202012Validator.check_schema(tool.input_schema)
        Draft202012Validator.check_schema(tool.output_schema)
        assert tool.input_schema["additionalProperties"] is False
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        props = tool.input_schema["properties"]
        assert props["scope"]["enum"] == ["staged", "base", "range", "commit", "scan"]
        assert set(props) >= {"scope", "base", "from", "to", "commit", "rev", "paths"}
        assert "required" not in tool.input_schema  # every argument has a default on our side
    props = review.input_schema["properties"]
    assert props["fail_on"]["enum"] == ["critical", "high", "medium", "low", "never"]
    assert props["max_cost"]["exclusiveMinimum"] == 0 and props["timeout"]["exclusiveMinimum"] == 0
    assert "never raise" in props["max_cost"]["description"]
    assert "before you commit" in review.description and "preview" in review.description
    assert "without an API key" in preview.description
    finding = review.output_schema["properties"]["findings"]["items"]
    assert finding["properties"]["severity"]["enum"] == ["critical", "high", "medium", "low"]
    assert {"exit_code", "verdict", "status", "findings", "coverage", "usage"} <= set(review.output_schema["required"])
    assert "max_cost" not in preview.input_schema["properties"]
    # Checks (DESIGN.md 20): the review's document describes the verdicts; a host answers checks through
    # delegate_call's check_verdict.
    described = review.output_schema["properties"]["checks"]["items"]["properties"]
    assert described["verdict"]["enum"] == ["pass", "fail", "inconclusive", "not_applicable"]
    assert "check_verdict" in listed["delegate_call"].input_schema["properties"]["tool"]["enum"]


# ------------------------------------------------------------------------------------------------ review


def test_review_of_a_staged_change_returns_the_cli_document_with_progress(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    # A team's check at HEAD (the staged change left as it is): the review returns its verdict too.
    write(repo, ".ocr-hook/checks/calc-tests.md", "---\npaths: [\"calc.py\"]\nmode: block\nwhen: commit\n---\n"
          "Every new function in calc.py has a test.\n")
    git(repo, "add", ".ocr-hook/checks/calc-tests.md")
    git(repo, "commit", "-q", "--no-verify", "-m", "check", "--", ".ocr-hook/checks/calc-tests.md")
    _filter_keeps_everything(fake_api)
    fake_api.script(CALC_PATH, [comment_turn(comment(severity="high")), task_done()])
    fake_api.script(CHECKS_OPENING, [check_verdict("calc-tests", "pass", "The change adds no function.",
                                                   then_done=True)])
    progress: list[tuple[float, str | None]] = []

    async def main() -> tuple[list[types.Tool], types.CallToolResult]:
        async with serving(repo, sdk_env, tmp_path / "stderr.txt") as client:
            tools = (await client.session.list_tools()).tools
            return tools, await client.call("review", {}, progress)

    tools, result = anyio.run(main)
    assert_tools_have_schemas_a_model_can_follow(tools)
    assert not result.is_error, result.content
    doc = result.structured_content
    assert doc is not None
    assert doc["status"] == "complete" and doc["exit_code"] == 1
    assert doc["verdict"].startswith("FAILED") and doc["verdict"].endswith("[exit 1]")
    (finding,) = doc["findings"]
    assert (finding["path"], finding["start_line"], finding["severity"]) == (CALC_PATH, CALC_LINE, "high")
    assert finding["suggestion"] == "    return a + b"
    assert doc["coverage"]["reviewed"] == [CALC_PATH] and doc["usage"]["requests"] >= 2
    [verdict] = doc["checks"]
    assert (verdict["name"], verdict["verdict"], verdict["mode"]) == ("calc-tests", "pass", "block")
    # The text blocks: the verdict first, then the same document as JSON for clients without structured content.
    assert [b.text for b in result.content[:1]] == [doc["verdict"]]  # type: ignore[union-attr]
    assert json.loads(result.content[1].text) == doc  # type: ignore[union-attr]
    # Per-file progress, in order, the value growing with every notification.
    assert progress == [(1, f"reviewing {CALC_PATH}"), (2, f"done {CALC_PATH} (1 comment(s))")]
    # The same pipeline as the CLI: its --format json agrees (now from the result cache the call filled).
    sent = len(fake_api.requests)
    cli = run_cli(repo, "review", "--format", "json", env=sdk_env)
    assert len(fake_api.requests) == sent
    assert cli.returncode == 1
    cli_doc = json.loads(cli.stdout)
    for key in ("status", "exit_code", "verdict", "fail_on", "scope", "findings", "schema_version"):
        assert cli_doc[key] == doc[key], key
    assert [(c["name"], c["verdict"], c["carried"]) for c in cli_doc["checks"]] == [("calc-tests", "pass", True)]
    assert cli_doc["coverage"]["cached"] == [CALC_PATH]
    assert stderr_of(tmp_path / "stderr.txt") == ""


def test_call_arguments_set_scope_gate_and_lower_caps(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                       sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "commit", "-q", "-m", "change calc")
    _filter_keeps_everything(fake_api)
    fake_api.script(CALC_PATH, [comment_turn(comment(severity="medium")), task_done()])

    async def main() -> tuple[types.CallToolResult, ...]:
        async with serving(repo, sdk_env, tmp_path / "stderr.txt") as client:
            # First, while nothing is in the result cache: a cap far below any request.
            starved = await client.call("review", {"base": base, "max_cost": 1e-9})
            staged = await client.call("review", {})  # nothing staged any more
            commit = await client.call("review", {"commit": "HEAD", "fail_on": "medium"})
            ranged = await client.call("review", {"scope": "range", "from": base, "to": "HEAD", "fail_on": "low"})
            lax = await client.call("review", {"commit": "HEAD", "fail_on": "never"})
            scanned = await client.call("review", {"scope": "scan", "paths": [CALC_PATH], "fail_on": "medium"})
            wrong = await client.call("review", {"scope": "commit", "commit": "HEAD", "rev": "HEAD"})
            return staged, commit, ranged, starved, lax, scanned, wrong

    staged, commit, ranged, starved, lax, scanned, wrong = anyio.run(main)
    # The scan scope: calc.py whole at HEAD, as an added file.
    doc = scanned.structured_content
    assert doc is not None and doc["scope"].startswith("scan of HEAD") and doc["exit_code"] == 1
    assert doc["coverage"]["reviewed"] == [CALC_PATH] and doc["findings"][0]["start_line"] == CALC_LINE
    assert wrong.is_error and "'rev' do not go with scope 'commit'" in error_text(wrong)
    # A call may make the gate stricter, never more lenient: 'never' leaves the configured 'high'.
    assert lax.structured_content["fail_on"] == "high"  # type: ignore[index]
    assert staged.structured_content["coverage"]["reviewed"] == []  # type: ignore[index]
    assert staged.structured_content["exit_code"] == 0  # type: ignore[index]
    assert commit.structured_content["scope"].startswith("commit ")  # type: ignore[index]
    assert commit.structured_content["exit_code"] == 1  # type: ignore[index]  # medium fails at fail_on medium
    assert ranged.structured_content["fail_on"] == "low"  # type: ignore[index]
    # Nothing was sent under the tiny cap, and the result says incomplete (a result, not an error).
    doc = starved.structured_content
    assert not starved.is_error and doc is not None
    assert doc["status"] == "incomplete" and doc["exit_code"] == 3 and "REVIEW INCOMPLETE" in doc["verdict"]
    assert doc["usage"]["requests"] == 0 and "cost cap" in doc["coverage"]["skipped"][0]["reason"]


def test_per_call_caps_lower_the_configured_ones_and_never_raise_them(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path / "repo")
    write(repo, ".ocr-hook.yaml", "max_cost: 0.5\ntimeout: 60\njson_output: out.json\n")
    settings = load(str(repo), environ={})
    higher = capped(settings, ReviewCall(Scope("staged"), (), max_cost=100.0, timeout=3600.0))
    assert (higher.max_cost, higher.timeout) == (0.5, 60)
    lower = capped(settings, ReviewCall(Scope("staged"), (), max_cost=0.1, timeout=5.0))
    assert (lower.max_cost, lower.timeout) == (0.1, 5.0)
    assert lower.json_output is None  # the server writes nothing into the repository


# ------------------------------------------------------------------------------------------------ preview, errors


def test_preview_without_a_key_and_every_failure_is_a_tool_error(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env_without_key: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    errlog = tmp_path / "stderr.txt"

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with serving(repo, sdk_env_without_key, errlog) as client:
            out["preview"] = await client.call("preview", {})
            out["scan preview"] = await client.call("preview", {"scope": "scan"})
            out["no key"] = await client.call("review", {})
            out["bad scope"] = await client.call("review", {"scope": "everything"})
            out["unknown argument"] = await client.call("review", {"branch": "main"})
            out["missing ref"] = await client.call("review", {"scope": "base"})
            out["mixed refs"] = await client.call("review", {"scope": "commit", "commit": "HEAD", "base": "main"})
            out["bad type"] = await client.call("review", {"max_cost": "lots"})
            out["unknown ref"] = await client.call("preview", {"base": "no-such-branch"})
            out["outside"] = await client.call("preview", {"paths": ["../elsewhere"]})
            out["absolute outside"] = await client.call("review", {"paths": [str(tmp_path)]})
            write(repo, ".ocr-hook.yaml", "fail_on: [unclosed\n")
            out["broken config"] = await client.call("preview", {})
            (repo / ".ocr-hook.yaml").unlink()
            out["unknown tool"] = await client.session.call_tool("delete_everything", {})
            out["after"] = await client.call("preview", {"paths": [CALC_PATH]})
        return out

    out = anyio.run(main)
    preview = out.pop("preview").structured_content
    scanned = out.pop("scan preview").structured_content
    assert scanned["scope"].startswith("scan of HEAD") and [(f["path"], f["status"]) for f in scanned["files"]] == [
        (CALC_PATH, "added")]
    assert [(f["path"], f["action"]) for f in preview["files"]] == [(CALC_PATH, "review")]
    assert preview["estimate"]["input_tokens"] > 0 and preview["complete"] is True
    messages = {name: error_text(result) for name, result in out.items() if name != "after"}
    assert "no API key and no Claude Code login. Three ways in: - an API key: set ANTHROPIC_API_KEY" in messages[
        "no key"] and "ocr-hook delegate start" in messages["no key"]
    assert "'scope' must be one of staged, base, range, commit, scan" in messages["bad scope"]
    assert "unknown argument 'branch'" in messages["unknown argument"] and "it takes: scope" in messages[
        "unknown argument"]
    assert "scope 'base' needs 'base'" in messages["missing ref"] and '"base": "main"' in messages["missing ref"]
    assert "'base' do not go with scope 'commit'" in messages["mixed refs"]
    assert "'max_cost' must be of type number" in messages["bad type"]
    assert "unknown ref 'no-such-branch'" in messages["unknown ref"]
    assert "outside the repository" in messages["outside"] and "outside the repository" in messages["absolute outside"]
    assert ".ocr-hook.yaml" in messages["broken config"]
    assert ("unknown tool 'delete_everything'; this server has: review, preview, delegate_start, delegate_call, "
            "delegate_finish") in messages["unknown tool"]
    assert not out["after"].is_error and out["after"].structured_content["scope"].endswith(f"in {CALC_PATH}")
    assert fake_api.requests == []  # nothing was ever sent
    assert stderr_of(errlog) == ""


# ------------------------------------------------------------------------------------------------ one at a time


def test_cancelling_a_review_stops_it_promptly_and_the_server_serves_on(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    errlog = tmp_path / "stderr.txt"
    _filter_keeps_everything(fake_api)
    fake_api.script(CALC_PATH, [Reply(comment_turn().blocks, delay_s=60), task_done()])
    timings: dict[str, float] = {}

    async def main() -> types.CallToolResult:
        async with serving(repo, sdk_env, errlog) as client:
            progress: list[tuple[float, str | None]] = []
            async with anyio.create_task_group() as group:
                group.start_soon(client.call, "review", {}, progress)
                with anyio.fail_after(CALL_TIMEOUT_S):
                    while not fake_api.requests_for(CALC_PATH):  # the request is in flight at the fake
                        await anyio.sleep(0.02)
                started = time.monotonic()
                group.cancel_scope.cancel()
            # The server has stopped the review when it logs what the cancelled run cost.
            with anyio.fail_after(CALL_TIMEOUT_S):
                while "review cancelled" not in errlog.read_text(encoding="utf-8"):
                    await anyio.sleep(0.02)
            timings["stopped"] = time.monotonic() - started
            assert progress and progress[0][1] == f"reviewing {CALC_PATH}"
            timings["sent_at_cancel"] = len(fake_api.requests)
            # The next review is answered (it waits for the cancelled one to wind down, not refused).
            fake_api.script(CALC_PATH, [comment_turn(), task_done()])
            started = time.monotonic()
            result = await client.call("review", {})
            timings["next"] = time.monotonic() - started
            return result

    result = anyio.run(main)
    assert timings["stopped"] < 20.0, timings  # the fake would have answered after 60 s (margin: a busy machine)
    assert timings["next"] < 20.0, timings
    assert not result.is_error and result.structured_content["status"] == "complete"  # type: ignore[index]
    # The cancelled run sent nothing after the request it cut off: the 3 later requests are the new
    # review's two turns and its review filter.
    assert timings["sent_at_cancel"] == 1
    assert len(fake_api.requests) == 1 + 3
    log = stderr_of(errlog)
    assert "review cancelled: REVIEW INCOMPLETE" in log and "cancelled by the MCP client" in log
    # The request cut off counts at its worst case, as the CLI counts it.
    assert "(cost $0.0000)" not in log


def test_a_second_review_while_one_runs_is_refused_clearly(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    _filter_keeps_everything(fake_api)
    running = threading.Event()  # the first review's reply is held until the other calls are answered
    fake_api.script(CALC_PATH, [Reply(comment_turn().blocks, hold=running), task_done()])
    results: dict[str, types.CallToolResult] = {}

    async def main() -> None:
        async with serving(repo, sdk_env, tmp_path / "stderr.txt") as client:
            async def first() -> None:
                results["first"] = await client.call("review", {})

            async with anyio.create_task_group() as group:
                group.start_soon(first)
                with anyio.fail_after(CALL_TIMEOUT_S):
                    while not fake_api.requests_for(CALC_PATH):
                        await anyio.sleep(0.02)
                results["second"] = await client.call("review", {"commit": "HEAD"})
                results["preview"] = await client.call("preview", {})
                running.set()

    anyio.run(main)
    assert "a review is already running in this server" in error_text(results["second"])
    assert "wait for its result or cancel it" in error_text(results["second"])
    assert not results["preview"].is_error
    first = results["first"].structured_content
    assert first is not None and first["status"] == "complete" and len(first["findings"]) == 1


# ------------------------------------------------------------------------------------------------ raw stdio


def test_standard_output_carries_protocol_only_even_after_garbage_input(tmp_path: Path,
                                                                         sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        "this is not JSON",
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "preview", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "review", "arguments": [1, 2]}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/list"},
    ]
    payload = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    proc = subprocess.Popen([sys.executable, "-m", "ocr_hook", "mcp", "--repo", str(repo)], cwd=tmp_path,
                            env={**os.environ, **sdk_env}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    # Answers arrive in any order; wait for the last one before closing stdin, so every call is answered.
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(payload)
    proc.stdin.flush()
    answers: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while len(answers) < 4 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        message = json.loads(line)  # every line is a JSON-RPC message
        assert message["jsonrpc"] == "2.0"
        if "id" in message and message["id"] is not None:
            answers[message["id"]] = message
    rest, err = proc.communicate(timeout=CALL_TIMEOUT_S)  # closes stdin: the server ends
    for line in rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert set(answers) == {1, 2, 3, 4}
    assert answers[2]["result"]["structuredContent"]["files"][0]["path"] == CALC_PATH
    # Arguments that are not an object: the SDK's own params check answers with a JSON-RPC error.
    assert answers[3]["error"]["code"] == types.INVALID_PARAMS
    assert {t["name"] for t in answers[4]["result"]["tools"]} == {
        "review", "preview", "delegate_start", "delegate_call", "delegate_finish"}


def test_the_server_refuses_to_start_outside_a_repository(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    proc = run_cli(tmp_path, "mcp", "--repo", str(tmp_path), env=sdk_env, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("ocr-hook: error: not a git repository"), proc.stderr


def test_without_the_sdk_the_command_says_which_extra_to_install(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path / "repo")
    code = "import sys; sys.modules['mcp'] = None\nfrom ocr_hook.cli import main\nmain(['mcp'])"
    proc = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == f"ocr-hook: error: ocr-hook mcp needs the MCP SDK: {add_extra_hint('mcp')}"


def test_a_client_on_the_2026_protocol_gets_the_same_tools_progress_and_cancellation(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    """The SDK's high-level Client probes server/discover and talks the per-request 2026-07-28 protocol."""
    from mcp import Client

    repo = calc_repo(tmp_path / "repo")
    _filter_keeps_everything(fake_api)
    fake_api.script(CALC_PATH, [comment_turn(), task_done()])
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def main() -> tuple[str, types.CallToolResult, types.CallToolResult]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "ocr_hook", "mcp"], env=dict(sdk_env),
                                       cwd=str(repo))
        async with Client(params) as client:
            with anyio.fail_after(CALL_TIMEOUT_S):
                version = client.protocol_version
                assert {t.name for t in (await client.list_tools()).tools} == {
                    "review", "preview", "delegate_start", "delegate_call", "delegate_finish"}
                reviewed = await client.call_tool("review", {}, progress_callback=on_progress)
                write(repo, CALC_PATH, "def add(a, b):\n    return a * b\n")
                git(repo, "add", CALC_PATH)
                fake_api.script(CALC_PATH, [Reply(comment_turn().blocks, delay_s=60), task_done()])
                async with anyio.create_task_group() as group:
                    group.start_soon(client.call_tool, "review", {})
                    while not fake_api.requests_for("return a * b"):
                        await anyio.sleep(0.02)
                    group.cancel_scope.cancel()
                previewed = await client.call_tool("preview", {})
        return version, reviewed, previewed

    version, reviewed, previewed = anyio.run(main)
    assert version >= "2026-07-28"
    assert reviewed.structured_content["exit_code"] == 0  # type: ignore[index]  # a medium finding
    assert progress == [(1, f"reviewing {CALC_PATH}"), (2, f"done {CALC_PATH} (1 comment(s))")]
    assert previewed.structured_content["files"][0]["path"] == CALC_PATH  # type: ignore[index]
    time.sleep(0.5)
    assert len(fake_api.requests_for("return a * b")) == 1  # the cancelled review sent nothing more


def test_review_honours_the_dismissals_file(tmp_path: Path, fake_api: FakeMessagesAPI,
                                            sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    _filter_keeps_everything(fake_api)
    fake_api.script(CALC_PATH, [comment_turn(comment(severity="high")), task_done()])
    report = tmp_path / "report.json"
    first = run_cli(repo, "review", "--no-cache", "--json-output", str(report), env=sdk_env)
    assert first.returncode == 1
    fingerprint = json.loads(report.read_text())["findings"][0]["fingerprint"]
    reason = "subtraction is intended here: amounts are signed"
    dismissed = run_cli(repo, "dismiss", fingerprint[:8], "--reason", reason, "--from", str(report), env=sdk_env)
    assert dismissed.returncode == 0, dismissed.stderr

    async def main() -> types.CallToolResult:
        async with serving(repo, sdk_env, tmp_path / "stderr.txt") as client:
            return await client.call("review", {})

    result = anyio.run(main)
    doc = result.structured_content
    assert not result.is_error and doc is not None
    assert doc["exit_code"] == 0 and doc["verdict"].startswith("PASSED")
    (finding,) = doc["findings"]
    assert (finding["fingerprint"], finding["suppressed"], finding["suppression_reason"]) == (
        fingerprint, "dismissed", reason)
    assert any(".ocr-hook/dismissed.yaml" in n and fingerprint[:8] in n for n in doc["notes"])


def test_a_narrow_code_page_never_breaks_the_protocol_or_the_text(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                   sdk_env: dict[str, str]) -> None:
    """A cp1252 console, as a Windows agent host may give: the protocol stays UTF-8 JSON and the finding's
    text arrives exactly."""
    repo = calc_repo(tmp_path / "repo")
    message = "除以零 — 結果は未定義 ✓ 😀"
    _filter_keeps_everything(fake_api)
    fake_api.script(CALC_PATH, [comment_turn(comment(content=message, severity="high")), task_done()])

    async def main() -> types.CallToolResult:
        async with serving(repo, {**sdk_env, "PYTHONIOENCODING": "cp1252", "PYTHONUTF8": "0"},
                           tmp_path / "stderr.txt") as client:
            return await client.call("review", {})

    result = anyio.run(main)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert [f["message"] for f in result.structured_content["findings"]] == [message]
    stderr_of(tmp_path / "stderr.txt")
