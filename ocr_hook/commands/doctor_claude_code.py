"""`ocr-hook doctor` with provider claude-code (DESIGN.md 15): the CLI and its version, which credential it
will use. Nothing is sent to the Messages API with this provider, so doctor looks up no model and runs no
probe through it (a probe through Claude Code is not done yet)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping

from ocr_hook.commands.doctor import FAIL, OK, WARN, Check
from ocr_hook.errors import FatalError

_VERSION_TIMEOUT_S = 30.0


def claude_code_checks(claude_code_path: str | None, environ: Mapping[str, str]) -> tuple[list[Check], bool]:
    """The CLI and credential lines, and whether a review could start."""
    from ocr_hook.agent.claude_code import SIGN_IN_HINT, cli_path, credential_kind

    try:
        cli = cli_path(claude_code_path)
    except FatalError as exc:
        return [Check("claude-code", FAIL, str(exc),
                      "pip install 'ocr-hook[claude-code]', or set claude_code_path")], False
    try:
        proc = subprocess.run([cli, "--version"], capture_output=True, text=True, timeout=_VERSION_TIMEOUT_S,
                              env=dict(environ), errors="replace")
        version = proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else ""
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [Check("claude-code", FAIL, f"{cli} does not run: {type(exc).__name__}",
                      "reinstall the claude-code extra, or point claude_code_path at a working claude")], False
    checks = [Check("claude-code", OK if version else WARN, f"{cli}: {version or 'no version reported'}",
                    "" if version else "check that this is the Claude Code CLI")]
    kind = credential_kind(environ)
    if kind is None:
        return [*checks, Check("credentials", FAIL, SIGN_IN_HINT, "claude login, or claude setup-token in CI")], False
    return [*checks, Check("credentials", OK, f"Claude Code will use {kind} (value not shown)")], True


def endpoint_line() -> Check:
    return Check("endpoint", OK, "provider claude-code: Claude Code sends every request (ANTHROPIC_BASE_URL as it "
                                 "honours it); no model lookup and no --probe from doctor with this provider yet")
