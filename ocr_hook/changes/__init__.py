"""What changed and what the reviewed side looks like: git → change set → snapshot → file selection.

Imported by every entry point, so it must stay light: git runs in subprocesses and unidiff/pathspec
import in milliseconds.
"""

from ocr_hook.changes.collect import collect_changes
from ocr_hook.changes.selection import Selected, is_sensitive, select_files
from ocr_hook.changes.snapshot import open_snapshot

__all__ = ["Selected", "collect_changes", "is_sensitive", "open_snapshot", "select_files"]
