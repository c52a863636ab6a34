"""What a review run produced: findings, coverage and usage. Read by the gate and every report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: a run with no finding (nothing staged) never loads the findings' types
    from ocr_hook.findings import Finding


@dataclass(frozen=True, slots=True)
class FileCoverage:
    """What happened to one file of the change: reviewed, cached, skipped or failed, and why."""

    path: str
    state: str  # "reviewed" | "cached" | "skipped" | "failed"
    reason: str = ""  # why skipped or failed; empty for reviewed/cached
    comments: int = 0
    # True when the file should have been reviewed and was not (size limit, budget, time, API
    # failure). Policy skips (binary, deleted, excluded, sensitive) leave it False.
    incomplete: bool = False
    effort: str | None = None  # the profile the file was reviewed with (quick | standard | deep)
    # The context pack its first request carried (DESIGN.md 12): entries, and entries cut for the budget;
    # None when the file got no pack (context off, nothing to show, a file the pack cannot parse).
    context_entries: int | None = None
    context_cut: int = 0


@dataclass(frozen=True, slots=True)
class FileNote:
    """A run note about one file of the change (e.g. it edits guidance or the reviewer's own settings).

    Its text is also in `ReviewResult.notes`; reports that can only show notes tied to a place (GitLab
    Code Quality) read these instead."""

    path: str
    text: str


@dataclass(slots=True)
class Usage:
    """Requests, tokens and cost of a run (or of one file), as billed."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: Usage) -> None:
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens
        self.cost_usd += other.cost_usd


@dataclass(slots=True)
class ReviewResult:
    """A run's findings, coverage, usage and notes."""

    findings: list[Finding]
    files: list[FileCoverage]
    usage: Usage = field(default_factory=Usage)
    scope: str = ""
    notes: list[str] = field(default_factory=list)  # run-level warnings (budget ran out, filtered counts, …)
    file_notes: list[FileNote] = field(default_factory=list)  # the notes of `notes` that are about one file
    dropped: dict[str, int] = field(default_factory=dict)  # e.g. {"filter_mode": 3, "review_filter": 1}
    elapsed_s: float = 0.0
    # Review memory (DESIGN.md 7): earlier findings this review found fixed, as they were then, and
    # whether findings raised late (on lines unchanged since the last review) block: advisory | block.
    resolved: list[Finding] = field(default_factory=list)
    late_findings: str = "advisory"

    @property
    def complete(self) -> bool:
        """True only when no file that should have been reviewed was left unreviewed or failed."""
        return not any(f.incomplete or f.state == "failed" for f in self.files)
