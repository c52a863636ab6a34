"""The change-level pass (DESIGN.md 20): one conversation answers every applicable check for the whole change.

After the per-file reviews: the checks, the change's file list and diffs (within a budget, the diffs of the
checks' paths first), the intent and the findings already raised; the read-only tools and `check_verdict`;
`task_done` ends it. A check never answered is inconclusive ("no verdict"), never a pass; a second verdict
for a check replaces the first. Any entry point calls `evaluate_checks` with what it has: it returns verdicts,
never prints.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ocr_hook.checks.model import LINKED_ISSUES, Check, CheckVerdict, Evidence, Requirement

if TYPE_CHECKING:
    from ocr_hook.agent.client import Api
    from ocr_hook.budget.ledger import Budget
    from ocr_hook.changes.model import ChangeSet, FileChange
    from ocr_hook.changes.snapshot_api import Snapshot
    from ocr_hook.findings import Finding
    from ocr_hook.settings import Settings
    from ocr_hook.tickets.model import TicketText

MAX_DIFF_CHARS = 60_000  # all diffs together in the first message; the tools reach the rest
MAX_LISTED_FINDINGS = 40
MAX_EVIDENCE = 10
NO_VERDICT = "no verdict: the evaluation ended without an answer for this check"


class ChecksTask(NamedTuple):
    change_set: ChangeSet
    snapshot: Snapshot
    settings: Settings
    checks: Sequence[Check]  # the applicable ones (load.applicable's first list), each to be answered
    findings: Sequence[Finding] = ()  # raised by the per-file reviews
    intent: str | None = None  # rendered (capped, masked, fenced) as the file reviews get it
    edited: frozenset[str] = frozenset()  # check files the change touches
    rounds: int = 8  # 1 at commit time (quick effort): one request answers every check
    tickets: Sequence[TicketText] = ()  # linked-issues: the tickets read (untrusted text, clipped)


class ChecksOutcome(NamedTuple):
    verdicts: list[CheckVerdict]  # one per task check, in the task's order
    requests: int
    incomplete: str  # "" when the pass ran to task_done (or its last round); else why it was cut short
    notes: list[str]


def check_tools(names: Sequence[str], tickets: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The pass's tool definitions, check_verdict's `check` an enum of the names to answer (strict mode then
    refuses any other name) and, when linked-issues is one of them, its requirements' `ticket` an enum of the
    tickets' keys (without linked-issues, or without tickets, `requirements` is not offered)."""
    from ocr_hook.agent import registry
    from ocr_hook.agent.conversation import tools_param

    specs = registry.tools_for_phase("checks")
    tools = tools_param(specs)
    for tool in tools:
        if tool["name"] == "check_verdict":
            schema = {**tool["input_schema"], "properties": dict(tool["input_schema"]["properties"])}
            schema["properties"]["check"] = {**schema["properties"]["check"], "enum": list(names)}
            if LINKED_ISSUES in names and tickets:
                requirements = schema["properties"]["requirements"]
                items = {**requirements["items"], "properties": dict(requirements["items"]["properties"])}
                items["properties"]["ticket"] = {**items["properties"]["ticket"], "enum": list(dict.fromkeys(tickets))}
                schema["properties"]["requirements"] = {**requirements, "items": items}
            else:
                del schema["properties"]["requirements"]
            tool["input_schema"] = schema
    return tools


def _diff_section(change_set: ChangeSet, checks: Sequence[Check], mask: Any, settings: Settings) -> tuple[str, str]:
    """The file list, and the diffs within MAX_DIFF_CHARS: those under a check's paths first; what did not fit is
    named, so the model knows to ask (file_read_diff). A sensitive file's diff never leaves the machine."""
    from ocr_hook.agent.prompts import fence
    from ocr_hook.changes.names import shown
    from ocr_hook.changes.selection import is_sensitive
    from ocr_hook.checks.load import matches

    files = change_set.files
    listing = "\n".join(f"- {shown(f.path)} ({f.status}, +{f.added} -{f.removed})" for f in files)
    relevant = [f for f in files if any(matches(c, f.path) or (f.old_path and matches(c, f.old_path)) for c in checks)]
    order = relevant + [f for f in files if f not in relevant]
    parts: list[str] = []
    left: list[str] = []
    room = MAX_DIFF_CHARS
    for change in order:
        if change.is_binary or not change.patch or is_sensitive(change.path, settings) or \
                (change.old_path is not None and is_sensitive(change.old_path, settings)):
            continue
        text = f"## {shown(change.path)}\n\n{fence(mask(change.patch), 'diff')}\n"
        if len(text) > room:
            left.append(shown(change.path))
            continue
        room -= len(text)
        parts.append(text)
    if left:
        parts.append(f"(Left out to stay within the message's size, read them with file_read_diff: {', '.join(left)})")
    return listing, "\n".join(parts) or "(no textual diff)"


def _checks_text(checks: Sequence[Check]) -> str:
    from ocr_hook.agent.prompts import fence

    out = []
    for check in checks:
        where = ", ".join(check.paths) if check.paths else "every file"
        if check.scope:
            where += f" (under {check.scope}/)"
        out.append(f"## {check.name}\n\nAbout: {where}\n\n{fence(check.instruction)}\n")
    return "\n".join(out)


def _findings_text(findings: Sequence[Finding]) -> str:
    active = [f for f in findings if f.suppressed is None]
    if not active:
        return ""
    lines = [f"- {f.path}:{f.start_line} [{f.severity}] {' '.join(f.message.split())[:300]}"
             for f in active[:MAX_LISTED_FINDINGS]]
    if len(active) > MAX_LISTED_FINDINGS:
        lines.append(f"- … and {len(active) - MAX_LISTED_FINDINGS} more")
    return "\n\n# Findings the per-file reviews raised (data, for reference)\n\n" + "\n".join(lines) + "\n"


def tickets_text(tickets: Sequence[TicketText], mask: Any) -> str:
    """The linked tickets as the model gets them: labelled as data anyone who can open an issue writes, each
    title and body masked and fenced (a ticket cannot close the fence and speak as us), clipping said."""
    if not tickets:
        return ""
    from ocr_hook.agent.prompts import fence, template

    parts = ["\n" + template("tickets.md").strip() + "\n"]
    for item in tickets:
        t = item.ticket
        text = f"Title: {' '.join(t.title.split())}\n\n{item.body.strip()}"
        if item.left_out:
            text += f"\n\n[clipped here: {item.left_out}]"
        parts.append(f"## Ticket {t.key} ({t.source})\n\n{fence(mask(text))}\n")
    return "\n".join(parts)


def first_message(task: ChecksTask, mask: Any, rounds: int) -> str:
    from ocr_hook.agent.prompts import render

    listing, diffs = _diff_section(task.change_set, task.checks, mask, task.settings)
    intent = f"\n{task.intent}\n" if task.intent else ""
    asked = any(c.name == LINKED_ISSUES for c in task.checks)
    intent += tickets_text(task.tickets, mask) if asked else ""
    return render("checks.md", scope=task.change_set.description, rounds=rounds, checks=mask(_checks_text(task.checks)),
                  count=len(task.change_set.files), files=listing, diffs=diffs, intent=intent,
                  findings=mask(_findings_text(task.findings)))


def anchor_evidence(items: Sequence[Mapping[str, str]], change_set: ChangeSet,
                    snapshot: Snapshot) -> tuple[Evidence, ...]:
    """Each quote located as code_comment's are (DESIGN 3); one that cannot be is kept, unanchored, and said."""
    from ocr_hook.findings.anchoring import anchor

    by_path = change_set.by_path()
    out = []
    for item in items[:MAX_EVIDENCE]:
        path, code = str(item.get("path", "")), str(item.get("code", ""))
        change: FileChange | None = by_path.get(path)
        text = snapshot.read_text(path) if path else None
        found = anchor(code, change.hunks if change is not None else (), text) if text is not None and code.strip() \
            else None
        if found is None:
            why = "the file is not in the change" if text is None else "the quoted code was not found in the file"
            out.append(Evidence(path, code, note=f"not located: {why}"))
        else:
            out.append(Evidence(path, code, found.start_line, found.end_line, anchored=True))
    return tuple(out)


def verdict_of(check: Check, tool_input: Mapping[str, Any], evidence: tuple[Evidence, ...],
               edited: frozenset[str]) -> CheckVerdict:
    return CheckVerdict(name=check.name, mode=check.mode, verdict=str(tool_input["verdict"]),
                        reason=" ".join(str(tool_input["reason"]).split())[:600], source=check.source,
                        evidence=evidence, severity=check.severity, inconclusive=check.inconclusive,
                        changed_in_change=check.source in edited, instruction=check.instruction)


MAX_REQUIREMENTS = 40


def requirements_problem(tool_input: Mapping[str, Any], tickets: Sequence[TicketText]) -> str | None:
    """Why a linked-issues verdict cannot be recorded (None: it can): it must restate the tickets' requirements,
    each for a ticket that was read."""
    if not tickets:
        return None
    keys = [t.ticket.key for t in tickets]
    given = tool_input.get("requirements") or []
    if not given:
        return ("Not recorded: the verdict for linked-issues needs `requirements`, every requirement of the tickets "
                f"({', '.join(keys)}) with its status. Call check_verdict again with them.")
    unknown = sorted({str(r.get("ticket")) for r in given if r.get("ticket") not in keys})
    if unknown:
        return (f"Not recorded: no ticket {', '.join(unknown)[:120]} was read; the tickets are {', '.join(keys)}. "
                "Call check_verdict again.")
    return None


def requirements_verdict(check: Check, tool_input: Mapping[str, Any], evidence: tuple[Evidence, ...],
                         edited: frozenset[str], tickets: Sequence[TicketText], change_set: ChangeSet,
                         snapshot: Snapshot) -> CheckVerdict:
    """linked-issues' verdict from its requirements, by the issue's rule, whatever verdict the model named: fail
    when one is not met, inconclusive when only needs-a-person remains, pass otherwise. The evidence of the
    requirements that are not met joins the check's own (SARIF's results, the forges' inline threads)."""
    requirements = []
    for item in (tool_input.get("requirements") or ())[:MAX_REQUIREMENTS]:
        requirements.append(Requirement(
            ticket=str(item["ticket"]), requirement=" ".join(str(item["requirement"]).split())[:400],
            status=str(item["status"]), evidence=anchor_evidence(item.get("evidence") or (), change_set, snapshot),
            reason=" ".join(str(item.get("reason", "")).split())[:400]))
    statuses = {r.status for r in requirements}
    verdict = "fail" if "not_met" in statuses else "inconclusive" if "needs_person" in statuses else "pass"
    seen = {(e.path, e.code) for e in evidence}
    more = []
    for r in requirements:
        for e in r.evidence if r.status != "met" else ():
            if (e.path, e.code) not in seen:
                seen.add((e.path, e.code))
                more.append(e)
    base = verdict_of(check, {**tool_input, "verdict": verdict}, evidence + tuple(more), edited)
    return base._replace(requirements=tuple(requirements), tickets=tuple(t.ticket for t in tickets))


def unanswered(check: Check, reason: str, edited: frozenset[str], incomplete: bool = False) -> CheckVerdict:
    return CheckVerdict(name=check.name, mode=check.mode, verdict="inconclusive", reason=reason, source=check.source,
                        severity=check.severity, inconclusive=check.inconclusive,
                        changed_in_change=check.source in edited, incomplete=incomplete,
                        instruction=check.instruction)


class _Pass:
    def __init__(self, task: ChecksTask, api: Api, budget: Budget, mask: Any) -> None:
        from ocr_hook.agent.prompts import template
        from ocr_hook.agent.tool_api import ToolContext
        from ocr_hook.changes.selection import is_sensitive

        self.task = task
        self.api = api
        self.budget = budget
        self.mask = mask
        self.by_name = {c.name: c for c in task.checks}
        self.answers: dict[str, CheckVerdict] = {}
        self.requests = 0
        self.system = [{"type": "text", "text": template("checks_system.md").strip(),
                        "cache_control": {"type": "ephemeral"}}]
        self.tools = check_tools(list(self.by_name), [t.ticket.key for t in task.tickets])
        self.ctx = ToolContext(snapshot=task.snapshot, change_set=task.change_set, current_path="",
                               is_hidden=functools.partial(is_sensitive, settings=task.settings))

    async def run(self) -> str:
        """The conversation; returns "" when it ended normally, else why it was cut short."""
        from ocr_hook.agent.client import BudgetStop, RequestFailed
        from ocr_hook.agent.conversation import Conversation, assistant_blocks, text_block

        settings = self.task.settings
        rounds = max(1, self.task.rounds)
        conv = Conversation()
        conv.add_user([text_block(first_message(self.task, self.mask, rounds))])
        model = settings.model_for("main")
        try:
            for round_no in range(1, rounds + 1):
                response = await self.api.create(model=model, max_tokens=settings.max_output_tokens,
                                                  system=self.system, tools=self.tools, messages=conv.for_request())
                self.requests += 1
                if response.stop_reason == "refusal":
                    return "the model declined to evaluate the checks (refusal)"
                conv.add_assistant(assistant_blocks(response.content))
                calls = [b for b in response.content if b.type == "tool_use"]
                if not calls:
                    if round_no == rounds:
                        break
                    conv.add_user([text_block("Give each check a verdict with check_verdict, then call task_done.")])
                    continue
                results, done = await self._answer(calls)
                if done:
                    return ""
                conv.add_user(results)
            return ""  # the last round was answered: what is unanswered stays inconclusive
        except BudgetStop as stop:
            return f"checks evaluation cut short: {stop}"
        except RequestFailed as failure:
            return f"checks evaluation failed: {failure}"

    async def _answer(self, calls: Sequence[Any]) -> tuple[list[dict[str, Any]], bool]:
        from ocr_hook.agent import registry
        from ocr_hook.agent.conversation import tool_result_block
        from ocr_hook.agent.loop import as_shown, run_tool
        from ocr_hook.agent.tool_api import ToolResult

        done = False
        blocks: list[dict[str, Any]] = []
        for call in calls:
            name, tool_input = call.name, call.input
            error = registry.validate_input(name, tool_input, "checks")
            if error is None and name == "check_verdict" and tool_input["check"] not in self.by_name:
                error = (f"There is no check named {str(tool_input['check'])[:80]!r}. The checks to answer: "
                         f"{', '.join(self.by_name)}.")
            if error is not None:
                result = ToolResult(error, is_error=True)
            elif name == "task_done":
                done = True
                result = ToolResult("Checks evaluation finished.")
            elif name == "check_verdict":
                result = ToolResult(self._take(tool_input))
            else:
                try:
                    shown = await asyncio.wait_for(asyncio.to_thread(run_tool, name, dict(tool_input), self.ctx),
                                                   timeout=max(0.1, self.budget.remaining_seconds()))
                except TimeoutError:  # the run's clock, as in the files' loop: the pass is cut short
                    from ocr_hook.agent.client import BudgetStop

                    raise BudgetStop(self.budget.exhausted_reason or self.budget.time_limit_reached) from None
                result = as_shown(shown, self.mask)
            blocks.append(tool_result_block(call.id, result.text or "(empty)", result.is_error))
        return blocks, done

    def _take(self, tool_input: Mapping[str, Any]) -> str:
        check = self.by_name[tool_input["check"]]
        linked = check.name == LINKED_ISSUES and bool(self.task.tickets)
        problem = requirements_problem(tool_input, self.task.tickets) if linked else None
        if problem is not None:
            return problem
        evidence = anchor_evidence(tool_input.get("evidence") or (), self.task.change_set, self.task.snapshot)
        again = check.name in self.answers
        if linked:
            self.answers[check.name] = requirements_verdict(check, tool_input, evidence, self.task.edited,
                                                            self.task.tickets, self.task.change_set, self.task.snapshot)
            tool_input = {**tool_input, "verdict": self.answers[check.name].verdict}
        else:
            self.answers[check.name] = verdict_of(check, tool_input, evidence, self.task.edited)
        missing = [n for n in self.by_name if n not in self.answers]
        lost = [e for e in evidence if not e.anchored]
        said = f"Recorded {tool_input['verdict']} for {check.name}" + (" (replacing your earlier verdict)." if again
                                                                        else ".")
        if lost:
            said += f" {len(lost)} piece(s) of evidence could not be located in the files after the change: quote " \
                    "the code exactly as it is there."
        said += f" Still without a verdict: {', '.join(missing)}." if missing else " Every check has a verdict: " \
                                                                                  "call task_done."
        return said


async def evaluate_checks_async(task: ChecksTask, api: Api, budget: Budget, mask: Any) -> ChecksOutcome:
    """Every check of the task answered: by the model, or inconclusive when it never was."""
    if not task.checks:
        return ChecksOutcome([], 0, "", [])
    one = _Pass(task, api, budget, mask)
    try:
        cut = await one.run()
    except Exception as exc:  # a bug of ours must not lose the file reviews: the checks are incomplete
        cut = f"checks evaluation failed: internal error: {type(exc).__name__}: {exc}".splitlines()[0][:240]
    verdicts = [one.answers.get(c.name) or unanswered(c, cut or NO_VERDICT, task.edited, incomplete=bool(cut))
                for c in task.checks]
    notes = [cut] if cut else []
    return ChecksOutcome(verdicts, one.requests, cut, notes)


def evaluate_checks(task: ChecksTask, budget: Budget, environ: Mapping[str, str]) -> ChecksOutcome:
    """The pass with its own client, from synchronous code (the CLI's review, any entry point); through the
    Claude Code CLI under provider: claude-code (agent.claude_code_checks: the same tools and answers)."""
    if task.settings.provider == "claude-code":
        from ocr_hook.agent.claude_code_checks import evaluate_checks_claude_code

        return asyncio.run(evaluate_checks_claude_code(task, budget, environ))
    from ocr_hook.agent.client import open_api
    from ocr_hook.agent.conversation import SecretMasker
    from ocr_hook.secrets_mask import mask_secrets

    async def run() -> ChecksOutcome:
        api = open_api(task.settings, environ, budget)
        try:
            return await evaluate_checks_async(task, api, budget, SecretMasker(mask_secrets))
        finally:
            await api.aclose()

    return asyncio.run(run())
