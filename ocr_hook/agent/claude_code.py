"""provider: claude-code (DESIGN.md 15): the Claude Code CLI itself: which one runs, whether it has credentials, and
the transport that runs it in a process group of its own. A file's review through it is claude_code_review.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from ocr_hook.errors import ConfigError

SERVER = "ocr-hook"
EXTRA_HINT = "provider claude-code needs the Claude Agent SDK: pip install 'ocr-hook[claude-code]'"
SIGN_IN_HINT = ("provider claude-code found no Claude Code credentials: run `claude login` (or `claude setup-token` "
                "and set CLAUDE_CODE_OAUTH_TOKEN), or set ANTHROPIC_API_KEY")
# Claude Code retries failed requests itself; a commit must not wait through its default ten.
CLI_MAX_RETRIES = "2"
_STDOUT_LIMIT = 16 * 1024 * 1024  # one stream-json line may carry a whole tool result


def credential_kind(environ: Mapping[str, str]) -> str | None:
    """Which credential Claude Code will use, as doctor names it; None: none found."""
    for name in ("CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        if environ.get(name):
            return name
    config = Path(environ.get("CLAUDE_CONFIG_DIR") or Path(environ.get("HOME") or Path.home()) / ".claude")
    if (config / ".credentials.json").is_file():
        return f"Claude Code login ({config / '.credentials.json'})"
    if sys.platform == "darwin" and (Path(environ.get("HOME") or Path.home()) / ".claude.json").is_file():
        return "Claude Code login (macOS keychain)"
    return None


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


def check_credentials(settings_path: str | None, environ: Mapping[str, str]) -> None:
    cli_path(settings_path)
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
