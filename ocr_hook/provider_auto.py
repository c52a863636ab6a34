"""`provider: auto` (the default, DESIGN.md 19): review with what the user has.

An API key in the environment → the Messages API (`anthropic`); else a Claude Code credential (an OAuth token,
or a login Claude Code keeps) with Claude Code there to use it (the claude-code extra's bundled CLI, or
`claude_code_path`) → `claude-code`; else nothing: the provider stays `auto`, and the review that needs a model
stops with the three ways in (ocr_hook.agent.client). Only the environment and a few files are looked at; nothing
is run, so the settings of an idle hook run stay cheap. Paths by os.path: pathlib is not loaded on that path.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import NamedTuple

API_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE")


class Choice(NamedTuple):
    provider: str  # "anthropic", "claude-code", or "auto" when neither is there
    why: str  # one clause: what was found (never a value)


def api_key_variable(environ: Mapping[str, str]) -> str | None:
    """The variable that gives the Messages API a credential, or None."""
    return next((name for name in API_KEY_VARIABLES if environ.get(name)), None)


def claude_code_login(environ: Mapping[str, str]) -> str | None:
    """Where Claude Code would find a credential of its own (a token or a login), as doctor names it; None: none."""
    if environ.get("CLAUDE_CODE_OAUTH_TOKEN"):
        return "CLAUDE_CODE_OAUTH_TOKEN"
    home = environ.get("HOME") or os.path.expanduser("~")
    config = environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
    credentials = os.path.join(config, ".credentials.json")
    if os.path.isfile(credentials):
        return f"Claude Code login ({credentials})"
    # macOS keeps the login in the keychain, which only Claude Code reads (`claude auth status`, doctor: ~0.2 s).
    # Its .claude.json is written by any run, logged in or not; only a login leaves an oauthAccount in it.
    state = os.path.join(environ["CLAUDE_CONFIG_DIR"], ".claude.json") if environ.get("CLAUDE_CONFIG_DIR") else \
        os.path.join(home, ".claude.json")
    if sys.platform == "darwin" and _has_oauth_account(state):
        return "Claude Code login (macOS keychain)"
    return None


def _has_oauth_account(path: str) -> bool:
    import json  # (macOS only: an idle run elsewhere never loads it for this)

    try:
        with open(path, "rb") as fh:
            config = json.loads(fh.read())
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and bool(config.get("oauthAccount"))


def claude_code_installed(claude_code_path: str | None) -> bool:
    """Claude Code is there to run: the claude-code extra (its SDK drives the CLI, and bundles one), and the
    configured `claude` when there is one. A `claude_code_path` alone is not enough: without the SDK nothing runs
    it."""
    import importlib.util

    if importlib.util.find_spec("claude_agent_sdk") is None:
        return False
    return not claude_code_path or os.path.isfile(claude_code_path)


# The end of `why` when a Claude Code credential is there and the extra is not: the three ways in then give this
# installation's own command for it (ocr_hook.agent.client.ways_in, doctor).
NO_EXTRA = "but not the claude-code extra that runs Claude Code"
# Said when an API key won over a Claude Code credential (run notes, doctor's provider line).
PASSED_OVER = "was passed over: the API key comes first (provider: claude-code reviews on the plan)"


def choose(environ: Mapping[str, str], claude_code_path: str | None) -> Choice:
    key = api_key_variable(environ)
    login = claude_code_login(environ)
    if key is not None:
        over = f"; a Claude Code credential ({login}) {PASSED_OVER}" if login else ""
        return Choice("anthropic", f"the Messages API with {key}{over}")
    if login is None:
        return Choice("auto", "no API key and no Claude Code login")
    if not claude_code_installed(claude_code_path):
        return Choice("auto", f"no API key; a Claude Code credential ({login}) {NO_EXTRA}")
    return Choice("claude-code", f"Claude Code with {login}, as there is no API key")
