"""provider: claude-code (DESIGN.md 15): one file's main loop answered by the Claude Code CLI.

The CLI (the one bundled in `claude-agent-sdk`, or `claude_code_path`) runs headless in its own process group,
from an empty directory, with ocr-hook's system prompt, no built-in tool, no setting sources, and the six review
tools served in process through the SDK's MCP server from the same handlers as the API path. Claude Code runs
MCP tool calls one at a time and sends its next request only after the last result: so a handler that sees
task_done, or a next request the budget cannot cover, kills the process group before it returns its result, and
nothing more is sent. Usage is counted from the streamed message_start/message_delta events as the transport reads
them; Claude Code may start a call before its message's message_delta, so a handler first waits for that count.
The plan phase and the review filter do not run with this provider (no request may bypass Claude Code).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from ocr_hook.agent import registry
from ocr_hook.agent.client import BudgetStop
from ocr_hook.agent.conversation import SecretMasker
from ocr_hook.agent.loop import FileReview, FileTask, _End, answer_in_loop, as_shown, first_main_message, run_tool
from ocr_hook.budget.tokens import estimate_tokens
from ocr_hook.errors import ConfigError

SERVER = "ocr-hook"
EXTRA_HINT = "provider claude-code needs the Claude Agent SDK: pip install 'ocr-hook[claude-code]'"
SIGN_IN_HINT = ("provider claude-code found no Claude Code credentials: run `claude login` (or `claude setup-token` "
                "and set CLAUDE_CODE_OAUTH_TOKEN), or set ANTHROPIC_API_KEY")
# Claude Code retries failed requests itself; a commit must not wait through its default ten.
CLI_MAX_RETRIES = "2"
# The oldest Claude Code whose behaviour the review relies on, from its CHANGELOG.md (github.com/anthropics/
# claude-code): 2.1.186 "Fixed `--tools` allowing feature-gated tools to slip through before flags loaded on a cold
# first launch" (no built-in tool may ever run); older, and needed too: 2.1.166 (`--thinking disabled` honoured by
# models that think by default), 2.1.85 (`type:'sdk'` MCP servers in `--mcp-config` no longer dropped), 1.0.109
# (`--include-partial-messages`), 1.0.55 (`--system-prompt-file`).
MIN_CLI_VERSION = (2, 1, 186)
UPGRADE_HINT = ("pip install -U 'ocr-hook[claude-code]' (its bundled claude), or point claude_code_path at a newer "
                "claude (`claude update`)")
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_VERSION_TIMEOUT_S = 15.0
_versions: dict[tuple[str, int, int], str] = {}  # (path, mtime_ns, size) → what `--version` printed
# With these Claude Code makes no request of its own (updates, telemetry, feature flags): `claude auth status`
# under them touches no network (strace, 2.1.332). The review's environment (ClaudeCodeReview._env) sets them too.
QUIET_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}
_STDOUT_LIMIT = 16 * 1024 * 1024  # one stream-json line may carry a whole tool result


def credential_kind(environ: Mapping[str, str]) -> str | None:
    """Which credential Claude Code will use, as doctor names it; None: none found."""
    for name in ("CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        if environ.get(name):
            return name
    home = Path(environ.get("HOME") or Path.home())
    config = Path(environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    if (config / ".credentials.json").is_file():
        return f"Claude Code login ({config / '.credentials.json'})"
    # macOS keeps the login in the keychain, which only Claude Code reads (`claude auth status`, doctor: ~0.2 s).
    # Its .claude.json is written by any run, logged in or not; only a login leaves an oauthAccount in it.
    if sys.platform == "darwin" and _has_oauth_account(Path(environ["CLAUDE_CONFIG_DIR"]) / ".claude.json"
                                                       if environ.get("CLAUDE_CONFIG_DIR") else home / ".claude.json"):
        return "Claude Code login (macOS keychain)"
    return None


def _has_oauth_account(path: Path) -> bool:
    try:
        config = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and bool(config.get("oauthAccount"))


def cli_path(settings_path: str | None) -> str:
    """The `claude` to run: the configured one, else the one bundled in the claude-agent-sdk wheel."""
    if settings_path:
        if not Path(settings_path).is_file():
            raise ConfigError(f"claude_code_path {settings_path!r} is not a file")
        return settings_path
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(EXTRA_HINT)
    bundled = Path(next(iter(spec.submodule_search_locations))) / "_bundled" / ("claude.exe" if os.name == "nt"
                                                                                else "claude")
    if not bundled.is_file():
        raise ConfigError(f"the Claude Agent SDK has no bundled CLI here: set claude_code_path; {EXTRA_HINT}")
    return str(bundled)


def cli_version(cli: str, environ: Mapping[str, str]) -> str:
    """The first line `cli --version` prints, once per binary (path, mtime and size) and process. ConfigError,
    naming the fix, when it does not run, prints no version, or is older than MIN_CLI_VERSION."""
    try:
        stat = os.stat(cli)
    except OSError as exc:
        raise ConfigError(f"Claude Code at {cli} cannot be read ({exc.strerror}): {UPGRADE_HINT}") from None
    key = (cli, stat.st_mtime_ns, stat.st_size)
    version = _versions.get(key)
    if version is None:
        try:
            proc = subprocess.run([cli, "--version"], capture_output=True, text=True, errors="replace",
                                  timeout=_VERSION_TIMEOUT_S, env=dict(environ), stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise ConfigError(f"{cli} --version did not answer within {_VERSION_TIMEOUT_S:g} s: "
                              f"{UPGRADE_HINT}") from None
        except OSError as exc:
            fix = f"chmod +x {cli}" if isinstance(exc, PermissionError) else UPGRADE_HINT
            raise ConfigError(f"Claude Code at {cli} does not run ({exc.strerror or type(exc).__name__}): "
                              f"{fix}") from None
        first = (proc.stdout.strip().splitlines() or [""])[0].strip()
        if proc.returncode != 0 or not _VERSION.match(first):
            said = " ".join((first or proc.stderr.strip() or f"exit code {proc.returncode}").split())[:80]
            raise ConfigError(f"{cli} does not look like Claude Code (`--version` printed {said!r}): "
                              f"{UPGRADE_HINT}")
        version = _versions[key] = first
    found = _VERSION.match(version)
    assert found is not None
    if tuple(int(n) for n in found.groups()) < MIN_CLI_VERSION:
        raise ConfigError(f"Claude Code {found.group(0)} at {cli} is too old: ocr-hook needs "
                          f"{'.'.join(map(str, MIN_CLI_VERSION))} or newer; {UPGRADE_HINT}")
    return version


def check_credentials(settings_path: str | None, environ: Mapping[str, str]) -> None:
    """Before any file is reviewed: the CLI is there and new enough, and some credential is."""
    cli_version(cli_path(settings_path), environ)
    if credential_kind(environ) is None:
        raise ConfigError(SIGN_IN_HINT)


def _transport_class() -> type:
    from claude_agent_sdk import Transport

    class GroupTransport(Transport):  # type: ignore[misc]
        """The CLI in a process group of its own, killed whole on close (the SDK's transport waits up to
        5 s for a graceful exit and leaves the CLI's children in ours)."""

        def __init__(self, cmd: list[str], env: dict[str, str], cwd: str, stderr_path: Path,
                     observe: Callable[[dict[str, Any]], None]) -> None:
            self._cmd, self._env, self._cwd, self._stderr_path = cmd, env, cwd, stderr_path
            self._observe = observe
            self._proc: asyncio.subprocess.Process | None = None

        async def connect(self) -> None:
            with self._stderr_path.open("wb") as stderr:
                self._proc = await asyncio.create_subprocess_exec(
                    *self._cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr,
                    cwd=self._cwd, env=self._env, start_new_session=True, limit=_STDOUT_LIMIT)

        async def write(self, data: str) -> None:
            if self._proc is None or self._proc.stdin is None or self._proc.stdin.is_closing():
                return
            self._proc.stdin.write(data.encode("utf-8"))
            with contextlib.suppress(ConnectionError):
                await self._proc.stdin.drain()

        def read_messages(self) -> AsyncIterator[dict[str, Any]]:
            return self._lines()

        async def _lines(self) -> AsyncIterator[dict[str, Any]]:
            assert self._proc is not None and self._proc.stdout is not None
            while line := await self._proc.stdout.readline():
                with contextlib.suppress(ValueError):
                    message = json.loads(line)
                    if isinstance(message, dict):
                        self._observe(message)  # in stdout's order: a message's usage before its tool calls
                        yield message

        def kill(self) -> None:
            if self._proc is not None and self._proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self._proc.pid, signal.SIGKILL)

        async def close(self) -> None:
            self.kill()
            if self._proc is not None:
                await self._proc.wait()

        def is_ready(self) -> bool:
            return self._proc is not None and self._proc.returncode is None

        async def end_input(self) -> None:
            if self._proc is not None and self._proc.stdin is not None:
                self._proc.stdin.close()

        def stderr_tail(self) -> str:
            try:
                lines = self._stderr_path.read_text("utf-8", "replace").split("\n")
            except OSError:
                return ""
            return " ".join(" ".join(line for line in lines if line.strip())[-300:].split())

    return GroupTransport


class ClaudeCodeReview(FileReview):
    """A file's review whose main loop is one Claude Code conversation."""

    def __init__(self, task: FileTask, mask: SecretMasker, environ: Mapping[str, str]) -> None:
        super().__init__(task, None, mask)  # type: ignore[arg-type]  # no Messages API client: nothing bypasses the CLI
        self.environ = environ
        self._state: str | None = None
        self._stop_reason: str | None = None
        self._next_input = 0
        self._usage: dict[str, int] = {}
        self._called: set[str] = set()  # the tools called in the message streaming in
        # Clear while a message streams in, set once its usage is counted: a handler decides after that.
        self._counted = asyncio.Event()
        self._counted.set()
        self._stop = asyncio.Event()
        self._transport: Any = None
        self._model = ""

    async def _plan(self, rounds: int) -> tuple[str | None, int]:
        return None, 0  # no plan phase through Claude Code (yet): the main loop has all the rounds

    def _fits(self, model: str, input_tokens: int) -> bool:
        budget = self.task.budget
        held = budget.reserve(model, input_tokens, self.settings.max_output_tokens)
        if held is None:
            return False
        budget.release(held)
        return True

    def _command(self, cli: str, system_file: Path, model: str, rounds: int, names: list[str]) -> list[str]:
        thinking = "adaptive" if self.task.profile is not None and self.task.profile.thinking else "disabled"
        return [cli, "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
                "--system-prompt-file", str(system_file), "--tools", "", "--allowedTools", ",".join(names),
                "--mcp-config", json.dumps({"mcpServers": {SERVER: {"type": "sdk", "name": SERVER}}}),
                "--strict-mcp-config", "--setting-sources=", "--max-turns", str(rounds), "--model", model,
                "--permission-mode", "dontAsk", "--include-partial-messages", "--thinking", thinking]

    def _env(self, cwd: str) -> dict[str, str]:
        env = {k: v for k, v in self.environ.items() if k != "CLAUDECODE"}
        env.update({"CLAUDE_CODE_ENTRYPOINT": "sdk-py", "ENABLE_TOOL_SEARCH": "false",
                    "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(self.settings.max_output_tokens),
                    "CLAUDE_CODE_MAX_RETRIES": CLI_MAX_RETRIES, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                    "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_SDK_READS_SESSION_STATE": "1",
                    "PWD": cwd})
        return env

    def _halt(self) -> None:
        """End the conversation now: the CLI is killed before it can send anything more."""
        self._stop.set()
        if self._transport is not None:
            self._transport.kill()

    def _tools(self) -> list[Any]:
        from claude_agent_sdk import tool

        def handler_for(name: str) -> Any:
            async def handle(args: dict[str, Any]) -> dict[str, Any]:
                self.tool_calls += 1
                answer, state = answer_in_loop(name, args, "main", self.box)
                if answer is None:
                    answer = as_shown(await asyncio.to_thread(run_tool, name, dict(args), self.ctx), self.mask)
                # Claude Code starts a call once its block is complete, while the message that made it may
                # still stream its usage: decide (and kill) only once that usage is counted.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(5.0):
                        await self._counted.wait()
                if state is not None:
                    self._state = state
                    self._halt()  # task_done: the conversation ends here, nothing is sent after it
                else:
                    self._next_input += estimate_tokens(answer.text) + estimate_tokens(json.dumps(args))
                    if not self._fits(self._model, self._next_input):
                        self._stop_reason = (self.task.budget.exhausted_reason
                                             or "the budget cannot cover another request")
                        self._halt()
                return {"content": [{"type": "text", "text": answer.text or "(empty)"}], "is_error": answer.is_error}
            return handle

        return [tool(spec.name, spec.description, spec.input_schema)(handler_for(spec.name))
                for spec in registry.tools_for_phase("main")]

    def _observe(self, message: Mapping[str, Any]) -> None:
        if message.get("type") == "stream_event" and isinstance(message.get("event"), dict):
            self._on_stream(message["event"])

    def _on_stream(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            self._usage = dict((event.get("message") or {}).get("usage") or {})
            self._called = set()
            self._counted.clear()
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                self._called.add(str(block.get("name", "")).rsplit("__", 1)[-1])
        elif kind == "message_delta":
            self._usage.update({k: v for k, v in (event.get("usage") or {}).items() if isinstance(v, int)})
            self.task.budget.record(self._model, self._usage)
            self.requests += 1
            # The next request carries this whole conversation again, plus the tool results.
            self._next_input = sum(self._usage.get(k, 0) for k in (
                "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"))
            self._usage = {}
            self._counted.set()
            # A call the SDK's schema check refuses never reaches a handler: unless this turn records comments
            # or ends the file (their handlers check the budget themselves), stop here if the next turn won't fit.
            if not self._called & {"code_comment", "task_done"} and not self._fits(self._model, self._next_input):
                self._stop_reason = self.task.budget.exhausted_reason or "the budget cannot cover another request"
                self._halt()

    async def _main(self, rounds: int, checklist: str | None = None) -> None:
        from claude_agent_sdk import (
            ClaudeAgentOptions,
            ClaudeSDKClient,
            ResultMessage,
            create_sdk_mcp_server,
        )

        model = self._model = self.settings.model_for("main")
        cli = cli_path(self.settings.claude_code_path)
        first = await first_main_message(self.task, self.mask, rounds, checklist)
        system = "\n\n".join(block["text"] for block in self.system)
        tool_defs = json.dumps([spec.to_api() for spec in registry.tools_for_phase("main")])
        if not self._fits(model, estimate_tokens(system + first + tool_defs)):
            raise BudgetStop(self.task.budget.exhausted_reason or "the budget cannot cover another request")
        tools = self._tools()
        names = [f"mcp__{SERVER}__{t.name}" for t in tools]
        options = ClaudeAgentOptions(mcp_servers={SERVER: create_sdk_mcp_server(SERVER, tools=tools)},
                                     allowed_tools=names, tools=[], setting_sources=[])
        failure: str | None = None
        with tempfile.TemporaryDirectory(prefix="ocr-hook-claude-") as scratch:
            work = Path(scratch) / "work"
            work.mkdir()
            system_file = Path(scratch) / "system.md"
            system_file.write_text(system, "utf-8")
            transport = _transport_class()(self._command(cli, system_file, model, rounds, names),
                                           self._env(str(work)), str(work), Path(scratch) / "stderr.log",
                                           self._observe)
            self._transport = transport

            async def converse() -> str | None:
                async with ClaudeSDKClient(options, transport=transport) as client:
                    await client.query(first)
                    async for message in client.receive_response():
                        if isinstance(message, ResultMessage) and message.is_error:
                            return " ".join(str(message.result or message.subtype).split())[:240]
                return None

            talk = asyncio.create_task(converse())
            halt = asyncio.create_task(self._stop.wait())
            try:
                done, _ = await asyncio.wait({talk, halt}, timeout=max(0.0, self.task.budget.remaining_seconds()),
                                             return_when=asyncio.FIRST_COMPLETED)
                if talk in done:
                    try:
                        failure = talk.result()
                    except Exception as exc:  # the CLI died or spoke nonsense: the file fails with its words
                        failure = transport.stderr_tail() or f"{type(exc).__name__}: {exc}"
                elif not done:
                    self._stop_reason = self.task.budget.exhausted_reason or "the time limit was reached"
            finally:
                transport.kill()
                for task in (talk, halt):
                    task.cancel()
                await asyncio.gather(talk, halt, return_exceptions=True)
                await transport.close()
        if self._state == "DONE":
            self.main_finished = True
            return
        if self._state is not None:
            raise _End("model", "the model could not review this file (task_done FAILED)")
        if self._stop_reason is not None:
            raise BudgetStop(self._stop_reason)
        if failure is not None and "max_turns" not in failure:
            raise _End("api", f"Claude Code: {failure}")
        raise _End("model", f"no task_done within the limit of {rounds} rounds")
