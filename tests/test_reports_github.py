from __future__ import annotations

from pathlib import Path

from report_samples import HOSTILE, ctx, finding, result, rich_result

from ocr_hook.outcome import FileCoverage
from ocr_hook.reports import github
from ocr_hook.reports import render as render_format
from ocr_hook.reports.base import escape_hidden


def _unescape(text: str, prop: bool) -> str:
    # The runner's unescaping (actions/runner ActionCommand); %25 last so "%250A" stays "%0A".
    pairs = [("%0D", "\r"), ("%0A", "\n")] + ([("%3A", ":"), ("%2C", ",")] if prop else []) + [("%25", "%")]
    for escaped, plain in pairs:
        text = text.replace(escaped, plain)
    return text


def parse_commands(output: str) -> list[tuple[str, dict[str, str], str]]:
    """Every workflow command a GitHub runner would see in this output."""
    commands = []
    for line in output.split("\n"):
        stripped = line.lstrip()
        assert "##[" not in line, f"legacy command in output: {line!r}"
        if not stripped.startswith("::"):
            continue
        end = stripped.index("::", 2)
        info, data = stripped[2:end], stripped[end + 2 :]
        name, _, props = info.partition(" ")
        properties = {}
        for item in filter(None, props.split(",")):
            key, _, value = item.partition("=")
            properties[key] = _unescape(value, prop=True)
        commands.append((name, properties, _unescape(data, prop=False)))
    return commands


def test_escaping_rules() -> None:
    assert github.escape_data("50%\r\nnext::x") == "50%25%0D%0Anext::x"
    assert github.escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_annotations_for_rich_result() -> None:
    commands = parse_commands(github.render(rich_result(), ctx()))
    names = [c[0] for c in commands]
    assert names[0] == "error" and "review incomplete" in commands[0][1]["title"]
    assert "REVIEW INCOMPLETE" in commands[0][2]
    injection = next(c for c in commands if c[2].startswith("Command injection"))
    assert injection[0] == "error"
    assert injection[1] == {"file": "src/app.py", "line": "4", "endLine": "4", "title": "ocr-hook: critical security"}
    assert "subprocess.run(cmd, shell=False, check=True)" in injection[2]
    docstring = next(c for c in commands if c[2].startswith("No docstring"))
    assert docstring[0] == "warning" and docstring[1]["endLine"] == "2"
    whole = next(c for c in commands if c[2].startswith("Whole-file remark"))
    assert whole[0] == "notice" and "line" not in whole[1]
    # suppressed findings are not annotated
    assert not any("Vague text" in c[2] or "Hard-coded" in c[2] for c in commands)


def test_hostile_text_cannot_form_a_command() -> None:
    bad = finding(message=HOSTILE, suggestion=HOSTILE, path="src/x,y:z.py", start=3)
    out = github.render(result([bad], [*rich_result().files]), ctx())
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out
    commands = parse_commands(out)
    assert {c[0] for c in commands} <= {"error", "warning", "notice"}
    annotations = [c for c in commands if c[1].get("file") == "src/x,y:z.py"]
    assert len(annotations) == 1
    # Control characters are shown as escapes, never dropped (issue 33), and no line can start a command.
    expected = escape_hidden(HOSTILE.strip()) + "\n\nSuggested code:\n" + escape_hidden(HOSTILE)
    assert "\\x1b[31mred" in annotations[0][2]
    assert annotations[0][2] == expected.replace("##[", "#\u200b#[")
    # the incomplete annotation plus the hostile one; nothing the model wrote became a command
    assert len(commands) == 2


def test_hostile_path_in_plain_lines_is_neutralised() -> None:
    res = result([], [FileCoverage("::error::evil.py", "failed", "##[error] boom\n::warning::x")])
    commands = parse_commands(github.render(res, ctx()))
    assert [c[0] for c in commands] == ["error"]  # only our own "review incomplete"


def test_ten_per_level_then_the_rest_listed() -> None:
    findings = [finding(path=f"f{i:02}.py", start=1, severity="high", message=f"high {i}") for i in range(12)]
    findings += [finding(path="c.py", start=1, severity="critical", message="worst")]
    findings += [finding(path=f"m{i}.py", start=1, severity="medium", message=f"medium {i}") for i in range(3)]
    files = [FileCoverage("x.py", "skipped", "budget", incomplete=True)]
    out = github.render(result(findings, files), ctx(step_summary_path="/nonexistent/summary"))
    commands = parse_commands(out)
    errors = [c for c in commands if c[0] == "error"]
    assert len(errors) == 10  # the incomplete notice takes one of the ten
    assert errors[1][2] == "worst"  # most severe first
    assert len([c for c in commands if c[0] == "warning"]) == 3
    assert "4 more findings were not annotated" in out and "the job summary lists all of them" in out
    assert out.count("[high] bug: high") == 4


def test_step_summary_lists_every_finding_escaped(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    many = [finding(path=f"f{i:02}.py", start=1, severity="high", message=f"high {i}") for i in range(15)]
    hostile = finding(path="a|b.py", start=2, severity="low", message=HOSTILE)
    out = render_format("github", result([*many, hostile]), ctx(step_summary_path=str(summary)))
    assert [c[0] for c in parse_commands(out)].count("error") == 10
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n## ocr-hook review")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "Severity" not in line]
    assert len(rows) == 16
    hostile_row = next(r for r in rows if r.startswith("| low"))
    assert hostile_row.count(" | ") == 3  # the model's pipes cannot add columns
    assert "<script>" not in text and "&lt;script&gt;" in text and "\x1b" not in text
    assert "a\\|b\\.py:2" in hostile_row


def test_step_summary_says_incomplete() -> None:
    res = result([], [FileCoverage("big.py", "skipped", "file too large", incomplete=True)])
    text = github.step_summary(res, ctx())
    assert "REVIEW INCOMPLETE" in text and "### Not reviewed" in text and "big\\.py" in text


def test_no_step_summary_without_path(tmp_path: Path) -> None:
    out = render_format("github", result([finding()]), ctx())
    assert out.startswith("::error file=src/app.py,line=4,endLine=4,title=ocr-hook%3A high bug::")
