"""What changed and what the reviewed side looks like: git → change set → snapshot → file selection.

The names below load their modules on first use (PEP 562), so that the idle path of a hook run
(nothing staged) imports only git and the diff model.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ocr_hook.changes.collect import collect_changes
    from ocr_hook.changes.selection import Selected, is_sensitive, select_files
    from ocr_hook.changes.snapshot import open_snapshot

_HOME = {
    "collect_changes": "ocr_hook.changes.collect",
    "Selected": "ocr_hook.changes.selection",
    "is_sensitive": "ocr_hook.changes.selection",
    "select_files": "ocr_hook.changes.selection",
    "open_snapshot": "ocr_hook.changes.snapshot",
}

__all__ = ["Selected", "collect_changes", "is_sensitive", "open_snapshot", "select_files"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'ocr_hook.changes' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)
