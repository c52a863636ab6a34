"""The re-review's first message (issue 28): a pure function of the memory plan and today's text."""

from __future__ import annotations

from test_memory import edit, finding, remembered

from ocr_hook.agent.rereview import rereview_message, touched_names
from ocr_hook.findings import Severity
from ocr_hook.findings.memory import plan_memory

OLD = "".join(f"value_{n} = compute({n})\n" for n in range(1, 301))


def _plan():
    new = edit(OLD, 150, 150, ["value_150 = normalise(compute(150))"])
    earlier = (finding(150, text=OLD, message="compute(150) can overflow."),
               finding(20, text=OLD, severity=Severity.LOW, message="Name this\nconstant."))
    return plan_memory(remembered(*earlier, content=OLD), new), new


def test_the_message_holds_the_windows_the_findings_and_the_pack_string() -> None:
    plan, new = _plan()
    text = rereview_message(plan, new, status="modified", changed_lines=300, rounds=8, other_paths=("b.py",),
                            pack_text="app/norm.py:3-5\ndef normalise(x):\n    return x / 100")
    numbered = [int(line.split("|", 1)[0]) for line in text.split("\n") if line.split("|", 1)[0].isdigit()]
    assert numbered == list(range(110, 191))  # 40 lines either side of the one changed line
    assert "compute(150) can overflow." in text and "quoted then:" in text
    assert "- line 20 [low" in text and "Name this constant." in text  # the carried one, one line
    assert "def normalise(x):" in text  # the context pack's entries reach the message
    assert "-value_150 = compute(150)" in text and "+value_150 = normalise(compute(150))" in text
    assert "file_read_diff" in text and "- b.py" in text
    assert "value_5 =" not in text and "value_250 =" not in text
    without = rereview_message(plan, new, status="modified", changed_lines=300, rounds=8, other_paths=())
    assert "Definitions and callers" not in without and "Definitions and callers" in text


def test_touched_names_are_those_of_the_changed_lines() -> None:
    plan, _ = _plan()
    assert touched_names(plan) == {"value_150", "compute", "normalise"}
