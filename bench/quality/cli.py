"""Argument parsing for bench/bench_quality.py (argparse: the bench is not part of the product CLI)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .cases import case_for, propose
from .gitcmd import GitError, git

DEFAULT_CASES = Path(__file__).resolve().parent.parent / "quality_cases.jsonl"


def _origin_url(repo: Path) -> str | None:
    url = git(repo, "config", "--get", "remote.origin.url", check=False).strip()
    return url or None


def cmd_cases(args: argparse.Namespace) -> int:
    repo = Path(args.repo)
    if not repo.is_dir():
        print(f"bench_quality: {repo} is not a directory", file=sys.stderr)
        return 2
    url = args.url or _origin_url(repo)
    if not url:
        print("bench_quality: the clone has no origin URL; pass --url https://github.com/OWNER/NAME",
              file=sys.stderr)
        return 2
    try:
        if args.commit:
            for sha in args.commit:
                picked = case_for(repo, url, sha)
                if picked is None:
                    print(f"bench_quality: {sha} changes no source file", file=sys.stderr)
                else:
                    print(picked.to_json())
            return 0
        for case in propose(repo, url, args.rev, args.max):
            print(case.to_json())
    except GitError as exc:
        print(f"bench_quality: {exc}", file=sys.stderr)
        return 2
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench_quality.py", description="Review-quality benchmark.")
    sub = parser.add_subparsers(dest="command", required=True)
    cases = sub.add_parser("cases", help="propose candidate cases from a clone's history (JSONL on stdout)")
    cases.add_argument("--repo", required=True, help="a clone (bare is fine) of the project")
    cases.add_argument("--url", help="the project's URL (default: the clone's origin)")
    cases.add_argument("--rev", default="HEAD", help="history to search (default HEAD)")
    cases.add_argument("--max", type=int, default=None, help="stop after N candidates")
    cases.add_argument("--commit", action="append", help="the case for this commit, no heuristics (repeatable)")
    cases.set_defaults(func=cmd_cases)
    _add_run(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


def cmd_run(args: argparse.Namespace) -> int:
    import json
    import os

    from .cases import CaseFileError, load_cases
    from .materialise import default_repos_dir
    from .runner import Run, RunOptions
    from .table import render

    configs = [Path(c) for c in args.config]
    for config in configs:
        if not config.is_file():
            print(f"bench_quality: no configuration file {config}", file=sys.stderr)
            return 2
    try:
        cases = load_cases(Path(args.cases))
    except (OSError, CaseFileError) as exc:
        print(f"bench_quality: {exc}", file=sys.stderr)
        return 2
    if args.only:
        cases = [c for c in cases if c.id in set(args.only)]
    if args.limit is not None:
        cases = cases[: args.limit]
    if args.max_cost <= 0:
        print("bench_quality: --max-cost must be positive", file=sys.stderr)
        return 2
    env = dict(os.environ)
    fake = None
    before_review = None
    if args.fake:
        from .fake import FakeReviewer

        fake = FakeReviewer()
        env.update({"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "fake-key-not-secret",
                    "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
        env = {k: v for k, v in env.items() if not k.startswith("ANTHROPIC_") or k in (
            "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")}
        os.environ.update({"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "fake-key-not-secret"})
        before_review = fake.script
    try:
        judge = None
        if args.judge_model:
            from ocr_hook.settings import load

            from .judge import Judge

            price = load(Path.cwd(), None, {}, environ={}).pricing.get(args.judge_model)
            if price is None:
                print(f"bench_quality: no price for judge model {args.judge_model!r} in the shipped pricing table",
                      file=sys.stderr)
                return 2
            judge = Judge(args.judge_model, price)
        options = RunOptions(configs=configs, cases=cases, repos=Path(args.repos or default_repos_dir()),
                             max_cost=args.max_cost, allow_clone=not args.no_clone, judge=judge, env=env,
                             before_review=before_review)
        report = Run(options).execute()
    finally:
        if fake is not None:
            fake.close()
    if args.fake:
        print("PRODUCED AGAINST THE FAKE API: these figures test the harness, they measure nothing.\n")
    print(render(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


def cmd_estimate(args: argparse.Namespace) -> int:
    from .cases import CaseFileError, load_cases
    from .estimate import estimate, render_estimate
    from .materialise import default_repos_dir

    try:
        cases = load_cases(Path(args.cases))
    except (OSError, CaseFileError) as exc:
        print(f"bench_quality: {exc}", file=sys.stderr)
        return 2
    configs = [Path(c) for c in args.config]
    result = estimate(cases, configs, Path(args.repos or default_repos_dir()), not args.no_clone,
                      lambda line: print(line, file=sys.stderr))
    print(render_estimate(result))
    return 0


def _add_run(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    run = sub.add_parser("run", help="review every case with every configuration; print the table")
    run.add_argument("--config", action="append", required=True, help="an ocr-hook configuration (repeatable)")
    run.add_argument("--cases", default=str(DEFAULT_CASES), help="the case file (JSONL)")
    run.add_argument("--repos", help="directory of local clones (default: the user cache); see docs/quality.md")
    run.add_argument("--no-clone", action="store_true", help="never clone: a project without a clone is reported")
    run.add_argument("--max-cost", type=float, default=10.0, help="USD for the whole run, judge included")
    run.add_argument("--judge-model", help="ask this model whether each located finding describes the bug")
    run.add_argument("--json", help="write the raw results here")
    run.add_argument("--only", action="append", help="run only this case id (repeatable)")
    run.add_argument("--limit", type=int, help="run only the first N cases")
    run.add_argument("--fake", action="store_true",
                     help="answer from the test suite's scripted fake API (tests the harness; no key needed)")
    run.set_defaults(func=cmd_run)
    est = sub.add_parser("estimate", help="what `run` would cost: `ocr-hook preview` on every case (no key)")
    est.add_argument("--config", action="append", required=True, help="an ocr-hook configuration (repeatable)")
    est.add_argument("--cases", default=str(DEFAULT_CASES), help="the case file (JSONL)")
    est.add_argument("--repos", help="directory of local clones (default: the user cache)")
    est.add_argument("--no-clone", action="store_true", help="never clone")
    est.set_defaults(func=cmd_estimate)
