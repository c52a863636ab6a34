"""`ocr-hook outcomes` counts checks (issue 59 item 6, DESIGN.md 20): per check, how often it passed, failed,
was overridden or inconclusive over the changes it judged, and the override rate; the check a team overrides
most is named as the one to rewrite. Pure, on a history worked out by hand; the CLI's path is in
tests/test_checks_forge_overrides.py (reviews record their verdicts; `outcomes` reads them)."""

from __future__ import annotations

import json

from ocr_hook.checks.model import CheckVerdict, Override
from ocr_hook.tally.checks import count_checks, entry_checks
from ocr_hook.tally.count import tally
from ocr_hook.tally.render import render

DAY = 86_400.0


def _c(name: str, verdict: str, overridden: str = "") -> dict[str, str]:
    return {"name": name, "verdict": verdict, "mode": "block", **({"overridden": overridden} if overridden else {})}


def _entry(at: float, checks: list[dict[str, str]], *, request: str = "", change: str = "branch:x",
           source: str = "ci") -> dict:
    return {"at": at, "source": source, "change": change, "request": request, "model": "m", "findings": [],
            "resolved": [], "complete": [], "checks": checks}


HISTORY = [
    _entry(1 * DAY, [_c("api-tests", "fail")], request="1"),  # before the period
    # Pull request 7: api-tests fails, then a maintainer overrides it; changelog fails, then passes after a push.
    _entry(10 * DAY, [_c("api-tests", "fail"), _c("changelog", "fail")], request="7"),
    _entry(11 * DAY, [_c("api-tests", "fail", "maint (github)"), _c("changelog", "pass")], request="7"),
    # Pull request 8: api-tests overridden in the dismissals file; changelog cannot tell.
    _entry(12 * DAY, [_c("api-tests", "fail", "ann (dismissed.yaml)"), _c("changelog", "inconclusive")],
           request="8"),
    # A commit-time review of a line of work: api-tests passes.
    _entry(13 * DAY, [_c("api-tests", "pass")], change="branch:y", source="commit"),
    _entry(14 * DAY, [{"name": 3, "verdict": "fail"}, _c("odd", "maybe")], request="9"),  # nothing ocr-hook writes
]


def test_each_check_is_counted_once_per_change_by_its_latest_verdict() -> None:
    counted = {c.name: c for c in count_checks(HISTORY, since=10 * DAY)}
    assert set(counted) == {"api-tests", "changelog"}
    api, log = counted["api-tests"], counted["changelog"]
    assert (api.changes, api.passed, api.failed, api.overridden, api.inconclusive) == (3, 1, 0, 2, 0)
    assert (log.changes, log.passed, log.failed, log.overridden, log.inconclusive) == (2, 1, 0, 0, 1)
    assert api.as_dict()["override_rate"] == 1.0 and log.as_dict()["override_rate"] is None
    assert [c.name for c in count_checks(HISTORY, since=10 * DAY)] == ["api-tests", "changelog"]  # most overridden
    only_8 = count_checks(HISTORY, requests=["8"])
    assert [(c.name, c.overridden, c.inconclusive) for c in only_8] == [("api-tests", 1, 0), ("changelog", 0, 1)]
    assert count_checks(HISTORY, sources=["commit"])[0].passed == 1


def test_every_format_says_the_checks_and_names_the_check_to_rewrite() -> None:
    counted = count_checks(HISTORY, since=10 * DAY)
    text = render("text", tally([]), "(all history)", counted)
    assert "override rate" in text and "api-tests" in text
    assert "Most overridden: checks to rewrite" in text and "api-tests   # 2 of 2 failures overridden" in text
    doc = json.loads(render("json", tally([]), "(all history)", counted))
    assert doc["checks"]["by_check"]["api-tests"] == {"changes": 3, "pass": 1, "fail": 0, "overridden": 2,
                                                      "inconclusive": 0, "pass_rate": 0.3333, "fail_rate": 0.6667,
                                                      "override_rate": 1.0}
    assert doc["checks"]["to_rewrite"] == ["api-tests"]
    assert "api-tests   # 2 of 2 failures overridden" in render("html", tally([]), "(all history)", counted)
    assert "checks" not in json.loads(render("json", tally([]), "(all history)"))  # no check: as before


def test_a_review_keeps_its_evaluated_verdicts_and_who_overrode() -> None:
    verdicts = [CheckVerdict("a", "block", "fail", "r", "", override=Override("maint", "why", "github")),
                CheckVerdict("b", "warn", "not_applicable", "r", ""), CheckVerdict("c", "warn", "pass", "r", "")]
    assert entry_checks(verdicts) == [{"name": "a", "verdict": "fail", "mode": "block", "overridden": "maint (github)"},
                                      {"name": "c", "verdict": "pass", "mode": "warn"}]
