"""Turning `code_comment` calls into Comment objects for the current file, within sane bounds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ocr_hook.findings import Category, Comment, Severity

MAX_COMMENTS_PER_FILE = 50
# A quote longer than this is not a pointer to code any more; keep its head, which still anchors.
MAX_QUOTE_LINES = 80
MAX_QUOTE_CHARS = 8_000
MAX_CONTENT_CHARS = 4_000


def _bounded(text: str, max_lines: int, max_chars: int) -> tuple[str, bool]:
    lines = text.splitlines()
    cut = len(lines) > max_lines
    if cut:
        text = "\n".join(lines[:max_lines])
    if len(text) > max_chars:
        text = text[:max_chars].rsplit("\n", 1)[0] if "\n" in text[:max_chars] else text[:max_chars]
        cut = True
    return text, cut


@dataclass
class CommentBox:
    """The comments collected for one file so far."""

    path: str
    comments: list[Comment] = field(default_factory=list)
    ignored: int = 0  # over the per-file cap
    truncated: int = 0  # quotes or texts cut to their bound

    @property
    def shown_path(self) -> str:
        """The file's name in the text the model and the reports get: a name that is not UTF-8 as git shows it
        (a lone surrogate in a tool result fails the whole request, issue 62.3)."""
        from ocr_hook.changes.names import shown

        return shown(self.path)

    def take(self, tool_input: Mapping[str, Any]) -> str:
        """Record the comments of one (already validated) call; the answer for the model."""
        entries: Sequence[Mapping[str, Any]] = tool_input.get("comments") or ()
        added = 0
        notes: list[str] = []
        for entry in entries:
            if len(self.comments) >= MAX_COMMENTS_PER_FILE:
                self.ignored += 1
                continue
            code, code_cut = _bounded(str(entry.get("existing_code", "")), MAX_QUOTE_LINES, MAX_QUOTE_CHARS)
            content, content_cut = _bounded(str(entry.get("content", "")), 10_000, MAX_CONTENT_CHARS)
            suggestion = entry.get("suggestion_code")
            suggestion_cut = False
            if suggestion is not None:
                suggestion, suggestion_cut = _bounded(str(suggestion), MAX_QUOTE_LINES * 2, MAX_QUOTE_CHARS)
            if code_cut or content_cut or suggestion_cut:
                self.truncated += 1
                notes.append(f"comment {added + 1}: an overlong text was shortened; quote only the lines "
                             "the comment is about")
            self.comments.append(Comment(
                path=self.path, content=content, existing_code=code,
                severity=Severity(entry["severity"]), category=Category(entry["category"]),
                suggestion_code=suggestion or None, truncated=code_cut or suggestion_cut,
            ))
            added += 1
        answer = f"Recorded {added} comment(s) on {self.shown_path} ({len(self.comments)} so far)."
        if notes:
            answer += " " + "; ".join(notes) + "."
        if self.ignored and len(self.comments) >= MAX_COMMENTS_PER_FILE:
            answer += (f" The limit of {MAX_COMMENTS_PER_FILE} comments per file is reached; further comments are"
                       " ignored. Call task_done now.")
        return answer

    def notes(self) -> list[str]:
        out = []
        if self.ignored:
            out.append(f"{self.shown_path}: {self.ignored} comment(s) over the limit of {MAX_COMMENTS_PER_FILE} "
                       "per file were ignored")
        if self.truncated:
            out.append(f"{self.shown_path}: {self.truncated} comment(s) with overlong quotes or text were shortened")
        return out
