"""provider: claude-code's checks pass (DESIGN.md 15 and 20): the change-level pass through the Claude Code CLI,
with the same first message, system text, tools (the read-only four, `check_verdict`, `task_done`) and answers as
the API's pass (agent.checks_pass), served in process as a file's review serves its tools (CliTalk). task_done
ends the conversation at once; a check it never answered is inconclusive, never a pass.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ocr_hook.agent.checks_pass import (
    NO_VERDICT,
    ChecksOutcome,
    ChecksTask,
    _Pass,
    first_message,
    unanswered,
)

if TYPE_CHECKING:
    from ocr_hook.agent.tool_api import ToolResult
    from ocr_hook.budget.ledger import Budget

CLOSERS = frozenset({"check_verdict", "task_done"})  # (their handlers check the budget before the next request)


async def evaluate_checks_claude_code(task: ChecksTask, budget: Budget, environ: Mapping[str, str]) -> ChecksOutcome:
    from ocr_hook.agent import registry
    from ocr_hook.agent.claude_code import cli_path
    from ocr_hook.agent.claude_code_review import CliTalk
    from ocr_hook.agent.client import BudgetStop
    from ocr_hook.agent.conversation import SecretMasker
    from ocr_hook.agent.loop import as_shown, run_tool
    from ocr_hook.agent.tool_api import ToolResult
    from ocr_hook.secrets_mask import mask_secrets

    if not task.checks:
        return ChecksOutcome([], 0, "", [])
    mask = SecretMasker(mask_secrets)
    one = _Pass(task, None, budget, mask)  # type: ignore[arg-type]  # its answers, never its client
    settings = task.settings
    rounds = max(1, task.rounds)

    async def answer(name: str, args: dict[str, Any]) -> tuple[ToolResult, bool]:
        """One call answered as the API's pass answers it; task_done ends the conversation."""
        error = registry.validate_input(name, args, "checks")
        if error is None and name == "check_verdict" and args["check"] not in one.by_name:
            error = (f"There is no check named {str(args['check'])[:80]!r}. The checks to answer: "
                     f"{', '.join(one.by_name)}.")
        if error is not None:
            return ToolResult(error, is_error=True), False
        if name == "task_done":
            return ToolResult("Checks evaluation finished."), True
        if name == "check_verdict":
            return ToolResult(one._take(args)), False
        shown = await asyncio.to_thread(run_tool, name, dict(args), one.ctx)
        return as_shown(shown, mask), False

    first = first_message(task, mask, rounds)
    talk = CliTalk(cli_path(settings.claude_code_path), environ, budget, settings.model_for("main"),
                   one.system[0]["text"], rounds, settings.max_output_tokens, phase="checks", answer=answer,
                   closers=CLOSERS,
                   schemas={t["name"]: t["input_schema"] for t in one.tools if t["name"] == "check_verdict"})
    cut = ""
    try:
        if not talk.fits(len(first) // 3):
            raise BudgetStop(talk.budget_reason())
        failure = await talk.run(first)
        if talk.halted_for is not None:
            cut = f"checks evaluation cut short: {talk.halted_for}"
        elif failure is not None and "max_turns" not in failure:
            cut = f"checks evaluation failed: Claude Code: {failure}"
    except BudgetStop as stop:
        cut = f"checks evaluation cut short: {stop}"
    verdicts = [one.answers.get(c.name) or unanswered(c, cut or NO_VERDICT, task.edited, incomplete=bool(cut))
                for c in task.checks]
    return ChecksOutcome(verdicts, talk.requests, cut, [cut] if cut else [])
