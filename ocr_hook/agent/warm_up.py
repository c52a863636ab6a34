"""What a long-lived process does once so that every run it forks starts warm (DESIGN.md 14).

A review imports part of what it needs only when it first sends (the SDK's HTTP transport, the tool input
validator), builds the TLS trust with its client, and has pydantic build the SDK's response models on the
first reply. The warm worker (and the test suite's forked CLI) calls `warm_up` before it forks, so each run
finds all of that done. It reads no setting, key or repository and sends nothing: what it leaves behind is
the same for every run.
"""

from __future__ import annotations

import asyncio
import json
import re

# A reply of the shapes a review gets (text and a tool call), so that each model class is built once.
_SAMPLE_REPLY = {
    "id": "msg_warm_up", "type": "message", "role": "assistant", "model": "warm-up",
    "content": [{"type": "text", "text": ""},
                {"type": "tool_use", "id": "toolu_warm_up", "name": "finish_review", "input": {}}],
    "stop_reason": "tool_use", "stop_sequence": None,
    "usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
              "cache_read_input_tokens": 0},
}


def warm_up() -> None:
    """Best effort: a step that fails (no loopback in a sandbox, say) leaves its part for the runs."""
    import tenacity  # noqa: F401  (publish's rate-limit waits)

    from ocr_hook.agent import registry, tls

    tls.default_context()
    for phase in registry.PHASES:
        registry.tools_for_phase(phase)  # the shipped catalogue: read and checked once
    try:
        asyncio.run(_dry_request())
    except Exception:
        pass


async def _dry_request() -> None:
    """One request of a review's shape through the SDK and its real transport, to a server of this
    process's own on the loopback that gives a canned reply: the SDK, httpx and the event loop import,
    build and cache what a first real request would. No proxy, key or setting of the user's is used."""
    from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient

    from ocr_hook.agent import registry, tls
    from ocr_hook.agent.conversation import tools_param

    reply = json.dumps(_SAMPLE_REPLY).encode()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        await reader.readexactly(int(length.group(1)) if length else 0)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
                     b"content-length: %d\r\n\r\n%s" % (len(reply), reply))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, DefaultAsyncHttpxClient(trust_env=False, verify=tls.default_context()) as http:
        client = AsyncAnthropic(api_key="warm-up", base_url=f"http://127.0.0.1:{port}", http_client=http,
                                max_retries=0)
        await client.messages.create(
            model="warm-up", max_tokens=1, tools=tools_param(registry.tools_for_phase("main")),
            system=[{"type": "text", "text": "warm-up", "cache_control": {"type": "ephemeral"}}],
            messages=[{"role": "user", "content": [{"type": "text", "text": "warm-up"}]},
                      {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_warm_up",
                                                         "name": "finish_review", "input": {}}]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_warm_up",
                                                    "content": "warm-up"}]}])
