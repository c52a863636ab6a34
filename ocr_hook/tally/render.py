"""The outcomes as text for a terminal, JSON for tools, and SVG or an HTML page for people who would rather
look than read. Pure: a Tally in, a string out."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from ocr_hook.tally.checks import CheckCounts, checks_dict, checks_text
from ocr_hook.tally.count import DIMENSIONS, SEVERITY_ORDER, Counts, Tally

FORMATS = ("text", "json", "svg", "html")
_COLOURS = {"fixed": "#2e7d32", "dismissed": "#757575", "open": "#ef6c00"}


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _ordered(dim: str, rows: dict[str, Counts]) -> list[tuple[str, Counts]]:
    if dim == "severity":
        return sorted(rows.items(), key=lambda kv: (SEVERITY_ORDER.index(kv[0]) if kv[0] in SEVERITY_ORDER
                                                    else len(SEVERITY_ORDER), kv[0]))
    return sorted(rows.items(), key=lambda kv: (-kv[1].raised, kv[0]))


def as_dict(t: Tally, period: str) -> dict[str, Any]:
    return {
        "period": period,
        "reviews": t.reviews,
        "total": t.total.as_dict(),
        "by": {dim: {value: c.as_dict() for value, c in _ordered(dim, t.by.get(dim, {}))} for dim in DIMENSIONS},
        "dismissed_by": dict(sorted(t.dismissed_by.items(), key=lambda kv: (-kv[1], kv[0]))),
        "feedback": {"thumbs_up": t.thumbs_up, "thumbs_down": t.thumbs_down, "replies": t.replies},
        "candidate_rules": [{"paths": c.paths or "**", "category": c.category, "dismissed": c.dismissed,
                             "raised": c.raised, "rule": c.rule()} for c in t.candidates],
    }


def render_json(t: Tally, period: str) -> str:
    return json.dumps(as_dict(t, period), indent=2) + "\n"


def render_text(t: Tally, period: str, *, max_rows: int = 10) -> str:
    c = t.total
    lines = [f"Outcomes {period}: {c.raised} finding(s) raised in {t.reviews} review(s): {c.fixed} fixed, "
             f"{c.dismissed} dismissed, {c.open} open; addressed {_percent(c.addressed_rate)} "
             f"(fixed {_percent(c.fixed_rate)})"]
    if not c.raised:
        lines.append("Nothing to count yet: reviews record their findings in the cache directory as they run.")
        return "\n".join(lines) + "\n"
    for dim in DIMENSIONS:
        rows = _ordered(dim, t.by.get(dim, {}))
        width = max([len(dim), *(len(v) for v, _ in rows[:max_rows])])
        lines += ["", f"{dim:<{width}}  raised  fixed  dismissed  open  addressed"]
        for value, n in rows[:max_rows]:
            lines.append(f"{value:<{width}}  {n.raised:>6}  {n.fixed:>5}  {n.dismissed:>9}  {n.open:>4}  "
                         f"{_percent(n.addressed_rate):>9}")
        if len(rows) > max_rows:
            lines.append(f"(+{len(rows) - max_rows} more; --format json lists all)")
    if t.dismissed_by:
        lines += ["", "Dismissed by: " + ", ".join(f"{who}: {n}" for who, n in
                                                 sorted(t.dismissed_by.items(), key=lambda kv: (-kv[1], kv[0])))]
    if t.thumbs_up or t.thumbs_down or t.replies:
        lines += ["", f"Feedback on the forge: {t.thumbs_up} 👍, {t.thumbs_down} 👎, {t.replies} repl(ies)"]
    if t.candidates:
        lines += ["", "Most dismissed: candidate rules for REVIEW.md or .ocr-hook.yaml (never applied by themselves):"]
        lines += [f"  {cand.rule()}   # {cand.dismissed} of {cand.raised} dismissed" for cand in t.candidates[:5]]
    return "\n".join(lines) + "\n"


def render_svg(t: Tally, period: str) -> str:
    """Stacked bars (fixed, dismissed, open) per severity and per category, with a legend."""
    rows: list[tuple[str, Counts | None]] = [("All findings", t.total)]
    for dim in ("severity", "category"):
        rows.append((f"By {dim}", None))
        rows += _ordered(dim, t.by.get(dim, {}))
    label_w, bar_w, row_h, top = 170, 460, 22, 56
    height = top + row_h * len(rows) + 20
    biggest = max([c.raised for _, c in rows if c is not None] + [1])
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 140}" height="{height}" '
           f'font-family="sans-serif" font-size="13" role="img">',
           f"<title>{html.escape(f'ocr-hook outcomes {period}')}</title>",
           f'<text x="8" y="20" font-size="15" font-weight="bold">{html.escape(f"Outcomes {period}")}</text>']
    x = 8
    for state, colour in _COLOURS.items():
        out.append(f'<rect x="{x}" y="32" width="12" height="12" fill="{colour}"/>'
                   f'<text x="{x + 16}" y="43">{state}</text>')
        x += 90
    y = top
    for label, counts in rows:
        if counts is None:
            out.append(f'<text x="8" y="{y + 15}" font-weight="bold">{html.escape(label)}</text>')
            y += row_h
            continue
        out.append(f'<text x="8" y="{y + 15}">{html.escape(label[:24])}</text>')
        bx = label_w
        for state, colour in _COLOURS.items():
            n = getattr(counts, state)
            if n:
                w = max(1, round(bar_w * n / biggest))
                out.append(f'<rect x="{bx}" y="{y + 3}" width="{w}" height="{row_h - 6}" fill="{colour}">'
                           f"<title>{state}: {n}</title></rect>")
                bx += w
        out.append(f'<text x="{bx + 6}" y="{y + 15}">{counts.raised} · addressed '
                   f"{_percent(counts.addressed_rate)}</text>")
        y += row_h
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render_html(t: Tally, period: str) -> str:
    text = html.escape(render_text(t, period))
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(f'ocr-hook outcomes {period}')}</title></head><body>\n"
            f"{render_svg(t, period)}<pre>{text}</pre>\n</body></html>\n")


def render(fmt: str, t: Tally, period: str, checks: Sequence[CheckCounts] = ()) -> str:
    """`checks`: the checks' outcomes (tally.checks), after the findings' in text and HTML, `checks` in JSON."""
    if checks and fmt == "json":
        return json.dumps({**as_dict(t, period), "checks": checks_dict(checks)}, indent=2) + "\n"
    if checks and fmt == "text":
        return render_text(t, period) + checks_text(checks)
    if checks and fmt == "html":
        return render_html(t, period).replace("</pre>", html.escape(checks_text(checks)) + "</pre>", 1)
    return {"text": render_text, "json": render_json, "svg": render_svg, "html": render_html}[fmt](t, period)
