"""The forge-neutral rules of DESIGN.md 18 (issue 53), as pure functions: who may dismiss a finding by resolving
its thread, which threads a fixed finding resolves or answers, routing, and the settings behind it. Every
forge's adapter only fills `Posted`; these decide. The GitLab tests run them end to end through the CLI."""

from __future__ import annotations

import dataclasses

import pytest

from ocr_hook.errors import ConfigError
from ocr_hook.findings.dismissals import ForgeDismissal, apply_forge
from ocr_hook.findings.model import Category, Finding, Severity
from ocr_hook.findings.serial import Report
from ocr_hook.publish.plan import (
    FIXED_REFUSED,
    FIXED_RESOLVED,
    Posted,
    Reply,
    Routing,
    earlier,
    fixed_reply_body,
    forge_dismissals,
    plan_publish,
    raised_reply_body,
)
from ocr_hook.settings import load

ME, AUTHOR, WHERE = "ocr-bot", "dev", "GitLab merge request group/app!3"
A, B = "a" * 32, "b" * 32


def finding(fp: str, severity: Severity = Severity.HIGH, category: Category = Category.BUG,
            path: str = "app.py") -> Finding:
    return Finding(path, 3, 3, severity, category, f"finding {fp[:4]}", None, True, fp)


def thread(fp: str, author: str = ME, **people: object) -> Posted:
    return Posted(author, f"<!-- ocr-hook fingerprint={fp} -->\n**ocr-hook** · high · bug", "1", f"t-{fp[:4]}",
                  path="app.py", **people)  # type: ignore[arg-type]


def report(*findings: Finding, reviewed: frozenset[str] = frozenset({"app.py"}),
           resolved: tuple[str, ...] = ()) -> Report:
    return Report("complete", 1, "blocked", tuple(findings), 0, 0, resolved, None, reviewed)


def resolved_by(who: str, *, can_write: bool = True, bot: bool = False, state: str = "",
                resolved: bool = True) -> dict[str, object]:
    return {"resolved": resolved, "resolved_by": who, "resolved_by_can_write": can_write, "resolved_by_bot": bot,
            "resolved_at": "2026-12-05T10:00:00Z", "state": state}


@pytest.mark.parametrize(("people", "counts"), [
    (resolved_by("maria"), True),
    (resolved_by("maria", can_write=False), False),  # a reporter, or someone the forge gives no access
    (resolved_by("renovate", bot=True), False),
    (resolved_by(AUTHOR), False),  # the request's own author, whatever their access
    (resolved_by(ME), False),  # ocr-hook's own resolve of a fixed finding
    (resolved_by(""), False),  # the forge does not say who
    (resolved_by("maria", state="wontFix", resolved=False), True),  # Azure DevOps' states
    (resolved_by("maria", state="byDesign", resolved=False), True),
    (resolved_by("maria", state="closed", resolved=True), True),
    (resolved_by("maria", state="fixed", resolved=True), False),  # "fixed" says the code changed: not a dismissal
    (resolved_by("maria", state="active", resolved=False), False),
])
def test_who_dismisses_by_resolving(people: dict[str, object], counts: bool) -> None:
    found = forge_dismissals([thread(A, **people)], ME, AUTHOR, WHERE)
    assert (A in found) is counts


def test_the_reason_is_the_resolvers_last_reply_and_only_our_threads_count() -> None:
    replies = (Reply("maria", "first thought"), Reply("carol", "not hers"), Reply("maria", "  checked\n upstream "))
    ours = thread(A, replies=replies, **resolved_by("maria"))
    theirs = thread(B, author="mallory", **resolved_by("maria"))  # a marker in someone else's comment
    found = forge_dismissals([ours, theirs], ME, AUTHOR, WHERE)
    assert list(found) == [A]
    assert found[A][:5] == ForgeDismissal(A, "maria", "2026-12-05T10:00:00Z", "checked upstream", WHERE)[:5]
    silent = forge_dismissals([thread(A, **resolved_by("maria"))], ME, AUTHOR, WHERE)
    assert silent[A].reason == ""


def test_a_forge_dismissal_applies_to_the_same_fingerprint_only_and_never_over_another_suppression() -> None:
    dismissal = ForgeDismissal(A, "maria", "2026-12-05T10:00:00Z", "", WHERE)
    baselined = finding(A)._replace(suppressed="baseline")
    out = apply_forge([finding(A), baselined, finding(B)], {A: dismissal})
    assert out[0].suppressed == "dismissed" and out[0].suppression_reason == "resolved without a reply"
    assert out[0].extra == {"dismissed_by": "maria", "dismissed_at": "2026-12-05T10:00:00Z", "dismissed_in": WHERE}
    assert out[1].suppressed == "baseline" and out[1].extra == {}
    assert out[2].suppressed is None  # a new fingerprint is a new finding


def test_fixed_threads_resolve_unless_a_person_answered_then_one_reply() -> None:
    quiet = thread(A)
    answered = thread(B, replies=(Reply("renovate", "bump", bot=True), Reply("carol", "why?")))
    plan = plan_publish(report(), {}, earlier([quiet, answered], ME), summary="replace")
    assert plan.resolve == (quiet,) and plan.replies == ((answered, fixed_reply_body(B)),)
    said = thread(B, replies=(*answered.replies, Reply(ME, fixed_reply_body(B))))
    again = plan_publish(report(), {}, earlier([said], ME), summary="replace")
    assert again.resolve == () and again.replies == ()
    bot_only = thread(A, replies=(Reply("renovate", "bump", bot=True),))  # a bot is not a person
    assert plan_publish(report(), {}, earlier([bot_only], ME), summary="replace").resolve == (bot_only,)


@pytest.mark.parametrize(("said", "counts"), [
    ((), True),  # raised all along: a maintainer's resolve dismisses
    ((fixed_reply_body(A),), False),  # resolved around a fix a review saw: agreement, spent (issue 58.10)
    ((fixed_reply_body(A, why=FIXED_REFUSED),), False),  # resolved as the refused resolve's reply invites
    ((fixed_reply_body(A, why=FIXED_RESOLVED),), False),  # resolved before the fix was seen
    ((fixed_reply_body(A), raised_reply_body(A)), True),  # reopened, and resolved again since
    ((fixed_reply_body(A), raised_reply_body(A, kept=True)), False),  # never reopened: the resolve is from before
])
def test_a_resolve_counts_only_while_its_finding_is_raised(said: tuple[str, ...], counts: bool) -> None:
    posted = thread(A, replies=tuple(Reply(ME, body) for body in said), **resolved_by("maria"))
    assert (A in forge_dismissals([posted], ME, AUTHOR, WHERE)) is counts


def test_what_ocr_hook_said_in_a_thread_is_what_later_runs_remember() -> None:
    """Issue 58.10 and 58.12 as the plan sees them: each thing is said once, and nothing refused is asked again."""
    resolved = thread(A, **resolved_by("maria"))  # a maintainer resolved it before any review saw it fixed
    plan = plan_publish(report(), {}, earlier([resolved], ME), summary="replace")
    assert plan.resolve == () and plan.replies == ((resolved, fixed_reply_body(A, why=FIXED_RESOLVED)),)
    marked = dataclasses.replace(resolved, replies=(Reply(ME, plan.replies[0][1]),))
    assert plan_publish(report(), {}, earlier([marked], ME), summary="replace").replies == ()
    back = plan_publish(report(finding(A)), {}, earlier([marked], ME), summary="replace")
    assert back.reopen == (marked,) and back.replies == ((marked, raised_reply_body(A)),)
    kept = dataclasses.replace(marked, replies=(*marked.replies, Reply(ME, raised_reply_body(A, kept=True))))
    still = plan_publish(report(finding(A)), {}, earlier([kept], ME), summary="replace")
    assert still.reopen == () and still.replies == () and [f.fingerprint for f, _ in still.listed] == [A]
    quiet = thread(B)
    first = plan_publish(report(), {}, earlier([quiet], ME), summary="replace")
    assert first.resolve == (quiet,) and first.if_refused == (fixed_reply_body(B, why=FIXED_REFUSED),)
    refused = thread(B, replies=(Reply(ME, first.if_refused[0]),))  # the reply made when the forge refused
    assert plan_publish(report(), {}, earlier([refused], ME), summary="replace").resolve == ()


@pytest.mark.parametrize(("rep", "posted", "fixed"), [
    (report(), thread(A), True),  # its file reviewed completely, not raised
    (report(finding(A)), thread(A), False),  # still raised
    (report(finding(A)._replace(suppressed="dismissed")), thread(A), False),  # raised, if suppressed
    (report(reviewed=frozenset()), thread(A), False),  # its file not (completely) reviewed this time
    (report(reviewed=frozenset()), dataclasses.replace(thread(A), path=""), False),
    (report(reviewed=frozenset(), resolved=(A,)), dataclasses.replace(thread(A), path=""), True),  # memory's word
    (report(), thread(A, **resolved_by("maria")), False),  # already resolved
])
def test_what_counts_as_fixed(rep: Report, posted: Posted, fixed: bool) -> None:
    plan = plan_publish(rep, {}, earlier([posted], ME), summary="replace")
    assert bool(plan.resolve) is fixed


def test_routing_lists_never_drops() -> None:
    findings = [finding(A, Severity.LOW), finding(B, Severity.CRITICAL, Category.STYLE),
                finding("c" * 32, Severity.MEDIUM)]
    lines = {"app.py": _lines()}
    plan = plan_publish(report(*findings), lines, earlier([], ME),
                        routing=Routing(Severity.MEDIUM, frozenset({"style"})))
    assert [i.finding.fingerprint for i in plan.inline] == ["c" * 32]
    assert {f.fingerprint: why for f, why in plan.listed} == {
        A: "below medium: kept out of the diff (setting summary_below)",
        B: "a style finding: kept out of the diff (setting summary_categories)"}
    everything = plan_publish(report(*findings), lines, earlier([], ME), routing=Routing(Severity.LOW))
    assert len(everything.inline) == 3 and everything.listed == ()


def _lines() -> object:
    from ocr_hook.publish.pr_diff import file_lines

    return file_lines("@@ -1,5 +1,5 @@\n a\n b\n-c\n+C\n d\n e\n")


@pytest.mark.parametrize(("layer", "expected"), [
    ("summary_below: info\n", "setting 'summary_below' must be one of critical, high, medium, low"),
    ("summary_categories: [nits]\n", "setting 'summary_categories' takes categories (bug, security, performance"),
])
def test_routing_settings_are_checked(tmp_path: object, layer: str, expected: str) -> None:
    from pathlib import Path

    root = Path(str(tmp_path))
    (root / ".ocr-hook.yaml").write_text(layer)
    with pytest.raises(ConfigError, match=expected.replace("(", r"\(")):
        load(root, environ={})


def test_the_settings_categories_are_the_findings() -> None:
    from ocr_hook.settings import CATEGORIES

    assert CATEGORIES == tuple(c.value for c in Category)
    assert load(None, environ={}).summary_below == "medium"


def test_a_dismissals_entry_names_the_pull_request_it_was_dismissed_on() -> None:
    import datetime as dt

    from ocr_hook.findings.dismissals import file_text, new_entry, parse_text

    entry = new_entry({"fingerprint": A, "path": "app.py", "category": "bug", "severity": "high", "message": "m"},
                      "checked upstream", [], "maria", dt.date(2026, 12, 5), None, WHERE)
    text = file_text([entry])
    assert f"  request: {WHERE}\n" in text
    assert parse_text(text, "d.yaml") == (entry,)
    with pytest.raises(ConfigError, match="'request' must be text"):
        parse_text(text.replace(f"request: {WHERE}", "request: 3"), "d.yaml")
