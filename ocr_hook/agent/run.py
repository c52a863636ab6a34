"""A whole review run: result-cache lookups, then the files in parallel, then one ReviewResult."""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING

from ocr_hook import __version__
from ocr_hook.agent import prompts
from ocr_hook.changes.model import FileChange
from ocr_hook.digest import sha256_hex
from ocr_hook.findings import Finding
from ocr_hook.outcome import DroppedComment, FileCoverage, ReviewResult, RoutineNote
from ocr_hook.settings import Settings

if TYPE_CHECKING:
    from ocr_hook.agent import FileGuidance, ReviewJob
    from ocr_hook.agent.capabilities import CapabilityLookup
    from ocr_hook.agent.client import Api
    from ocr_hook.agent.conversation import SecretMasker
    from ocr_hook.context import ContextPack, PackSummary
    from ocr_hook.effort import Profile
    from ocr_hook.findings.memory import MemoryPlan
    from ocr_hook.store.result_cache import CachedReview, ResultCache


@cache
def tools_digest() -> str:
    """Hash of the tool definitions as shipped data (their code is covered by the package version).

    Hashing the text, not the parsed registry, keeps a fully cached run from loading jsonschema."""
    from ocr_hook import config_files

    return sha256_hex(config_files.read_text("tools.yaml").encode("utf-8"))


def context_parts(settings: Settings, guidance: FileGuidance | None = None, effort: str = "standard") -> dict[str, str]:
    """The parts of a file's result-cache key other than the file itself (its path, diff, content):
    what review memory compares to decide whether the last review still speaks for today's. `effort` is the
    file's profile: a deep review's findings are not a quick one's."""
    models = {task: settings.model_for(task) for task in ("main", "plan", "filter", "relocate", "compact")}
    relevant = {
        "provider": settings.provider, "max_rounds": settings.max_rounds,
        "plan_threshold": settings.plan_threshold,
        "review_filter": settings.review_filter, "max_output_tokens": settings.max_output_tokens,
        "context_window": settings.context_window, "language": settings.language,
        "context": settings.context, "context_tokens": settings.context_tokens,
    }
    return {
        "models": json.dumps(models, sort_keys=True),
        "prompts": prompts.digest(),
        "tools": tools_digest(),
        "settings": json.dumps(relevant, sort_keys=True),
        "version": __version__,
        # The guidance text that applies to the file (from the trusted revision): a guidance edit
        # committed to HEAD makes staged results stale.
        "guidance": json.dumps(list(guidance.sections) if guidance is not None else [], ensure_ascii=False),
        "effort": effort,
    }


def result_key(change: FileChange, content: str | None, settings: Settings,
               guidance: FileGuidance | None = None, profile: Profile | None = None) -> str:
    """Everything that decides a file's findings but its context pack; any change means a fresh review.

    The intent (a pull request's title and body, the range's commit messages) is not in it (issue 62.1): the
    range's messages grow with every push, so a key holding them made each push re-review every file of the
    pull request. A file whose content and diff against the base are those of its last review keeps that
    review; the intent reaches the files a push changed, whose reviews are new anyway. It is context for the
    reviewer, never a reason to raise or drop a finding (DESIGN.md 12), so an older intent cannot make a kept
    review wrong.

    The pack is not in the key (issue 55.2): the run's packs share a deadline, so what a pack holds can depend on
    the machine's load. The entry remembers the pack it was reviewed with instead (pack_record), and
    pack_still_fits decides with it."""
    from ocr_hook.store.result_cache import cache_key

    parts = {
        "path": change.path,
        "patch": change.patch,
        "content": content if content is not None else "\0(absent)",
        **context_parts(settings, guidance, profile.name if profile is not None else "standard"),
    }
    return cache_key(parts)


def pack_record(pack: PackSummary | None) -> tuple[str | None, int, int] | None:
    """What a cached review remembers of its pack: the digest of the text sent when the pack was whole, None in
    its place when the deadline (or a failed search) cut it, and the counts coverage shows."""
    if pack is None:
        return None
    return (_pack_digest(pack) if pack.complete else None, pack.entries, pack.cut)


def pack_still_fits(remembered: tuple[str | None, int, int] | None, today: PackSummary | None) -> bool:
    """Whether a cached review still speaks for the file given today's pack. Only two whole packs that differ
    say the context changed (a definition elsewhere was edited); a pack cut by the clock says nothing definite
    either way, so an unchanged file is answered from the cache whatever the packs' timing did."""
    if today is not None and not today.complete:
        return True
    if remembered is not None and remembered[0] is None:
        return True
    if remembered is None or today is None:
        return remembered is None and today is None
    return remembered[0] == _pack_digest(today)


def _pack_digest(pack: PackSummary) -> str:
    return sha256_hex(pack.text.encode("utf-8", "surrogateescape"))


def file_context(job: ReviewJob, change: FileChange) -> ContextPack | None:
    """The file's context pack, built once per job (never when settings.context is off). Building it may
    fail only on a bug of ours; the file then goes without one rather than failing its review."""
    if not job.settings.context:
        return None
    if change.path not in job.contexts:
        from ocr_hook.context import build_pack
        from ocr_hook.context.pack import degraded

        _bound_packs(job)
        try:
            job.contexts[change.path] = build_pack(change, job.snapshot, job.settings)
        except Exception:  # the pack is an aid: without it the review is as it was before packs
            job.contexts[change.path] = None
            job.context_failures.add(change.path)
        if degraded(job.snapshot, job.settings):  # the deadline, or a failed search, cut this pack (or all)
            job.contexts_cut.add(change.path)
    return job.contexts[change.path]


def file_summary(job: ReviewJob, change: FileChange, pack: ContextPack | None) -> PackSummary | None:
    """The pack as a cached review is checked against; a file the clock left without a pack has a cut one."""
    if change.path in job.contexts_cut:
        from ocr_hook.context import PackSummary

        return pack.summary(False) if pack is not None else PackSummary("", 0, 0, False)
    return pack.summary() if pack is not None else None


def _evidence(pack: ContextPack | None, plan: MemoryPlan | None) -> str | None:
    """What of the context pack the review filter sees: what the first message carried (on a re-review the
    entries for the names the interdiff touches), so it can drop "X is not defined" when X's definition is
    shown (DESIGN.md 12). The intent never goes to the filter."""
    if pack is None or not pack.entries:
        return None
    if plan is not None and plan.interdiff.changed:
        from ocr_hook.agent.rereview import touched_names

        return pack.render(touched_names(plan)) or None
    return pack.render() or None


PREPARE_BATCH = 64  # files whose packs are prepared together (one call-site search for them all)


def _bound_packs(job: ReviewJob) -> None:
    """The packs' own deadline never outlasts the run's (--timeout bounds the preparation too, issue 55.8)."""
    from ocr_hook.context.model import reader_for

    reader = reader_for(job.snapshot, job.settings)
    reader.deadline = min(reader.deadline, time.monotonic() + job.budget.remaining_seconds())


def prepare_contexts(job: ReviewJob, files: Sequence[FileChange] | None = None) -> None:
    """What the packs of `files` (default: the job's) share (one call-site search per language), once, before
    their own packs."""
    todo = [f for f in (job.files if files is None else files) if f.path not in job.contexts]
    if not job.settings.context or not todo:
        return
    _bound_packs(job)
    from ocr_hook.context import prepare_packs

    try:
        prepare_packs(todo, job.snapshot, job.settings)
    except Exception:  # each file's own build then degrades on its own
        pass


def job_intent(job: ReviewJob) -> tuple[str, int] | None:
    """The job's intent as sent (capped, masked, fenced, labelled) and the secrets masked in it."""
    if job.intent is None or not job.intent[0].strip():
        return None
    from ocr_hook.context.intent import render

    return render(*job.intent)


class _FileResult:
    """One file's part of the run (a plain class: a fully cached run creates this type too)."""

    __slots__ = ("coverage", "dropped", "dropped_comments", "findings", "notes", "resolved")

    def __init__(self, coverage: FileCoverage, findings: list[Finding] | None = None, notes: list[str] | None = None,
                 dropped: dict[str, int] | None = None, resolved: list[Finding] | None = None,
                 dropped_comments: list[DroppedComment] | None = None) -> None:
        self.coverage = coverage
        self.findings = findings if findings is not None else []
        self.notes = notes if notes is not None else []
        self.dropped = dropped if dropped is not None else {}
        self.resolved = resolved if resolved is not None else []
        self.dropped_comments = dropped_comments if dropped_comments is not None else []


# What the parts of the key are called in a note saying why memory was not used.
_PART_NAMES = {"models": "the models", "prompts": "the prompts", "tools": "the tool definitions",
               "settings": "the review settings", "version": "the ocr-hook version", "guidance": "the guidance",
               "effort": "the effort profile"}


def memory_plan(job: ReviewJob, change: FileChange, content: str | None) -> tuple[MemoryPlan | None, str | None]:
    """The file's re-review plan when review memory applies, else None and maybe a note saying why not.

    It applies only when everything else in the file's result-cache key is the same as at the remembered
    review (DESIGN.md 7). Unchanged content is the result cache's job; when the cache is off (or missed
    because the diff's base moved) the plan has an empty interdiff: every earlier finding is carried and
    whatever the fresh review adds is late, so re-running on the same code cannot make the verdict worse."""
    remembered = job.memory.get(change.path) if job.memory is not None else None
    if remembered is None or content is None:
        return None, None
    from ocr_hook.findings.memory import changed_context, plan_memory
    from ocr_hook.secrets_mask import mask_secrets

    masked = mask_secrets(content)[0]  # remembered content is stored as sent: masked
    today = context_parts(job.settings, job.guidance.get(change.path), _profile(job, change.path).name)
    changed = changed_context(remembered.context, today)
    if changed:
        names = ", ".join(_PART_NAMES.get(name, name) for name in changed)
        from ocr_hook.changes.names import shown

        return None, (f"review memory not used for {shown(change.path)}: {names} changed since the last review, "
                      "so the file got a full review")
    return plan_memory(remembered, masked), None


async def _review_one(job: ReviewJob, change: FileChange, key: str | None, api: Api | None,
                      mask: SecretMasker, other_paths: Sequence[str],
                      guidance: FileGuidance | None = None,
                      capabilities: CapabilityLookup | None = None) -> _FileResult:
    import asyncio

    from ocr_hook.agent.loop import FileReview, FileTask
    from ocr_hook.agent.post_review import finish_file

    path = change.path
    profile = _profile(job, path)
    effort = profile.name
    job.on_event(path, "reviewing", "")
    content = await asyncio.to_thread(job.snapshot.read_text, path)
    plan, memory_note = memory_plan(job, change, content)
    # A pack prepared already (prepare_contexts) is a lookup: no thread for it.
    pack = (job.contexts.get(path) if path in job.contexts or not job.settings.context
            else await asyncio.to_thread(file_context, job, change))
    intent = job_intent(job)
    if pack is not None:
        mask.count += pack.masked
    task = FileTask(change=change, change_set=job.change_set, snapshot=job.snapshot, settings=job.settings,
                    budget=job.budget, other_paths=other_paths, guidance=guidance, memory=plan, profile=profile,
                    capabilities=capabilities, context=pack, intent=intent[0] if intent is not None else None,
                    text=content)
    shown = _context_counts(pack.summary() if pack is not None else None)
    ask = None
    if api is None:  # provider claude-code (DESIGN.md 15): Claude Code answers every phase and model step
        from ocr_hook.agent.claude_code_review import ClaudeCodeReview

        review = ClaudeCodeReview(task, mask, job.environ)
        outcome = await review.run()
        ask = review.ask
    else:
        outcome = await FileReview(task, api, mask).run()
    if memory_note:
        outcome.notes.insert(0, memory_note)
    if outcome.state == "skipped":
        job.on_event(path, "skipped", outcome.reason)
        return _FileResult(FileCoverage(path, "skipped", outcome.reason, incomplete=True, effort=effort, **shown),
                           notes=outcome.notes)
    # After an API error the next request would most likely fail too (and after an internal error
    # it may hit the same bug): anchor locally and stop there.
    steps = outcome.stopped_by not in ("api", "internal")
    post = await finish_file(outcome.comments, change, content, settings=job.settings, mask=mask,
                             api=api if steps else None, ask=ask if steps else None,
                             guidance=guidance, profile=profile, evidence=_evidence(pack, plan), memory=plan)
    notes = outcome.notes + post.notes
    findings, resolved = post.findings, []
    if plan is not None:
        from ocr_hook.findings.memory import classify

        # Resolution follows the main loop alone (DESIGN.md 7): a failed filter or re-location keeps every
        # comment and keeps the file out of the result cache, but never keeps a fixed finding blocking.
        classified = classify(plan, post.findings, complete=outcome.main_finished)
        findings, resolved = classified.findings, classified.resolved
        from ocr_hook.changes.names import shown as shown_name

        note = (f"review memory: {shown_name(path)} re-reviewed against the last review ({len(plan.carried)} earlier "
                f"finding(s) on unchanged lines carried, {len(plan.recheck)} re-checked, {len(resolved)} resolved)")
        notes.insert(0, note if plan.carried or plan.recheck or resolved else RoutineNote(note))
    if outcome.state == "failed":
        job.on_event(path, "failed", outcome.reason)
        coverage = FileCoverage(path, "failed", outcome.reason, comments=len(findings), incomplete=True,
                                effort=effort, **shown)
    else:
        job.on_event(path, "done", f"{len(findings)} comment(s)")
        coverage = FileCoverage(path, "reviewed", comments=len(findings), effort=effort, **shown)
        if job.cache is not None and key is not None and post.complete:
            job.cache.put(key, findings, resolved, memory=job.memory_id if plan is not None else None,
                          pack=pack_record(file_summary(job, change, pack)))
    return _FileResult(coverage, findings, notes, post.dropped, resolved, post.dropped_comments)


def _context_counts(pack: PackSummary | None) -> dict[str, int | None]:
    """The coverage fields saying what the file's pack held (DESIGN.md 12)."""
    if pack is None:
        return {"context_entries": None, "context_cut": 0}
    return {"context_entries": pack.entries, "context_cut": pack.cut}


def _profile(job: ReviewJob, path: str) -> Profile:
    """The file's effort profile: the entry point's choice, else what the settings and environment say."""
    from ocr_hook.effort import EffortPlan

    found = job.profiles.get(path) if job.profiles is not None else None
    if found is None:
        plan = EffortPlan(job.settings, job.environ)  # once per job: every file's profile at once
        job.profiles = {**{f.path: plan.for_path(f.path) for f in job.files}, **(job.profiles or {})}
        found = job.profiles.get(path) or plan.for_path(path)
    return found


def _check_prices(job: ReviewJob) -> None:
    """A model without a price would make the cost cap meaningless: a ConfigError before any request."""
    tasks = ["main", "relocate"]
    if any(plan_due(change, job.settings, _profile(job, change.path)) for change in job.files):
        tasks.append("plan")
    if job.settings.review_filter:
        tasks.append("filter")
    for task in tasks:
        job.budget.price(job.settings.model_for(task))


def plan_due(change: FileChange, settings: Settings, profile: Profile | None = None) -> bool:
    from ocr_hook.agent.loop import plan_rounds

    return plan_rounds(change, settings, profile) > 0


def review_files(job: ReviewJob) -> ReviewResult:
    """Cache lookups first, synchronously: a run served wholly from the cache never starts an event
    loop (nor imports asyncio or the SDK)."""
    started = time.monotonic()
    results, to_review = _lookup_cache(job)
    if not to_review:
        return _assemble(job, results, 0, time.monotonic() - started)
    import asyncio

    return asyncio.run(_review_uncached(job, results, to_review, started))


async def review_files_async(job: ReviewJob) -> ReviewResult:
    started = time.monotonic()
    results, to_review = _lookup_cache(job)
    return await _review_uncached(job, results, to_review, started)


def _lookup_cache(job: ReviewJob) -> tuple[dict[str, _FileResult], deque[tuple[FileChange, str | None]]]:
    """Each file's entry by its key, then, only when some entry was reviewed with a whole pack, today's packs
    (from the pack memo, else built) to check that the context it saw has not changed (pack_still_fits)."""
    results: dict[str, _FileResult] = {}
    if job.cache is None:
        _prefetch_listing(job)
        return results, deque((change, None) for change in job.files)
    found: list[tuple[FileChange, str, CachedReview | None]] = []
    late: list[FileChange] = []
    for change in job.files:
        if job.budget.remaining_seconds() <= 0:  # --timeout bounds the preparation too (issue 55.8)
            late.append(change)
            continue
        content = job.snapshot.read_text(change.path)
        key = result_key(change, content, job.settings, job.guidance.get(change.path), _profile(job, change.path))
        found.append((change, key, job.cache.get_review(key)))
    checked = job.settings.context and any(e is not None and e.pack is not None and e.pack[0] is not None
                                           for _c, _k, e in found)
    if any(e is None for _c, _k, e in found):  # (checking a cached pack reads the listing at once, if at all)
        _prefetch_listing(job)
    packs = _pack_summaries(job, job.cache) if checked else {}
    to_review: deque[tuple[FileChange, str | None]] = deque()
    for change, key, entry in found:
        if entry is None or (checked and not pack_still_fits(entry.pack, packs.get(change.path))):
            to_review.append((change, key))
            continue
        hit, resolved = entry.findings, entry.resolved
        if entry.memory is not None and entry.memory != job.memory_id:
            # Statuses relative to another line of work's memory, or memory is off now: the
            # findings without what that memory said of them.
            hit, resolved = [f._replace(status="new") for f in hit], []
        # A pack holds an entry, kept or cut: (None, 0, 0) is the record of a file the packs' deadline (or a failed
        # search) left without one, which the review that made it counted as no pack (issue 62.10).
        counts = {"context_entries": entry.pack[1], "context_cut": entry.pack[2]} \
            if entry.pack is not None and entry.pack[1] + entry.pack[2] else _context_counts(None)
        results[change.path] = _FileResult(FileCoverage(change.path, "cached", comments=len(hit),
                                                        effort=_profile(job, change.path).name, **counts),
                                           hit, resolved=resolved)
        job.on_event(change.path, "cached", f"{len(hit)} comment(s)")
    to_review.extend((change, None) for change in late)  # the worker says why they were not reviewed
    return results, to_review


def _prefetch_listing(job: ReviewJob) -> None:
    """The snapshot's whole listing, which the packs read, started as soon as a pack is known to be needed (git
    lists while the SDK is imported); a run served from the cache starts no such process."""
    prefetch = getattr(job.snapshot, "prefetch_listing", None)  # (git's snapshot; others list nothing)
    if job.settings.context and prefetch is not None:
        prefetch()


def _pack_summaries(job: ReviewJob, cache: ResultCache) -> dict[str, PackSummary | None]:
    """Each file's context pack as a cached review is checked against. When this very change set of this very
    snapshot was packed before (the pack memo, keyed by everything the packs are made from), the packs are
    not built again: an unchanged re-run runs no `git grep` and parses nothing. Packs an entry point put in
    the job beforehand are its own and are used as they are."""
    if not job.settings.context:
        return {}
    key = _memo_key(job) if not job.contexts else None
    remembered = cache.get_packs(key) if key is not None else None
    if remembered is not None and remembered.keys() == {f.path for f in job.files}:
        job.packs_memo_kept = True
        return remembered
    prepare_contexts(job)
    packs = {change.path: file_summary(job, change, file_context(job, change)) for change in job.files}
    if key is not None and not job.context_failures:
        # Packs the clock cut are kept as cut: a cached review never depends on them (pack_still_fits).
        cache.put_packs(key, packs)
        job.packs_memo_kept = True
    return packs


def _memo_key(job: ReviewJob) -> str | None:
    from ocr_hook.context import packs_key

    try:
        return packs_key(job.files, job.snapshot, job.settings)
    except Exception:  # (the snapshot's listing failed): no memo; building the packs degrades on its own
        return None


def _remember_packs(job: ReviewJob) -> None:
    """After a review that built every file's pack, the pack memo for the next run's lookups."""
    if job.cache is None or not job.settings.context or job.context_failures or job.packs_memo_kept:
        return
    if any(change.path not in job.contexts for change in job.files):
        return
    key = _memo_key(job)
    if key is not None and job.cache.get_packs(key) is None:
        job.cache.put_packs(key, {c.path: file_summary(job, c, job.contexts[c.path]) for c in job.files})


async def _review_uncached(job: ReviewJob, results: dict[str, _FileResult],
                           to_review: deque[tuple[FileChange, str | None]], started: float) -> ReviewResult:
    import asyncio

    masked_count = 0
    server_notes: list[str] = []
    if to_review:
        from ocr_hook.agent.client import check_credentials, open_api
        from ocr_hook.agent.conversation import SecretMasker
        from ocr_hook.secrets_mask import mask_secrets

        claude_code = job.settings.provider == "claude-code"
        check_credentials(job.settings, job.environ)
        _check_prices(job)
        mask = SecretMasker(mask_secrets)
        intent = job_intent(job)
        if intent is not None:
            mask.count += intent[1]  # the intent's secrets, once for the run
        guidance = _masked_guidance(job.guidance, mask)
        all_paths = tuple(f.path for f in job.change_set.files)
        position = {path: i for i, path in enumerate(all_paths)}  # once for the run (issue 55.12)
        # No Messages API client with Claude Code: no request may bypass it (no capability lookup either:
        # Claude Code sends thinking and effort only to the models it knows support them).
        api = None if claude_code else open_api(job.settings, job.environ, job.budget)
        capabilities = _capability_lookup(job, api) if api is not None else None
        # The packs are prepared in review order, a batch at a time, each just before its first file is reviewed
        # (issue 55.5): the first files reviewed get their packs first, and the packs' deadline falls on the last.
        order = [change for change, _key in to_review]
        place = {change.path: i for i, change in enumerate(order)}
        prepared, prep_lock = [0], asyncio.Lock()

        async def prepare_up_to(change: FileChange) -> None:
            async with prep_lock:
                at = place.get(change.path, 0)
                if job.settings.context and at >= prepared[0]:
                    batch = order[prepared[0]:at + PREPARE_BATCH]
                    prepared[0] = at + PREPARE_BATCH
                    await asyncio.to_thread(prepare_contexts, job, batch)

        async def worker() -> None:
            # A shared queue, not one task per file: files start strictly in the given priority order.
            while to_review:
                change, key = to_review.popleft()
                if job.budget.exhausted_reason is not None or job.budget.remaining_seconds() <= 0:
                    reason = f"not reviewed: {job.budget.exhausted_reason or job.budget.time_limit_reached}"
                    job.on_event(change.path, "skipped", reason)
                    results[change.path] = _FileResult(FileCoverage(change.path, "skipped", reason, incomplete=True))
                    continue
                others = prompts.OtherPaths(all_paths, position.get(change.path))
                try:
                    await prepare_up_to(change)
                    results[change.path] = await _review_one(job, change, key, api, mask, others,
                                                             guidance.get(change.path), capabilities)
                except Exception as exc:  # one file's bug must not sink the others' results
                    reason = f"internal error: {type(exc).__name__}: {exc}".splitlines()[0][:240]
                    job.on_event(change.path, "failed", reason)
                    results[change.path] = _FileResult(FileCoverage(change.path, "failed", reason, incomplete=True))

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(max(1, min(job.settings.concurrency, len(to_review)))):
                    group.create_task(worker())
        finally:
            if api is not None:
                await api.aclose()
        masked_count = mask.count
        server_notes = api.fields.notes() if api is not None else []  # optional fields a compatible server rejected
        if claude_code:
            from ocr_hook.agent.claude_code import billing_note

            server_notes += [note for note in (billing_note(job.environ),) if note]
        _remember_packs(job)

    return _assemble(job, results, masked_count, time.monotonic() - started, server_notes)


def _capability_lookup(job: ReviewJob, api: Api) -> CapabilityLookup:
    """What each model accepts (thinking, effort), from the day's record in the cache directory or the
    Models API: asked only here, once there is something to send."""
    from pathlib import Path

    from ocr_hook.agent.capabilities import CapabilityLookup
    from ocr_hook.store.result_cache import run_cache_dir

    settings = job.settings
    cache_dir = Path(run_cache_dir(settings.cache_dir, job.environ))
    return CapabilityLookup(api.sdk_client, settings.provider, cache_dir, remaining_s=job.budget.remaining_seconds)


def _masked_guidance(guidance: Mapping[str, FileGuidance], mask: SecretMasker) -> dict[str, FileGuidance]:
    """Guidance is repository text too: it passes the secret mask like everything else, each distinct
    section once (so a secret in the root REVIEW.md is counted once, not once per file)."""
    from ocr_hook.agent import FileGuidance

    masked: dict[str, str] = {}
    out = {}
    for path, item in guidance.items():
        sections = []
        for section in item.sections:
            if section not in masked:
                masked[section] = mask(section)
            sections.append(masked[section])
        out[path] = FileGuidance(tuple(sections), item.shared)
    return out


def _assemble(job: ReviewJob, results: dict[str, _FileResult], masked: int, elapsed: float,
              server_notes: list[str] | None = None) -> ReviewResult:
    findings: list[Finding] = []
    resolved: list[Finding] = []
    files: list[FileCoverage] = []
    notes: list[str] = list(server_notes or ())
    dropped: dict[str, int] = {}
    dropped_comments: list[DroppedComment] = []
    for change in job.files:
        item = results.get(change.path)
        if item is None:  # only when the run was cancelled part-way
            item = _FileResult(FileCoverage(change.path, "skipped", "not reviewed: the run was stopped",
                                            incomplete=True))
        files.append(item.coverage)
        findings.extend(item.findings)
        resolved.extend(item.resolved)
        notes.extend(item.notes)
        for name, count in item.dropped.items():
            dropped[name] = dropped.get(name, 0) + count
        dropped_comments.extend(item.dropped_comments)
    if masked:
        notes.append(f"{masked} likely secret(s) were masked before text was sent to the model")
    from ocr_hook.outcome import stopped_note

    stop = stopped_note(files)  # what the clock or a cap left undone, and what was done (issue 62.10)
    if stop is not None:
        notes.append(stop)
    reviewed = {f.path for f in files if f.state in ("reviewed", "failed")}
    short = len(job.contexts_cut & reviewed)
    if short:  # issue 55.5: said, not only counted in the summary
        from ocr_hook.context.model import MAX_PACK_S, PACK_SHARE

        # Why a long scan packs so few files (issue 62.8): the window is the run's clock, not the packs' own time.
        window = min(MAX_PACK_S, job.settings.timeout * PACK_SHARE)
        notes.append(f"{short} file(s) were reviewed with their context pack cut short or without one: the packs "
                     f"get one window of {window:g} s from the first pack (a fifth of --timeout, at most 15 s) and "
                     "are built as their files come up for review, so a long run packs only the files reviewed in "
                     "that window; or a search for call sites failed")
    if stop is None and job.budget.remaining_seconds() <= 0:
        # The clock stopped the run with no request refused (requests in flight failed on it): say so, with the
        # limit as given, and what was done.
        cut = sum(1 for f in files if f.incomplete and f.state in ("skipped", "failed"))
        if cut:
            done = sum(1 for f in files if f.state in ("reviewed", "cached"))
            notes.append(f"the run was stopped by the clock ({job.budget.time_limit_reached}): {done} file(s) "
                         f"reviewed, {cut} not reviewed or cut short")
    cut = job.budget.forfeited_requests
    if cut:
        notes.append(f"{cut} request(s) were cut off after they were sent, so their usage never came back; "
                     f"the API may still bill them: their worst case (${job.budget.forfeited_usd:.4f}) is "
                     "counted in the cost, which is therefore an upper bound")
    if job.cache is not None and getattr(job.cache, "last_error", None):
        notes.append(str(job.cache.last_error))
    return ReviewResult(findings=findings, files=files, usage=job.budget.usage, scope=job.change_set.description,
                        notes=notes, dropped=dropped, dropped_comments=dropped_comments, elapsed_s=elapsed,
                        resolved=resolved,
                        late_findings=job.settings.late_findings)
