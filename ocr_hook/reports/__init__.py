"""Report writers. Each format is one module with `render(result, ctx) -> str`; RENDERERS maps names.

Adding a format: write the module and add one entry to RENDERERS (and the name to the `format`
choices in settings).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from types import MappingProxyType

from ocr_hook.outcome import ReviewResult
from ocr_hook.reports.base import ReportContext
from ocr_hook.store.atomic import ReportWriteError, write_atomic

Renderer = Callable[[ReviewResult, ReportContext], str]

# Format name → the module whose `render` writes it. Modules load on first use, so a run pays
# only for the formats it writes.
RENDERERS: Mapping[str, str] = MappingProxyType({
    "text": "ocr_hook.reports.text",
    "json": "ocr_hook.reports.json_report",
    "sarif": "ocr_hook.reports.sarif",
    "github": "ocr_hook.reports.github",
    "gitlab": "ocr_hook.reports.gitlab",
})

__all__ = ["RENDERERS", "ReportContext", "ReportWriteError", "render", "renderer", "write_report"]


def renderer(fmt: str) -> Renderer:
    try:
        module = RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown report format {fmt!r} (known: {', '.join(RENDERERS)})") from None
    render_fn: Renderer = importlib.import_module(module).render
    return render_fn


def render(fmt: str, result: ReviewResult, ctx: ReportContext) -> str:
    """The report for stdout. For "github" this also appends the job summary when
    ctx.step_summary_path is set, because annotations alone cannot show every finding."""
    output = renderer(fmt)(result, ctx)
    if fmt == "github" and ctx.step_summary_path:
        from ocr_hook.reports import github

        github.append_step_summary(result, ctx)
    return output


def write_report(fmt: str, result: ReviewResult, ctx: ReportContext, path: str | os.PathLike[str]) -> None:
    """Render and write one report file atomically (no half-written file is ever visible)."""
    write_atomic(path, renderer(fmt)(result, ctx))
