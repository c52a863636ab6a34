"""provider: claude-code (DESIGN.md 15): the Claude Code CLI itself: which one runs, whether it has credentials, and
the transport that runs it in a process group of its own. A file's review through it is claude_code_review.
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
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from ocr_hook.errors import ConfigError

SERVER = "ocr-hook"
EXTRA_HINT = "provider claude-code needs the Claude Agent SDK: pip install 'ocr-hook[claude-code]'"
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
# under them touches no network (strace, 2.1.332). The review's environment (ClaudeCodeReview._env) starts from them.
QUIET_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}
_STDOUT_LIMIT = 16 * 1024 * 1024  # one stream-json line may carry a whole tool result


def credential_kind(environ: Mapping[str, str]) -> str | None:
    """Which credential Claude Code will use, as doctor names it; None: none found."""
    from ocr_hook.provider_auto import claude_code_login

    for name in ("CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        if environ.get(name):
            return name
    return claude_code_login(environ)


def sign_in_hint(cli: str) -> str:
    """What to run to give this Claude Code a credential, naming the very CLI that will review: the bundled one
    is not on PATH, so a bare `claude` would be another one, or none."""
    import shlex
    import shutil

    on_path = shutil.which("claude")
    same = on_path is not None and os.path.realpath(on_path) == os.path.realpath(cli)
    command = "claude" if same else shlex.quote(cli)
    return (f"provider claude-code found no Claude Code credentials: run `{command} auth login` (a Claude plan; "
            "its `setup-token` gives CLAUDE_CODE_OAUTH_TOKEN for CI), or set ANTHROPIC_API_KEY")


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
    cli = cli_path(settings_path)
    cli_version(cli, environ)
    if credential_kind(environ) is None:
        raise ConfigError(sign_in_hint(cli))


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
