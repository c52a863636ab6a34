"""provider: claude-code (DESIGN.md 15): the Claude Code CLI itself: which one runs, whether it has credentials, and
the transport that runs it in a process group of its own. A file's review through it is claude_code_review.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ocr_hook.errors import ConfigError
from ocr_hook.secrets_mask import mask_secrets

SERVER = "ocr-hook"
# Claude Code retries failed requests itself; a commit must not wait through its default ten.
CLI_MAX_RETRIES = "2"
# The oldest Claude Code whose behaviour the review relies on, from its CHANGELOG.md (github.com/anthropics/
# claude-code) and the Agent SDK: 2.1.248 honours `client_composed` on a user message (the SDK's verbatim_prompts,
# VERBATIM_PROMPTS_MINIMUM_CLAUDE_CODE_VERSION): no `@path` in what ocr-hook hands over is expanded into a file's
# text; older, and needed too: 2.1.186 "Fixed `--tools` allowing feature-gated tools to slip through before flags
# loaded on a cold first launch" (no built-in tool may ever run), 2.1.166 (`--thinking disabled` honoured by models
# that think by default), 2.1.85 (`type:'sdk'` MCP servers in `--mcp-config` no longer dropped), 1.0.109
# (`--include-partial-messages`), 1.0.55 (`--system-prompt-file`).
MIN_CLI_VERSION = (2, 1, 248)
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_VERSION_TIMEOUT_S = 15.0
_versions: dict[tuple[str, int, int], str] = {}  # (path, mtime_ns, size) → what `--version` printed
# With these Claude Code makes no request of its own (updates, telemetry, feature flags): `claude auth status`
# under them touches no network (strace, 2.1.332).
QUIET_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}
# What the CLI gets of the user's environment (docs/claude-code.md lists it): its credentials, the API's address,
# the proxy and certificate settings that reach it, and what a process needs to find programs, the home directory
# (where the login is kept) and the locale. Nothing else: not NODE_OPTIONS or BUN_OPTIONS (code run in the CLI),
# not CLAUDE_CODE_ENABLE_TELEMETRY or OTEL_* (the review sent elsewhere), not ANTHROPIC_CUSTOM_HEADERS and the like.
PASSED_ENV = ("CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
              "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
              "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR",
              "CLAUDE_CODE_CLIENT_CERT", "CLAUDE_CODE_CLIENT_KEY", "CLAUDE_CODE_CLIENT_KEY_PASSPHRASE",
              "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
_STDOUT_LIMIT = 16 * 1024 * 1024  # one stream-json line may carry a whole tool result


def extra_hint() -> str:
    """The missing extra and the command that adds it to this installation (read from its metadata, so only
    when it is needed)."""
    from ocr_hook.install_command import add_extra_hint

    return f"provider claude-code needs the Claude Agent SDK: {add_extra_hint('claude-code')}"


def upgrade_hint() -> str:
    """A newer bundled claude comes with a newer SDK, within the range this ocr-hook accepts."""
    from ocr_hook.install_command import upgrade_extra_hint

    return f"{upgrade_extra_hint('claude-code')}, or a newer claude as claude_code_path"


def credential_kind(environ: Mapping[str, str]) -> str | None:
    """Which credential Claude Code will use, as doctor names it; None: none found. Claude Code 2.1.337 sends an
    API key or auth token when one is set, whatever OAuth token is set beside it (the fake API saw only x-api-key)."""
    from ocr_hook.provider_auto import claude_code_login

    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        if environ.get(name):
            return name
    return claude_code_login(environ)


def billing_note(environ: Mapping[str, str]) -> str | None:
    """The review's note when a plan's OAuth token is set but Claude Code will bill an API key instead."""
    key = next((n for n in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN") if environ.get(n)), None)
    if key is None or not environ.get("CLAUDE_CODE_OAUTH_TOKEN"):
        return None
    return (f"Claude Code used {key}, not CLAUDE_CODE_OAUTH_TOKEN (both are set): this review is billed to that key, "
            f"not to your plan; unset {key} to review on the plan")


def cli_env(environ: Mapping[str, str], scratch: Path) -> dict[str, str]:
    """The environment the CLI runs with: PASSED_ENV from the user's, then ocr-hook's switches, and a private
    configuration and temporary directory under `scratch` (private_scratch), so that no transcript, session file,
    socket or probe is left in HOME or TMPDIR. The login stays where Claude Code keeps it:
    CLAUDE_SECURESTORAGE_CONFIG_DIR names the user's configuration directory ("": ~/.claude) for the credentials
    file and the macOS keychain entry, so a token Claude Code refreshes is written back there."""
    env = {name: environ[name] for name in PASSED_ENV if name in environ}
    env.update({**QUIET_ENV, "CLAUDE_CONFIG_DIR": str(scratch / "config"), "TMPDIR": str(scratch / "tmp"),
                "CLAUDE_SECURESTORAGE_CONFIG_DIR": environ.get("CLAUDE_SECURESTORAGE_CONFIG_DIR",
                                                               environ.get("CLAUDE_CONFIG_DIR", "")),
                "PWD": str(scratch / "work")})
    return env


class NoTemporaryDirectory(ConfigError):
    """No directory for the CLI's private scratch could be made: the fix is TMPDIR, not another Claude Code."""


@contextlib.contextmanager
def private_scratch() -> Iterator[Path]:
    """A directory for one CLI process, removed with everything in it: config/ (CLAUDE_CONFIG_DIR), tmp/ (TMPDIR),
    work/ (its working directory, empty). NoTemporaryDirectory when it cannot be made."""
    try:
        holder = tempfile.TemporaryDirectory(prefix="ocr-hook-claude-")
    except OSError as exc:
        raise NoTemporaryDirectory(f"no usable temporary directory for Claude Code's private files "
                                   f"({exc.strerror or exc}): set TMPDIR to a writable directory") from None
    with holder as name:
        scratch = Path(name)
        for sub in ("config", "tmp", "work"):
            (scratch / sub).mkdir(mode=0o700)
        yield scratch


SIGN_IN_PROBLEM = "provider claude-code found no Claude Code credentials"


def sign_in_fix(cli: str) -> str:
    """What to run to give this Claude Code a credential, naming the very CLI that will review: the bundled one
    is not on PATH, so a bare `claude` would be another one, or none."""
    import shlex
    import shutil

    on_path = shutil.which("claude")
    same = on_path is not None and os.path.realpath(on_path) == os.path.realpath(cli)
    command = "claude" if same else shlex.quote(cli)
    return (f"run `{command} auth login` (a Claude plan; its `setup-token` gives CLAUDE_CODE_OAUTH_TOKEN for CI), "
            "or set ANTHROPIC_API_KEY")


def sign_in_hint(cli: str) -> str:
    return f"{SIGN_IN_PROBLEM}: {sign_in_fix(cli)}"


def require_sdk() -> None:
    """ConfigError naming this installation's command for the extra when the Claude Agent SDK is not there."""
    if importlib.util.find_spec("claude_agent_sdk") is None:
        raise ConfigError(extra_hint())


def cli_path(settings_path: str | None) -> str:
    """The `claude` to run: the configured one, else the one bundled in the claude-agent-sdk wheel."""
    if settings_path:
        if not Path(settings_path).is_file():
            raise ConfigError(f"claude_code_path {settings_path!r} is not a file")
        return settings_path
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(extra_hint())
    bundled = Path(next(iter(spec.submodule_search_locations))) / "_bundled" / ("claude.exe" if os.name == "nt"
                                                                                else "claude")
    if not bundled.is_file():
        raise ConfigError(f"the Claude Agent SDK has no bundled CLI here: set claude_code_path; {extra_hint()}")
    return str(bundled)


def cli_version(cli: str, environ: Mapping[str, str]) -> str:
    """The first line `cli --version` prints, once per binary (path, mtime and size) and process. ConfigError,
    naming the fix, when it does not run, prints no version, or is older than MIN_CLI_VERSION."""
    try:
        stat = os.stat(cli)
    except OSError as exc:
        raise ConfigError(f"Claude Code at {cli} cannot be read ({exc.strerror}): {upgrade_hint()}") from None
    key = (cli, stat.st_mtime_ns, stat.st_size)
    version = _versions.get(key)
    if version is None:
        try:
            with private_scratch() as scratch:
                proc = subprocess.run([cli, "--version"], capture_output=True, text=True, errors="replace",
                                      timeout=_VERSION_TIMEOUT_S, env=cli_env(environ, scratch),
                                      cwd=scratch / "work", stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise ConfigError(f"{cli} --version did not answer within {_VERSION_TIMEOUT_S:g} s: "
                              f"{upgrade_hint()}") from None
        except OSError as exc:
            fix = f"chmod +x {cli}" if isinstance(exc, PermissionError) else upgrade_hint()
            raise ConfigError(f"Claude Code at {cli} does not run ({exc.strerror or type(exc).__name__}): "
                              f"{fix}") from None
        first = (proc.stdout.strip().splitlines() or [""])[0].strip()
        if proc.returncode != 0 or not _VERSION.match(first):
            said = " ".join((first or proc.stderr.strip() or f"exit code {proc.returncode}").split())[:80]
            raise ConfigError(f"{cli} does not look like Claude Code (`--version`: {said!r}): point "
                              "claude_code_path at Claude Code's `claude`, or unset it for the claude-code extra's")
        version = _versions[key] = first
    found = _VERSION.match(version)
    assert found is not None
    if tuple(int(n) for n in found.groups()) < MIN_CLI_VERSION:
        raise ConfigError(f"Claude Code {found.group(0)} at {cli} is too old: ocr-hook needs "
                          f"{'.'.join(map(str, MIN_CLI_VERSION))} or newer; {upgrade_hint()}")
    return version


def check_credentials(settings_path: str | None, environ: Mapping[str, str]) -> None:
    """Before any file is reviewed: the SDK that drives the CLI (a claude_code_path does not bring it), the CLI
    there and new enough, and some credential."""
    require_sdk()
    cli = cli_path(settings_path)
    cli_version(cli, environ)
    if credential_kind(environ) is None:
        raise ConfigError(sign_in_hint(cli))


class CliEnded(Exception):
    """The CLI ended, or spoke in a way ocr-hook cannot read, before its conversation was over: the step's reason,
    its words already masked."""


_GUARD = str(Path(__file__).with_name("cli_guard.py"))


def _quiet_sdk_log() -> None:
    """The SDK logs a failed read ("Fatal error in message reader: ...") through `logging`, which with no handler
    configured prints it on stderr beside ocr-hook's own line for the same failure (the file's reason)."""
    sdk_log = logging.getLogger("claude_agent_sdk")
    if not any(isinstance(h, logging.NullHandler) for h in sdk_log.handlers):
        sdk_log.addHandler(logging.NullHandler())


def _transport_class() -> type:
    from claude_agent_sdk import Transport

    _quiet_sdk_log()

    class GroupTransport(Transport):  # type: ignore[misc]
        """The CLI in a process group of its own under cli_guard (which kills the group if ocr-hook dies without
        a word), killed whole on close (the SDK's transport waits up to 5 s for a graceful exit and leaves the
        CLI's children in ours). An end of its output that ocr-hook did not cause is CliEnded at once, with the
        exit status and the masked end of its stderr (the SDK would wait 60 s for an answer to `initialize`)."""

        def __init__(self, cmd: list[str], env: dict[str, str], scratch: Path, stderr_path: Path,
                     observe: Callable[[dict[str, Any]], None]) -> None:
            self._cmd, self._env, self._scratch, self._stderr_path = cmd, env, scratch, stderr_path
            self._observe = observe
            self._proc: asyncio.subprocess.Process | None = None
            self._lifeline: int | None = None  # the write end of the guard's pipe: held, never written
            self._killed = False
            self._answered = False  # any line read

        async def connect(self) -> None:
            read_end, self._lifeline = os.pipe()
            try:
                with self._stderr_path.open("wb") as stderr:
                    self._proc = await asyncio.create_subprocess_exec(
                        sys.executable, "-I", "-S", _GUARD, str(read_end), str(self._scratch), *self._cmd,
                        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr,
                        cwd=self._scratch / "work", env=self._env, start_new_session=True, limit=_STDOUT_LIMIT,
                        pass_fds=(read_end,))
            finally:
                os.close(read_end)

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
            while True:
                try:
                    line = await self._proc.stdout.readline()
                except ValueError:  # asyncio's words for a line over the limit
                    self.kill()
                    raise CliEnded(f"the CLI sent a message over {_STDOUT_LIMIT // 2**20} MiB, more than ocr-hook "
                                   "reads") from None
                if not line:
                    break
                self._answered = True
                with contextlib.suppress(ValueError):
                    message = json.loads(line)
                    if isinstance(message, dict):
                        self._observe(message)  # in stdout's order: a message's usage before its tool calls
                        yield message
            if not self._killed:
                status = await self._proc.wait()
                when = "during the conversation" if self._answered else "at start-up"
                tail = self.stderr_tail()
                raise CliEnded(f"the CLI exited {when} with status {status}" + (f": {tail}" if tail else ""))

        def kill(self) -> None:
            self._killed = True
            if self._proc is not None and self._proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self._proc.pid, signal.SIGKILL)

        async def close(self) -> None:
            self.kill()
            if self._proc is not None:
                if self._proc.stdin is not None:
                    self._proc.stdin.close()
                await self._proc.wait()
                # Close the pipes' transport now, in this loop: left to the garbage collector after the loop has
                # closed, it prints "Exception ignored … Event loop is closed" on stderr (asyncio's Process has no
                # public close; its transport is what the loop's own subprocess API returns).
                transport = getattr(self._proc, "_transport", None)
                if transport is not None:
                    transport.close()
            if self._lifeline is not None:
                os.close(self._lifeline)
                self._lifeline = None

        def is_ready(self) -> bool:
            return self._proc is not None and self._proc.returncode is None

        async def end_input(self) -> None:
            if self._proc is not None and self._proc.stdin is not None:
                self._proc.stdin.close()

        def stderr_tail(self) -> str:
            """The end of what the CLI wrote on stderr, on one line, secrets masked."""
            try:
                lines = self._stderr_path.read_text("utf-8", "replace").split("\n")
            except OSError:
                return ""
            masked, _ = mask_secrets("\n".join(line for line in lines if line.strip()))
            return " ".join(" ".join(masked.split())[-300:].split())

    return GroupTransport
