"""`ocr-hook doctor` with provider claude-code (DESIGN.md 15): the CLI and its version, which credential it
will use (as Claude Code itself reports it: `claude auth status`, offline), and `--probe` through it. Nothing is
sent to the Messages API by ocr-hook with this provider, so doctor looks up no model: the probe reviews the built-in
sample through Claude Code exactly as a review would (ocr_hook.agent.diagnostics)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ocr_hook.commands.doctor import FAIL, OK, WARN, Check
from ocr_hook.errors import FatalError

if TYPE_CHECKING:
    from ocr_hook.settings import Settings

_AUTH_TIMEOUT_S = 30.0
# `claude auth status --json` authMethod → what doctor names (its apiKeySource, when set, names the variable)
_AUTH_METHODS = {"oauth_token": "an OAuth token", "api_key": "an API key", "claude.ai": "a Claude account login"}


def claude_code_checks(claude_code_path: str | None, environ: Mapping[str, str]) -> tuple[list[Check], bool]:
    """The CLI and credential lines, and whether a review could start."""
    from ocr_hook.agent.claude_code import NoTemporaryDirectory, cli_path, cli_version, require_sdk, upgrade_hint
    from ocr_hook.install_command import add_extra_hint

    try:
        require_sdk()  # (with claude_code_path too: the SDK is what runs it)
    except FatalError as exc:
        return [Check("claude-code", FAIL, str(exc), add_extra_hint("claude-code"))], False
    try:
        cli = cli_path(claude_code_path)
    except FatalError as exc:
        return [Check("claude-code", FAIL, str(exc),
                      f"{add_extra_hint('claude-code')}, or set claude_code_path")], False
    try:
        version = cli_version(cli, environ)
    except NoTemporaryDirectory as exc:
        return [Check("claude-code", FAIL, str(exc), "set TMPDIR to a directory you can write")], False
    except FatalError as exc:
        return [Check("claude-code", FAIL, str(exc), upgrade_hint())], False
    checks = [Check("claude-code", OK, f"{cli}: {version}")]
    credentials = credential_check(cli, environ)
    return [*checks, credentials], credentials.status != FAIL


def credential_check(cli: str, environ: Mapping[str, str]) -> Check:
    """Claude Code's own answer (`claude auth status`, ~0.2 s, too slow for every commit but the truth: the macOS
    keychain, CLAUDE_CONFIG_DIR, an apiKeyHelper), else the review's guess from variables and files."""
    from ocr_hook.agent.claude_code import SIGN_IN_PROBLEM, cli_env, credential_kind, private_scratch, sign_in_fix

    guess = credential_kind(environ)
    fix = sign_in_fix(cli)
    try:
        with private_scratch() as scratch:  # the review's environment: what it reports is what a review gets
            proc = subprocess.run([cli, "auth", "status", "--json"], capture_output=True, text=True,
                                  errors="replace", timeout=_AUTH_TIMEOUT_S, stdin=subprocess.DEVNULL,
                                  env=cli_env(environ, scratch), cwd=scratch / "work")
        status = json.loads(proc.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        status = None
    if not isinstance(status, dict) or not isinstance(status.get("loggedIn"), bool):
        if guess is None:
            return Check("credentials", FAIL, f"{SIGN_IN_PROBLEM}: {fix}", fix)
        return Check("credentials", WARN, f"Claude Code would use {guess} (value not shown); `claude auth status` "
                                          "gave no answer, so this is ocr-hook's guess")
    if not status["loggedIn"]:
        return Check("credentials", FAIL, f"{SIGN_IN_PROBLEM} (`claude auth status`: not logged in)", fix)
    method = str(status.get("authMethod") or "")
    source = status.get("apiKeySource") or (guess if guess and not guess.startswith("Claude Code login") else None)
    plan = f", plan {status['subscriptionType']}" if status.get("subscriptionType") else ""
    what = _AUTH_METHODS.get(method, method or "a credential")
    return Check("credentials", OK, f"Claude Code will use {what}{f' from {source}' if source else ''}{plan} "
                                    "(`claude auth status`; value not shown)")


def endpoint_line() -> Check:
    return Check("endpoint", OK, "provider claude-code: Claude Code sends every request (ANTHROPIC_BASE_URL as it "
                                 "honours it); no model lookup from doctor with this provider")


def probe_checks(settings: Settings, environ: Mapping[str, str]) -> list[Check]:
    """The built-in sample reviewed through Claude Code: OK with the model that answered, or FAIL with Claude
    Code's reason (the one a review's coverage would show)."""
    from ocr_hook.agent.diagnostics import run_probe

    model = settings.model_for("main")
    started = time.monotonic()
    try:
        report = run_probe(settings, environ)
    except FatalError as exc:
        return [Check("probe", FAIL, f"not run: {exc}", "fix the lines marked FAIL above")]
    elapsed = time.monotonic() - started
    spent = (f"{report.requests} request(s), ${report.usage.cost_usd:.4f} at ocr-hook's prices, "
             f"{elapsed:.1f} s with Claude Code's start")
    if report.state == "reviewed" and report.tool_calls:
        return [Check("probe", OK, f"through Claude Code: model {model} called {report.tool_calls} tool(s) and "
                                   f"finished the review ({report.comments} finding(s) on the sample); {spent}")]
    reason = report.reason.removeprefix("Claude Code: ")
    return [Check("probe", FAIL, f"through Claude Code, model {model}: {reason}; {spent}",
                  "see the reason; `ocr-hook review` would fail the same way")]
