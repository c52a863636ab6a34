"""GitHub Actions output: workflow-command annotations plus a job summary with every finding.

GitHub shows at most 10 annotations of each level per step, so the most severe 10 per level are
annotated and the job summary ($GITHUB_STEP_SUMMARY) lists all of them. Model text is escaped the
way the Actions toolkit escapes command data and properties, so it can never end a command early or
start a new one; every other printed line goes through `safe_for_log`.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING

from ocr_hook import gate
from ocr_hook.findings import Finding, Severity, shown_suggestion
from ocr_hook.outcome import ReviewResult
from ocr_hook.reports.base import (
    coverage_groups,
    decision,
    escape_hidden,
    line_range,
    safe_for_log,
    sanitize_text,
    severity_order,
)
from ocr_hook.reports.text import summary_line
from ocr_hook.store.atomic import ReportWriteError

if TYPE_CHECKING:
    from ocr_hook.reports.base import ReportContext

LEVEL = {Severity.CRITICAL: "error", Severity.HIGH: "error", Severity.MEDIUM: "warning", Severity.LOW: "notice"}
MAX_PER_LEVEL = 10
MAX_MESSAGE = 4000  # characters of one annotation's message
MAX_CELL = 600  # characters of one message in the job summary table
SUMMARY_BUDGET = 900_000  # GitHub refuses a step summary over 1 MiB


def escape_data(text: str) -> str:
    """Escape a workflow command's message (the part after `::`)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command property value (file, title, …)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, *, file: str | None = None, line: int | None = None,
               end_line: int | None = None, title: str | None = None) -> str:
    props = []
    if file is not None:
        props.append(f"file={escape_property(file)}")
    if line is not None:
        props.append(f"line={line}")
    if end_line is not None:
        props.append(f"endLine={end_line}")
    if title is not None:
        props.append(f"title={escape_property(title)}")
    head = f"::{level} " + ",".join(props) if props else f"::{level}"
    # The runner reads a line as a `::` command before it looks for legacy `##[` ones, but do not
    # rely on that order.
    return f"{head}::{escape_data(message)}".replace("##[", "#\u200b#[")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def finding_annotation(f: Finding) -> str:
    # Hidden characters are shown escaped, never dropped (issue 33): a message keeps what it said, and a
    # path with U+202E names the file it names, readably, instead of one that does not exist.
    message = escape_hidden(f.message.strip() or "(no message)")
    suggestion = shown_suggestion(f)
    if suggestion:
        message += "\n\nSuggested code:\n" + escape_hidden(suggestion)
    title = f"ocr-hook: {f.severity.value} {f.category.value}"
    if f.status != "new":  # review memory: carried from the last review, or raised late on unchanged lines
        title += f" ({f.status})"
    path = escape_hidden(f.path, newlines=False)
    if not f.anchored:
        return annotation(LEVEL[f.severity], _clip(message + "\n\n(about the whole file)", MAX_MESSAGE),
                          file=path, title=title)
    start, end = line_range(f)
    return annotation(LEVEL[f.severity], _clip(message, MAX_MESSAGE), file=path, line=start,
                      end_line=end, title=title)


def _where(f: Finding) -> str:
    if not f.anchored:
        return f"{f.path} (whole file)"
    start, end = line_range(f)
    return f"{f.path}:{start}" + (f"-{end}" if end > start else "")


def render(result: ReviewResult, ctx: ReportContext) -> str:
    lines: list[str] = []
    left = {"error": MAX_PER_LEVEL, "warning": MAX_PER_LEVEL, "notice": MAX_PER_LEVEL}
    incomplete = gate.incomplete_line(result)
    if incomplete:
        lines.append(annotation("error", sanitize_text(incomplete), title="ocr-hook: review incomplete"))
        left["error"] -= 1
    rest: list[Finding] = []
    for f in sorted((f for f in result.findings if f.suppressed is None), key=severity_order):
        level = LEVEL[f.severity]
        if left[level] > 0:
            left[level] -= 1
            lines.append(finding_annotation(f))
        else:
            rest.append(f)
    if rest:
        where = "the job summary lists all of them" if ctx.step_summary_path else "they are listed below"
        lines.append(f"{len(rest)} more findings were not annotated (GitHub shows {MAX_PER_LEVEL} per level "
                     f"per step); {where}:")
        for f in rest:
            first = (f.message.strip().splitlines() or ["(no message)"])[0]
            lines.append(safe_for_log(f"  {_where(f)} [{f.severity.value}] {f.category.value}: {_clip(first, 200)}"))
    lines += [safe_for_log(f"Note: {note}") for note in result.notes]  # e.g. the gate's settings changed
    lines.append(safe_for_log(summary_line(result)))
    lines.append(safe_for_log(decision(result, ctx).line))
    return "\n".join(lines) + "\n"


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")


def escape_markdown(text: str) -> str:
    """Plain text for a GitHub-flavoured Markdown table cell: no markup, no HTML, no line breaks."""
    text = html.escape(sanitize_text(text), quote=True)
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", text)
    return text.replace("\t", " ").replace("\n", "<br>")


def step_summary(result: ReviewResult, ctx: ReportContext) -> str:
    """Markdown for $GITHUB_STEP_SUMMARY: the verdict, the counts and a table of every finding."""
    verdict = decision(result, ctx).line
    out = ["## ocr-hook review", "", f"**{escape_markdown(verdict)}**", "", escape_markdown(summary_line(result)), ""]
    active = sorted((f for f in result.findings if f.suppressed is None), key=severity_order)
    if active:
        out += ["| Severity | Location | Category | Finding |", "|---|---|---|---|"]
        size = sum(len(line) + 1 for line in out)
        for i, f in enumerate(active):
            row = (f"| {f.severity.value} | {escape_markdown(_where(f))} | {f.category.value} | "
                   f"{escape_markdown(_clip(f.message.strip(), MAX_CELL))} |")
            if size + len(row) > SUMMARY_BUDGET:
                out += ["", f"{len(active) - i} more findings are not shown here: the summary would exceed "
                        "GitHub's size limit. The JSON or SARIF output has all of them."]
                break
            out.append(row)
            size += len(row) + 1
        out.append("")
    groups = coverage_groups(result)
    unreviewed = groups["failed"] + [f for f in groups["skipped"] if f.incomplete]
    if unreviewed:
        out += ["### Not reviewed", ""]
        out += [f"- {escape_markdown(f.path)}: {escape_markdown(f.reason or f.state)}" for f in unreviewed]
        out.append("")
    if result.notes:
        out += ["### Notes", ""] + [f"- {escape_markdown(n)}" for n in result.notes] + [""]
    if ctx.next_steps and decision(result, ctx).exit_code == gate.EXIT_BLOCKING:
        # Commands to copy: a code block, so nothing in them is read as markup (no fence can be closed early).
        steps = [sanitize_text(line).replace("`", "'") for line in ctx.next_steps[1:]]
        out += ["### What to do next", "", "```", *steps, "```", ""]
    return "\n".join(out) + "\n"


def append_step_summary(result: ReviewResult, ctx: ReportContext) -> None:
    """Append the job summary to ctx.step_summary_path (GitHub's file is shared by the step)."""
    if not ctx.step_summary_path:
        return
    try:
        with open(ctx.step_summary_path, "a", encoding="utf-8", errors="replace") as handle:
            handle.write(step_summary(result, ctx))
    except OSError as exc:
        raise ReportWriteError(f"cannot write the job summary {ctx.step_summary_path}: "
                               f"{exc.strerror or exc}") from None
