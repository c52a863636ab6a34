"""The shared review agent: per file, an optional plan phase and a main loop with six tools.

It knows nothing about pre-commit, CI or output formats; any entry point (CLI, CI, an MCP server)
builds a ReviewJob and calls `review_files`. Importing this package is cheap: the SDK, the tool
registry and the loop load only when there is something to send.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ocr_hook.changes.model import ChangeSet, FileChange
from ocr_hook.changes.snapshot_api import Snapshot
from ocr_hook.outcome import ReviewResult
from ocr_hook.settings import Settings

if TYPE_CHECKING:
    from ocr_hook.budget.ledger import Budget
    from ocr_hook.context import ContextPack
    from ocr_hook.effort import Profile
    from ocr_hook.findings.memory import Remembered
    from ocr_hook.store.result_cache import ResultCache

__all__ = ["FileGuidance", "ReviewJob", "check_credentials", "context_parts", "review_files",
           "review_files_async"]


def _no_event(path: str, kind: str, detail: str) -> None:
    pass


@dataclass(frozen=True)
class FileGuidance:
    """The project's guidance for one file as prompt sections (built by ocr_hook.guidance, or by any
    other entry point). The first `shared` sections are the same for every file of the run: they sit
    in the cached part of the system prompt; the rest is this file's own."""

    sections: tuple[str, ...] = ()
    shared: int = 0


@dataclass
class ReviewJob:
    change_set: ChangeSet
    snapshot: Snapshot
    files: Sequence[FileChange]  # selected for review, in priority order
    settings: Settings
    budget: Budget
    cache: ResultCache | None
    # kinds: reviewing, done, cached, skipped, failed
    on_event: Callable[[str, str, str], None] = _no_event
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    # path → the project's guidance for that file (REVIEW.md etc. from the trusted revision)
    guidance: Mapping[str, FileGuidance] = field(default_factory=dict)
    # path → effort profile (ocr_hook.effort); None or a missing path: from the settings and environ
    profiles: Mapping[str, Profile] | None = None
    # Review memory (DESIGN.md 7): path → the file as its last review saw it; None: memory is off.
    memory: Mapping[str, Remembered] | None = None
    memory_id: str | None = None  # names that memory (repository and line of work), for the result cache
    # DESIGN.md 12: what the change is for, as (text, where it came from), e.g. from --intent, the MCP tool,
    # the pull request or the range's commit messages; capped, masked and fenced on its way to the model.
    intent: tuple[str, str] | None = None
    # path → the file's context pack, built on first use (when settings.context is on); an entry point may
    # fill it beforehand. None as a value: the file has no pack.
    contexts: dict[str, ContextPack | None] = field(default_factory=dict)


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
