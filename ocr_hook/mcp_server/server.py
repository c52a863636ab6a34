"""The MCP server: tool registration on the SDK's low-level Server, stdio transport, one review at a time.

Standard output carries protocol messages only: the SDK's stdio transport points file descriptor 1 at
standard error while it serves, the pipeline prints nothing (progress goes out as MCP progress
notifications), and our own messages go to standard error.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from ocr_hook import __version__
from ocr_hook.errors import FatalError
from ocr_hook.mcp_server import arguments, runner, tools

Context = ServerRequestContext[Any]

# A review the client cancelled normally ends within a second (requests in flight are cut off at
# once); a new review waits this long for it instead of being refused.
STOPPING_WAIT_S = 10.0

INSTRUCTIONS = (
    "ocr-hook reviews git changes in one repository with an LLM code reviewer and gates them like its "
    "pre-commit hook and CI job. Call `review` on staged changes before committing; `preview` tells what "
    "would be reviewed and what it may cost, for free. To review a change yourself, with no model of "
    "ocr-hook's: `delegate_start`, then `delegate_call` with the review tools for each file, then "
    "`delegate_finish`."
)


def _log(message: str) -> None:
    print(f"ocr-hook mcp: {message}", file=sys.stderr, flush=True)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _document(doc: dict[str, Any], headline: str | None = None) -> types.CallToolResult:
    # Structured content for clients that read it; the same JSON as text for those that do not.
    text = json.dumps(doc, indent=2)
    content = [types.TextContent(type="text", text=headline)] if headline else []
    content.append(types.TextContent(type="text", text=text))
    return types.CallToolResult(content=content, structured_content=doc, is_error=False)


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


@dataclass
class _Running:
    """The review in progress (at most one per server)."""

    call: arguments.ReviewCall
    control: runner.RunControl
    started: float = field(default_factory=time.monotonic)
    finished: anyio.Event = field(default_factory=anyio.Event)


class ReviewServer:
    """Tool handlers for one repository (the only one this server reviews)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._running: _Running | None = None
        self._tools = [types.Tool(**definition) for definition in tools.tool_definitions()]

    async def list_tools(self, ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._tools)

    async def call_tool(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            if params.name == tools.REVIEW:
                return await self._review(ctx, arguments.review_call(params.arguments))
            if params.name == tools.PREVIEW:
                scope, paths, effort = arguments.preview_call(params.arguments)
                doc = await anyio.to_thread.run_sync(runner.run_preview, self.root, scope, paths, effort)
                return _document(doc)
            if params.name == tools.DELEGATE_START:
                scope, paths, effort, intent = arguments.delegate_start_call(params.arguments)
                doc = await anyio.to_thread.run_sync(runner.run_delegate_start, self.root, scope, paths, effort,
                                                     intent)
                return _document(doc)
            if params.name == tools.DELEGATE_CALL:
                doc = await anyio.to_thread.run_sync(runner.run_delegate_call, self.root,
                                                     *arguments.delegate_call_call(params.arguments))
                return _document(doc)
            if params.name == tools.DELEGATE_FINISH:
                doc = await anyio.to_thread.run_sync(runner.run_delegate_finish, self.root,
                                                     *arguments.delegate_finish_call(params.arguments))
                return _document(doc, headline=doc["verdict"])
            names = ", ".join(t.name for t in self._tools)
            return _error(f"ocr-hook: error: unknown tool {params.name!r}; this server has: {names}")
        except arguments.ArgumentError as exc:
            return _error(f"ocr-hook: error: {exc}")
        except FatalError as exc:  # the CLI's exit-2 errors: bad ref, bad config, no key, not a repository
            # (no key: the CLI's block of the ways in, one line here as every tool error is)
            return _error(f"ocr-hook: error: {' '.join(line.strip() for line in str(exc).splitlines())}")
        except Exception as exc:  # a bug of ours costs this call, never the server
            _log(f"internal error in {params.name}: {_one_line(exc)}")
            return _error(f"ocr-hook: internal error: {_one_line(exc)}")

    async def _review(self, ctx: Context, call: arguments.ReviewCall) -> types.CallToolResult:
        busy = self._running
        if busy is not None and busy.control.cancelled:
            with anyio.move_on_after(STOPPING_WAIT_S):
                await busy.finished.wait()
            busy = self._running
        if busy is not None:
            return _error(
                f"ocr-hook: error: a review is already running in this server ({busy.call.scope.kind} scope, "
                f"started {time.monotonic() - busy.started:.0f} s ago); wait for its result or cancel it, then "
                "call review again. preview can be called meanwhile.")
        running = self._running = _Running(call, runner.RunControl())
        try:
            return await self._run_review(ctx, running)
        finally:
            self._running = None
            running.finished.set()

    async def _run_review(self, ctx: Context, running: _Running) -> types.CallToolResult:
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[tuple[str, str, str] | None] = asyncio.Queue()  # None: the review is over
        forwarded = anyio.Event()

        def on_event(path: str, kind: str, detail: str) -> None:  # called in the review's threads
            loop.call_soon_threadsafe(events.put_nowait, (path, kind, detail))

        async def forward_progress() -> None:
            # MCP wants the progress value to grow with every notification, so it counts file events
            # (a file has one or two); the message says which file and what happened to it.
            count = 0
            while (event := await events.get()) is not None:
                path, kind, detail = event
                count += 1
                message = f"{kind} {path}" + (f" ({detail})" if detail else "")
                await ctx.session.report_progress(count, None, message)
            forwarded.set()

        done = False

        async def stop_when_cancelled() -> None:
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                if not done:  # the client cancelled the call (or the connection is closing)
                    running.control.cancel()
                raise

        doc: dict[str, Any] | None = None
        failure: Exception | None = None
        async with anyio.create_task_group() as group:
            group.start_soon(forward_progress)
            group.start_soon(stop_when_cancelled)
            try:
                # Not abandoned on cancellation: the call ends when the review has stopped, so no
                # request is ever sent after the client was told the call is over.
                doc = await anyio.to_thread.run_sync(
                    partial(runner.run_review, self.root, running.call, on_event, running.control))
                if running.control.cancelled:  # nobody gets the result: say on stderr what it cost
                    _log(f"review cancelled: {doc['verdict']} (cost ${doc['usage']['cost_usd']:.4f})")
                # Every event was queued before the thread returned: send them all before the result.
                events.put_nowait(None)
                await forwarded.wait()
            except Exception as exc:  # raised below, outside the group, so it is not wrapped in a group
                failure = exc
            finally:
                done = True
                group.cancel_scope.cancel()
        if failure is not None:
            raise failure
        assert doc is not None
        return _document(doc, headline=doc["verdict"])


def build(root: str) -> Server[Any]:
    app = ReviewServer(root)
    return Server("ocr-hook", version=__version__, title="ocr-hook code review", instructions=INSTRUCTIONS,
                  on_list_tools=app.list_tools, on_call_tool=app.call_tool)


async def _serve(root: str) -> None:
    server = build(root)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve(root: str) -> int:
    """Serve until the client closes standard input; 0 then."""
    anyio.run(_serve, root)
    return 0
