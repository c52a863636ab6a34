"""One file's review conversation: the optional plan phase, then the main loop with the six tools."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ocr_hook.agent import compat, prompts, registry, tools
from ocr_hook.agent.client import Api, BudgetStop, RequestFailed
from ocr_hook.agent.comments import CommentBox
from ocr_hook.agent.compaction import Compactor
from ocr_hook.agent.conversation import (
    Conversation,
    SecretMasker,
    assistant_blocks,
    text_block,
    tool_result_block,
    tools_param,
)
from ocr_hook.agent.tool_api import ToolContext, ToolResult
from ocr_hook.changes.model import ChangeSet, FileChange
from ocr_hook.changes.selection import is_sensitive
from ocr_hook.changes.snapshot_api import Snapshot
from ocr_hook.findings import Comment
from ocr_hook.settings import Settings

if TYPE_CHECKING:
    from ocr_hook.agent import FileGuidance
    from ocr_hook.agent.capabilities import Capabilities, CapabilityLookup
    from ocr_hook.agent.request_options import RequestOptions
    from ocr_hook.budget.ledger import Budget
    from ocr_hook.context import ContextPack
    from ocr_hook.effort import Profile
    from ocr_hook.findings.memory import MemoryPlan

# The plan phase is a short look around, never most of a file's rounds.
PLAN_MAX_ROUNDS = 5
PLAN_MIN_TOTAL_ROUNDS = 4  # below this many rounds per file there is no room for planning
MAX_CHECKLIST_CHARS = 3_000
MAX_REPEATS = 3
MAX_NUDGES = 3
# A model that answers every turn with text alone, never a tool call, is usually one without tool
# support (many local models), or one whose prompt the server cut before the tool definitions.
NO_TOOL_USE = ("the model never called a tool (it answered with text only): it may not support tool use; use a "
               "model with tool support (Ollama: `ollama show MODEL` lists tools), or check that the server "
               "does not cut long prompts")
MAX_TOOL_RESULT_CHARS = 80_000
# Output allowance of the one closing round a file gets when the budget refuses its next round.
CLOSING_MAX_TOKENS = 2_048
# Output allowance and length asked for of the notes that replace older turns (see compaction).
NOTES_MAX_TOKENS = 2_048
NOTES_WORDS = 700


@dataclass(frozen=True)
class FileTask:
    change: FileChange
    change_set: ChangeSet
    snapshot: Snapshot
    settings: Settings
    budget: Budget
    other_paths: Sequence[str]  # the change set's other files (prompts.OtherPaths: not a copy per file)
    guidance: FileGuidance | None = None  # the project's guidance for this file
    profile: Profile | None = None  # the file's effort profile (ocr_hook.effort); None: as standard
    capabilities: CapabilityLookup | None = None  # None: capabilities unknown (no thinking, no effort)
    # Review memory: the interdiff since the last review and the earlier findings to re-check
    memory: MemoryPlan | None = None
    # DESIGN.md 12: the file's context pack (ocr_hook.context; entries already masked) and the change's
    # intent (rendered: capped, masked, fenced and labelled as the author's words). Both go in the first
    # request of the file's plan and main conversations; the review filter never sees the intent.
    context: ContextPack | None = None
    intent: str | None = None
    # The file's text as the snapshot has it, when the caller read it already (None: read it here).
    text: str | None = None


@dataclass
class LoopOutcome:
    path: str
    state: str = "reviewed"  # reviewed | failed | skipped
    reason: str = ""
    comments: list[Comment] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    requests: int = 0
    tool_calls: int = 0  # every tool call the model made, in any phase
    # What ended a file early: "budget" (cost, tokens, time), "api" (an API error), "model" (the
    # model failed, refused or looped), "internal" (an unexpected error of ours), "" when complete.
    stopped_by: str = ""
    # The main loop ran to its end: task_done, or its last (grace) round was answered. Review memory
    # resolves a finding the model did not re-report only then (DESIGN.md 7): a loop cut short by the
    # budget, the clock or an API failure may simply not have reached it.
    main_finished: bool = False

    @property
    def incomplete(self) -> bool:
        return self.state != "reviewed"


class _End(Exception):
    """Ends a file's loop with a verdict."""

    def __init__(self, stopped_by: str, reason: str) -> None:
        super().__init__(reason)
        self.stopped_by = stopped_by
        self.reason = reason


def plan_rounds(change: FileChange, settings: Settings, profile: Profile | None = None) -> int:
    """How many rounds the plan phase may take for this file (0: no plan phase). The profile says
    whether a file gets one never (quick), from plan_threshold changed lines (standard) or always (deep)."""
    plan = profile.plan if profile is not None else "threshold"
    rounds = profile.max_rounds(settings.max_rounds) if profile is not None else settings.max_rounds
    if plan == "never" or rounds < PLAN_MIN_TOTAL_ROUNDS:
        return 0
    if plan == "threshold" and change.changed_lines < settings.plan_threshold:
        return 0
    return min(PLAN_MAX_ROUNDS, rounds // PLAN_MIN_TOTAL_ROUNDS)


def max_rounds(settings: Settings, profile: Profile | None) -> int:
    return profile.max_rounds(settings.max_rounds) if profile is not None else settings.max_rounds


def _call_key(name: str, tool_input: Any) -> str:
    return name + "\0" + json.dumps(tool_input, sort_keys=True, ensure_ascii=False, default=str)


class FileReview:
    """The state of one file's review across its phases."""

    def __init__(self, task: FileTask, api: Api, mask: SecretMasker) -> None:
        self.task = task
        self.api = api
        self.mask = mask
        self.path = task.change.path
        self.settings = task.settings
        self.box = CommentBox(self.path)
        # Plan, main loop and compaction notes all send this system prompt: the file's guidance reaches each.
        self.system = prompts.system_blocks(prompts.system_prompt(), task.guidance, task.settings.language)
        self.ctx = ToolContext(snapshot=task.snapshot, change_set=task.change_set, current_path=self.path,
                               is_hidden=functools.partial(is_sensitive, settings=task.settings))
        self.requests = 0
        self.tool_calls = 0
        self.repeats = 0
        self.summaries = 0
        self.elisions = 0
        self._answered: dict[str, int] = {}
        self.closing_note: str | None = None
        self.main_finished = False
        self._compactor: Compactor | None = None
        self._counts: compat.PromptCounts | None = None
        self.rounds_limit = max_rounds(task.settings, task.profile)
        self._options: dict[str, tuple[RequestOptions, Capabilities]] = {}

    async def run(self) -> LoopOutcome:
        outcome = LoopOutcome(self.path)
        try:
            await self._review(outcome)
        finally:
            self._end_conversation()
        outcome.comments = list(self.box.comments)
        outcome.notes = self.box.notes()
        if self.closing_note:
            outcome.notes.append(self.closing_note)
        if self.summaries or self.elisions:
            done = []
            if self.summaries:
                done.append(f"older turns were replaced by the model's notes {self.summaries} time(s)")
            if self.elisions:
                done.append(f"older tool output was elided {self.elisions} time(s)")
            outcome.notes.append(f"{self.box.shown_path}: the conversation neared the context window; "
                                 + "; ".join(done))
        outcome.requests = self.requests
        outcome.tool_calls = self.tool_calls
        outcome.main_finished = self.main_finished
        return outcome

    async def _review(self, outcome: LoopOutcome) -> None:
        try:
            rounds = self.rounds_limit
            checklist = None
            # A re-review's focus is the interdiff since the last review, not the whole change to plan for.
            memory = self.task.memory
            planned = plan_rounds(self.task.change, self.settings, self.task.profile) \
                if memory is None or not memory.interdiff.changed else 0
            if planned:
                checklist, used = await self._plan(planned)
                rounds -= used
            await self._main(rounds, checklist)
        except BudgetStop as stop:
            if self.requests == 0:
                outcome.state, outcome.stopped_by = "skipped", "budget"
                outcome.reason = f"not reviewed: {stop}"
            else:
                outcome.state, outcome.stopped_by = "failed", "budget"
                outcome.reason = f"review cut short: {stop}"
        except RequestFailed as failure:
            outcome.state, outcome.stopped_by, outcome.reason = "failed", "api", str(failure)
        except _End as end:
            outcome.state, outcome.stopped_by, outcome.reason = "failed", end.stopped_by, end.reason
        except Exception as exc:  # a bug of ours or a reply we cannot read: the file fails, its comments stay
            outcome.state, outcome.stopped_by = "failed", "internal"
            outcome.reason = " ".join(f"internal error: {type(exc).__name__}: {exc}".split())[:240]

    # --- requests ------------------------------------------------------------------------------

    async def _request_options(self, model: str) -> tuple[RequestOptions, Capabilities]:
        """Thinking and effort for this file's requests to `model`: its profile, as far as the model's
        capabilities (looked up once per run and model) allow."""
        from ocr_hook.agent.capabilities import Capabilities
        from ocr_hook.agent.request_options import options_for

        found = self._options.get(model)
        if found is None:
            lookup = self.task.capabilities
            caps = await lookup.get(model) if lookup is not None else Capabilities.unknown()
            found = self._options[model] = (options_for(self.task.profile, caps), caps)
        return found

    def _fitting_max_tokens(self, model: str, base: int, wanted: int, input_tokens: int) -> int:
        from ocr_hook.agent.request_options import fitting_max_tokens

        return fitting_max_tokens(base, wanted, lambda limit: self.task.budget.fits(model, input_tokens, limit))

    async def _send(self, conv: Conversation, phase: str, model: str, max_tokens: int | None = None) -> Any:
        tools_api = tools_param(registry.tools_for_phase(phase))
        if self._compactor is not None and await self._compactor.before_request(
                lambda: conv.estimate_tokens(self.system, tools_api)):
            self._older_turns_changed()
        options, caps = await self._request_options(model)
        base = max_tokens or self.settings.max_output_tokens
        limit = options.max_tokens(base, caps.max_tokens)
        if limit > base:
            limit = self._fitting_max_tokens(model, base, limit, conv.estimate_tokens(self.system, tools_api))
        response = await self.api.create(model=model, max_tokens=limit, system=self.system, tools=tools_api,
                                         messages=conv.for_request(), counts=self._counts, **options.as_params())
        self.requests += 1
        if response.stop_reason == "refusal":
            raise _End("model", "the model declined to review this file (refusal)")
        return response

    # --- plan phase ------------------------------------------------------------------------------

    async def _plan(self, rounds: int) -> tuple[str | None, int]:
        """Read-only look around; returns the checklist (if the model wrote one) and rounds used."""
        change = self.task.change
        conv = self._new_conversation("plan", await self._context_window(self.settings.model_for("plan")))
        conv.add_user([text_block(prompts.plan_message(
            self.path, str(change.status), change.changed_lines, prompts.its_patch(change, self.mask),
            self.task.other_paths, rounds, _context_text(self.task, self.mask), self.task.intent))])
        model = self.settings.model_for("plan")
        for round_no in range(1, rounds + 1):
            if round_no == rounds:
                conv.append_to_last_user([text_block(prompts.plan_last_round())])
            response = await self._send(conv, "plan", model)
            calls = [b for b in response.content if b.type == "tool_use"]
            # A model that reaches for task_done while planning has nothing more to look up.
            if (not calls or round_no == rounds or response.stop_reason == "model_context_window_exceeded"
                    or any(c.name == "task_done" for c in calls)):
                text = "\n".join(b.text for b in response.content if b.type == "text").strip()
                return (text[:MAX_CHECKLIST_CHARS] or None), round_no
            conv.add_assistant(assistant_blocks(response.content))
            results, _ = await self._answer(calls, "plan", round_no)
            conv.add_user(results)
        return None, rounds

    # --- main phase ------------------------------------------------------------------------------

    async def _main(self, rounds: int, checklist: str | None = None) -> None:
        self._answered.clear()  # the plan's answers are not part of this conversation
        self.repeats = 0
        conv = self._new_conversation("main", await self._context_window(self.settings.model_for("main")))
        conv.add_user([text_block(await first_main_message(self.task, self.mask, rounds, checklist))])
        model = self.settings.model_for("main")
        nudges = cut_offs = overflows = answered = 0
        for round_no in range(1, rounds + 1):
            final = round_no == rounds
            if final:
                conv.append_to_last_user([text_block(prompts.final_round(self.path))])
            try:
                response = await self._send(conv, "final" if final else "main", model)
            except BudgetStop:
                if final:
                    raise
                await self._closing_round(conv, model)
                raise
            stop = response.stop_reason
            if stop == "model_context_window_exceeded":
                overflows += 1
                if overflows > 1 or self._compactor is None or not self._compactor.elide_now(keep_recent=2):
                    raise _End("model", "the conversation outgrew the model's context window")
                self._older_turns_changed()
                continue  # the cut reply is dropped; the round is asked again on the shorter history
            conv.add_assistant(assistant_blocks(response.content))
            answered = round_no
            calls = [b for b in response.content if b.type == "tool_use"]
            cut = stop == "max_tokens"
            if cut:
                cut_offs += 1
                if cut_offs > 1:
                    raise _End("model", "the model's replies kept hitting the output limit "
                                        f"(max_output_tokens {self.settings.max_output_tokens})")
            if not calls:
                nudges += 1
                if self.tool_calls == 0 and (nudges > MAX_NUDGES or final):
                    raise _End("model", NO_TOOL_USE)
                if nudges > MAX_NUDGES:
                    raise _End("model", "the model stopped calling tools and never called task_done")
                conv.add_user([text_block(prompts.cut_off() if cut else prompts.nudge(self.path))])
                continue
            results, done = await self._answer(calls, "final" if final else "main", round_no)
            if done == "DONE":
                self.main_finished = True
                return
            if done is not None:
                raise _End("model", "the model could not review this file (task_done FAILED)")
            if self.repeats >= MAX_REPEATS:
                raise _End("model", f"the model repeated identical tool calls {self.repeats} times")
            conv.add_user(results)
            if cut:
                conv.append_to_last_user([text_block(prompts.cut_off())])
        # The grace round was answered: the model has said all it had to say.
        self.main_finished = answered == rounds
        raise _End("model", f"no task_done within the limit of {self.rounds_limit} rounds")

    def _older_turns_changed(self) -> None:
        # Summarised or elided answers are no longer in the conversation: asking again is legitimate,
        # not a repeat.
        self._answered.clear()

    # --- compaction ------------------------------------------------------------------------------

    async def _context_window(self, model: str) -> int:
        """The window compaction works against: the setting, or, while it is the shipped default, the
        model's own max_input_tokens from the Models API when known (DESIGN.md section 8)."""
        from ocr_hook import config_files

        configured = self.settings.context_window
        if configured != config_files.read_yaml("defaults.yaml")["context_window"]:
            return configured
        _, caps = await self._request_options(model)
        return caps.max_input_tokens or configured

    def _new_conversation(self, phase: str, window: int) -> Conversation:
        """A fresh conversation for a phase, with its own compactor (the previous one is closed)."""
        self._end_conversation()
        conv = Conversation()
        self._counts = compat.PromptCounts()  # each conversation's turns are compared with each other
        self._compactor = Compactor(
            conv, window, prompts.compact_request(self.path, NOTES_WORDS),
            prompts.compact_notes, functools.partial(self._notes, phase=phase))
        return conv

    def _end_conversation(self) -> None:
        compactor, self._compactor = self._compactor, None
        if compactor is not None:
            orphan = compactor.detach()
            if orphan is not None:
                self.api.keep_until_close(orphan)
            self.summaries += compactor.summaries
            self.elisions += compactor.elisions

    async def _notes(self, messages: list[dict[str, Any]], phase: str) -> str | None:
        """The model's notes on its older turns (see compaction); None when there are none to be had."""
        tools_api = tools_param(registry.tools_for_phase(phase))
        model = self.settings.model_for("compact")
        try:
            # The same thinking settings as the conversation: its cached prefix stays valid.
            options, caps = await self._request_options(model)
            response = await self.api.create(
                model=model, max_tokens=options.max_tokens(NOTES_MAX_TOKENS, caps.max_tokens), system=self.system,
                tools=tools_api, messages=messages, optional=True, **options.as_params())
        except (BudgetStop, RequestFailed):
            return None
        self.requests += 1
        if response.stop_reason in ("refusal", "max_tokens"):
            return None
        return "\n".join(b.text for b in response.content if b.type == "text").strip() or None

    async def _closing_round(self, conv: Conversation, model: str) -> None:
        """The budget refused the next round: one smaller last round, if it fits, so that the model can
        send the comments it has in mind. The file stays incomplete either way."""
        conv.append_to_last_user([text_block(prompts.final_round(self.path))])
        closing_tokens = min(CLOSING_MAX_TOKENS, self.settings.max_output_tokens)
        try:
            response = await self._send(conv, "final", model, max_tokens=closing_tokens)
        except (BudgetStop, RequestFailed, _End):
            return
        before = len(self.box.comments)
        for call in (b for b in response.content if b.type == "tool_use"):
            if call.name == "code_comment" and registry.validate_input(call.name, call.input, "final") is None:
                self.box.take(call.input)
        self.closing_note = (f"{self.box.shown_path}: the budget ran out mid-review; one closing round added "
                             f"{len(self.box.comments) - before} comment(s)")

    # --- tool calls ------------------------------------------------------------------------------

    async def _answer(self, calls: Sequence[Any], phase: str, round_no: int) -> tuple[list[dict[str, Any]], str | None]:
        """Answer every call of one turn, in order, in one list of tool_result blocks.

        Context tools run concurrently in threads; code_comment and task_done are handled here.
        Returns the blocks and the task_done state if the model called it."""
        done: str | None = None
        self.tool_calls += len(calls)
        pending: list[ToolResult | asyncio.Task[ToolResult]] = []
        for call in calls:
            name, tool_input = call.name, call.input
            key = _call_key(name, tool_input)
            if name != "task_done" and key in self._answered:
                self.repeats += 1
                pending.append(repeated_call(name, self._answered[key]))
                continue
            self._answered[key] = round_no
            answer, state = answer_in_loop(name, tool_input, phase, self.box)
            done = done or state
            if answer is not None:
                pending.append(answer)
            else:
                pending.append(asyncio.create_task(asyncio.to_thread(run_tool, name, dict(tool_input), self.ctx)))
        tasks = [p for p in pending if isinstance(p, asyncio.Task)]
        if tasks:
            try:
                async with asyncio.timeout(self.task.budget.remaining_seconds()):
                    await asyncio.gather(*tasks)
            except TimeoutError:
                for t in tasks:
                    t.cancel()
                raise BudgetStop(self.task.budget.exhausted_reason or self.task.budget.time_limit_reached) from None
        blocks = []
        for call, item in zip(calls, pending, strict=True):
            result = as_shown(item.result(), self.mask) if isinstance(item, asyncio.Task) else item
            blocks.append(tool_result_block(call.id, result.text or "(empty)", result.is_error))
        return blocks, done


# --- what the loop answers, as functions: delegate mode (ocr_hook.delegate) answers a host agent with them ---


async def first_main_message(task: FileTask, mask: SecretMasker, rounds: int, checklist: str | None = None) -> str:
    """The main loop's first user message for the file: a re-review's (agent/rereview.py) when memory has an
    interdiff, else the change, the file's lines, the context pack and the intent."""
    opening = await _rereview_text(task, mask, rounds)
    if opening is None:
        from ocr_hook.agent.excerpt import repeats_new_file

        change = task.change
        file_text = await _opening_text(task, mask)
        diff = None if file_text is not None and repeats_new_file(str(change.status), *file_text) else \
            prompts.its_patch(change, mask)
        opening = prompts.main_message(
            change.path, str(change.status), change.changed_lines, diff, task.other_paths, rounds,
            mask(checklist) if checklist else None, file_text, _context_text(task, mask), task.intent)
    return opening


def repeated_call(name: str, earlier_round: int) -> ToolResult:
    """The answer to a call identical to one already answered in this conversation (not task_done)."""
    return ToolResult(f"You already called {name} with exactly this input (round {earlier_round}); "
                      "its answer is in that earlier tool result. Use it, or call with different input.")


def answer_in_loop(name: str, tool_input: Any, phase: str, box: CommentBox) -> tuple[ToolResult | None, str | None]:
    """A call the loop answers itself (a refused input, task_done, code_comment) and task_done's state; (None,
    None) for a valid context tool call, which run_tool answers."""
    error = registry.validate_input(name, tool_input, phase)
    if error is not None:
        return ToolResult(error, is_error=True), None
    if name == "task_done":
        return ToolResult("Review of this file finished."), str(tool_input["state"])
    if name == "code_comment":
        return ToolResult(box.take(tool_input)), None
    return None, None


def run_tool(name: str, tool_input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """A context tool (may run in a worker thread; masking is as_shown's)."""
    try:
        return tools.run_context_tool(name, tool_input, ctx)
    except Exception as exc:  # a tool bug must cost one call, not the file
        return ToolResult(f"The tool {name} failed on our side ({type(exc).__name__}); "
                          "try different input or continue without it.", is_error=True)


def as_shown(result: ToolResult, mask: SecretMasker) -> ToolResult:
    """A context tool's answer as the model gets it: masked, counted, cut to MAX_TOOL_RESULT_CHARS."""
    text = mask(result.text)
    mask.count += result.masked  # what the tool masked itself, in its file's context
    if len(text) > MAX_TOOL_RESULT_CHARS:
        text = text[:MAX_TOOL_RESULT_CHARS] + "\n[output cut here: ask for less, e.g. a narrower range]"
    return ToolResult(text, result.is_error)


async def _opening_text(task: FileTask, mask: SecretMasker) -> tuple[str, str] | None:
    """The file as it is after the change, numbered like file_read, masked as a whole (line breaks
    kept), and how much of it is shown; None when there is no text to show."""
    from ocr_hook.agent.excerpt import opening_excerpt

    text = task.text if task.text is not None else await asyncio.to_thread(task.snapshot.read_text, task.change.path)
    if not text:
        return None
    return opening_excerpt(mask(text), task.change.hunks, tools.MAX_READ_LINE_CHARS)


async def _rereview_text(task: FileTask, mask: SecretMasker, rounds: int) -> str | None:
    """A re-review's first message (agent/rereview.py): the interdiff since the last review and today's
    lines around it, the findings to re-check and the carried ones; None for a first review, or when
    the content is the remembered one (cache off): a plain review then, classified after."""
    memory = task.memory
    if memory is None or not memory.interdiff.changed:
        return None
    from ocr_hook.agent.rereview import rereview_message, touched_names

    text = task.text if task.text is not None else await asyncio.to_thread(task.snapshot.read_text, task.change.path)
    change = task.change
    # The context pack's entries for the names the interdiff touches (DESIGN.md 7 and 12).
    pack_text = _context_text(task, mask, touched_names(memory))
    return mask(rereview_message(memory, mask(text or ""), status=str(change.status),
                                 changed_lines=change.changed_lines, rounds=rounds,
                                 other_paths=task.other_paths, pack_text=pack_text, intent=task.intent))


def _context_text(task: FileTask, mask: SecretMasker, names: Collection[str] | None = None) -> str | None:
    """The context pack's section of the first message (only the entries for `names` when given); its
    entries were masked when it was built (passing the mask again keeps the text sendable and finds
    nothing more to count)."""
    pack = task.context
    if pack is None or not pack.entries:
        return None
    text = pack.render(names)
    if not text.strip():
        return None
    return mask(prompts.context_section(text, len(pack.entries)))
