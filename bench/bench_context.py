"""Benchmark: does each file's first request carry the context pack it should (issue 27, DESIGN.md section 12)?

Run:  python bench/bench_context.py [--downloads DIR] [--package NAME ...] [--repeat N] [--misses N]
          [--json FILE] [--dump DIR]

For each package below, its two released versions are fetched from PyPI (wheels, `pip download`) or npm
(`npm pack`) into --downloads (default a temporary directory; a filled directory is reused), the older one
committed in a scratch git repository and the newer one staged over it, as at commit time. The real CLI
(`ocr-hook review`, PRE_COMMIT=1 so the quick profile) reviews it against the scripted fake Messages API
started in this process, twice: with the pack and with `--no-context`. Each file's first request is read
from the fake; what the pack added is the first request's text with it minus the one without it.

The ground truth (bench/context_truth.py) is computed without the pack's code: definitions in other files
of names called or referenced on added lines (Python: its own `ast` import resolver; JavaScript: its own
import map), and the callers in other files of each function whose signature lines changed. A definition
counts as found when its path and its signature line are in what the pack added; a changed function
scores min(found, 3, n) of min(3, n) for its n callers. Printed per package: files reviewed, definitions
and callers expected / found (recall), tokens the pack adds per file on average (the fake's count of the
first request's input), and the review's wall time with and without the pack (median of --repeat runs of
each mode, in alternating order). Then a sample of misses; --dump DIR writes each file's pack as sent.
Targets (issue 27): definition recall >= 90 %, caller recall >= 80 %, <= 2,000 tokens per file, <= 1.25x.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
for _p in (REPO_ROOT / "tests", REPO_ROOT / "bench", REPO_ROOT):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from agent_support import is_filter, is_relocate  # noqa: E402
from context_truth import CallerGroup, Definition, Truth, expected  # noqa: E402
from fake_api import FakeMessagesAPI, RecordedRequest, Reply, task_done, text  # noqa: E402

# Small-to-medium packages with calls across files; the version pairs are real releases.
PACKAGES = [
    ("pypi", "click", "8.1.3", "8.1.7"),
    ("pypi", "flask", "2.3.3", "3.0.3"),
    ("pypi", "httpx", "0.25.2", "0.27.0"),
    ("pypi", "jinja2", "3.1.2", "3.1.4"),
    ("pypi", "packaging", "23.1", "24.0"),
    ("npm", "axios", "1.6.0", "1.7.2"),
    ("npm", "fastify", "4.24.0", "4.26.0"),
    ("npm", "pino", "8.16.0", "8.19.0"),
]
TEXT_SUFFIXES = {".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".json", ".md", ".rst", ".txt", ".toml", ".cfg",
                 ".yaml", ".yml", ".html", ".css", ".sh", ".ini", ".typed"}
OPENING = re.compile(r"^Review the change to `([^`]+)`")
NEEDLE_CHARS = 60  # a signature or call line is looked for by its first characters (a pack may cut long lines)
CLI_TIMEOUT_S = 900
TARGETS = {"definitions": 0.90, "callers": 0.80, "tokens": 2000, "ratio": 1.25}


# --------------------------------------------------------------------------------------------- the corpus


def fetch(kind: str, name: str, version: str, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    kept = sorted(p for p in into.iterdir() if p.is_file())
    if kept:
        return kept[0]
    if kind == "pypi":
        args = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                "--only-binary", ":all:", "--timeout", "30", "-d", str(into), f"{name}=={version}"]
        done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    else:
        done = subprocess.run(["npm", "pack", "--silent", f"{name}@{version}"], cwd=into, capture_output=True,
                              text=True, timeout=300)
    archives = sorted(p for p in into.iterdir() if p.is_file())
    if done.returncode != 0 or not archives:
        raise SystemExit(f"could not download {kind} {name} {version}: {done.stderr.strip()[-300:]}")
    return archives[0]


def unpack(archive: Path) -> dict[str, str]:
    """{path: text} of the release's text files (npm's `package/` prefix and wheels' metadata dropped)."""
    members: dict[str, bytes] = {}
    if archive.name.endswith((".tgz", ".tar.gz")):
        with tarfile.open(archive) as tar:
            for m in tar.getmembers():
                if m.isfile() and (f := tar.extractfile(m)) is not None:
                    members[m.name.split("/", 1)[1] if "/" in m.name else m.name] = f.read()
    else:
        with zipfile.ZipFile(archive) as zf:
            members = {n: zf.read(n) for n in zf.namelist() if not n.endswith("/")}
    out = {}
    for path, data in members.items():
        if ".dist-info/" in path or Path(path).suffix not in TEXT_SUFFIXES:
            continue
        try:
            out[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return out


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def stage_release(repo: Path, old: dict[str, str], new: dict[str, str]) -> None:
    """A repository at `old`, with `new` staged over it."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "core.autocrlf", "false")
    for tree in (old, new):
        for path in _git(repo, "ls-files", "-z").split("\0"):
            if path:
                (repo / path).unlink()
        for path, content in tree.items():
            target = repo / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        _git(repo, "add", "-A")
        if tree is old:
            _git(repo, "commit", "-q", "-m", "old release")


def added_lines(repo: Path) -> dict[str, set[int]]:
    """New-side numbers of the staged change's added lines, per file (unidiff parses git's patch)."""
    from unidiff import PatchSet

    patch = _git(repo, "diff", "--cached", "--no-color", "--no-ext-diff", "-M", "-U0")
    out: dict[str, set[int]] = {}
    for pf in PatchSet(patch):
        if pf.is_removed_file:
            continue
        lines = {ln.target_line_no for h in pf for ln in h if ln.is_added and ln.target_line_no}
        if lines:
            out[pf.path] = lines
    return out


# ------------------------------------------------------------------------------------------------ the runs


@dataclass
class RunResult:
    wall_s: float
    exit_code: int
    first: dict[str, RecordedRequest]  # path -> the file's first main-loop request
    error: str = ""


def review(repo: Path, fake: FakeMessagesAPI, context: bool, supports_flag: bool) -> RunResult:
    env = {**os.environ, "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "bench-not-secret", "PRE_COMMIT": "1",
           "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    args = [sys.executable, "-m", "ocr_hook", "review", "--format", "json", "--no-cache", "--no-memory",
            "--max-cost", "100", "--quiet"]
    if not context and supports_flag:
        args.append("--no-context")
    before = len(fake.requests)
    started = time.monotonic()
    proc = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    wall = time.monotonic() - started
    first: dict[str, RecordedRequest] = {}
    for req in fake.requests[before:]:
        if is_filter(req.body) or is_relocate(req.body):
            continue
        if any(m.get("role") == "assistant" for m in req.body.get("messages", [])):
            continue
        m = OPENING.match(req.first_user_text)
        if m and m.group(1) not in first:
            first[m.group(1)] = req
    error = "" if proc.returncode in (0, 1) else (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    return RunResult(wall, proc.returncode, first, error)


def pack_text(with_pack: str, without: str) -> str:
    """The lines the first request gained from the pack: with-pack text minus the text without it."""
    a, b = without.split("\n"), with_pack.split("\n")
    gained = []
    for op, _i1, _i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op in ("insert", "replace"):
            gained += b[j1:j2]
    return "\n".join(gained)


def input_tokens(req: RecordedRequest) -> int:
    u = req.usage or {}
    return int(u.get("input_tokens", 0) + u.get("cache_creation_input_tokens", 0) + u.get("cache_read_input_tokens", 0))


def carries(pack: str, path: str, line_text: str) -> bool:
    return bool(line_text) and path in pack and line_text[:NEEDLE_CHARS] in pack


# ---------------------------------------------------------------------------------------------- measuring


@dataclass
class Figures:
    label: str
    files: int = 0
    defs_expected: int = 0
    defs_found: int = 0
    callers_expected: int = 0
    callers_found: int = 0
    tokens_added: list[int] = field(default_factory=list)
    wall_with: list[float] = field(default_factory=list)
    wall_without: list[float] = field(default_factory=list)
    missed_defs: list[tuple[Definition, str]] = field(default_factory=list)
    missed_callers: list[tuple[CallerGroup, int, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    packs: dict[str, str] = field(default_factory=dict)  # reviewed file -> what the pack added to its request


def score(label: str, truth: Truth, with_runs: list[RunResult], without_runs: list[RunResult]) -> Figures:
    fig = Figures(label)
    fig.wall_with = [r.wall_s for r in with_runs]
    fig.wall_without = [r.wall_s for r in without_runs]
    fig.errors = sorted({r.error for r in (*with_runs, *without_runs) if r.error})
    on, off = with_runs[0].first, without_runs[0].first
    reviewed = sorted(set(on) & set(off))
    fig.files = len(reviewed)
    packs = {p: pack_text(on[p].first_user_text, off[p].first_user_text) for p in reviewed}
    fig.packs = packs
    fig.tokens_added = [input_tokens(on[p]) - input_tokens(off[p]) for p in reviewed]
    for d in truth.definitions:
        if d.file not in packs:
            continue  # not reviewed (skipped by selection): nothing to expect of its request
        fig.defs_expected += 1
        if carries(packs[d.file], d.site.path, d.site.text):
            fig.defs_found += 1
        else:
            fig.missed_defs.append((d, _why(packs[d.file], d.site.path, d.site.text)))
    for g in truth.callers:
        if g.file not in packs or not g.needed:
            continue
        found = sum(1 for c in g.callers if carries(packs[g.file], c.path, c.text))
        fig.callers_expected += g.needed
        fig.callers_found += min(found, g.needed)
        if found < g.needed:
            fig.missed_callers.append((g, found, "no pack" if not packs[g.file].strip() else "callers not shown"))
    return fig


def _why(pack: str, path: str, line_text: str) -> str:
    if not pack.strip():
        return "the file got no pack"
    if path not in pack:
        return "the pack does not name the definition's file"
    return "the file is named but not this signature line"


def _pct(found: int, expected_: int) -> str:
    return f"{found}/{expected_} {100 * found / expected_:5.1f}%" if expected_ else "0/0     -"


def combine(figures: list[Figures]) -> Figures:
    """All packages together; its wall times are the sums of each package's medians."""
    t = Figures("all")
    for f in figures:
        t.files += f.files
        t.defs_expected += f.defs_expected
        t.defs_found += f.defs_found
        t.callers_expected += f.callers_expected
        t.callers_found += f.callers_found
        t.tokens_added += f.tokens_added
    t.wall_with = [sum(statistics.median(f.wall_with) for f in figures if f.wall_with)]
    t.wall_without = [sum(statistics.median(f.wall_without) for f in figures if f.wall_without)]
    return t


def _row(f: Figures) -> str:
    with_s = statistics.median(f.wall_with) if f.wall_with else 0.0
    without_s = statistics.median(f.wall_without) if f.wall_without else 0.0
    tokens = statistics.mean(f.tokens_added) if f.tokens_added else 0.0
    ratio = with_s / without_s if without_s else 0.0
    return (f"{f.label:<28} {f.files:>5}  {_pct(f.defs_found, f.defs_expected):>18}  "
            f"{_pct(f.callers_found, f.callers_expected):>16}  {tokens:>11.0f}  {with_s:>8.2f}s  "
            f"{without_s:>7.2f}s  {ratio:>5.2f}")


def render(figures: list[Figures], misses: int) -> str:
    head = (f"{'package':<28} {'files':>5}  {'definitions found':>18}  {'callers found':>16}  "
            f"{'tokens/file':>11}  {'wall with':>9}  {'without':>8}  {'ratio':>5}")
    total = combine(figures)
    out = [head, "-" * len(head), *(_row(f) for f in figures), "-" * len(head), _row(total), "", verdict(total)]
    for f in figures:
        out += [f"{f.label}: a review failed: {e}" for e in f.errors]
    if misses:
        out += ["", f"misses (at most {misses} of each kind per package):"]
        for f in figures:
            for d, why in f.missed_defs[:misses]:
                out.append(f"  {f.label}: {d.file}: `{d.name}` -> {d.site.path}:{d.site.line} "
                           f"`{d.site.text[:70]}` ({why})")
            for g, found, why in f.missed_callers[:misses]:
                shown = ", ".join(f"{c.path}:{c.line}" for c in g.callers[:3])
                out.append(f"  {f.label}: {g.file}:{g.site.line} `{g.name}` changed: {found}/{g.needed} callers "
                           f"({why}; e.g. {shown})")
    return "\n".join(out)


def verdict(t: Figures) -> str:
    defs = t.defs_found / t.defs_expected if t.defs_expected else 0.0
    calls = t.callers_found / t.callers_expected if t.callers_expected else 0.0
    tokens = statistics.mean(t.tokens_added) if t.tokens_added else 0.0
    ratio = t.wall_with[0] / t.wall_without[0] if t.wall_without and t.wall_without[0] else 0.0

    def mark(ok: bool) -> str:
        return "met" if ok else "NOT MET"

    return (f"targets: definition recall {100 * defs:.1f}% (>= 90%: {mark(defs >= TARGETS['definitions'])}), "
            f"caller recall {100 * calls:.1f}% (>= 80%: {mark(calls >= TARGETS['callers'])}), "
            f"{tokens:.0f} tokens per file (<= 2,000: {mark(tokens <= TARGETS['tokens'])}), "
            f"time {ratio:.2f}x (<= 1.25x: {mark(ratio <= TARGETS['ratio'])})")


def has_no_context_flag() -> bool:
    done = subprocess.run([sys.executable, "-m", "ocr_hook", "review", "--help"], capture_output=True, text=True)
    return "--no-context" in done.stdout


def measure(kind: str, name: str, old: str, new: str, downloads: Path, work: Path, repeat: int,
            supports_flag: bool) -> Figures:
    label = f"{kind}:{name} {old}..{new}"
    old_tree = unpack(fetch(kind, name, old, downloads / f"{kind}-{name}-{old}"))
    new_tree = unpack(fetch(kind, name, new, downloads / f"{kind}-{name}-{new}"))
    repo = work / f"{kind}-{name}"
    stage_release(repo, old_tree, new_tree)
    truth = expected(new_tree, added_lines(repo))
    with_runs: list[RunResult] = []
    without_runs: list[RunResult] = []
    with FakeMessagesAPI() as fake:
        fake.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
        fake.handle(is_relocate, lambda body: Reply([text('{"locations": []}')]))
        fake.default(lambda body: task_done())
        for i in range(repeat):  # alternate the order, so neither mode always runs on a warm disk cache
            for context in ((True, False) if i % 2 == 0 else (False, True)):
                run = review(repo, fake, context, supports_flag)
                (with_runs if context else without_runs).append(run)
    return score(label, truth, with_runs, without_runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--downloads", type=Path, help="where releases are cached (default: a temporary dir)")
    parser.add_argument("--package", action="append", default=[], help="only these packages (by name)")
    parser.add_argument("--repeat", type=int, default=3, help="review runs per mode (median wall time)")
    parser.add_argument("--misses", type=int, default=8, help="misses to print per package")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--dump", type=Path, help="write what the pack added to each file's request under here")
    opts = parser.parse_args()
    unknown = set(opts.package) - {p[1] for p in PACKAGES}
    if unknown:
        parser.error(f"unknown package(s): {', '.join(sorted(unknown))}")
    supports_flag = has_no_context_flag()
    if not supports_flag:
        print("note: this ocr-hook has no --no-context: both runs go without a pack (recall reads 0)",
              file=sys.stderr)
    work = Path(tempfile.mkdtemp(prefix="ocr-hook-bench-context-"))
    downloads = opts.downloads or work / "downloads"
    try:
        figures = []
        for kind, name, old, new in PACKAGES:
            if opts.package and name not in opts.package:
                continue
            print(f"{kind}:{name} {old}..{new} ...", file=sys.stderr, flush=True)
            figures.append(measure(kind, name, old, new, downloads, work, max(1, opts.repeat), supports_flag))
            for path, pack in figures[-1].packs.items() if opts.dump else ():
                target = opts.dump / f"{kind}-{name}" / f"{path}.txt"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(pack, encoding="utf-8")
        print(render(figures, opts.misses))
        if opts.json:
            opts.json.write_text(json.dumps([_as_json(f) for f in figures], indent=2), encoding="utf-8")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _as_json(f: Figures) -> dict[str, Any]:
    return {"package": f.label, "files": f.files, "definitions_expected": f.defs_expected,
            "definitions_found": f.defs_found, "callers_expected": f.callers_expected,
            "callers_found": f.callers_found, "tokens_added": f.tokens_added, "wall_with_s": f.wall_with,
            "wall_without_s": f.wall_without, "errors": f.errors,
            "missed_definitions": [{"file": d.file, "name": d.name, "path": d.site.path, "line": d.site.line,
                                    "why": why} for d, why in f.missed_defs],
            "missed_callers": [{"file": g.file, "function": g.name, "line": g.site.line, "found": found,
                                "needed": g.needed, "callers": [f"{c.path}:{c.line}" for c in g.callers]}
                               for g, found, _ in f.missed_callers]}


if __name__ == "__main__":
    sys.exit(main())
