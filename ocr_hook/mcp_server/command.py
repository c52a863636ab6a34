"""`ocr-hook mcp [--repo PATH]`: check the repository and the SDK, then serve until the client leaves."""

from __future__ import annotations

import os

from ocr_hook.changes.git import repo_top
from ocr_hook.errors import ConfigError


def run(repo: str | None) -> int:
    # The repository is fixed here, once: every call reviews this one and no other.
    root, _ = repo_top(os.path.abspath(repo or os.getcwd()))
    try:
        from ocr_hook.mcp_server.server import serve
    except ImportError as exc:
        if (exc.name or "").split(".")[0] in ("mcp", "mcp_types", "anyio"):
            from ocr_hook.install_command import add_extra_hint

            raise ConfigError(f"ocr-hook mcp needs the MCP SDK: {add_extra_hint('mcp')}") from None
        raise
    return serve(root)
