"""A review whose reasoning a host agent does (delegate mode, DESIGN.md 15): no request is ever sent.

Three pieces, each the API path's own code: the brief (the main loop's first user message and the system
prompt, built exactly as the loop builds them), one tool call answered as the loop answers it, and the run's
result from the comments and task_done states the host gave, through the same post-review stage (anchoring,
dedupe, review memory) with no model step: re-location and the review filter are requests, so they are
skipped, and a quote that does not anchor stays unanchored (kept, at file level).

Sessions, their storage and the entry points are ocr_hook.delegate's; this module keeps no state.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ocr_hook.agent import prompts, registry
from ocr_hook.agent.comments import CommentBox
from ocr_hook.agent.conversation import SecretMasker
from ocr_hook.agent.loop import FileTask, answer_in_loop, as_shown, first_main_message, max_rounds, run_tool
from ocr_hook.agent.run import file_context, job_intent, memory_plan, prepare_contexts
from ocr_hook.agent.tool_api import ToolContext, ToolResult
from ocr_hook.changes.model import ChangeSet
from ocr_hook.changes.selection import is_sensitive
from ocr_hook.changes.snapshot_api import Snapshot
from ocr_hook.findings import Comment
from ocr_hook.outcome import FileCoverage, ReviewResult
from ocr_hook.secrets_mask import mask_secrets
from ocr_hook.settings import Settings

if TYPE_CHECKING:
    from ocr_hook.agent import FileGuidance, ReviewJob
    from ocr_hook.effort import Profile

OPEN, DONE, FAILED = "open", "DONE", "FAILED"
NOT_CLOSED = "not closed with task_done: the host agent never finished this file"
GAVE_UP = "the reviewer could not review this file (task_done FAILED)"
NOT_IN_SESSION = "not part of the delegate session (the selection changed since it started)"


class Brief(NamedTuple):
    """What the API path would send first for one file."""

    path: str
    brief: str  # the first user message, its text blocks joined by a blank line
    system: str  # the system prompt: ocr-hook's instructions and the project's guidance for the file
    rounds: int
    effort: str
    context_entries: int | None
    context_cut: int


class Settled(NamedTuple):
    """A file as the host left it: its comments and task_done state (OPEN, DONE or FAILED)."""

    comments: tuple[Comment, ...]
    state: str


def tool_contracts() -> list[dict[str, Any]]:
    """The six tools as config/tools.yaml defines them for the main loop: name, description, input schema."""
    return [{"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}
            for spec in registry.tools_for_phase("main")]


def _profile_of(job: ReviewJob, path: str) -> Profile:
    from ocr_hook.effort import EffortPlan

    if job.profiles is None or path not in job.profiles:
        plan = EffortPlan(job.settings, job.environ)
        job.profiles = {**{f.path: plan.for_path(f.path) for f in job.files}, **(job.profiles or {})}
    return job.profiles[path]


def _masked_guidance(guidance: FileGuidance | None, mask: SecretMasker) -> FileGuidance | None:
    if guidance is None:
        return None
    from ocr_hook.agent import FileGuidance

    return FileGuidance(tuple(mask(s) for s in guidance.sections), guidance.shared)


def briefs(job: ReviewJob) -> list[Brief]:
    """Each job file's brief. The whole round budget is the host's: delegate mode has no plan phase, so the
    brief is the main loop's first message (the API path's first message whenever no plan phase runs: quick
    effort, or fewer than plan_threshold changed lines)."""
    prepare_contexts(job)
    mask = SecretMasker(mask_secrets)
    intent = job_intent(job)
    paths = tuple(f.path for f in job.change_set.files)
    position = {path: i for i, path in enumerate(paths)}
    out = []
    for change in job.files:
        profile = _profile_of(job, change.path)
        content = job.snapshot.read_text(change.path)
        plan, _ = memory_plan(job, change, content)
        pack = file_context(job, change)
        guidance = _masked_guidance(job.guidance.get(change.path), mask)
        task = FileTask(change=change, change_set=job.change_set, snapshot=job.snapshot, settings=job.settings,
                        budget=job.budget, other_paths=prompts.OtherPaths(paths, position.get(change.path)),
                        guidance=guidance, memory=plan, profile=profile, context=pack,
                        intent=intent[0] if intent is not None else None)
        rounds = max_rounds(job.settings, profile)
        blocks = [asyncio.run(first_main_message(task, mask, rounds))]
        if rounds == 1:  # the loop's only round is its last: it says so in the same message
            blocks.append(prompts.final_round(change.path))
        system = prompts.system_blocks(prompts.system_prompt(), guidance, job.settings.language)
        summary = pack.summary() if pack is not None else None
        out.append(Brief(change.path, "\n\n".join(blocks), "\n\n".join(b["text"] for b in system), rounds,
                         profile.name, summary.entries if summary is not None else None,
                         summary.cut if summary is not None else 0))
    return out


def answer(name: str, tool_input: Any, *, change_set: ChangeSet, snapshot: Snapshot, settings: Settings,
           path: str, comments: Sequence[Comment], last_round: bool) -> tuple[ToolResult, list[Comment], str | None]:
    """One tool call on `path`'s review as the loop answers it: the answer the model would see, the file's
    comments after it, and task_done's state if it was called. `last_round`: only code_comment and task_done
    are available (the loop's final round)."""
    box = CommentBox(path, list(comments))
    phase = "final" if last_round else "main"
    result, state = answer_in_loop(name, tool_input, phase, box)
    if result is None:
        ctx = ToolContext(snapshot=snapshot, change_set=change_set, current_path=path,
                          is_hidden=functools.partial(is_sensitive, settings=settings))
        result = as_shown(run_tool(name, dict(tool_input), ctx), SecretMasker(mask_secrets))
    return result, box.comments, state


def review_settled(job: ReviewJob, settled: Mapping[str, Settled],
                   context: Mapping[str, tuple[int | None, int]] | None = None) -> ReviewResult:
    """The job's result from what the host left of each file (`context`: each file's pack counts, as the
    brief had them), as review_files returns it for the API path; filter mode and suppressions are the
    caller's, as there."""
    return asyncio.run(_review_settled(job, settled, context or {}))


async def _review_settled(job: ReviewJob, settled: Mapping[str, Settled],
                          context: Mapping[str, tuple[int | None, int]]) -> ReviewResult:
    from ocr_hook.agent.post_review import finish_file
    from ocr_hook.findings.memory import classify

    mask = SecretMasker(mask_secrets)
    result = ReviewResult(findings=[], files=[], scope=job.change_set.description,
                          late_findings=job.settings.late_findings)
    unanchored = 0
    for change in job.files:
        item = settled.get(change.path)
        profile = _profile_of(job, change.path)
        entries, cut = context.get(change.path, (None, 0))
        shown = {"effort": profile.name, "context_entries": entries, "context_cut": cut}
        if item is None:
            result.files.append(FileCoverage(change.path, "failed", NOT_IN_SESSION, incomplete=True, **shown))
            continue
        content = job.snapshot.read_text(change.path)
        plan, note = memory_plan(job, change, content)
        if note:
            result.notes.append(note)
        post = await finish_file(item.comments, change, content, api=None, settings=job.settings, mask=mask,
                                 guidance=job.guidance.get(change.path), profile=profile, memory=plan)
        findings = post.findings
        if plan is not None:
            classified = classify(plan, findings, complete=item.state == DONE)
            findings = classified.findings
            result.resolved.extend(classified.resolved)
        unanchored += sum(1 for f in findings if not f.anchored)
        result.findings.extend(findings)
        result.notes.extend(post.notes)
        for key, count in post.dropped.items():
            result.dropped[key] = result.dropped.get(key, 0) + count
        _on_event(job, change.path, item.state, len(findings))
        if item.state == DONE:
            result.files.append(FileCoverage(change.path, "reviewed", comments=len(findings), **shown))
        else:
            reason = GAVE_UP if item.state == FAILED else NOT_CLOSED
            result.files.append(FileCoverage(change.path, "failed", reason, comments=len(findings),
                                             incomplete=True, **shown))
    if unanchored:
        result.notes.append(f"delegate mode sends no re-location request: {unanchored} comment(s) whose quote "
                            "matches no line stay unanchored (reported at file level)")
    return result


def _on_event(job: ReviewJob, path: str, state: str, comments: int) -> None:
    if state == DONE:
        job.on_event(path, "done", f"{comments} comment(s)")
    else:
        job.on_event(path, "failed", GAVE_UP if state == FAILED else NOT_CLOSED)
