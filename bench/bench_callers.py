"""Benchmark: does the pack show the callers a real signature change breaks (issue 45, DESIGN.md section 12)?

Run:  python bench/bench_callers.py MIRROR [MIRROR ...] [--cases bench/callers_cases.json] [--repeat N]
          [--json FILE]
      python bench/bench_callers.py --mine MIRROR [MIRROR ...] [--per-project N]   (rewrites the cases)

Each MIRROR is a git clone of a project named in bench/callers_cases.json (matched by its directory name,
e.g. /work/.mirror/pallets+click/repo or a plain `git clone` named click). A case is a real commit in which
one file changed a function's parameters or its name and the same commit changed call sites of it in other
(non-test) files. The ground truth is those call lines: the removed lines of the other files that call the
old name, numbered at the parent. The bench clones the parent, stages only the callee file's new version
(as if the author forgot the callers), runs the real CLI (`ocr-hook review`, PRE_COMMIT=1) against the
scripted fake Messages API with the pack and with `--no-context`, and reads the callee's first request.
A broken call site counts as shown when its path and line number are in an entry of the pack.

Printed: recall per project and per kind (params-added, params-removed, renamed), the share of the pack's
call-site entries that are real calls of the name by a reading that shares no code with ocr_hook/context
(Python `ast`; JavaScript the tree-sitter grammar's call nodes), tokens the pack adds per file, and wall
time with / without the pack (medians). Targets (issue 45): >= 85 % shown, >= 95 % real calls,
<= 2,000 tokens per file, <= 1.25x.
`--mine` walks each mirror's history and writes the cases (at most --per-project per project).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
for _p in (REPO_ROOT / "tests", REPO_ROOT / "bench", REPO_ROOT):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from agent_support import is_filter, is_relocate  # noqa: E402
from bench_context import RunResult, _git, has_no_context_flag, input_tokens, pack_text, review  # noqa: E402
from fake_api import FakeMessagesAPI, Reply, task_done, text  # noqa: E402

CASES = REPO_ROOT / "bench" / "callers_cases.json"
TARGETS = {"shown": 0.85, "real": 0.95, "tokens": 2000, "ratio": 1.25}
SOURCE = {".py": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript"}
TESTISH = re.compile(r"(^|/)(tests?|__tests__|spec|docs?|examples?|benchmarks?|dist|build|vendor)(/|$)"
                     r"|(^|/)test_|_test\.|\.test\.|\.spec\.")
# a def line and its parameter text (the bench's own patterns; nothing from ocr_hook/context)
DEF = {
    "python": re.compile(r"^\s*(?:async\s+)?def\s+(\w+)\s*\((.*)"),
    "javascript": re.compile(r"^\s*(?:export\s+)?(?:async\s+)?function\s*\*?\s*(\w+)\s*\((.*)"
                             r"|^\s*(?:const|let|var)?\s*(?:[\w.]+\.)?(\w+)\s*[=:]\s*(?:async\s+)?function\s*\w*\s*\((.*)"
                             r"|^\s*(?:static\s+)?(?:async\s+)?(\w+)\s*\(([^)]*)\)\s*\{\s*$"),
}
JS_NOT_NAMES = {"if", "for", "while", "switch", "catch", "function", "return", "constructor"}
ENTRY = re.compile(r"^(call site of|definition of|[\w ]+?) `([^`]+)` \(([^)]+?) lines? (\d+)(?:-(\d+))?\):$")
NUMBERED = re.compile(r"^(\d+)\|")


# ---------------------------------------------------------------------------------------------- the cases


@dataclass
class Case:
    project: str
    commit: str
    parent: str
    callee: str
    kind: str  # params-added | params-removed | renamed
    name: str  # the old name (the one the callers still use)
    new_name: str
    callers: list[tuple[str, int]]  # (path, line at the parent) the commit had to change


def _defs(lang: str, line: str) -> tuple[str, str] | None:
    m = DEF[lang].match(line)
    if not m:
        return None
    groups = [g for g in m.groups()]
    for i in range(0, len(groups), 2):
        if groups[i] and groups[i] not in JS_NOT_NAMES:
            return groups[i], (groups[i + 1] or "").split(")")[0]
    return None


def _arity(params: str) -> int:
    params = re.sub(r"\bself\s*,?|\bcls\s*,?", "", params).strip().rstrip(",")
    return 0 if not params else params.count(",") + 1


def mine(mirror: Path, project: str, limit: int, scan: int = 4000) -> list[Case]:
    from unidiff import PatchSet

    commits = _git(mirror, "log", "--no-merges", f"-n{scan}", "--format=%H %P", "HEAD").split("\n")
    found: list[Case] = []
    for row in commits:
        parts = row.split()
        if len(parts) != 2:
            continue
        commit, parent = parts
        try:
            patch = PatchSet(_git(mirror, "diff", "--no-color", "--no-ext-diff", "--no-renames", "-U0",
                                  parent, commit))
        except Exception:
            continue
        files = [pf for pf in patch if Path(pf.path).suffix in SOURCE and not pf.is_added_file
                 and not pf.is_removed_file]
        if not 2 <= len(files) <= 12:
            continue
        for pf in files:
            if TESTISH.search(pf.path):
                continue
            lang = SOURCE[Path(pf.path).suffix]
            removed = [d for d in (_defs(lang, ln.value) for h in pf for ln in h if ln.is_removed) if d]
            added = [d for d in (_defs(lang, ln.value) for h in pf for ln in h if ln.is_added) if d]
            added_names = {n: p for n, p in added}
            for name, params in removed:
                if name.startswith("__") or len(name) < 3:
                    continue
                if name in added_names:
                    a, b = _arity(params), _arity(added_names[name])
                    if a == b:
                        continue
                    kind, new_name = ("params-added" if b > a else "params-removed"), name
                elif len(removed) == 1 and len(added) == 1:
                    kind, new_name = "renamed", added[0][0]
                else:
                    continue
                call = re.compile(rf"(?<![\w$])(?:\.\s*)?{re.escape(name)}\s*\(")
                callers = []
                for other in files:
                    if other.path == pf.path or TESTISH.search(other.path):
                        continue
                    for h in other:
                        for ln in h:
                            if ln.is_removed and call.search(ln.value) and not _defs(lang, ln.value):
                                callers.append((other.path, ln.source_line_no))
                if callers:
                    found.append(Case(project, commit, parent, pf.path, kind, name, new_name, callers))
                    break
            if found and found[-1].commit == commit:
                break
        if len(found) >= limit:
            break
    return found


# ------------------------------------------------------------------------------------ the pack's entries


@dataclass
class Entry:
    kind: str
    name: str
    path: str
    lines: dict[int, str]


def entries(pack: str) -> list[Entry]:
    """The pack's entries: heading (kind, name, path) and the numbered lines of its fenced block."""
    out: list[Entry] = []
    current: Entry | None = None
    for line in pack.split("\n"):
        m = ENTRY.match(line.strip())
        if m:
            current = Entry(m.group(1), m.group(2), m.group(3), {})
            out.append(current)
            continue
        n = NUMBERED.match(line)
        if n and current is not None:
            current.lines[int(n.group(1))] = line[n.end():]
    return out


def _python_calls(source: str, name: str) -> set[int]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            callee = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if callee == name:
                lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for d in node.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                callee = (target.id if isinstance(target, ast.Name)
                          else target.attr if isinstance(target, ast.Attribute) else None)
                if callee == name:
                    lines.update(range(d.lineno, (d.end_lineno or d.lineno) + 1))
    return lines


def _js_calls(source: str, name: str) -> set[int]:
    import tree_sitter_javascript
    from tree_sitter import Language, Parser

    parser = Parser(Language(tree_sitter_javascript.language()))
    tree = parser.parse(source.encode("utf-8"))
    lines: set[int] = set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type not in ("call_expression", "new_expression"):
            continue
        f = node.child_by_field_name("function") or node.child_by_field_name("constructor")
        if f is None:
            continue
        if f.type == "member_expression":
            f = f.child_by_field_name("property")
        if f is not None and f.text.decode("utf-8", "replace") == name:
            lines.update(range(node.start_point[0] + 1, node.end_point[0] + 2))
    return lines


def real_calls(source: str, path: str, name: str) -> set[int]:
    """Lines (1-based) covered by a call of `name` in `source`, read independently of the product."""
    bare = name.rsplit(".", 1)[-1].strip("()")
    if SOURCE.get(Path(path).suffix) == "python":
        return _python_calls(source, bare)
    return _js_calls(source, bare)


# ---------------------------------------------------------------------------------------------- measuring


@dataclass
class Result:
    case: Case
    shown: list[bool] = field(default_factory=list)
    call_entries: int = 0
    real_entries: int = 0
    not_real: list[str] = field(default_factory=list)
    tokens: int = 0
    wall_with: list[float] = field(default_factory=list)
    wall_without: list[float] = field(default_factory=list)
    error: str = ""


def stage_case(mirror: Path, case: Case, repo: Path) -> None:
    """A clone at the parent with only the callee's new version staged."""
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(mirror), str(repo)], check=True,
                   capture_output=True)
    _git(repo, "checkout", "-q", "--detach", case.parent)
    (repo / case.callee).write_bytes(subprocess.run(["git", "show", f"{case.commit}:{case.callee}"], cwd=repo,
                                                    check=True, capture_output=True).stdout)
    _git(repo, "add", "--", case.callee)


def judge(repo: Path, case: Case, with_runs: list[RunResult], without_runs: list[RunResult]) -> Result:
    res = Result(case, wall_with=[r.wall_s for r in with_runs], wall_without=[r.wall_s for r in without_runs])
    on, off = with_runs[0].first.get(case.callee), without_runs[0].first.get(case.callee)
    if on is None or off is None:
        res.error = with_runs[0].error or without_runs[0].error or "the callee got no request"
        res.shown = [False] * len(case.callers)
        return res
    return score_pack(repo, case, pack_text(on.first_user_text, off.first_user_text),
                      input_tokens(on) - input_tokens(off), res)


def score_pack(repo: Path, case: Case, pack: str, tokens: int, res: Result | None = None) -> Result:
    """Score one pack: which broken call sites it shows, and how many of its call-site entries are calls."""
    res = res or Result(case)
    res.tokens = tokens
    found = entries(pack)
    res.shown = [any(e.path == p and n in e.lines for e in found) for p, n in case.callers]
    for e in found:
        if not e.kind.startswith("call site"):
            continue
        res.call_entries += 1
        try:
            source = (repo / e.path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            source = ""
        if real_calls(source, e.path, e.name) & set(e.lines):
            res.real_entries += 1
        else:
            res.not_real.append(f"{e.path}:{min(e.lines, default=0)} `{e.name}`")
    return res


def run_case(mirror: Path, case: Case, work: Path, repeat: int, supports_flag: bool) -> Result:
    repo = work / f"{case.project}-{case.commit[:10]}"
    stage_case(mirror, case, repo)
    with_runs: list[RunResult] = []
    without_runs: list[RunResult] = []
    with FakeMessagesAPI() as fake:
        fake.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
        fake.handle(is_relocate, lambda body: Reply([text('{"locations": []}')]))
        fake.default(lambda body: task_done())
        for i in range(repeat):
            for context in ((True, False) if i % 2 == 0 else (False, True)):
                (with_runs if context else without_runs).append(review(repo, fake, context, supports_flag))
    return judge(repo, case, with_runs, without_runs)


def _pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.1f} %)" if b else "-"


def render(results: list[Result]) -> str:
    def group(key: str) -> dict[str, list[Result]]:
        out: dict[str, list[Result]] = {}
        for r in results:
            out.setdefault(getattr(r.case, key), []).append(r)
        return out

    lines = [f"{'':<18} {'cases':>5} {'call sites shown':>20}"]
    for title, key in (("project", "project"), ("kind", "kind")):
        lines.append(f"by {title}:")
        for label, rs in sorted(group(key).items()):
            shown = sum(sum(r.shown) for r in rs)
            total = sum(len(r.shown) for r in rs)
            lines.append(f"  {label:<16} {len(rs):>5} {_pct(shown, total):>20}")
    shown = sum(sum(r.shown) for r in results)
    total = sum(len(r.shown) for r in results)
    calls = sum(r.call_entries for r in results)
    real = sum(r.real_entries for r in results)
    tokens = statistics.mean(r.tokens for r in results) if results else 0
    w = statistics.median(t for r in results for t in r.wall_with) if results else 0
    wo = statistics.median(t for r in results for t in r.wall_without) if results else 0
    ratio = w / wo if wo else 0
    lines += [
        f"call sites shown: {_pct(shown, total)}  (target >= {TARGETS['shown']:.0%})",
        f"call-site entries that are real calls: {_pct(real, calls)}  (target >= {TARGETS['real']:.0%})",
        f"tokens the pack adds per file: {tokens:.0f}  (target <= {TARGETS['tokens']})",
        f"wall time per review: {w:.2f} s with the pack, {wo:.2f} s without: {ratio:.2f}x  "
        f"(target <= {TARGETS['ratio']}x)",
    ]
    misses = [(r, (p, n)) for r in results for (p, n), ok in zip(r.case.callers, r.shown, strict=True) if not ok]
    if misses:
        lines.append("missed call sites:")
        lines += [f"  {r.case.project} {r.case.commit[:10]} {r.case.kind} `{r.case.name}` ({r.case.callee}): "
                  f"{p}:{n}{'  [' + r.error + ']' if r.error else ''}" for r, (p, n) in misses]
    odd = [(r, s) for r in results for s in r.not_real]
    if odd:
        lines.append("call-site entries that are not calls by the independent reading:")
        lines += [f"  {r.case.project} {r.case.commit[:10]}: {s}" for r, s in odd]
    return "\n".join(lines)


def load_cases(path: Path) -> list[Case]:
    rows = json.loads(path.read_text(encoding="utf-8"))
    return [Case(**{**row, "callers": [tuple(c) for c in row["callers"]]}) for row in rows]


def _project_of(mirror: Path) -> str:
    """A mirror's project name: /work/.mirror/pallets+click/repo -> click; /x/click -> click."""
    name = mirror.resolve().name
    if name in ("repo", ".git"):
        name = mirror.resolve().parent.name
    return name.split("+")[-1].removesuffix(".git")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mirrors", nargs="+", type=Path, help="git clones of the projects in the cases")
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--mine", action="store_true", help="find the cases in the mirrors and write --cases")
    parser.add_argument("--per-project", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1, help="review runs per mode (median wall time)")
    parser.add_argument("--json", type=Path, help="also write the per-case results as JSON here")
    opts = parser.parse_args()
    mirrors = {_project_of(m): m for m in opts.mirrors}
    if opts.mine:
        cases = [c for p, m in mirrors.items() for c in mine(m, p, opts.per_project)]
        opts.cases.write_text(json.dumps([c.__dict__ for c in cases], indent=1) + "\n", encoding="utf-8")
        print(f"{len(cases)} cases written to {opts.cases}")
        return 0
    cases = [c for c in load_cases(opts.cases) if c.project in mirrors]
    if not cases:
        parser.error(f"no case of {opts.cases} belongs to the mirrors given ({', '.join(sorted(mirrors))})")
    supports_flag = has_no_context_flag()
    work = Path(tempfile.mkdtemp(prefix="ocr-hook-bench-callers-"))
    try:
        results = []
        for case in cases:
            print(f"{case.project} {case.commit[:10]} {case.kind} {case.name} ...", file=sys.stderr, flush=True)
            results.append(run_case(mirrors[case.project], case, work, max(1, opts.repeat), supports_flag))
        print(render(results))
        if opts.json:
            opts.json.write_text(json.dumps([{**r.case.__dict__, "shown": r.shown, "call_entries": r.call_entries,
                                              "real_entries": r.real_entries, "tokens": r.tokens,
                                              "wall_with_s": r.wall_with, "wall_without_s": r.wall_without,
                                              "error": r.error} for r in results], indent=1), encoding="utf-8")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
