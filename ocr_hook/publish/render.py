"""Text that a forge renders, made from hostile input: model messages, file names, code.

Every publisher (GitHub, GitLab, Gitea, Bitbucket, Azure DevOps) builds its comments from these
functions and nothing else, so what a model or a pull request's file names can do in a comment is
decided here once:

* `visible` turns every control, bidirectional and invisible formatting character into a visible
  escape (`\\x1b`, `\\u202e`, `\\x00`): nothing reorders the text around it, nothing is silently
  dropped (a path with U+202E still names that path, readably).
* `inert` is for model text in Markdown: no line of it can start a block that changes what follows
  (a fence, so no ```` ```suggestion ````; a heading; a setext underline; a block quote, list or
  table row; a link reference definition), no `<` can open HTML (`<!--`, `<?`, `<!X`, a tag, an
  autolink), no `@name` notifies anyone (nor `&#64;name`: character references stay text), no `#1`,
  `!2` or `group/proj#3` links or cross-references another issue or merge request, and no line is a
  GitLab quick action (`/merge`, `/close`).
* `code_span` and `fenced` hold text the reader should see verbatim; the delimiter is longer than
  any backtick run inside, and a code span never holds a line break (which could end the paragraph
  and let the rest be read as Markdown).
* `plain` is for forges that show text as text (Bitbucket annotations): visible escapes, one line.

Only ocr-hook's own checked fix may become a suggestion block (the callers in plan.py decide that);
model text and model code never do.
"""

from __future__ import annotations

import re

from ocr_hook.reports.base import escape_hidden, has_hidden

ZWSP = "\u200b"  # what makes a character pair inert without changing how it reads


def visible(text: str, *, newlines: bool = True) -> str:
    """Every hidden character as a visible escape (reports.base.escape_hidden: the GitHub annotations
    use the same); `newlines=False` escapes line feeds and tabs too (file names, one-line texts)."""
    return escape_hidden(text, newlines=newlines)


# A line's first non-blank character that could start a block construct (or a quick action), and
# ordered-list markers (`1.` / `1)`), which need the escape after the digits.
_BLOCK_START = re.compile(r"^([ \t]*)([#`~>\[=\-+*_|/:<!])", re.M)
_ORDERED = re.compile(r"^([ \t]*\d{1,9})([.)])", re.M)
_HTML_OPEN = re.compile(r"<(?=[A-Za-z/!?])")
# `@name`, Azure DevOps' `@<GUID>` (most GUIDs start with a digit, and `<1` is no HTML for the rule below), and
# Bitbucket Cloud's `@{account id}`.
_MENTION = re.compile(r"(?<![A-Za-z0-9_])([@＠])(?=[A-Za-z0-9_<{])")
_IMAGE = re.compile(r"!\[")
# A forge's references: `#1`, `!2`, `group/proj#3`, GitLab's `&4` (epic), `%5`, `$6`, GitHub's `GH-7`. Each
# links and, worse, posts a "mentioned in" note on that issue or merge request (a cross-reference).
_REFERENCE = re.compile(r"([#!&%$]|\bGH-)(?=[0-9])", re.I)
# A character reference (`&#64;`, `&commat;`) reads as its character once rendered: `&#64;name` would be a
# mention after every other rule had passed it. The `&` is written as `&amp;`, so it stays the text it is.
_CHAR_REF = re.compile(r"&(?=#[0-9]{1,8};|#[xX][0-9A-Fa-f]{1,8};|[A-Za-z][A-Za-z0-9]{1,31};)")


def inert(text: str) -> str:
    """Model text for a Markdown comment: visible escapes, and nothing in it is live markup."""
    text = visible(text)
    text = _CHAR_REF.sub("&amp;", text)
    text = _BLOCK_START.sub(lambda m: f"{m.group(1)}\\{m.group(2)}", text)
    text = _ORDERED.sub(r"\1\\\2", text)
    text = _HTML_OPEN.sub("<" + ZWSP, text)
    text = text.replace("-->", "--" + ZWSP + ">")
    text = _IMAGE.sub("!" + ZWSP + "[", text)  # no image (a tracking pixel) from model text
    text = _REFERENCE.sub(lambda m: m.group(1) + ZWSP, text)
    return _MENTION.sub(lambda m: m.group(1) + ZWSP, text)


def name(text: str) -> str:
    """A file name or other one-line value for Markdown: visible escapes, then a code span."""
    return code_span(visible(text, newlines=False))


def code_span(text: str) -> str:
    """Inline code that its text cannot close early; line breaks are shown, never kept."""
    text = visible(text, newlines=False)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip(" ") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


# Older GitLab finds quick actions with a pattern that ends a fence at the first inner ``` (or ~~~) line,
# whatever the fence's length: after such a line, `/merge` inside a longer fence is a live quick action
# (and draft notes run them). Those lines get a zero-width space in front.
_INNER_FENCE = re.compile(r"^[ \t]*(?:```|~~~)", re.M)
_QUICK_ACTION = re.compile(r"^([ \t]*)(?=/)", re.M)


def _no_quick_actions(code: str) -> str:
    return _QUICK_ACTION.sub(lambda m: m.group(1) + ZWSP, code) if _INNER_FENCE.search(code) else code


def fenced(code: str, info: str = "") -> str:
    """A fenced block that the code cannot close early: one backtick more than its longest run.
    The code's hidden characters are shown escaped; `info` is ocr-hook's own (e.g. `suggestion`)."""
    code = _no_quick_actions(visible(code))
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{code}\n{fence}" if code else f"{fence}{info}\n{fence}"


def verbatim_ok(code: str) -> bool:
    """Whether code can go into a suggestion block unchanged (nothing `visible` would rewrite):
    a suggestion must hold the exact replacement, so one that needs escapes is shown, not offered."""
    return not has_hidden(code) and _no_quick_actions(code) == code


def plain(text: str, limit: int | None = None) -> str:
    """One line of plain text (a forge that shows text as text): visible escapes, blanks collapsed."""
    text = " ".join(visible(text).split())
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    return text


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
