"""bench/bench_quality.py end to end: a tiny upstream project with real fix commits, the cases proposed
from its history, scratch repositories with each fix reversed and staged, the real CLI per case and
configuration against the scripted fake Messages API, and the figures and table the harness reports."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import forked_cli
import pytest
from agent_support import filter_keeps_all, is_relocate, main_opening
from fake_api import FakeMessagesAPI, Reply, task_done, text, tool_use
from gitrepo import commit_all, git, make_repo, write

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

from quality import runner  # noqa: E402
from quality.cases import Case, Golden, load_cases, propose  # noqa: E402
from quality.judge import Judge  # noqa: E402
from quality.match import hits, summarise  # noqa: E402
from quality.materialise import materialise  # noqa: E402
from quality.runner import Run, RunOptions  # noqa: E402
from quality.table import render  # noqa: E402

from ocr_hook.settings import load  # noqa: E402

URL = "https://github.com/example/calc"
FILLER = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(12))

# Each fix: the buggy source, the fixed source, and the line of the bug in the buggy version.
FIXES: list[dict[str, Any]] = [
    {"path": "calc/average.py", "message": "Fix crash on empty list in mean()",
     "buggy": FILLER + "def mean(values):\n    return sum(values) / len(values)\n",
     "fixed": FILLER + ("def mean(values):\n    if not values:\n        return 0.0\n"
                        "    return sum(values) / len(values)\n"),
     "quote": "    return sum(values) / len(values)", "category": "missing-check"},
    {"path": "calc/ranges.py", "message": "Fix off-by-one bug in last_index()",
     "buggy": FILLER + "def last_index(items):\n    return len(items)\n",
     "fixed": FILLER + "def last_index(items):\n    return len(items) - 1\n",
     "quote": "    return len(items)", "category": "logic"},
    {"path": "calc/files.py", "message": "Fix file handle leak in read_first()",
     "buggy": FILLER + "def read_first(path):\n    handle = open(path)\n    return handle.readline()\n",
     "fixed": FILLER + "def read_first(path):\n    with open(path) as handle:\n        return handle.readline()\n",
     "quote": "    handle = open(path)", "category": "resource"},
    {"path": "calc/shell.py", "message": "Fix shell injection bug in run()",
     "buggy": FILLER + "import os\n\n\ndef run(name):\n    os.system('ls ' + name)\n",
     "fixed": FILLER + "import subprocess\n\n\ndef run(name):\n    subprocess.run(['ls', name], check=True)\n",
     "quote": "    os.system('ls ' + name)", "category": "security"},
]
FOUND = {0, 2}  # the fake finds the bugs of these cases: half of the four
UNRELATED = "# a line that is in no file: the remark stays unanchored"


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """example/calc: a buggy commit for each module with its test, then one fix commit per bug that changes
    the module and its test; plus a docs commit and an oversized fix that the proposer must pass over."""
    repos = tmp_path_factory.mktemp("repos")
    repo = make_repo(repos / "example+calc")
    for fix in FIXES:
        write(repo, fix["path"], fix["buggy"])
        write(repo, f"tests/test_{Path(fix['path']).stem}.py", "def test_placeholder():\n    assert True\n")
    write(repo, "README.md", "calc\n")
    commit_all(repo, "Initial import")
    shas = []
    for fix in FIXES:
        write(repo, fix["path"], fix["fixed"])
        stem = Path(fix["path"]).stem
        write(repo, f"tests/test_{stem}.py", f"def test_{stem}_regression():\n    assert 'fixed'\n")
        shas.append(commit_all(repo, f"{fix['message']}\n\nThe body says why."))
    write(repo, "README.md", "calc, a calculator\n")
    commit_all(repo, "docs: fix typo in README")
    write(repo, "calc/big.py", "".join(f"VALUE_{i} = {i}\n" for i in range(60)))
    commit_all(repo, "Fix every constant at once")
    return {"repos": repos, "repo": repo, "shas": shas}


@pytest.fixture(scope="module")
def cases(upstream: dict[str, Any]) -> list[Case]:
    proposed = list(propose(upstream["repo"], URL))
    by_sha = {c.fix_commit: c for c in proposed}
    ordered = [by_sha[sha] for sha in upstream["shas"]]
    for case, fix in zip(ordered, FIXES, strict=True):
        case.category = fix["category"]  # what the person accepting the case decides
    return ordered


def _config(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def _script_fake(fake: FakeMessagesAPI, judge_says_yes: str | None = None) -> None:
    """Half the golden bugs found (quoting the buggy line, severity high), one unrelated remark per case."""
    filter_keeps_all(fake)
    fake.handle(is_relocate, lambda body: Reply([text('{"locations": [{"comment": 1, "code": null}]}')]))
    if judge_says_yes is not None:
        def verdict(body: dict[str, Any]) -> Reply:
            return Reply([text(json.dumps({"same_bug": judge_says_yes in json.dumps(body["messages"])}))])

        fake.handle(lambda body: str(body.get("system", "")).startswith("You grade a code reviewer"), verdict)
    for index, fix in enumerate(FIXES):
        comments = [{"content": "Unrelated: consider a module docstring.", "existing_code": UNRELATED,
                     "severity": "low", "category": "documentation"}]
        if index in FOUND:
            comments.insert(0, {"content": f"Bug here: {fix['message'].lower()} is undone.",
                                "existing_code": fix["quote"], "severity": "high", "category": "bug"})
        fake.script(main_opening(fix["path"]), [Reply([tool_use("code_comment", {"comments": comments})]),
                                                task_done()])


class _ForkedCli:
    """subprocess as quality.runner uses it, with its `python -m ocr_hook review` runs forked from a warm process
    (tests/forked_cli.py: the same arguments, environment, working directory, output and exit code, without
    importing the SDK again for each of a test's ten runs). Any other command runs as before."""

    TimeoutExpired = subprocess.TimeoutExpired

    @staticmethod
    def run(argv: list[str], *, cwd: Path, env: Mapping[str, str], timeout: float, errors: str = "strict",
            **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if argv[:3] != [sys.executable, "-m", "ocr_hook"]:
            return subprocess.run(argv, cwd=cwd, env=env, timeout=timeout, errors=errors, **kwargs)
        return forked_cli.run(argv[3:], cwd=cwd, env=env, timeout=timeout, errors=errors)


def _run(cases: list[Case], configs: list[Path], repos: Path, env: Mapping[str, str], max_cost: float,
         judge: Judge | None = None) -> dict[str, Any]:
    assert runner.subprocess is subprocess  # the bench still starts the CLI with subprocess.run
    runner.subprocess = _ForkedCli  # type: ignore[assignment]
    try:
        return Run(RunOptions(configs=configs, cases=cases, repos=repos, max_cost=max_cost, allow_clone=False,
                              judge=judge, env=env, log=lambda line: None)).execute()
    finally:
        runner.subprocess = subprocess


def test_proposer_finds_the_fixes_and_maps_golden_lines_to_the_buggy_version(upstream, cases) -> None:
    proposed = list(propose(upstream["repo"], URL))
    subjects = {c.description.splitlines()[0] for c in proposed}
    assert subjects == {fix["message"] for fix in FIXES}  # not the docs commit, not the 60-line one
    for case, fix in zip(cases, FIXES, strict=True):
        assert case.files == [fix["path"]]  # the test file is left out of the reviewed change
        assert case.test_files == [f"tests/test_{Path(fix['path']).stem}.py"]
        assert case.language == "python"
        assert "The body says why." in case.description
        buggy_line = fix["buggy"].splitlines().index(fix["quote"]) + 1
        assert any(g.start <= buggy_line <= g.end for g in case.golden), (case.golden, buggy_line)
        assert all(g.path == fix["path"] for g in case.golden)


def test_scratch_repository_stages_the_reversed_fix_only(upstream, cases, tmp_path) -> None:
    case, fix = cases[1], FIXES[1]
    scratch = materialise(case, upstream["repo"], tmp_path / "scratch")
    assert git(scratch, "diff", "--cached", "--name-only").split() == [fix["path"]]
    assert git(scratch, "show", f":{fix['path']}") == fix["buggy"]
    assert git(scratch, "show", f"HEAD:{fix['path']}") == fix["fixed"]
    # The fix's own test is not in the snapshot the reviewer reads: no hint from the future.
    assert "regression" not in git(scratch, "show", "HEAD:tests/test_ranges.py")
    assert git(upstream["repo"], "status", "--porcelain") == ""  # the local clone is untouched


def test_match_needs_an_anchor_in_the_same_file_within_three_lines() -> None:
    golden = [Golden("a.py", 10, 12)]
    assert hits({"path": "a.py", "start_line": 15, "end_line": 15, "anchored": True}, golden)
    assert hits({"path": "a.py", "start_line": 1, "end_line": 7, "anchored": True}, golden)
    assert not hits({"path": "a.py", "start_line": 16, "end_line": 20, "anchored": True}, golden)
    assert not hits({"path": "b.py", "start_line": 11, "end_line": 11, "anchored": True}, golden)
    assert not hits({"path": "a.py", "start_line": 0, "end_line": 0, "anchored": False}, golden)


def test_half_found_two_configs_side_by_side_with_judge(upstream, cases, tmp_path, fake_api, sdk_env) -> None:
    _script_fake(fake_api, judge_says_yes="crash on empty list")
    configs = [_config(tmp_path, "sonnet", "model: claude-sonnet-5-5\n"),
               _config(tmp_path, "strict", "model: claude-haiku-5-5\nfail_on: critical\n")]
    missing_clone = Case(id="gone-1", repo="https://github.com/nobody/gone", fix_commit="a" * 40,
                         files=["x.py"], golden=[Golden("x.py", 1, 1)], description="Fix x", language="python",
                         category="logic")
    missing_commit = Case(**{**cases[0].__dict__, "id": "calc-missing", "fix_commit": "b" * 40})
    price = load(tmp_path, None, {}, environ={}).pricing["claude-haiku-5-5"]
    # Three cases show every kind of outcome (found and judged the same bug, found but judged another,
    # missed); the fourth would only repeat a miss, at two more CLI runs.
    report = _run([*cases[:3], missing_clone, missing_commit], configs, upstream["repos"], sdk_env, 20.0,
                  judge=Judge("claude-haiku-5-5", price))

    assert [u["case"] for u in report["unavailable"]] == ["gone-1", "calc-missing"]
    assert "no clone of https://github.com/nobody/gone" in report["unavailable"][0]["reason"]
    assert "is not in" in report["unavailable"][1]["reason"]
    sonnet, strict = (summarise(report["results"][label]) for label in ("sonnet", "strict"))
    for s in (sonnet, strict):
        assert s["cases"] == 3 and s["incomplete"] == 0
        assert s["recall"] == pytest.approx(2 / 3)
        assert s["findings"] == 5  # 2 located + 3 unrelated (unanchored: never a hit)
        assert s["precision"] == pytest.approx(2 / 5)
        assert s["f1"] == pytest.approx(0.5)  # 2PR / (P + R) = (8/15) / (16/15)
        assert s["recall_judged"] == pytest.approx(1 / 3)  # the judge accepts only the empty-list finding's description
        assert s["precision_judged"] == pytest.approx(1 / 5)
        assert s["by_category"]["resource"] == {"cases": 1, "found": 1, "found_judged": 0}
        assert s["cost_per_case"] > 0 and s["tokens_per_case"] > 0 and s["wall_per_case"] > 0
    assert sonnet["recall_blocking"] == pytest.approx(2 / 3)  # high findings block at fail_on: high ...
    assert strict["recall_blocking"] == 0.0  # ... and not at fail_on: critical
    assert sonnet["cost_per_case"] > strict["cost_per_case"]  # Sonnet's price against Haiku's

    table = render(report)
    header = table.splitlines()[0].split()
    assert header == ["sonnet", "strict"]
    assert "precision (lower bound)" in table
    recall_line = next(line for line in table.splitlines() if line.split()[:1] == ["recall"])
    assert recall_line.split()[1:] == ["0.67", "0.67"]
    assert "not run: gone-1" in table and "not run: calc-missing" in table
    assert "STOPPED" not in table


def test_cost_cap_stops_the_run_early_and_says_so(upstream, cases, tmp_path, fake_api, sdk_env) -> None:
    _script_fake(fake_api)
    config = _config(tmp_path, "capped", "model: claude-sonnet-5-5\nmax_output_tokens: 256\n")
    first = _run(cases[:1], [config], upstream["repos"], sdk_env, 20.0)
    one_case = first["spent_usd"]
    assert one_case > 0
    cap = one_case * 1.5
    report = _run(cases, [config], upstream["repos"], sdk_env, cap)
    assert report["stopped"] and "cost cap" in report["stopped"]
    reviewed = [r for r in report["results"]["capped"] if r["reviewed"]]
    assert 1 <= len(reviewed) < len(cases)
    assert report["spent_usd"] <= cap + 1e-9
    table = render(report)
    assert "STOPPED EARLY" in table and "cost cap" in table


def test_cli_reports_a_missing_clone_without_crashing(tmp_path) -> None:
    case = Case(id="gone-2", repo="https://github.com/nobody/gone", fix_commit="c" * 40, files=["x.py"],
                golden=[Golden("x.py", 1, 1)], description="Fix x", language="python", category="logic")
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text(case.to_json() + "\n", encoding="utf-8")
    assert [c.id for c in load_cases(cases_file)] == ["gone-2"]
    config = _config(tmp_path, "a", "model: claude-sonnet-5-5\n")
    proc = subprocess.run([sys.executable, str(BENCH_DIR / "bench_quality.py"), "run", "--config", str(config),
                           "--cases", str(cases_file), "--repos", str(tmp_path / "empty"), "--no-clone",
                           "--json", str(tmp_path / "out.json")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "not run: gone-2: no clone of https://github.com/nobody/gone" in proc.stdout
    assert json.loads((tmp_path / "out.json").read_text())["unavailable"][0]["case"] == "gone-2"


def _bench(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH_DIR / "bench_quality.py"), *args], capture_output=True,
                          text=True, timeout=timeout)


def test_cases_command_prints_accept_ready_jsonl(upstream, tmp_path) -> None:
    proc = _bench("cases", "--repo", str(upstream["repo"]), "--url", URL, "--max", "2")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    newest = Case.from_dict(json.loads(lines[0]))
    assert newest.fix_commit == upstream["shas"][-1] and newest.repo == URL
    picked = _bench("cases", "--repo", str(upstream["repo"]), "--url", URL, "--commit", upstream["shas"][0][:10])
    assert Case.from_dict(json.loads(picked.stdout)).files == [FIXES[0]["path"]]
    (tmp_path / "plain").mkdir()
    bad = _bench("cases", "--repo", str(tmp_path / "plain"), "--url", URL)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_estimate_clones_a_missing_project_and_previews_each_case(upstream, cases, tmp_path) -> None:
    # The project's "URL" is the upstream path: cloning it needs no network, like a real clone would.
    local = Case(**{**cases[1].__dict__, "repo": str(upstream["repo"])})
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text(local.to_json() + "\n", encoding="utf-8")
    repos = tmp_path / "repos"
    proc = _bench("estimate", "--config", str(_config(tmp_path, "h", "model: claude-haiku-5-5\n")),
                  "--cases", str(cases_file), "--repos", str(repos))
    assert proc.returncode == 0, proc.stderr
    assert (repos / local.slug / "repo").is_dir()  # cloned (bare) into the --repos layout
    row = next(line for line in proc.stdout.splitlines() if line.startswith(local.id))
    assert int(row.split()[2].replace(",", "")) > 0  # input tokens
    assert "h: 1 cases, total $" in proc.stdout


def test_context_pair_is_the_product_defaults_with_and_without_the_pack(tmp_path) -> None:
    """The shipped pair bench/quality_configs/context-{on,off}.yaml loads under the real validator and differs
    in nothing but `context`, so the two columns of a key holder's table differ by the pack alone."""
    shipped = BENCH_DIR / "quality_configs"
    on = load(tmp_path, str(shipped / "context-on.yaml"), {}, environ={})
    off = load(tmp_path, str(shipped / "context-off.yaml"), {}, environ={})
    assert (on.context, off.context) == (True, False)
    assert on._replace(context=False) == off
    assert on.model == "claude-sonnet-5-5"
