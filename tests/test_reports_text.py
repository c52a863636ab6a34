from __future__ import annotations

import re

from report_samples import HOSTILE, ctx, finding, result, rich_result

from ocr_hook.findings import Category, Finding, Severity
from ocr_hook.outcome import FileCoverage, ReviewResult, Usage
from ocr_hook.reports import renderer
from ocr_hook.reports.base import neutralize_commands, sanitize_text
from ocr_hook.reports.text import summary_line

render = renderer("text")
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def test_groups_by_file_with_clickable_headers_and_badges() -> None:
    out = render(rich_result(), ctx())
    lines = out.splitlines()
    assert "── src/app.py" in lines and "── src/util.py" in lines
    assert lines.index("── src/app.py") < lines.index("── src/util.py")
    assert any(line.startswith("src/app.py:4  [CRITICAL] security") for line in lines)
    assert any(line.startswith("src/util.py:1-2  [MEDIUM] maintainability") for line in lines)
    assert any(line.startswith("src/app.py (whole file") for line in lines)
    # suppressed findings are counted, not listed
    assert "Vague text" not in out and "2 suppressed" in out


def test_suggestion_is_a_small_diff_against_the_file_lines() -> None:
    out = render(rich_result(), ctx())
    assert "      -    return a - b\n      +    return a + b\n" in out
    assert "      -    os.system(cmd)\n      +    subprocess.run(cmd, shell=False, check=True)\n" in out


def test_summary_and_verdict() -> None:
    out = render(rich_result(), ctx())
    summary = out.splitlines()[-2]
    assert summary.startswith("3 files reviewed (1 from cache), 2 skipped, 1 failed")
    assert "4 findings (1 critical, 1 high, 1 medium, 1 low)" in summary
    assert "7 requests" in summary and "12,345 in / 678 out tokens" in summary
    assert "$0.0421" in summary and "12.5s" in summary
    verdict = out.splitlines()[-1]
    assert verdict.startswith("FAILED") and "REVIEW INCOMPLETE — 2 files not reviewed" in verdict
    assert "gen/huge.py — file too large (9000 lines > 5000) [review incomplete]" in out
    assert "assets/logo.png — binary file\n" in out


def test_clean_review_reads_as_passed() -> None:
    out = render(result([]), ctx())
    assert out.splitlines()[-1].startswith("PASSED") and "no findings" in out


def test_incomplete_review_never_reads_clean_even_with_warn() -> None:
    res = result([], [FileCoverage("a.py", "failed", "timeout")])
    out = render(res, ctx(on_error="warn"))
    assert "PASSED" not in out and "REVIEW INCOMPLETE" in out.splitlines()[-1]


def test_no_colour_unless_asked() -> None:
    plain = render(rich_result(), ctx(color=False))
    coloured = render(rich_result(), ctx(color=True))
    assert "\x1b" not in plain
    assert "\x1b[" in coloured
    assert _SGR.sub("", coloured) == plain


def test_hostile_model_text_is_neutralised() -> None:
    res = result([finding(message=HOSTILE, suggestion=HOSTILE, path="src/app.py", start=4)])
    for color in (False, True):
        out = render(res, ctx(color=color))
        body = _SGR.sub("", out) if color else out
        assert "\x1b" not in body and "\x07" not in body and "\x9b" not in body and "\r" not in body
        assert "\u202e" not in body
        assert "##[" not in body
        for line in body.splitlines():
            assert not line.lstrip().startswith("::"), line
    assert "red and  and  cleared" in out  # text around escapes survives


def test_sanitize_strips_escape_sequences_and_controls() -> None:
    assert sanitize_text("a\x1b[1;31mb\x1b[0mc") == "abc"
    assert sanitize_text("x\x1b]0;title\x07y\x1b]8;;http://e\x1b\\z") == "xyz"
    assert sanitize_text("bell\x07 nul\x00 del\x7f c1\x85 csi\x9b31m") == "bell nul del c1 csi"
    assert sanitize_text("keep\ttab\nand\r\nnewline\rcr") == "keep\ttab\nand\nnewline\ncr"
    assert sanitize_text("unterminated \x1b]0;title\nnext") == "unterminated \nnext"


def test_neutralize_commands() -> None:
    out = neutralize_commands("::error::x\n   ::warning::y\nok :: fine\nlegacy ##[error]z")
    lines = out.split("\n")
    assert not any(line.lstrip().startswith("::") for line in lines)
    assert "##[" not in out and lines[2] == "ok :: fine"


def test_summary_line_counts_files_by_state_and_the_cache_share() -> None:
    finding = Finding(path="a.py", start_line=1, end_line=1, severity=Severity.HIGH, category=Category.BUG,
                      message="m", suggestion=None, anchored=True, fingerprint="f")
    result = ReviewResult(
        findings=[finding],
        files=[FileCoverage("a.py", "reviewed", comments=1), FileCoverage("b.py", "cached"),
               FileCoverage("c.py", "skipped", "budget", incomplete=True)],
        usage=Usage(requests=5, input_tokens=1_000, output_tokens=500, cache_creation_input_tokens=3_000,
                    cache_read_input_tokens=6_000, cost_usd=0.0123),
        elapsed_s=12.34,
    )
    assert summary_line(result) == (
        "2 files reviewed (1 from cache), 1 skipped, 0 failed · 1 finding (1 high) · 5 requests · "
        "1,000 in / 500 out tokens (cache: 6,000 read, 3,000 written, 60% of input from cache) · $0.0123 · 12.3s"
    )
    empty = summary_line(ReviewResult(findings=[], files=[]))
    assert empty.startswith("0 files reviewed, 0 skipped, 0 failed · no findings · 0 requests")


def test_the_brief_passing_form_labels_memory_statuses_and_names_what_was_resolved() -> None:
    carried = finding(severity="low", message="Use an f-string")._replace(status="carried")
    fixed = finding(path="src/util.py", start=2, message="Subtracts instead of adding")
    out = render(result([carried], resolved=[fixed]), ctx(brief=True))
    lines = out.splitlines()
    assert lines[0].startswith("src/app.py:4 [LOW] bug ")
    assert lines[0].endswith(" (carried from the last review): Use an f-string")
    assert "  (" not in lines[0]
    assert lines[1] == "resolved since the last review: src/util.py:2 [HIGH] bug: Subtracts instead of adding"
    assert lines[-1].startswith("ocr-hook: PASSED") and "1 resolved since the last review" in lines[-1]
    assert len(lines) == 3
