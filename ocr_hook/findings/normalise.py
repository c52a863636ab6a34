"""How a quoted snippet is turned into search patterns: the exact rewrites models really apply.

Everything here is a pure function of the snippet. Every rewrite is exact (a line either matches or
it does not); there is deliberately no similarity score anywhere, because a wrong anchor is worse
than none.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

SideHint = Literal["any", "new", "old", "diff"]

# A cut-short line that is the only real evidence for a match must be at least this long
# (characters after removing whitespace); shorter fragments match too many unrelated lines.
MIN_SOLE_CUT = 10
# A cut-short line backed by other whole, non-trivial lines only has to be non-empty: the whole
# lines already fix the place, the fragment only has to agree with its neighbour.
MIN_CUT = 1

_TRIVIAL_WORDS = frozenset(
    """
    end pass else elif try except finally default do then begin endif endfor endwhile endfunction
    done esac fi return continue break none null nil true false undefined this self super yield
    await async def function fn func const let var public private protected static import export
    from case switch throw raise new delete void int property staticmethod classmethod override
    abstractmethod dataclass lambda loop unsafe impl pub mut use mod type interface class struct
    enum module package namespace extends implements with where match when catch rescue ensure
    """.split()
)
# (Compiled at import: this module loads only when quotes are read, to anchor comments or build fixes.)
_WORD = re.compile(r"[^\W_]+")
_LINE_NUMBER = re.compile(r"^[ \t]*(\d{1,7})(?:[ \t]*[|│:]|\t)")
# diff header lines a model may copy along with marked lines; never code in a marked snippet
_DIFF_HEADER = re.compile(r"^(?:@@ .* @@|diff --git |index [0-9a-f]+\.\.|--- (?:a/|/dev/null)|\+\+\+ (?:b/|/dev/null))")
_FENCE = re.compile(r"^\s*(```|~~~)")
# A whole line standing for skipped lines: "...", "…", "// ...", "# … rest unchanged", "[...]".
# Not "...rest," (a JavaScript spread) nor Python's bare "..." taken literally: the literal reading
# is always tried first, so these only apply once the literal snippet has failed.
_ELLIPSIS_LINE = re.compile(r"^(?:(?://|#|--|;|/\*|<!--)(?:\.{2,}|…).*|\.{3,}|…+|[\[({](?:\.{3}|…)[\])}])$")
_TRAILING_DOTS = re.compile(r"(?:\.{3}|…)$")
_LEADING_DOTS = re.compile(r"^(?:\.{3}|…)")


def norm_line(text: str) -> str:
    """Whitespace-insensitive key of one line: every whitespace character removed."""
    return "".join(text.split())


def is_trivial(key: str) -> bool:
    """True for a normalised line that says nothing on its own: braces, `end`, `pass`, `x=0`."""
    words = _WORD.findall(key)
    if sum(len(w) for w in words) < 3:
        return True
    return len(words) == 1 and words[0].lower() in _TRIVIAL_WORDS


def is_ellipsis_line(key: str) -> bool:
    return bool(_ELLIPSIS_LINE.match(key))


class Form(NamedTuple):
    """One reading of the snippet: its lines after a set of textual rewrites."""

    lines: tuple[str, ...]  # right-stripped; blank lines are ignored by the matcher
    side: SideHint  # where diff markers say the lines live
    start_hint: int | None = None  # line number copied from the first quoted `N|` code line


class Segment(NamedTuple):
    """Consecutive non-blank lines; the first may be a line's tail, the last a line's head."""

    keys: tuple[str, ...]
    cut_first: bool = False
    cut_last: bool = False


Pattern = tuple[Segment, ...]  # segments in order; between two segments lie up to MAX_GAP lines


def clean_lines(snippet: str) -> tuple[str, ...]:
    """Split like git does (on LF only), dropping CR and trailing whitespace."""
    return tuple(line.rstrip() for line in snippet.split("\n"))


def unfenced(lines: tuple[str, ...]) -> tuple[str, ...] | None:
    body = [i for i, line in enumerate(lines) if line.strip()]
    if len(body) >= 3 and _FENCE.match(lines[body[0]]) and _FENCE.match(lines[body[-1]]):
        return lines[body[0] + 1 : body[-1]]
    return None


def without_line_numbers(lines: tuple[str, ...]) -> tuple[tuple[str, ...], int] | None:
    """Strip `12|` / `  12| ` prefixes copied from file_read, only when every line carries one."""
    out: list[str] = []
    first: int | None = None
    for line in lines:
        if not line.strip():
            out.append("")
            continue
        found = _LINE_NUMBER.match(line)
        if not found:
            return None
        rest = line[found.end() :]
        if first is None and rest.strip():
            first = int(found.group(1))
        out.append(rest)
    if first is None:
        return None
    return tuple(out), first


def without_markers(lines: tuple[str, ...]) -> tuple[tuple[str, ...], SideHint] | None:
    """Strip leading `+`/`-` diff markers; lines without one are taken as context lines."""
    kept: list[str] = []
    plus = minus = False
    for line in lines:
        if _DIFF_HEADER.match(line):
            continue
        if line[:1] == "+":
            plus = True
            kept.append(line[1:])
        elif line[:1] == "-":
            minus = True
            kept.append(line[1:])
        else:
            kept.append(line)
    if not (plus or minus):
        return None
    side: SideHint = "diff" if plus and minus else ("new" if plus else "old")
    return tuple(kept), side


class Reading(NamedTuple):
    """One literal reading of a quote (as written, or without its code fence, `N|` prefixes or diff
    markers) and which of those decorations were removed to get it."""

    lines: tuple[str, ...]
    fenced: bool = False
    numbered: bool = False
    marked: bool = False
    side: SideHint = "any"  # where diff markers say the lines live
    start_hint: int | None = None  # line number copied from the first quoted `N|` code line


def readings(snippet: str) -> list[Reading]:
    """Every literal reading of the snippet, most literal first (duplicates and blank ones included):
    what anchoring matches exactly (via `forms`) and what a fix may replace (ocr_hook.findings.fixes)."""
    out = [Reading(clean_lines(snippet))]
    inner = unfenced(out[0].lines)
    if inner is not None:
        out.append(Reading(inner, fenced=True))
    for reading in list(out):
        numbered = without_line_numbers(reading.lines)
        if numbered is not None:
            out.append(reading._replace(lines=numbered[0], numbered=True, start_hint=numbered[1]))
    for reading in list(out):
        marked = without_markers(reading.lines)
        if marked is not None:
            out.append(reading._replace(lines=marked[0], marked=True, side=marked[1],
                                        start_hint=reading.start_hint if marked[1] == "new" else None))
    return out


def forms(snippet: str) -> list[Form]:
    """Readings of the snippet, most literal first."""
    if not any(line.strip() for line in clean_lines(snippet)):
        return []
    seen: set[Form] = set()
    unique: list[Form] = []
    for reading in readings(snippet):
        form = Form(reading.lines, reading.side, reading.start_hint)
        if form not in seen and any(line.strip() for line in form.lines):
            seen.add(form)
            unique.append(form)
    return unique


def exact_pattern(form: Form) -> Pattern:
    keys = tuple(k for k in (norm_line(line) for line in form.lines) if k)
    return (Segment(keys),)


def gap_patterns(form: Form) -> list[Pattern]:
    """Readings with `...` lines as skipped lines and a trailing/leading `...` as a cut line; none
    when the snippet has no such mark. A `...`-like first or last line is first kept as a line of
    its own (it may be real text, like `/* ... */` or a docstring's `...`), then dropped."""
    keys = [k for k in (norm_line(line) for line in form.lines) if k]
    dropped = _gap_reading(keys, literal_edges=False)
    if dropped is None:
        return []
    edges = bool(keys) and (is_ellipsis_line(keys[0]) or is_ellipsis_line(keys[-1]))
    kept = _gap_reading(keys, literal_edges=True) if edges else None
    return [kept, dropped] if kept is not None and kept != dropped else [dropped]


def _gap_reading(keys: list[str], literal_edges: bool) -> Pattern | None:
    segments: list[Segment] = []
    current: list[str] = []
    cut_first = False
    marked = False

    def close(cut_last: bool) -> None:
        nonlocal current, cut_first
        if current:
            segments.append(Segment(tuple(current), cut_first, cut_last))
        current, cut_first = [], False

    for i, key in enumerate(keys):
        edge = literal_edges and i in (0, len(keys) - 1)
        if is_ellipsis_line(key) and not edge:
            marked = True
            close(False)
            continue
        lead = _LEADING_DOTS.match(key)
        if lead and len(key) > lead.end():
            marked = True
            close(False)
            key = key[lead.end() :]
            cut_first = True
        trail = _TRAILING_DOTS.search(key)
        if trail and trail.start() > 0:
            marked = True
            current.append(key[: trail.start()])
            close(True)
            continue
        current.append(key)
    close(False)
    if not marked or not segments:
        return None
    return tuple(segments)


def loose_patterns(base: Pattern) -> list[Pattern]:
    """The snippet's last line read as a line's head, its first as a line's tail, then both."""
    first, last = base[0], base[-1]
    if len(base) == 1:
        return [
            (first._replace(cut_last=True),),
            (first._replace(cut_first=True),),
            *([(first._replace(cut_first=True, cut_last=True),)] if len(first.keys) > 1 else []),
        ]
    return [
        (*base[:-1], last._replace(cut_last=True)),
        (first._replace(cut_first=True), *base[1:]),
        (first._replace(cut_first=True), *base[1:-1], last._replace(cut_last=True)),
    ]


def _cut_keys(segment: Segment) -> list[str]:
    keys = segment.keys
    return [k for k, cut in ((keys[0], segment.cut_first), (keys[-1], segment.cut_last)) if cut]


def _whole_keys(segment: Segment) -> tuple[str, ...]:
    start = 1 if segment.cut_first else 0
    stop = len(segment.keys) - (1 if segment.cut_last else 0)
    return segment.keys[start:stop]


def pattern_is_trivial(pattern: Pattern) -> bool:
    return all(is_trivial(key) for seg in pattern for key in seg.keys)


def pattern_is_sound(pattern: Pattern) -> bool:
    """A pattern with cut lines must carry enough evidence not to match unrelated code."""
    if not pattern or any(not seg.keys for seg in pattern):
        return False
    cut = [key for seg in pattern for key in _cut_keys(seg)]
    if not cut:
        return True
    if any(len(key) < MIN_CUT for key in cut):
        return False
    whole = [key for seg in pattern for key in _whole_keys(seg)]
    if any(not is_trivial(key) for key in whole):
        return True
    return all(len(key) >= MIN_SOLE_CUT and not is_trivial(key) for key in cut)
