"""The types of the checks stage (DESIGN.md 20): what a check says, what was decided about it. Pure.

A check is one Markdown file under `.ocr-hook/checks/` (front matter + the instruction as its body); a
verdict is the answer for one change. Every report, the gate and every forge read `CheckVerdict` only.
NamedTuples, like `ocr_hook.outcome`: a run that has no check never pays for dataclass creation.
"""

from __future__ import annotations

from typing import NamedTuple

MODES = ("block", "warn", "off")
WHENS = ("ci", "commit")
INCONCLUSIVE_MODES = ("warn", "block")
VERDICTS = ("pass", "fail", "inconclusive", "not_applicable")
REQUIREMENT_STATUSES = ("met", "not_met", "needs_person")  # the built-in linked-issues check (DESIGN 20)
MAX_INSTRUCTION_CHARS = 4000
LINKED_ISSUES = "linked-issues"  # the built-in check's name, configured under `tickets:` in the settings


class Check(NamedTuple):
    """One check as its file (or, for linked-issues, the settings) defines it."""

    name: str  # the file's stem; unique among the checks that apply to one change
    instruction: str  # the body, in the team's words (at most MAX_INSTRUCTION_CHARS)
    source: str  # the file it came from, relative to the repository root ("" for a built-in check)
    paths: tuple[str, ...] = ()  # globs the check is about, relative to `scope`; () means every file
    mode: str = "warn"  # block | warn | off
    when: str = "ci"  # ci (reviews of a range) | commit (commit-time reviews too)
    severity: str | None = None  # the severity its failures are reported with; None: from the mode
    inconclusive: str = "warn"  # warn | block: whether an inconclusive verdict blocks (with mode block)
    scope: str = ""  # the directory whose subtree it applies to ("" for the root's .ocr-hook/checks/)


class Evidence(NamedTuple):
    """One piece of a verdict's evidence: code quoted from the change, anchored as findings are (DESIGN 3).

    An unanchorable quote is kept with anchored False and lines 0, and said, never moved to a guessed line."""

    path: str
    code: str
    start_line: int = 0
    end_line: int = 0
    anchored: bool = False
    note: str | None = None  # e.g. why it could not be anchored


class Requirement(NamedTuple):
    """linked-issues only: one requirement of one ticket, as the model restated it, and whether it is met."""

    ticket: str  # the ticket's key as shown ("#12", "owner/repo#3", "ABC-123", "AB#77")
    requirement: str
    status: str  # met | not_met | needs_person
    evidence: tuple[Evidence, ...] = ()
    reason: str = ""  # why nothing in the change addresses it, when there is no evidence


class Ticket(NamedTuple):
    """linked-issues only: a ticket that was read (its text is untrusted input and is never echoed raw)."""

    key: str
    title: str
    url: str
    source: str  # github | gitlab | azure | gitea | jira
    clipped: bool = False


class Override(NamedTuple):
    """A person's override of one check for one change: `dismiss --check`, or a maintainer's resolve of the
    failed check's thread on a forge (DESIGN 18's rules). Never for all checks at once."""

    by: str  # who (a forge login, or the git identity that ran `dismiss --check`)
    reason: str
    where: str  # "dismissed.yaml" | the forge ("github", "gitlab", …)


class CheckVerdict(NamedTuple):
    """What was decided about one check for one change: what the gate, every report and every forge read."""

    name: str
    mode: str  # block | warn | off (off checks are listed by `ocr-hook checks`, never evaluated)
    verdict: str  # pass | fail | inconclusive | not_applicable
    reason: str  # one or two sentences (the model's, or ours: "no verdict", "the change touches none of …")
    source: str  # the check's file, relative to the repository root ("" for a built-in check)
    evidence: tuple[Evidence, ...] = ()
    severity: str | None = None  # the check's `severity`, for reports that need a level
    inconclusive: str = "warn"  # the check's inconclusive mode
    carried: bool = False  # kept from an earlier run whose inputs were the same (no request sent)
    override: Override | None = None
    changed_in_change: bool = False  # the change edits this check's file: "takes effect after merge"
    requirements: tuple[Requirement, ...] = ()  # linked-issues only
    tickets: tuple[Ticket, ...] = ()  # linked-issues only
    incomplete: bool = False  # the evaluation was cut short (budget, clock, API) before this check was answered
    instruction: str = ""  # the check's text as the trusted revision has it (SARIF's rule help, forges' tables)

    @property
    def blocks(self) -> bool:
        """True when this verdict fails the gate: a failed `block` check, or an inconclusive one whose check
        says `inconclusive: block`; an override clears it."""
        if self.override is not None or self.mode != "block":
            return False
        return self.verdict == "fail" or (self.verdict == "inconclusive" and self.inconclusive == "block")

    @property
    def warns(self) -> bool:
        """True when this verdict is worth a warning but does not block: a failed or inconclusive check that
        does not block (warn mode, inconclusive: warn) and is not overridden."""
        return self.override is None and self.verdict in ("fail", "inconclusive") and not self.blocks


def verdict_as_dict(v: CheckVerdict) -> dict[str, object]:
    """The JSON report's form of a verdict (its `checks` list): every field, nested records as objects.
    `publish`, the MCP server and delegate read reports back through `verdict_from_dict`."""
    return {
        "name": v.name, "mode": v.mode, "verdict": v.verdict, "reason": v.reason, "source": v.source,
        "evidence": [e._asdict() for e in v.evidence], "severity": v.severity, "inconclusive": v.inconclusive,
        "carried": v.carried, "override": None if v.override is None else v.override._asdict(),
        "changed_in_change": v.changed_in_change,
        "requirements": [{**r._asdict(), "evidence": [e._asdict() for e in r.evidence]} for r in v.requirements],
        "tickets": [t._asdict() for t in v.tickets], "incomplete": v.incomplete,
        "instruction": v.instruction,
    }


def verdict_from_dict(d: dict[str, object]) -> CheckVerdict:
    """A verdict from its JSON form (a report this version wrote); KeyError/TypeError on a malformed one."""
    def evidence(items: object) -> tuple[Evidence, ...]:
        return tuple(Evidence(**e) for e in items)  # type: ignore[arg-type, union-attr]

    override = d.get("override")
    return CheckVerdict(
        name=str(d["name"]), mode=str(d["mode"]), verdict=str(d["verdict"]), reason=str(d["reason"]),
        source=str(d.get("source", "")), evidence=evidence(d.get("evidence", ())),
        severity=d.get("severity"),  # type: ignore[arg-type]
        inconclusive=str(d.get("inconclusive", "warn")), carried=bool(d.get("carried", False)),
        override=None if override is None else Override(**override),  # type: ignore[arg-type]
        changed_in_change=bool(d.get("changed_in_change", False)),
        requirements=tuple(Requirement(**{**r, "evidence": evidence(r.get("evidence", ()))})  # type: ignore[union-attr]
                           for r in d.get("requirements", ())),  # type: ignore[union-attr]
        tickets=tuple(Ticket(**t) for t in d.get("tickets", ())),  # type: ignore[arg-type, union-attr]
        incomplete=bool(d.get("incomplete", False)), instruction=str(d.get("instruction", "")),
    )
