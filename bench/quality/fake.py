"""`run --fake`: the committed cases against the scripted fake Messages API of the test suite.

It proves the harness end to end without a key; its figures say nothing about review quality. The
fake finds the golden bug of every other case (quoting a golden line, severity high) and adds one
unrelated remark per case whose quote is in no file (it stays unanchored, so it never hits).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .cases import Case
from .gitcmd import git
from .match import WIDEN

TESTS_DIR = Path(__file__).resolve().parents[2] / "tests"
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from agent_support import is_filter, is_relocate, main_opening, plan_opening  # noqa: E402
from fake_api import FakeMessagesAPI, Reply, task_done, text, tool_use  # noqa: E402

UNRELATED_QUOTE = "# no such line anywhere: ocr-hook bench fake remark"


def golden_quote(case: Case, scratch: Path) -> str | None:
    """A non-blank line inside the first golden range (or, when the range is blank lines around a
    deletion, within the widening), preferably one that occurs once in the file."""
    g = case.golden[0]
    lines = git(scratch, "show", f":{g.path}", check=False).splitlines()
    for widen in range(WIDEN + 1):
        window = [ln for ln in lines[max(0, g.start - 1 - widen):g.end + widen] if ln.strip()]
        for line in window:
            if sum(1 for other in lines if other.strip() == line.strip()) == 1:
                return line
    window = [ln for ln in lines[max(0, g.start - 1 - WIDEN):g.end + WIDEN] if ln.strip()]
    return window[0] if window else None


def _is_judge(body: dict[str, Any]) -> bool:
    return str(body.get("system", "")).startswith("You grade a code reviewer")


def finds(index: int) -> bool:
    return index % 2 == 0


class FakeReviewer:
    """The fake server plus the per-case script (set just before each CLI run)."""

    def __init__(self) -> None:
        self.api = FakeMessagesAPI()
        self.api.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
        self.api.handle(is_relocate, self._relocate)
        self.api.handle(_is_judge, self._judge)
        self.api.default(self._default)

    @property
    def url(self) -> str:
        return self.api.url

    def close(self) -> None:
        self.api.close()

    @staticmethod
    def _relocate(body: dict[str, Any]) -> Reply:
        return Reply([text('{"locations": [{"comment": 1, "code": null}]}')])

    @staticmethod
    def _judge(body: dict[str, Any]) -> Reply:
        same = "re-introduces a bug the project fixed" in str(body.get("messages"))
        return Reply([text(json.dumps({"same_bug": same}))])

    @staticmethod
    def _default(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        opening = messages[0].get("content") if messages else ""
        if "Planning step" in str(opening):
            return Reply([text("- read the change")])
        return task_done()

    def script(self, case: Case, index: int, scratch: Path) -> None:
        comments: list[dict[str, Any]] = []
        quote = golden_quote(case, scratch) if finds(index) else None
        if quote is not None:
            comments.append({"content": f"This re-introduces a bug the project fixed: {case.description[:120]}",
                             "existing_code": quote, "severity": "high", "category": "bug"})
        comments.append({"content": "Unrelated remark from the fake reviewer.", "existing_code": UNRELATED_QUOTE,
                         "severity": "low", "category": "maintainability"})
        path = case.golden[0].path
        self.api.script(main_opening(path), [Reply([tool_use("code_comment", {"comments": comments})]),
                                             task_done()])
        self.api.script(plan_opening(path), [Reply([text("- read the change")])])
