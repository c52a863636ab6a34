"""The shared rendering every publisher uses (ocr_hook/publish/render.py) and forge detection: pure units.

What the CLI tests (test_publish_hostile, test_publish_gitlab) show end to end, here case by case: no
line of model text starts a block, no `<` opens HTML, no `@name` notifies, nothing hidden stays hidden.
"""

from __future__ import annotations

import re

import pytest

from ocr_hook.findings import Category, Finding, Fix, Severity
from ocr_hook.publish.forges import NotApplicable, detect
from ocr_hook.publish.plan import comment_body
from ocr_hook.publish.render import ZWSP, code_span, fenced, inert, name, plain, visible

LIVE_BLOCKS = {
    "fence": "```suggestion\nrm -rf /\n```",
    "tilde fence": "~~~suggestion\nx\n~~~",
    "indented fence": "   ```suggestion",
    "heading": "# Approved",
    "setext heading": "Approved\n===",
    "link reference definition": '[ocr]: https://example.invalid "t"',
    "block quote": "> quoted",
    "list": "- item",
    "ordered list": "1. item",
    "table": "| a | b |",
    "gitlab quick action": "/merge",
    "thematic break": "***",
}


@pytest.mark.parametrize("text", list(LIVE_BLOCKS.values()), ids=list(LIVE_BLOCKS))
def test_no_line_of_model_text_starts_a_block(text: str) -> None:
    for line in inert(text).split("\n"):
        assert re.match(r"^[ \t]*(\\[#`~>\[=\-+*_|/:<!]|\d+\\[.)]|[^#`~>\[=\-+*_|/:<!\d \t])", line) or not line, line


@pytest.mark.parametrize("html", ["<!-- hide -->", "<?php echo 1; ?>", "<!DOCTYPE html>", "<img src=x onerror=1>",
                                  "</details>", "<https://example.invalid>", "<![CDATA[x]]>"])
def test_no_html_is_live(html: str) -> None:
    out = inert(f"text {html} more")
    assert not re.search(r"<[A-Za-z/!?]", out)
    assert out.replace(ZWSP, "") == f"text {html} more"  # reads the same


def test_mentions_are_inert_everywhere_but_addresses_stay() -> None:
    out = inert("@octocat, `x`@org/team, (@someone) and ＠fullwidth; mail a@b.c")
    assert not re.search(r"(?<![A-Za-z0-9_])[@＠][A-Za-z0-9_]", out)
    assert "a@b.c" in out


def test_hidden_characters_are_shown_not_dropped() -> None:
    assert visible("a\u202eb\x1bc\x00d\u2066e\ufeff") == "a\\u202eb\\x1bc\\x00d\\u2066e\\ufeff"
    assert visible("one\r\ntwo\rthree\tfour") == "one\ntwo\nthree\tfour"
    assert name("m1\n\n@x\t<!--.py") == "`m1\\x0a\\x0a@x\\x09<!--.py`"
    assert plain("a\n b\u202e", 5) == "a b\\…"


def test_code_spans_and_fences_cannot_be_closed_early() -> None:
    assert code_span("a``b") == "```a``b```" and code_span("`x`") == "`` `x` ``"
    assert fenced("````\nx").startswith("`````\n") and fenced("a\x00b") == "```\na\\x00b\n```"


def _finding(replacement: str, message: str = "m") -> Finding:
    return Finding("a.py", 2, 3, Severity.HIGH, Category.BUG, message, replacement, True, "ab" * 16,
                   fix=Fix(2, 3, replacement))


def test_only_a_checked_fix_becomes_a_suggestion_and_only_when_exact() -> None:
    assert re.search(r"^```suggestion:-0\+1\nx = 1\n```$", comment_body(_finding("x = 1"), "gitlab"), re.M)
    body = comment_body(_finding("x = 1\x1b[2J"), "suggestion")  # would need an escape: shown, not offered
    assert "suggestion\n" not in body and "x = 1\\x1b[2J" in body
    assert "```diff\n-old 2\n-old 3\n+x = 1\n```" in comment_body(_finding("x = 1"), "diff", ["old 2", "old 3"])
    hostile = comment_body(_finding("x", "```suggestion\nevil\n```"), "none")
    # The message's fence is not one: the only fence is ocr-hook's own plain block for the code.
    assert [info for _, info in re.findall(r"^ {0,3}(`{3,})(\S*)", hostile, re.M)] == ["", ""]


@pytest.mark.parametrize(("env", "forge"), [
    ({"GITHUB_ACTIONS": "true"}, "github"),
    ({"GITHUB_ACTIONS": "true", "GITEA_ACTIONS": "true"}, "gitea"),
    ({"GITHUB_ACTIONS": "true", "FORGEJO_ACTIONS": "true"}, "gitea"),
    ({"GITLAB_CI": "true"}, "gitlab"),
    ({"BITBUCKET_BUILD_NUMBER": "12"}, "bitbucket"),
    ({"TF_BUILD": "True"}, "azure"),
])
def test_the_forge_is_found_from_the_ci_variables(env: dict[str, str], forge: str) -> None:
    assert detect(env) == forge


def test_no_forge_is_one_line() -> None:
    with pytest.raises(NotApplicable, match=r"not a CI run of a known forge .*pass --to"):
        detect({"CI": "true"})
