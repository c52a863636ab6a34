"""The shared review agent: per file, an optional plan phase and a main loop with six tools.

It knows nothing about pre-commit, CI or output formats; any entry point (CLI, CI, an MCP server)
builds a ReviewJob and calls `review_files`. Importing this package is cheap: the SDK, the tool
registry and the loop load only when there is something to send.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ocr_hook.budget.ledger import Budget
    from ocr_hook.changes.model import ChangeSet, FileChange
    from ocr_hook.changes.snapshot_api import Snapshot
    from ocr_hook.context import ContextPack
    from ocr_hook.effort import Profile
    from ocr_hook.findings.memory import Remembered
    from ocr_hook.outcome import ReviewResult
    from ocr_hook.settings import Settings
    from ocr_hook.store.result_cache import ResultCache

__all__ = ["FileGuidance", "ReviewJob", "check_credentials", "context_parts", "review_files",
           "review_files_async"]


def _no_event(path: str, kind: str, detail: str) -> None:
    pass


class FileGuidance(NamedTuple):
    """The project's guidance for one file as prompt sections (built by ocr_hook.guidance, or by any
    other entry point). The first `shared` sections are the same for every file of the run: they sit
    in the cached part of the system prompt; the rest is this file's own."""

    sections: tuple[str, ...] = ()
    shared: int = 0


class ReviewJob:
    """One run's files and what reviewing them needs. A plain class, not a dataclass: every review, a fully
    cached one too, creates this type, and a dataclass compiles its methods from source when it is defined."""

    __slots__ = ("budget", "cache", "change_set", "context_failures", "contexts", "contexts_cut", "environ", "files",
                 "guidance", "intent", "memory", "memory_id", "on_event", "packs_memo_kept", "profiles", "settings",
                 "snapshot")

    def __init__(self, change_set: ChangeSet, snapshot: Snapshot, files: Sequence[FileChange], settings: Settings,
                 budget: Budget, cache: ResultCache | None, *,
                 on_event: Callable[[str, str, str], None] = _no_event,
                 environ: Mapping[str, str] | None = None,
                 guidance: Mapping[str, FileGuidance] | None = None,
                 profiles: Mapping[str, Profile] | None = None,
                 memory: Mapping[str, Remembered] | None = None, memory_id: str | None = None,
                 intent: tuple[str, str] | None = None,
                 contexts: dict[str, ContextPack | None] | None = None) -> None:
        self.change_set = change_set
        self.snapshot = snapshot
        self.files = files  # selected for review, in priority order
        self.settings = settings
        self.budget = budget
        self.cache = cache
        self.on_event = on_event  # kinds: reviewing, done, cached, skipped, failed
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        # path → the project's guidance for that file (REVIEW.md etc. from the trusted revision)
        self.guidance: Mapping[str, FileGuidance] = {} if guidance is None else guidance
        # path → effort profile (ocr_hook.effort); None or a missing path: from the settings and environ
        self.profiles = profiles
        # Review memory (DESIGN.md 7): path → the file as its last review saw it; None: memory is off.
        self.memory = memory
        self.memory_id = memory_id  # names that memory (repository and line of work), for the result cache
        # DESIGN.md 12: what the change is for, as (text, where it came from), e.g. from --intent, the MCP
        # tool, the pull request or the range's commit messages; capped, masked and fenced on its way out.
        self.intent = intent
        # path → the file's context pack, built on first use (when settings.context is on); an entry point
        # may fill it beforehand. None as a value: the file has no pack.
        self.contexts: dict[str, ContextPack | None] = {} if contexts is None else contexts
        self.context_failures: set[str] = set()  # files whose pack could not be built (a bug of ours)
        # Files whose pack the packs' deadline (or a failed search) cut: what it holds depends on the machine's load.
        self.contexts_cut: set[str] = set()
        self.packs_memo_kept = False  # the pack memo holds this run's packs already (read or written this run)


def check_credentials(settings: Settings, environ: Mapping[str, str]) -> None:
    """Raise ConfigError naming the variable to set when the provider's credentials are missing."""
    from ocr_hook.agent.client import check_credentials as check

    check(settings, environ)


def context_parts(settings: Settings, guidance: FileGuidance | None = None, effort: str = "standard") -> dict[str, str]:
    """What besides the file itself decides its findings (models, prompts, tools, settings, version,
    guidance, effort profile): an entry point remembers it with the file, for review memory."""
    from ocr_hook.agent.run import context_parts as parts

    return parts(settings, guidance, effort)


async def review_files_async(job: ReviewJob) -> ReviewResult:
    """`review_files` for callers that already run an event loop."""
    from ocr_hook.agent.run import review_files_async as run

    return await run(job)


def review_files(job: ReviewJob) -> ReviewResult:
    """Review the job's files: cached ones from the result cache, the rest with the model, in parallel.

    Findings are anchored, re-located, review-filtered and deduplicated; filter_mode and suppressions
    are the caller's business. Every job file gets a FileCoverage entry."""
    from ocr_hook.agent.run import review_files as run

    return run(job)
