"""Report writers. Each format is one module with `render(result, ctx) -> str`; RENDERERS maps names.

Adding a format: write the module and add one entry to RENDERERS (and the name to the `format`
choices in settings).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from types import MappingProxyType

from ocr_hook.outcome import ReviewResult
from ocr_hook.reports import github, gitlab, json_report, sarif, text
from ocr_hook.reports.atomic_write import ReportWriteError, write_atomic
from ocr_hook.reports.base import ReportContext

Renderer = Callable[[ReviewResult, ReportContext], str]

RENDERERS: Mapping[str, Renderer] = MappingProxyType({
    "text": text.render,
    "json": json_report.render,
    "sarif": sarif.render,
    "github": github.render,
    "gitlab": gitlab.render,
})

__all__ = ["RENDERERS", "ReportContext", "ReportWriteError", "render", "write_report"]


def _renderer(fmt: str) -> Renderer:
    try:
        return RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown report format {fmt!r} (known: {', '.join(RENDERERS)})") from None


def render(fmt: str, result: ReviewResult, ctx: ReportContext) -> str:
    """The report for stdout. For "github" this also appends the job summary when
    ctx.step_summary_path is set, because annotations alone cannot show every finding."""
    output = _renderer(fmt)(result, ctx)
    if fmt == "github" and ctx.step_summary_path:
        github.append_step_summary(result, ctx)
    return output


def write_report(fmt: str, result: ReviewResult, ctx: ReportContext, path: str | os.PathLike[str]) -> None:
    """Render and write one report file atomically (no half-written file is ever visible)."""
    write_atomic(path, _renderer(fmt)(result, ctx))
