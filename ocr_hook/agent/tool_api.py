"""What the agent loop needs from the tool registry (implemented in tools.py / registry.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ocr_hook.changes.model import ChangeSet
from ocr_hook.changes.snapshot_api import Snapshot

PHASES = ("plan", "main", "final", "checks")  # final: the last round, only code_comment and task_done;
# checks: the change-level pass (DESIGN.md 20), read-only tools and check_verdict


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    phases: frozenset[str]

    def to_api(self) -> dict[str, Any]:
        """The tool as the Messages API takes it (strict schema)."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "strict": True,
        }


@dataclass(frozen=True)
class ToolContext:
    snapshot: Snapshot
    change_set: ChangeSet
    current_path: str
    # Paths whose content must never be sent (sensitive files): the tools refuse them.
    is_hidden: Callable[[str], bool] = field(default=lambda path: False)
    # At most this many characters in one tool result, below the tools' own limits, where the model's side
    # keeps less (Claude Code: ocr_hook.agent.claude_code_review.RESULT_CHARS); None: the tools' limits.
    result_chars: int | None = None


class ToolResult(NamedTuple):
    text: str
    is_error: bool = False
    # Lines of `text` in which the tool masked a likely secret (it masks whole files, in context).
    masked: int = 0
