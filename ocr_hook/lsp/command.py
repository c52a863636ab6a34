"""`ocr-hook lsp [--from REPORT] [--repo PATH]`: check the repository and pygls, then serve until the editor leaves."""

from __future__ import annotations

import os

from ocr_hook.changes.git import repo_top
from ocr_hook.errors import ConfigError


def run(repo: str | None, report: str | None, poll_s: float) -> int:
    root, _ = repo_top(os.path.abspath(repo or os.getcwd()))
    if report is not None and not os.path.isfile(report):
        raise ConfigError(f"--from {report}: no such file")
    try:
        from ocr_hook.lsp.server import serve
    except ImportError as exc:
        if (exc.name or "").split(".")[0] in ("pygls", "lsprotocol", "cattrs"):
            from ocr_hook.install_command import add_extra_hint

            raise ConfigError(f"ocr-hook lsp needs pygls: {add_extra_hint('editor')}") from None
        raise
    os.chdir(root)  # dismissals are written as `ocr-hook dismiss` run at the top would write them
    return serve(root, os.path.abspath(report) if report else None, poll_s)
