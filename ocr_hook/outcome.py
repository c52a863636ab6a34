"""What a review run produced: findings, coverage and usage. Read by the gate and every report.

Every run loads this module, even one with nothing staged, so nothing here is a dataclass: Python builds a
dataclass's methods from source each time the class is created, about a millisecond a class. The immutable
records are NamedTuples (built about eight times faster); the two a run fills in as it goes are plain
slotted classes with the same constructor, equality and repr a dataclass would give them. Annotations are
evaluated (no `from __future__ import annotations`): a NamedTuple's string annotations are each compiled when its
class is made (issue 62.9); the types only a type checker imports stay quoted."""

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # annotations only: a run with no finding (nothing staged) never loads the findings' types
    from collections.abc import Sequence

    from ocr_hook.checks.model import CheckVerdict
    from ocr_hook.findings import Finding
    from ocr_hook.findings.exemptions import Exemption


def _fields_repr(self: Any) -> str:
    return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"


def _fields_eq(self: Any, other: object) -> bool:
    if type(other) is not type(self):
        return NotImplemented
    return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)


class RoutineNote(str):
    """A note that says nothing went wrong and nothing needs doing (a re-review that carried, re-checked and
    resolved nothing; which provider `auto` chose): full reports show it, commit-time output leaves it out, so a
    passing hook stays one line. A str everywhere else (JSON, SARIF)."""

    __slots__ = ()


class FileCoverage(NamedTuple):
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


class FileNote(NamedTuple):
    """A run note about one file of the change (e.g. it edits guidance or the reviewer's own settings).

    Its text is also in `ReviewResult.notes`; reports that can only show notes tied to a place (GitLab
    Code Quality) read these instead."""

    path: str
    text: str


class DroppedComment(NamedTuple):
    """A comment a model step removed, with the reason it gave (the review filter: what the code shows)."""

    path: str
    start_line: int
    end_line: int
    severity: str
    category: str
    message: str
    reason: str
    by: str = "review_filter"


class Usage:
    """Requests, tokens and cost of a run (or of one file), as billed."""

    __slots__ = ("requests", "input_tokens", "output_tokens",  # noqa: RUF023  (the repr's order)
                 "cache_creation_input_tokens", "cache_read_input_tokens", "cost_usd")

    def __init__(self, requests: int = 0, input_tokens: int = 0, output_tokens: int = 0,
                 cache_creation_input_tokens: int = 0, cache_read_input_tokens: int = 0,
                 cost_usd: float = 0.0) -> None:
        self.requests = requests
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.cache_creation_input_tokens = cache_creation_input_tokens
        self.cache_read_input_tokens = cache_read_input_tokens
        self.cost_usd = cost_usd

    def add(self, other: "Usage") -> None:
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens
        self.cost_usd += other.cost_usd

    __repr__ = _fields_repr
    __eq__ = _fields_eq


class ReviewResult:
    """A run's findings, coverage, usage and notes."""

    __slots__ = ("findings", "files", "usage", "scope", "notes",  # noqa: RUF023  (the repr's order)
                 "file_notes", "dropped", "dropped_comments", "elapsed_s", "resolved", "late_findings",
                 "checks", "exemptions")

    def __init__(self, findings: "list[Finding]", files: list[FileCoverage], usage: Usage | None = None,
                 scope: str = "", notes: list[str] | None = None, file_notes: list[FileNote] | None = None,
                 dropped: dict[str, int] | None = None, dropped_comments: list[DroppedComment] | None = None,
                 elapsed_s: float = 0.0, resolved: "list[Finding] | None" = None,
                 late_findings: str = "advisory", checks: "list[CheckVerdict] | None" = None,
                 exemptions: "list[Exemption] | None" = None) -> None:
        self.findings = findings
        self.files = files
        self.usage = Usage() if usage is None else usage
        self.scope = scope
        self.notes = [] if notes is None else notes  # run-level warnings (budget ran out, filtered counts, …)
        self.file_notes = [] if file_notes is None else file_notes  # the notes of `notes` about one file
        self.dropped = {} if dropped is None else dropped  # e.g. {"filter_mode": 3, "review_filter": 1}
        self.dropped_comments = [] if dropped_comments is None else dropped_comments  # each with its reason
        self.elapsed_s = elapsed_s
        # Review memory (DESIGN.md 7): earlier findings this review found fixed, as they were then, and
        # whether findings raised late (on lines unchanged since the last review) block: advisory | block.
        self.resolved = [] if resolved is None else resolved
        self.late_findings = late_findings
        # Checks (DESIGN.md 20): one verdict per check that applies to the change, in the checks' order.
        self.checks = [] if checks is None else checks
        # What the change under review does to exempt its own code (ocr_hook.findings.exemptions; issue 58).
        self.exemptions = [] if exemptions is None else exemptions

    __repr__ = _fields_repr
    __eq__ = _fields_eq

    @property
    def complete(self) -> bool:
        """True only when no file that should have been reviewed was left unreviewed or failed, and no check's
        evaluation was cut short."""
        return not any(f.incomplete or f.state == "failed" for f in self.files) and \
            not any(c.incomplete for c in self.checks)


_NOT_STARTED, _CUT_SHORT = "not reviewed: ", "review cut short: "


def stopped_note(files: "Sequence[FileCoverage]") -> str | None:
    """What a run the clock or a cap stopped did and did not do, in one note (issue 62.10): how many files were
    reviewed, how many were begun and cut short (what the model said before the stop is kept and reported),
    how many were never begun; None when no file was stopped. The why is the first stopped file's."""
    begun = [f for f in files if f.incomplete and (f.reason or "").startswith(_CUT_SHORT)]
    never = [f for f in files if f.incomplete and (f.reason or "").startswith(_NOT_STARTED)]
    if not begun and not never:
        return None
    first = (begun or never)[0].reason or ""
    why = first.split(": ", 1)[1]
    if why.startswith("time limit"):
        head = f"the run was stopped by the clock ({why})"
    else:
        head = why if why == "the run was stopped" else f"the budget ran out ({why})"
    reviewed = sum(1 for f in files if f.state in ("reviewed", "cached"))
    return (f"{head}: {reviewed} file(s) reviewed, {len(begun)} begun and cut short (what the model said before "
            f"the stop is kept and reported), {len(never)} not reviewed at all")
