"""Benchmark of comment anchoring on real code changes.

Cases come from (1) this repository's own git history and (2) diffs between two released versions
of a few real packages fetched at run time from PyPI (`pip download`) and npm (`npm pack`) into a
temporary directory; nothing is vendored. Hunks are produced by git and parsed by the project's own
parser (ocr_hook.changes). From each changed file snippets are taken (added, context, removed, lines
outside the hunks, lines repeated elsewhere, mixed removed+added diff fragments), perturbed the way
models perturb quotes, and anchored; fabricated snippets must not anchor at all.

Outcome of a case:
  exact      anchored to the truth range (start and end line)
  ambiguous  anchored to another range holding the very same code (normalised), while the snippet
             carries no line numbers: nothing in the snippet tells the two apart. Counted as correct,
             reported separately.
  wrong      anchored anywhere else; for fabricated snippets, anchored at all
  miss       not anchored (falls through to re-location / unanchored in the agent)

Run:  /work/venv/bin/python bench/bench_anchoring.py [--offline] [--seed N]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ocr_hook.changes import git
from ocr_hook.changes.collect import diff_files
from ocr_hook.changes.diff_parse import parse_changes
from ocr_hook.changes.model import FileChange, FileStatus, Hunk
from ocr_hook.errors import GitError
from ocr_hook.findings.anchoring import Anchor, FileIndex, anchor, anchor_prepared, prepare
from ocr_hook.findings.normalise import MIN_SOLE_CUT, is_ellipsis_line, is_trivial, norm_line

PYPI = [("requests", "2.31.0", "2.32.3"), ("click", "8.1.3", "8.1.7"), ("packaging", "23.1", "24.0"),
        ("flask", "2.3.3", "3.0.3")]
NPM = [("express", "4.18.2", "4.19.2"), ("axios", "1.6.0", "1.7.2"), ("lodash", "4.17.20", "4.17.21")]
TEXT_SUFFIXES = {".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".md", ".rst", ".txt", ".toml", ".cfg",
                 ".yaml", ".yml", ".json", ".html", ".css", ".sh", ".ini", ".in"}
MAX_FILE_LINES = 20_000
PER_FILE = 3  # cases per (file, origin, perturbation) at most


@dataclass(frozen=True)
class Source:
    label: str
    path: str
    new_text: str
    new_lines: tuple[str, ...]
    hunks: tuple[Hunk, ...]


# --- corpus --------------------------------------------------------------------------------------


def _run(args: list[str], cwd: str | None = None, timeout: float = 180) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(args, cwd=cwd, capture_output=True, timeout=timeout, check=False)


def _text_file(path: str, text: str) -> bool:
    if Path(path).suffix.lower() not in TEXT_SUFFIXES or "\0" in text:
        return False
    lines = text.count("\n")
    return 0 < lines <= MAX_FILE_LINES and len(text) / max(lines, 1) < 300  # no minified bundles


def history_sources(repo: str, max_commits: int) -> list[Source]:
    commits = git.git_text(repo, ["rev-list", f"--max-count={max_commits}", "HEAD"]).split()
    out: list[Source] = []
    for commit in commits:
        parent = git.first_parent(repo, commit) or git.empty_tree(repo)
        for change in diff_files(repo, parent, commit):
            if change.status is FileStatus.DELETED or change.is_binary or not change.hunks:
                continue
            blob = git.run_git(repo, ["show", f"{commit}:{change.path}"], ok_codes=(0, 128))
            text = git.decode(blob.stdout)
            if blob.returncode == 0 and _text_file(change.path, text):
                out.append(_source(f"git:{commit[:8]}", change, text))
    return out


def _source(label: str, change: FileChange, text: str, path: str | None = None) -> Source:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return Source(label, path or change.path, text, tuple(lines), change.hunks)


def _unpack(archive: Path, into: Path) -> Path | None:
    into.mkdir(parents=True)
    if archive.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")
    elif archive.suffix in (".zip", ".whl"):
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(into)
    else:
        return None
    entries = list(into.iterdir())
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else into


def _fetch(kind: str, name: str, version: str, into: Path) -> Path | None:
    into.mkdir(parents=True, exist_ok=True)
    kept = [p for p in into.iterdir() if p.is_file()]
    if kept:  # --download-dir given and filled by an earlier run
        return kept[0]
    if kind == "pypi":
        quick = ["--timeout", "15", "--retries", "1", "--disable-pip-version-check"]
        args = [sys.executable, "-m", "pip", "download", "--quiet", *quick, "--no-deps", "--no-binary", ":all:",
                "--no-build-isolation", "-d", str(into), f"{name}=={version}"]
        done = _run(args)
        if done.returncode != 0:  # some sdists need a build backend: fall back to the wheel
            args = [sys.executable, "-m", "pip", "download", "--quiet", *quick, "--no-deps", "--only-binary",
                    ":all:", "-d", str(into), f"{name}=={version}"]
            done = _run(args)
    else:
        done = _run(["npm", "pack", "--silent", "--fetch-retries=1", "--fetch-timeout=15000", f"{name}@{version}"],
                    cwd=str(into))
    if done.returncode != 0:
        return None
    archives = [p for p in into.iterdir() if p.is_file()]
    return archives[0] if archives else None


def package_sources(kind: str, name: str, old: str, new: str, work: Path, downloads: Path) -> list[Source]:
    base = work / f"{kind}-{name}"
    old_archive = _fetch(kind, name, old, downloads / f"{kind}-{name}-{old}")
    new_archive = _fetch(kind, name, new, downloads / f"{kind}-{name}-{new}")
    if old_archive is None or new_archive is None:
        raise OSError(f"could not download {name} {old} / {new}")
    old_root = _unpack(old_archive, base / "x-old")
    new_root = _unpack(new_archive, base / "x-new")
    if old_root is None or new_root is None:
        raise OSError(f"unknown archive format for {name}")
    os.rename(old_root, base / "old")
    os.rename(new_root, base / "new")
    args = ["diff", "--no-index", *git.DIFF_OPTIONS, "old", "new"]
    raw = git.git_text(str(base), [*args, "--raw", "-z", "--no-abbrev"], ok_codes=(0, 1))
    patch = git.git_text(str(base), args, ok_codes=(0, 1))
    out: list[Source] = []
    for change in parse_changes(raw, patch):
        if change.status is FileStatus.DELETED or change.is_binary or not change.hunks:
            continue
        rel = change.path.split("/", 1)[1]
        path = base / "new" / rel
        if not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", "surrogateescape")
        if _text_file(rel, text):
            out.append(_source(f"{kind}:{name} {old}..{new}", change, text, rel))
    return out


# --- cases ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    kind: str  # "+", "-", " " (diff rows) or "=" (a new-file line outside the hunks)
    text: str
    new_no: int | None
    shown: int  # the new-file line this row stands at (deleted rows: the line now where they were)


@dataclass(frozen=True)
class Case:
    source: int
    origin: str
    perturbation: str
    snippet: str
    truth: tuple[int, int] | None
    side: str
    keys: tuple[str, ...]  # normalised original code, for telling ambiguous from wrong
    located: bool  # the snippet carries line numbers


def _shown_rows(hunk: Hunk, count: int) -> list[Row]:
    """Diff rows with the new-file line each stands at, by the documented rule, written here
    independently of the anchoring code: a removed row pairs with the added row at the same place
    in the run of added rows that replaces its run (the last one if fewer), else the line after."""
    rows = list(hunk.lines)
    shown: list[int] = []
    for i, line in enumerate(rows):
        if line.new_no is not None:
            shown.append(line.new_no)
            continue
        start = i
        while start > 0 and rows[start - 1].kind == "-":
            start -= 1
        end = i
        while end < len(rows) and rows[end].kind == "-":
            end += 1
        added = list(itertools.takewhile(lambda r: r.kind == "+", rows[end:]))
        if added:
            shown.append(added[min(i - start, len(added) - 1)].new_no or 0)
        else:
            after = [r.new_no for r in rows[end:] if r.new_no is not None]
            before = [r.new_no for r in rows[:start] if r.new_no is not None]
            shown.append(after[0] if after else (before[-1] + 1 if before else hunk.new_start + (hunk.new_len == 0)))
    return [Row(line.kind, line.text, line.new_no, min(max(n, 1), max(count, 1)))
            for line, n in zip(rows, shown, strict=True)]


def _keys(rows: list[Row]) -> tuple[str, ...]:
    return tuple(k for k in (norm_line(r.text) for r in rows) if k)


def _worth_quoting(rows: list[Row]) -> bool:
    keys = _keys(rows)
    return bool(keys) and bool(rows[0].text.strip()) and bool(rows[-1].text.strip()) and not all(
        is_trivial(k) for k in keys
    )


def _occurs(keys: tuple[str, ...], lines: list[str]) -> int:
    m = len(keys)
    return sum(1 for i in range(len(lines) - m + 1) if tuple(lines[i : i + m]) == keys)


class Sampler:
    def __init__(self, src: Source, rng: random.Random) -> None:
        self.src = src
        self.rng = rng
        count = len(src.new_lines)
        self.hunk_rows = [_shown_rows(h, count) for h in src.hunks]
        in_hunk = {r.new_no for rows in self.hunk_rows for r in rows if r.new_no}
        self.outside = [Row("=", t, i, i) for i, t in enumerate(src.new_lines, 1) if i not in in_hunk]
        self.new_keys = [k for k in (norm_line(t) for t in src.new_lines) if k]
        self.old_keys = [_keys([r for r in rows if r.kind != "+"]) for rows in self.hunk_rows]

    def _runs(self, rows: list[Row], ok: Callable[[list[Row]], bool], lo: int, hi: int) -> Iterator[list[Row]]:
        for _ in range(40):
            if not rows:
                return
            size = self.rng.randint(lo, hi)
            start = self.rng.randrange(len(rows))
            run = rows[start : start + size]
            if self._contiguous(run) and _worth_quoting(run) and ok(run):
                yield run

    @staticmethod
    def _contiguous(run: list[Row]) -> bool:
        if any(r.kind == "=" for r in run):
            nos = [r.new_no for r in run]
            return all(b == a + 1 for a, b in itertools.pairwise(nos))  # type: ignore[operator]
        return True

    def origin(self, name: str, lo: int = 1, hi: int = 6) -> list[Row] | None:
        rng = self.rng
        if name == "file":
            return next(self._runs(self.outside, lambda run: True, lo, hi), None)
        hunks = list(self.hunk_rows)
        rng.shuffle(hunks)
        for rows in hunks:
            new_side = [r for r in rows if r.kind != "-"]
            old_side = [r for r in rows if r.kind != "+"]
            if name == "added":
                found = next(self._runs(new_side, lambda run: any(r.kind == "+" for r in run), lo, hi), None)
            elif name == "context":
                found = next(self._runs(new_side, lambda run: all(r.kind == " " for r in run), lo, hi), None)
            elif name == "removed":
                found = next(self._runs(old_side, self._removed_ok, lo, hi), None)
            elif name == "repeated":
                found = next(self._runs(new_side, lambda run: _occurs(_keys(run), self.new_keys) >= 2, 1, 3), None)
            elif name == "diff_fragment":
                found = next(self._runs(rows, self._mixed_ok, 2, 6), None)
            else:
                raise ValueError(name)
            if found:
                return found
        return None

    def trivial_run(self) -> list[Row] | None:
        """One or two lines of braces / `end` / `pass` among the added lines, quoted alone."""
        for rows in self.hunk_rows:
            for i, row in enumerate(rows):
                run = rows[i : i + self.rng.randint(1, 2)]
                keys = _keys(run)
                if row.kind == "+" and keys and all(is_trivial(k) for k in keys) and run[-1].text.strip():
                    if all(r.kind != "-" for r in run) and self.rng.random() < 0.3:
                        return run
        return None

    def _removed_ok(self, run: list[Row]) -> bool:
        # quoted deleted code that still exists verbatim in the new file has no single right answer
        return any(r.kind == "-" for r in run) and _occurs(_keys(run), self.new_keys) == 0

    def _mixed_ok(self, run: list[Row]) -> bool:
        kinds = {r.kind for r in run}
        keys = _keys(run)
        return {"+", "-"} <= kinds and _occurs(keys, self.new_keys) == 0 and not any(
            _occurs(keys, old) for old in self.old_keys
        )


# --- perturbations (each returns the snippet text, or None when it does not apply) -------------

_INDENT = re.compile(r"^[ \t]*")
_NUMBERED = re.compile(r"^ *\d+\|")


def p_exact(rows: list[Row], rng: random.Random) -> str | None:
    return "\n".join(r.text for r in rows)


def p_markers(rows: list[Row], rng: random.Random) -> str | None:
    if any(r.kind == "=" for r in rows):
        return None
    return "\n".join(r.kind + r.text for r in rows)


def p_line_numbers(rows: list[Row], rng: random.Random) -> str | None:
    if any(r.new_no is None for r in rows):
        return None
    if rng.random() < 0.5:
        return "\n".join(f"{r.new_no}|{r.text}" for r in rows)
    return "\n".join(f"{r.new_no:>6}| {r.text}" for r in rows)


def p_reindent(rows: list[Row], rng: random.Random) -> str | None:
    texts = [r.text for r in rows]
    indents = [len(_INDENT.match(t).group()) for t in texts if t.strip()]  # type: ignore[union-attr]
    common = min(indents) if indents else 0
    choice = rng.choice(["dedent", "indent", "tabs"]) if common else rng.choice(["indent", "tabs"])
    if choice == "dedent":
        out = [t[common:] if t.strip() else t for t in texts]
    elif choice == "indent":
        out = [("  " + t) if t.strip() else t for t in texts]
    else:
        out = ["\t" + t.lstrip() if t.strip() else t for t in texts]
    return "\n".join(out) if out != texts else None


_SPACED = re.compile(r"\s*([=,()+\-*/<>:\[\]{}])\s*")


def p_inner_spacing(rows: list[Row], rng: random.Random) -> str | None:
    out = []
    for r in rows:
        indent = _INDENT.match(r.text).group()  # type: ignore[union-attr]
        body = r.text[len(indent) :]
        if rng.random() < 0.5:
            body = _SPACED.sub(r"\1", body)
        else:
            body = _SPACED.sub(r" \1 ", body).strip()
            body = re.sub(r"(\S) {2,}", r"\1  ", body)
        out.append(indent + body)
    texts = [r.text for r in rows]
    return "\n".join(out) if out != texts else None


def p_trailing_ws_cr(rows: list[Row], rng: random.Random) -> str | None:
    return "\n".join(r.text + rng.choice(["", " ", "  ", "\t"]) + "\r" for r in rows)


def p_blank_lines(rows: list[Row], rng: random.Random) -> str | None:
    texts = [r.text for r in rows]
    if len([t for t in texts if t.strip()]) < 2:
        return None
    if any(not t.strip() for t in texts):
        return "\n".join(t for t in texts if t.strip())
    at = rng.randrange(1, len(texts))
    return "\n".join([*texts[:at], "", *texts[at:]])


def _cut_point(body: str, rng: random.Random) -> int | None:
    """Where a model stops or starts quoting: a token boundary between 30% and 80% of the line."""
    lo, hi = int(len(body) * 0.3), int(len(body) * 0.8)
    spots = [i for i in range(max(lo, 1), hi) if not body[i - 1].isalnum() or not body[i].isalnum()]
    return rng.choice(spots) if spots else None


SHORT_FRAGMENTS: Counter[str] = Counter()


def _fragment_ok(others: list[Row], fragment: str) -> bool:
    """The documented rule: a cut line must be non-empty, and at least 10 non-space characters
    (and not trivial) unless another quoted line is a real line of code."""
    key = norm_line(fragment)
    if is_ellipsis_line(key) or key.startswith(("...", "…")) or key.endswith(("...", "…")):
        # e.g. "...rest" (a JavaScript spread) cut to "...re": by the contract, dots at the edge of
        # a quoted line mark where the quote was cut or lines were skipped
        SHORT_FRAGMENTS["cut-short fragment with dots at its edge (case not generated)"] += 1
        return False
    backed = any(not is_trivial(k) for k in _keys(others))
    ok = bool(key) and (backed or (len(key) >= MIN_SOLE_CUT and not is_trivial(key)))
    if not ok:
        SHORT_FRAGMENTS["cut-short fragment under the documented minimum (case not generated)"] += 1
    return ok


def p_cut_first(rows: list[Row], rng: random.Random) -> str | None:
    texts = [r.text for r in rows]
    body = texts[0].strip()
    at = _cut_point(body, rng)
    if at is None or not _fragment_ok(rows[1:], body[at:]):
        return None
    texts[0] = body[at:]
    return "\n".join(texts)


def p_cut_last(rows: list[Row], rng: random.Random) -> str | None:
    texts = [r.text for r in rows]
    body = texts[-1].strip()
    at = _cut_point(body, rng)
    if at is None or not _fragment_ok(rows[:-1], body[:at]):
        return None
    indent = _INDENT.match(texts[-1]).group()  # type: ignore[union-attr]
    texts[-1] = indent + body[:at] + (" ..." if rng.random() < 0.3 else "")
    return "\n".join(texts)


def p_ellipsis(rows: list[Row], rng: random.Random) -> str | None:
    texts = [r.text for r in rows]
    if len(texts) < 4:
        return None
    a = rng.randrange(1, len(texts) - 2)
    b = rng.randrange(a + 1, len(texts) - 1)
    indent = _INDENT.match(texts[a]).group()  # type: ignore[union-attr]
    mark = indent + rng.choice(["...", "…", "# ...", "// ...", "// ... existing code ..."])
    return "\n".join([*texts[:a], mark, *texts[b:]])


def p_combined(rows: list[Row], rng: random.Random) -> str | None:
    """Two perturbations at once: a rewrite of the code, then markers or line numbers."""
    rewrite = rng.choice([p_reindent, p_inner_spacing, p_blank_lines, p_cut_last])
    text = rewrite(rows, rng)
    if text is None:
        return None
    lines = text.split("\n")
    if rewrite is p_blank_lines:
        return "\n".join(("+" + t) if t else t for t in lines) if all(r.kind == "+" for r in rows) else None
    wrapped = [Row(r.kind, t, r.new_no, r.shown) for r, t in zip(rows, lines, strict=True)]
    return rng.choice([p_markers, p_line_numbers])(wrapped, rng)


PERTURBATIONS: dict[str, Callable[[list[Row], random.Random], str | None]] = {
    "exact": p_exact,
    "diff_markers": p_markers,
    "line_numbers": p_line_numbers,
    "reindent": p_reindent,
    "inner_spacing": p_inner_spacing,
    "trailing_ws_cr": p_trailing_ws_cr,
    "blank_lines": p_blank_lines,
    "cut_first": p_cut_first,
    "cut_last": p_cut_last,
    "ellipsis": p_ellipsis,
    "combined": p_combined,
}
ORIGINS = ["added", "context", "removed", "file", "repeated", "diff_fragment"]


def _truth(rows: list[Row]) -> tuple[tuple[int, int], str]:
    if all(r.kind == "-" or r.kind == " " for r in rows) and any(r.kind == "-" for r in rows):
        side = "old"
    else:
        side = "new"
    start = rows[0].shown
    return (start, max(start, rows[-1].shown)), side


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def _mutate(text: str, rng: random.Random) -> str | None:
    names = list(_IDENT.finditer(text))
    if not names:
        return None
    hit = rng.choice(names)
    word = hit.group()
    how = rng.randrange(3)
    if how == 0 and len(word) > 3:
        i = rng.randrange(1, len(word) - 1)
        new = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    elif how == 1:
        new = word + rng.choice(["2", "_x", "s"])
    else:
        i = rng.randrange(len(word))
        new = word[:i] + rng.choice("qzjxk") + word[i + 1 :]
    if new == word:
        return None
    return text[: hit.start()] + new + text[hit.end() :]


def fabricated(sampler: Sampler, rng: random.Random) -> tuple[str, str] | None:
    rows = sampler.origin(rng.choice(["added", "context", "file"]), 1, 4)
    if rows is None:
        return None
    texts = [r.text for r in rows]
    candidates = [i for i, t in enumerate(texts) if _IDENT.search(t)]
    if not candidates:
        return None
    i = rng.choice(candidates)
    mutated = _mutate(texts[i], rng)
    if mutated is None:
        return None
    key = norm_line(mutated)
    haystack = sampler.new_keys + [k for old in sampler.old_keys for k in old]
    if any(key in k for k in haystack):  # the "fabricated" line exists after all
        return None
    texts[i] = mutated
    style = rng.choice(["plain", "plain", "markers", "numbers", "reindent"])
    mutated_rows = [Row(r.kind, t, r.new_no, r.shown) for r, t in zip(rows, texts, strict=True)]
    render = {"plain": p_exact, "markers": p_markers, "numbers": p_line_numbers, "reindent": p_reindent}[style]
    text = render(mutated_rows, rng) or p_exact(mutated_rows, rng)
    return text or "", style


def build_cases(sources: list[Source], seed: int) -> tuple[list[Case], Counter[str]]:
    rng = random.Random(seed)
    cases: list[Case] = []
    skipped: Counter[str] = Counter()
    for number, src in enumerate(sources):
        sampler = Sampler(src, rng)
        for origin in ORIGINS:
            for name, perturb in PERTURBATIONS.items():
                for _ in range(PER_FILE if name == "exact" else 1):
                    lo, hi = (4, 12) if name == "ellipsis" else (1, 6)
                    rows = sampler.origin(origin, lo, hi)
                    if rows is None:
                        skipped[f"{origin}: no such lines"] += 1
                        continue
                    snippet = perturb(rows, rng)
                    if snippet is None:
                        skipped[f"{name}: not applicable"] += 1
                        continue
                    truth, side = _truth(rows)
                    located = bool(_NUMBERED.match(snippet))  # carries `N|` line numbers
                    cases.append(Case(number, origin, name, snippet, truth, side, _keys(rows), located))
        for _ in range(4):
            made = fabricated(sampler, rng)
            if made is not None:
                cases.append(Case(number, "fabricated", f"fabricated/{made[1]}", made[0], None, "", (), False))
        rows = sampler.trivial_run()
        if rows is not None:
            truth, side = _truth(rows)
            cases.append(Case(number, "trivial", "trivial_only", p_exact(rows, rng) or "", truth, side,
                              _keys(rows), False))
    return cases, skipped


# --- evaluation ----------------------------------------------------------------------------------


@dataclass
class Tally:
    outcomes: Counter[str] = field(default_factory=Counter)
    times: list[float] = field(default_factory=list)
    side_mismatch: int = 0


Keyed = list[tuple[str, int]]  # (normalised line, new-file line it stands at), blank lines left out


def _keyed(rows: list[Row]) -> Keyed:
    return [(k, r.shown) for k, r in ((norm_line(r.text), r) for r in rows) if k]


def spaces_of(src: Source) -> dict[str, list[Keyed]]:
    """The sequences a snippet of each origin was taken from, to find every copy of its code."""
    count = len(src.new_lines)
    rows = [_shown_rows(h, count) for h in src.hunks]
    new = _keyed([Row("=", t, i, i) for i, t in enumerate(src.new_lines, 1)])
    return {
        "new": [new],
        "removed": [_keyed([r for r in hunk if r.kind != "+"]) for hunk in rows],
        "diff_fragment": [_keyed(hunk) for hunk in rows],
    }


def copies(keys: tuple[str, ...], sequences: list[Keyed]) -> set[tuple[int, int]]:
    """Ranges holding exactly this code (normalised), in any of the sequences."""
    out = set()
    m = len(keys)
    for seq in sequences:
        for i in range(len(seq) - m + 1):
            if all(seq[i + j][0] == keys[j] for j in range(m)):
                start = seq[i][1]
                out.add((start, max(start, seq[i + m - 1][1])))
    return out


def judge(case: Case, found: Anchor | None, spaces: dict[str, list[Keyed]]) -> str:
    if case.truth is None:
        return "exact" if found is None else "wrong"
    if found is None:
        return "miss"
    got = (found.start_line, found.end_line)
    if got == case.truth:
        return "exact"
    if case.located:
        return "wrong"
    # the same code (normalised) also stands there: as a line range of the new file, as deleted
    # lines, or as a run of diff rows
    same = set().union(*(copies(case.keys, sequences) for sequences in spaces.values()))
    return "ambiguous" if got in same else "wrong"


def evaluate(sources: list[Source], cases: list[Case], show: int) -> dict[str, Tally]:
    indexes: dict[int, FileIndex] = {}
    spaces: dict[int, dict[str, list[Keyed]]] = {}
    tallies: dict[str, Tally] = defaultdict(Tally)
    shown = 0
    for case in cases:
        src = sources[case.source]
        if case.source not in indexes:
            indexes[case.source] = prepare(src.new_text, src.hunks)
            spaces[case.source] = spaces_of(src)
        began = time.perf_counter()
        found = anchor_prepared(case.snippet, indexes[case.source])
        spent = time.perf_counter() - began
        outcome = judge(case, found, spaces[case.source])
        klass = case.perturbation.split("/")[0]
        # trivial-only quotes are reported on their own: refusing them (a miss) is the intended answer
        keys = [klass, f"origin:{case.origin}", *([] if case.origin == "trivial" else ["TOTAL"])]
        for key in keys:
            tallies[key].outcomes[outcome] += 1
            tallies[key].times.append(spent)
            if found is not None and case.side and found.side != case.side and outcome == "exact":
                tallies[key].side_mismatch += 1
        if outcome in ("wrong", "miss") and shown < show:
            shown += 1
            print(f"--- {outcome}: {case.origin}/{case.perturbation} {src.label} {src.path} truth={case.truth} "
                  f"got={found}\n{case.snippet}\n")
    return tallies


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0


def report(tallies: dict[str, Tally]) -> None:
    head = f"{'class':<24}{'cases':>7}{'exact%':>9}{'ambig%':>8}{'correct%':>10}{'wrong%':>8}{'miss%':>8}" \
           f"{'med ms':>9}{'p95 ms':>8}{'side!':>6}"
    print(head)
    print("-" * len(head))
    order = [k for k in tallies if k != "TOTAL" and not k.startswith("origin:")]
    order += [*sorted(k for k in tallies if k.startswith("origin:")), "TOTAL"]
    for key in order:
        t = tallies[key]
        n = sum(t.outcomes.values())

        def pct(name: str, t: Tally = t, n: int = n) -> float:
            return 100.0 * t.outcomes[name] / n

        print(f"{key:<24}{n:>7}{pct('exact'):>9.2f}{pct('ambiguous'):>8.2f}"
              f"{pct('exact') + pct('ambiguous'):>10.2f}{pct('wrong'):>8.2f}{pct('miss'):>8.2f}"
              f"{_ms(t.times, 0.5):>9.3f}{_ms(t.times, 0.95):>8.3f}{t.side_mismatch:>6}")


# --- 10,000-line file timing ---------------------------------------------------------------------


def big_file_timing(sources: list[Source], seed: int, work: Path) -> None:
    rng = random.Random(seed)
    lines: list[str] = []
    for src in sorted(sources, key=lambda s: (s.label, s.path)):
        if src.path.endswith((".py", ".js")):
            lines.extend(src.new_lines)
        if len(lines) >= 10_000:
            break
    if len(lines) < 10_000:
        print("10k-line timing skipped: not enough source lines in the corpus")
        return
    new_lines = lines[:10_000]
    old_lines = list(new_lines)
    for _ in range(25):  # the old version: some lines removed, changed or not yet there
        at = rng.randrange(len(old_lines) - 5)
        what = rng.randrange(3)
        if what == 0:
            old_lines[at : at + 3] = []
        elif what == 1:
            old_lines[at] = old_lines[at] + " # before"
        else:
            old_lines.insert(at, "legacy_call(state)")
    base = work / "big"
    (base / "old").mkdir(parents=True)
    (base / "new").mkdir(parents=True)
    (base / "old" / "big.py").write_text("\n".join(old_lines) + "\n", encoding="utf-8", errors="surrogateescape")
    new_text = "\n".join(new_lines) + "\n"
    (base / "new" / "big.py").write_text(new_text, encoding="utf-8", errors="surrogateescape")
    args = ["diff", "--no-index", *git.DIFF_OPTIONS, "old/big.py", "new/big.py"]
    raw = git.git_text(str(base), [*args, "--raw", "-z", "--no-abbrev"], ok_codes=(0, 1))
    patch = git.git_text(str(base), args, ok_codes=(0, 1))
    change = parse_changes(raw, patch)[0]
    src = _source("synthetic", change, new_text)
    began = time.perf_counter()
    index = prepare(src.new_text, src.hunks)
    prep = time.perf_counter() - began
    cases, _ = build_cases([src] * 12, seed)
    tallies = evaluate([src] * 12, cases, 0)
    t = tallies["TOTAL"]
    times = []
    for case in cases[:50]:
        began = time.perf_counter()
        anchor(case.snippet, src.hunks, src.new_text)
        times.append(time.perf_counter() - began)
    n = sum(t.outcomes.values())
    print(f"10,000-line file ({len(change.hunks)} hunks): prepare {prep * 1000:.1f} ms once; "
          f"anchor_prepared over {n} cases: median {_ms(t.times, 0.5):.3f} ms, p95 {_ms(t.times, 0.95):.3f} ms, "
          f"max {_ms(t.times, 1.0):.3f} ms; exact {100 * t.outcomes['exact'] / n:.1f}%, "
          f"wrong {100 * t.outcomes['wrong'] / n:.2f}%; anchor() incl. prepare: median {_ms(times, 0.5):.1f} ms")
    del index


# --- main ----------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--offline", action="store_true", help="skip the PyPI and npm downloads")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repo", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("--max-commits", type=int, default=300)
    parser.add_argument("--show", type=int, default=0, help="print this many wrong/missed cases")
    parser.add_argument("--download-dir", help="keep downloaded archives here (default: a temporary directory)")
    opts = parser.parse_args()

    sources = history_sources(opts.repo, opts.max_commits)
    print(f"git history of {opts.repo}: {len(sources)} changed text files")
    with tempfile.TemporaryDirectory(prefix="ocr-anchor-bench-") as tmp:
        work = Path(tmp)
        downloads = Path(opts.download_dir) if opts.download_dir else work / "downloads"
        for kind, packages in (("pypi", PYPI), ("npm", NPM)):
            unreachable = opts.offline
            for name, old, new in packages:
                if unreachable:
                    print(f"{kind} {name}: skipped ({'--offline' if opts.offline else 'registry unreachable'})")
                    continue
                try:
                    found = package_sources(kind, name, old, new, work, downloads)
                except (OSError, subprocess.SubprocessError, GitError, ValueError) as exc:
                    print(f"{kind} {name} {old}..{new}: skipped ({exc})")
                    unreachable = not any(downloads.glob(f"{kind}-*/*"))  # nothing ever came: offline
                    continue
                print(f"{kind} {name} {old}..{new}: {len(found)} changed text files")
                sources.extend(found)
        cases, skipped = build_cases(sources, opts.seed)
        print(f"{len(cases)} cases from {len(sources)} files (seed {opts.seed}); not generated: "
              f"{dict(skipped + SHORT_FRAGMENTS)}")
        tallies = evaluate(sources, cases, opts.show)
        print()
        report(tallies)
        print()
        big_file_timing(sources, opts.seed, work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
