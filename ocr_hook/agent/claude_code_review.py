"""provider: claude-code (DESIGN.md 15): one file's review answered by the Claude Code CLI, phase by phase.

Each model step of a file is one CLI conversation (CliTalk): the plan phase (when the file's profile plans), the
main loop, and after it the re-location of unanchored comments and the review filter (ClaudeCodeReview.ask, which
post_review calls as it calls the Messages API): no request bypasses Claude Code. The CLI (the one bundled in
`claude-agent-sdk`, or `claude_code_path`) runs headless in its own process group, from an empty directory, with
ocr-hook's system prompt, no built-in tool, no setting sources, and the phase's review tools (none for a one-shot
step) served in process through the SDK's MCP server from the same handlers as the API path. Claude Code runs MCP
tool calls one at a time and sends its next request only after the last result: so a handler that sees task_done,
or a next request the budget cannot cover, kills the process group before it returns its result, and nothing more
is sent. Usage is counted from the streamed message_start/message_delta events as the transport reads them;
Claude Code may start a call before its message's message_delta, so a handler first waits for that count.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_hook.agent import prompts, registry
from ocr_hook.agent.claude_code import (
    CLI_MAX_RETRIES,
    SERVER,
    CliEnded,
    _transport_class,
    cli_env,
    cli_path,
    private_scratch,
)
from ocr_hook.agent.client import BudgetStop, RequestFailed
from ocr_hook.agent.conversation import SecretMasker
from ocr_hook.agent.loop import (
    MAX_CHECKLIST_CHARS,
    MAX_NUDGES,
    MAX_REPEATS,
    NO_TOOL_USE,
    FileReview,
    FileTask,
    _call_key,
    _context_text,
    _End,
    answer_in_loop,
    as_shown,
    first_main_message,
    repeated_call,
    run_tool,
)
from ocr_hook.agent.tool_api import ToolResult
from ocr_hook.budget.tokens import estimate_tokens

if TYPE_CHECKING:
    from ocr_hook.budget.ledger import Budget

# Claude Code keeps a tool result of more than 50,000 characters only as a 2 KB preview and a file the model
# cannot read here (no built-in tool runs): ocr-hook cuts its tools' results below that itself, with the notes
# that say where to continue (the API path's limits are 60,000), leaving room for what is added after the tool
# (the last round's announcement).
RESULT_CHARS = 45_000


class ClaudeCodeReview(FileReview):
    """A file's review through Claude Code: its plan phase, its main loop and the model steps after it
    (re-location, review filter: `ask`) are each one CLI conversation (CliTalk)."""

    def __init__(self, task: FileTask, mask: SecretMasker, environ: Mapping[str, str]) -> None:
        super().__init__(task, None, mask)  # type: ignore[arg-type]  # no Messages API client: nothing bypasses the CLI
        self.ctx = dataclasses.replace(self.ctx, result_chars=RESULT_CHARS)
        self.environ = environ
        self._state: str | None = None

    def _talk(self, phase: str | None, model: str, system: str, rounds: int, max_tokens: int,
              answer: Answer | None = None, closers: frozenset[str] = frozenset()) -> CliTalk:
        """A conversation with the file's settings; a phase's conversation (plan, main) gets its profile's
        thinking and effort as the API path sends them, a one-shot step (no phase) neither."""
        profile = self.task.profile if phase is not None else None
        return CliTalk(cli_path(self.settings.claude_code_path), self.environ, self.task.budget, model, system,
                       rounds, max_tokens, phase=phase, answer=answer, closers=closers,
                       thinking=profile is not None and profile.thinking,
                       effort=profile.output_effort if profile is not None else None)

    def _system_text(self) -> str:
        return "\n\n".join(block["text"] for block in self.system)

    async def _converse(self, talk: CliTalk, first: str) -> str | None:
        try:
            return await talk.run(first)
        finally:
            self.requests += talk.requests
            self.tool_calls += talk.tool_calls

    def _open(self, talk: CliTalk, first: str) -> None:
        """Before the CLI starts: its first request (system, message, tool definitions) must fit the budget."""
        tool_defs = json.dumps([spec.to_api() for spec in registry.tools_for_phase(talk.phase)]) if talk.phase else ""
        if not talk.fits(estimate_tokens(talk.system + first + tool_defs)):
            raise BudgetStop(talk.budget_reason())
        if talk.budget.remaining_seconds() <= 0:  # as the API client: no request once the time is up
            raise BudgetStop(talk.budget.exhausted_reason or talk.budget.time_limit_reached)

    async def _plan(self, rounds: int) -> tuple[str | None, int]:
        """The read-only look around, as on the API path: its last message's text is the checklist."""
        change = self.task.change
        first = prompts.plan_message(self.path, str(change.status), change.changed_lines,
                                     prompts.its_patch(change, self.mask), self.task.other_paths, rounds,
                                     _context_text(self.task, self.mask), self.task.intent)
        if rounds == 1:
            first += "\n\n" + prompts.plan_last_round()
        noted = False

        async def answer(name: str, args: dict[str, Any]) -> tuple[ToolResult, bool]:
            nonlocal noted
            if talk.requests >= rounds:  # the last round's calls: the plan is over, nothing more is sent
                return ToolResult("The plan phase is over."), True
            result, _ = await self._call(name, args, "plan", talk.requests)
            if talk.requests == rounds - 1 and not noted:  # the next request is the last round
                noted = True
                result = ToolResult(f"{result.text}\n\n{prompts.plan_last_round()}", result.is_error)
            return result, False

        talk = self._talk("plan", self.settings.model_for("plan"), self._system_text(), rounds,
                          self.settings.max_output_tokens, answer)
        self._open(talk, first)
        failure = await self._converse(talk, first)
        if talk.halted_for is not None:
            raise BudgetStop(talk.halted_for)
        if failure is not None and "max_turns" not in failure:
            raise _End("api", f"Claude Code: {failure}")
        if talk.stop == "refusal":
            raise _End("model", "the model declined to review this file (refusal)")
        return (talk.text.strip()[:MAX_CHECKLIST_CHARS] or None), talk.requests

    async def _call(self, name: str, args: dict[str, Any], phase: str, round_no: int) -> tuple[ToolResult, str | None]:
        """A tool call answered as the API path answers it (a repeat of an answered call included), and
        task_done's state."""
        key = _call_key(name, args)
        if name != "task_done" and key in self._answered:
            self.repeats += 1
            return repeated_call(name, self._answered[key]), None
        self._answered[key] = round_no
        answer, state = answer_in_loop(name, args, phase, self.box)
        if answer is None:
            answer = as_shown(await asyncio.to_thread(run_tool, name, dict(args), self.ctx), self.mask)
        return answer, state

    async def _main(self, rounds: int, checklist: str | None = None) -> None:
        self._answered.clear()  # the plan's answers are not part of this conversation
        self.repeats = 0
        first = await first_main_message(self.task, self.mask, rounds, checklist)
        # As on the API path: the last round is announced with the message that opens it and is offered only
        # its tools. The CLI's tools are fixed when it starts, so a lone round is started with the last round's
        # tools; in a longer conversation the last round's calls are answered as that phase answers them.
        if rounds == 1:
            first += "\n\n" + prompts.final_round(self.path)
        announced = False
        nudges = 0

        async def answer(name: str, args: dict[str, Any]) -> tuple[ToolResult, bool]:
            nonlocal announced
            round_no = talk.requests  # the calling message is counted before its calls are answered
            result, state = await self._call(name, args, "final" if round_no >= rounds else "main", round_no)
            if state is not None:
                self._state = state
                return result, True  # task_done: the conversation ends here, nothing is sent after it
            if round_no == rounds - 1 and not announced:  # these results open the last round
                announced = True
                result = ToolResult(f"{result.text}\n\n{prompts.final_round(self.path)}", result.is_error)
            # After a nudge Claude Code counts its --max-turns afresh: the last round ends here, not there.
            if self.repeats >= MAX_REPEATS or round_no >= rounds:
                talk.end_after_turn()
            return result, False

        def follow_up() -> str | None:
            """Claude Code ends a conversation at a reply without a tool call; the API path nudges the model
            back to its tools (at most MAX_NUDGES times, a cut reply told it was cut), and so does this."""
            nonlocal nudges
            if talk.stop not in ("end_turn", "max_tokens", "stop_sequence") or talk.requests >= rounds:
                return None
            nudges += 1
            if nudges > MAX_NUDGES:
                return None
            text = prompts.cut_off() if talk.stop == "max_tokens" else prompts.nudge(self.path)
            if talk.requests + 1 == rounds:
                text += "\n\n" + prompts.final_round(self.path)
            return text

        talk = self._talk("final" if rounds == 1 else "main", self.settings.model_for("main"), self._system_text(),
                          rounds, self.settings.max_output_tokens, answer, MAIN_CLOSERS)
        talk.follow_up = follow_up
        self._open(talk, first)
        failure = await self._converse(talk, first)
        if self._state == "DONE":
            self.main_finished = True
            return
        if self._state is not None:
            raise _End("model", "the model could not review this file (task_done FAILED)")
        if self.repeats >= MAX_REPEATS:
            raise _End("model", f"the model repeated identical tool calls {self.repeats} times")
        if talk.halted_for is not None:
            raise BudgetStop(talk.halted_for)
        if failure is not None and "max_turns" not in failure:
            raise _End("api", f"Claude Code: {failure}")
        if talk.stop == "refusal":
            raise _End("model", "the model declined to review this file (refusal)")
        if talk.stop != "tool_use" and failure is None:  # it ended on a reply without a tool call
            if self.tool_calls == 0:
                raise _End("model", NO_TOOL_USE)
            if nudges > MAX_NUDGES:
                raise _End("model", "the model stopped calling tools and never called task_done")
        # The last round was answered: the model has said all it had to say.
        self.main_finished = talk.requests >= rounds
        raise _End("model", f"no task_done within the limit of {self.rounds_limit} rounds")

    async def ask(self, model: str, system: str | list[dict[str, Any]], user_text: str, max_tokens: int) -> str:
        """One request with no tool (re-location, review filter): post_review's Ask, through Claude Code."""
        text = system if isinstance(system, str) else "\n\n".join(block["text"] for block in system)
        talk = self._talk(None, model, text, 1, max_tokens)
        self._open(talk, user_text)
        failure = await talk.run(user_text)
        if talk.halted_for is not None:
            raise BudgetStop(talk.halted_for)
        if failure is not None:
            raise RequestFailed(f"Claude Code: {failure}")
        if talk.stop == "refusal":
            raise RequestFailed("the model declined")
        return talk.text


# A tool's handler for one phase: its answer, and whether the conversation ends with it.
Answer = Callable[[str, dict[str, Any]], Awaitable[tuple[ToolResult, bool]]]
# Calls whose handlers check the budget themselves (see CliTalk._on_stream).
MAIN_CLOSERS = frozenset({"code_comment", "task_done"})


class CliTalk:
    """One Claude Code CLI conversation: ocr-hook's `system` prompt, the phase's tools served in process (none
    without a phase), no built-in tool, no setting source, at most `rounds` requests of up to `max_tokens`
    output tokens each. Every message's usage is counted into the budget as it streams in; a handler decides
    (and may kill the CLI) only once its message is counted. After run(): `text` and `stop` are the last
    message's, `halted_for` says why the budget or the clock ended it, if they did."""

    def __init__(self, cli: str, environ: Mapping[str, str], budget: Budget, model: str, system: str, rounds: int,
                 max_tokens: int, *, phase: str | None = None, answer: Answer | None = None,
                 closers: frozenset[str] = frozenset(), thinking: bool = False, effort: str | None = None,
                 schemas: Mapping[str, dict[str, Any]] | None = None) -> None:
        # `schemas`: a tool's input schema for this conversation in place of the registry's (the checks pass's
        # check_verdict, whose `check` is an enum of this change's checks, as on the API path).
        self._schemas = schemas or {}
        self.cli, self.environ, self.budget, self.model, self.system = cli, environ, budget, model, system
        self.rounds, self.max_tokens, self.phase = rounds, max_tokens, phase
        self.thinking, self.effort, self._answer, self._closers = thinking, effort, answer, closers
        self.requests = 0
        self.tool_calls = 0
        self.text = ""
        self.stop: str | None = None
        self.halted_for: str | None = None
        self._parts: list[str] = []
        self._next_input = 0
        self._usage: dict[str, int] = {}
        self._called: set[str] = set()  # the tools called in the message streaming in
        self._calls = self._handled = 0  # the message's tool calls, and how many of them a handler answered
        self._end_after_turn = False
        # Asked when Claude Code ended the conversation without an error: the next user message, or None.
        self.follow_up: Callable[[], str | None] | None = None
        # Clear while a message streams in, set once its usage is counted: a handler decides after that.
        self._counted = asyncio.Event()
        self._counted.set()
        self._stop = asyncio.Event()
        self._transport: Any = None

    def fits(self, input_tokens: int) -> bool:
        held = self.budget.reserve(self.model, input_tokens, self.max_tokens)
        if held is None:
            return False
        self.budget.release(held)
        return True

    def budget_reason(self) -> str:
        return self.budget.exhausted_reason or "the budget cannot cover another request"

    def halt(self, reason: str | None = None) -> None:
        """End the conversation now: the CLI is killed before it can send anything more."""
        if reason is not None and self.halted_for is None:
            self.halted_for = reason
        self._stop.set()
        if self._transport is not None:
            self._transport.kill()

    def end_after_turn(self) -> None:
        """End the conversation once the calling message's calls are answered, as the API path ends it after a
        whole turn. A call the SDK's schema check refused never reaches a handler: then it ends as the next
        message starts."""
        self._end_after_turn = True

    def _command(self, system_file: Path, names: list[str]) -> list[str]:
        command = [self.cli, "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
                   "--system-prompt-file", str(system_file), "--tools", "", "--strict-mcp-config", "--setting-sources=",
                   "--max-turns", str(self.rounds), "--model", self.model, "--permission-mode", "dontAsk",
                   "--include-partial-messages", "--thinking", "adaptive" if self.thinking else "disabled"]
        if names:
            command += ["--allowedTools", ",".join(names),
                        "--mcp-config", json.dumps({"mcpServers": {SERVER: {"type": "sdk", "name": SERVER}}})]
        if self.effort is not None:
            # Claude Code sends it as output_config.effort only to the models it knows support effort.
            command += ["--effort", self.effort]
        return command

    def _env(self, scratch: Path) -> dict[str, str]:
        return {**cli_env(self.environ, scratch), "CLAUDE_CODE_ENTRYPOINT": "sdk-py", "ENABLE_TOOL_SEARCH": "false",
                "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(self.max_tokens), "CLAUDE_CODE_MAX_RETRIES": CLI_MAX_RETRIES,
                "CLAUDE_CODE_SDK_READS_SESSION_STATE": "1"}

    def _tools(self) -> list[Any]:
        if self.phase is None or self._answer is None:
            return []
        from claude_agent_sdk import tool

        answer = self._answer

        def handler_for(name: str) -> Any:
            async def handle(args: dict[str, Any]) -> dict[str, Any]:
                self.tool_calls += 1
                # Claude Code starts a call once its block is complete, while the message that made it may
                # still stream its usage: decide (and kill) only once that usage is counted.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(5.0):
                        await self._counted.wait()
                result, ends = await answer(name, args)
                self._handled += 1
                if ends or (self._end_after_turn and self._handled >= self._calls):
                    self.halt()
                else:
                    self._next_input += estimate_tokens(result.text) + estimate_tokens(json.dumps(args))
                    if not self.fits(self._next_input):
                        self.halt(self.budget_reason())
                return {"content": [{"type": "text", "text": result.text or "(empty)"}], "is_error": result.is_error}
            return handle

        return [tool(spec.name, spec.description, self._schemas.get(spec.name, spec.input_schema))(
                    handler_for(spec.name)) for spec in registry.tools_for_phase(self.phase)]

    def _observe(self, message: Mapping[str, Any]) -> None:
        if message.get("type") == "stream_event" and isinstance(message.get("event"), dict):
            self._on_stream(message["event"])

    def _on_stream(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            self._usage = dict((event.get("message") or {}).get("usage") or {})
            if self._end_after_turn:  # sent before it could be stopped (see end_after_turn): its input is billed
                self.budget.record(self.model, self._usage)
                self.requests += 1
                self.halt()
                return
            self._called = set()
            self._calls = self._handled = 0
            self._parts = []
            self._counted.clear()
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                self._called.add(str(block.get("name", "")).rsplit("__", 1)[-1])
                self._calls += 1
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                self._parts.append(str(delta.get("text", "")))
        elif kind == "message_delta":
            self._usage.update({k: v for k, v in (event.get("usage") or {}).items() if isinstance(v, int)})
            self.budget.record(self.model, self._usage)
            self.requests += 1
            self.text, self.stop = "".join(self._parts), (event.get("delta") or {}).get("stop_reason")
            # The next request carries this whole conversation again, plus the tool results.
            self._next_input = sum(self._usage.get(k, 0) for k in (
                "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"))
            self._usage = {}
            self._counted.set()
            # A call the SDK's schema check refuses never reaches a handler: unless this turn records comments
            # or ends the file (their handlers check the budget themselves), stop here if the next turn won't fit.
            # Without tools there is no next turn.
            if self.phase is not None and not self._called & self._closers and not self.fits(self._next_input):
                self.halt(self.budget_reason())

    async def run(self, first: str) -> str | None:
        """The conversation from its first user message; Claude Code's reason when it ended in an error."""
        from claude_agent_sdk import (
            ClaudeAgentOptions,
            ClaudeSDKClient,
            ResultMessage,
            create_sdk_mcp_server,
        )

        tools = self._tools()
        names = [f"mcp__{SERVER}__{t.name}" for t in tools]
        servers = {SERVER: create_sdk_mcp_server(SERVER, tools=tools)} if tools else {}
        # verbatim_prompts: every user message is marked client_composed, so Claude Code sends its text as given,
        # never reading an `@path` in it as a file to attach (or `/name` as a command). The tool results are
        # MCP results, which it never expands; the system prompt is a file it sends as it is.
        options = ClaudeAgentOptions(mcp_servers=servers, allowed_tools=names, tools=[], setting_sources=[],
                                     verbatim_prompts=True)
        failure: str | None = None
        with private_scratch() as scratch:
            system_file = scratch / "system.md"
            system_file.write_text(self.system, "utf-8")
            transport = _transport_class()(self._command(system_file, names), self._env(scratch), scratch,
                                           scratch / "stderr.log", self._observe)
            self._transport = transport

            async def converse() -> str | None:
                async with ClaudeSDKClient(options, transport=transport) as client:
                    prompt: str | None = first
                    while prompt is not None:
                        await client.query(prompt)
                        async for message in client.receive_response():
                            if isinstance(message, ResultMessage) and message.is_error:
                                return " ".join(str(message.result or message.subtype).split())[:240]
                        prompt = self.follow_up() if self.follow_up is not None else None
                return None

            talk = asyncio.create_task(converse())
            halt = asyncio.create_task(self._stop.wait())
            try:
                done, _ = await asyncio.wait({talk, halt}, timeout=max(0.0, self.budget.remaining_seconds()),
                                             return_when=asyncio.FIRST_COMPLETED)
                if talk in done:
                    try:
                        failure = talk.result()
                    except CliEnded as exc:  # the CLI ended by itself, or sent what cannot be read
                        failure = str(exc)
                    except Exception as exc:  # the SDK could not talk to it: the file fails with the CLI's words
                        failure = transport.stderr_tail() or f"{type(exc).__name__}: {exc}"
                elif not done:
                    self.halted_for = self.budget.exhausted_reason or self.budget.time_limit_reached
            finally:
                transport.kill()
                for task in (talk, halt):
                    task.cancel()
                await asyncio.gather(talk, halt, return_exceptions=True)
                await transport.close()
        return failure
