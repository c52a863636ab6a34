"""`ocr-hook outcomes`: what share of the findings people acted on, from the review history in the cache
directory (ocr_hook.store.history), for a period, a set of pull requests, or commit-time reviews only."""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence

from ocr_hook.errors import FatalError

_RELATIVE = re.compile(r"\A(\d{1,5})([dw])\Z")
SOURCES = ("commit", "ci", "manual")


def parse_when(text: str, *, now: float, option: str, end_of_day: bool = False) -> float:
    """`30d`, `2w` (before now) or a date `2026-11-01` (UTC; the end of that day for --until)."""
    text = text.strip()
    if match := _RELATIVE.match(text):
        days = int(match.group(1)) * (7 if match.group(2) == "w" else 1)
        return now - days * 86_400.0
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        raise FatalError(f"{option} {text!r}: give a date (2026-11-01) or a span before now (30d, 2w)") from None
    start = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()
    return start + 86_400.0 - 0.001 if end_of_day else start


def _period(since: float | None, until: float | None) -> str:
    def day(t: float) -> str:
        return dt.datetime.fromtimestamp(t, tz=dt.UTC).date().isoformat()

    if since is None and until is None:
        return "(all history)"
    return f"{day(since) if since is not None else 'start'} to {day(until) if until is not None else 'now'}"


def run(since: str | None, until: str | None, requests: Sequence[str], sources: Sequence[str], fmt: str,
        output: str | None, config_file: str | None, *, environ: Mapping[str, str] | None = None) -> int:
    from ocr_hook.changes.git import repo_top
    from ocr_hook.settings import load
    from ocr_hook.store import history
    from ocr_hook.store.memory import repository_id
    from ocr_hook.store.result_cache import run_cache_dir
    from ocr_hook.tally.checks import count_checks
    from ocr_hook.tally.count import tally, track
    from ocr_hook.tally.render import render
    from ocr_hook.tally.valid import well_formed

    environ = os.environ if environ is None else environ
    now = time.time()
    start = parse_when(since, now=now, option="--since") if since and since != "all" else None
    end = parse_when(until, now=now, option="--until", end_of_day=True) if until else None
    if start is not None and end is not None and start > end:
        raise FatalError("--since is after --until: nothing lies between them")
    root, _head = repo_top(os.getcwd())
    settings = load(root, config_file, flags={}, environ=environ)
    cache_dir = run_cache_dir(settings.cache_dir, environ)
    entries, skipped = well_formed(history.entries(cache_dir, history.repository_names(repository_id(root))))
    if skipped:
        sys.stderr.write(f"ocr-hook: note: {skipped} history entr{'y' if skipped == 1 else 'ies'} skipped: not in "
                         f"the form ocr-hook writes (a damaged file, or another version's), under {cache_dir}\n")
    tracked, reviews = track(entries, since=start, until=end, requests=list(requests), sources=list(sources))
    checks = count_checks(entries, since=start, until=end, requests=list(requests), sources=list(sources))
    text = render(fmt, tally(tracked, reviews), _period(start, end), checks)
    # Paths, categories and names are anyone's text: none may act on a terminal or a CI log. JSON escapes control
    # characters itself and starts no line with `::`; a legacy `##[` command inside a string becomes an escape
    # that reads back as the same text.
    text = text.replace("##[", "#\\u0023[") if fmt == "json" else _printable(text)
    if output:
        from ocr_hook.store.atomic import write_atomic  # a failure is one line, exit 2

        write_atomic(output, text)
        sys.stderr.write(f"ocr-hook: outcomes written to {output}\n")
    else:
        sys.stdout.write(text)
    return 0


def _printable(text: str) -> str:
    """Each line with its control and format characters escaped (which also keeps an SVG or HTML page valid
    XML) and no workflow command (commands.progress.sanitise); the line breaks stay."""
    from ocr_hook.commands.progress import sanitise

    return "\n".join(sanitise(line) for line in text.split("\n"))
