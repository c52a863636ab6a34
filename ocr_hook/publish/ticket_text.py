"""Tickets' rich text as plain text (issue 60), for the model and the reports: Azure DevOps' HTML fields and
Jira Cloud's Atlassian Document Format. Pure. Only the words survive: no tag, no markup, no link target but a
card's URL, so nothing a ticket's author wrote renders anywhere it is echoed; what the text says is still
untrusted, and the check frames it as such.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

MAX_DEPTH = 64  # of an ADF tree: deeper content is left out (Jira's editor nests a few levels)
_BLOCKS = frozenset({"paragraph", "heading", "codeBlock", "blockquote", "panel", "rule", "mediaSingle",
                     "mediaGroup", "tableRow", "expand", "nestedExpand", "decisionList", "taskList"})
_ITEMS = frozenset({"listItem", "taskItem", "decisionItem"})
_HTML_BLOCKS = frozenset({"p", "div", "br", "li", "ul", "ol", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6",
                          "pre", "blockquote", "hr"})
_SKIP = frozenset({"script", "style"})


def tidy_lines(lines: list[str]) -> str:
    """The lines without trailing spaces, runs of blank lines as one, and no blank line between two list items."""
    out: list[str] = []
    for line in (x.rstrip() for x in lines):
        if line.startswith("- ") and len(out) >= 2 and not out[-1] and out[-2].startswith("- "):
            out.pop()
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def adf_text(document: Any) -> str:
    """The text of an Atlassian Document Format tree (Jira Cloud's rich text): a block a line, list items as
    "- ", table cells joined by " | ", mentions, emoji, dates and links by their text; marks (bold, links'
    targets) and media left out. Pure; an unknown node gives its children's text."""
    out: list[str] = []
    _walk(document, out, 0)
    lines = [line.rstrip() for line in "".join(out).split("\n")]
    return tidy_lines(lines)


def _walk(node: Any, out: list[str], depth: int, in_cell: bool = False) -> None:
    if not isinstance(node, dict) or depth > MAX_DEPTH:
        return
    kind = node.get("type")
    attrs = node.get("attrs") if isinstance(node.get("attrs"), dict) else {}
    if kind == "text":
        text = node.get("text")
        out.append(text if isinstance(text, str) else "")
        return
    if kind == "hardBreak":
        out.append(" " if in_cell else "\n")
        return
    if kind in ("mention", "emoji", "status"):
        word = attrs.get("text") or attrs.get("shortName")
        out.append(word if isinstance(word, str) else "")
        return
    if kind in ("inlineCard", "blockCard", "embedCard"):
        url = attrs.get("url")
        out.append(url if isinstance(url, str) else "")
        return
    if kind == "date":
        stamp = attrs.get("timestamp")
        out.append(str(stamp) if isinstance(stamp, str | int) else "")
        return
    if kind in _ITEMS:
        out.append("\n- ")
    elif kind in ("tableCell", "tableHeader"):
        out.append(" | " if out and not out[-1].endswith("\n") else "| ")
        in_cell = True
    content = node.get("content")
    for child in content if isinstance(content, list) else ():
        _walk(child, out, depth + 1, in_cell)
    if kind in _ITEMS or kind == "tableRow" or (kind in _BLOCKS and not in_cell):
        out.append("\n")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skipping += 1
        elif tag in _HTML_BLOCKS:
            self.parts.append("\n- " if tag == "li" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skipping = max(0, self._skipping - 1)
        elif tag in _HTML_BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_text(html: str) -> str:
    """The text of an HTML fragment (Azure's rich-text fields): no tags, entities decoded, one block a line."""
    if "<" not in html and "&" not in html:
        return html.strip()
    parser = _Text()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return tidy_lines(list(lines))
