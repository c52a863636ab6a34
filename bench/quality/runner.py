"""The run: every case with every configuration through the real CLI, inside one total cost cap."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cases import Case
from .gitcmd import git
from .judge import Judge, JudgeUnaffordable
from .match import blocking, hits
from .materialise import CaseUnavailable, ensure_clone, materialise

CLI_TIMEOUT_S = 1800
CAP_WORDS = "cost cap"  # how the CLI says its budget stopped it (notes, coverage reasons)


@dataclass
class RunOptions:
    configs: Sequence[Path]
    cases: Sequence[Case]
    repos: Path
    max_cost: float
    allow_clone: bool = True
    judge: Judge | None = None
    env: Mapping[str, str] = field(default_factory=dict)  # the CLI's environment
    before_review: Callable[[Case, int, Path], None] | None = None  # the --fake mode scripts the fake here
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)


def labels_for(configs: Sequence[Path]) -> list[str]:
    stems = [c.stem for c in configs]
    return [c.stem if stems.count(c.stem) == 1 else str(c) for c in configs]


def review_command(config: Path, max_cost: float) -> list[str]:
    """Exactly what a user runs, plus the remaining budget and no result cache (every run pays its way,
    so a second run of the bench measures the same thing as the first)."""
    return [sys.executable, "-m", "ocr_hook", "review", "--staged", "--format", "json", "--config",
            str(config.resolve()), "--max-cost", f"{max_cost:.6f}", "--no-cache"]


def _stopped_by_cap(report: Mapping[str, Any]) -> bool:
    text = json.dumps([report.get("notes"), report.get("coverage")])
    return report.get("status") != "complete" and CAP_WORDS in text


class Run:
    def __init__(self, options: RunOptions) -> None:
        self.o = options
        self.labels = labels_for(options.configs)
        self.spent = 0.0
        self.stopped: str | None = None
        self.results: dict[str, list[dict[str, Any]]] = {label: [] for label in self.labels}
        self.unavailable: list[dict[str, str]] = []
        self.not_run = 0

    @property
    def remaining(self) -> float:
        return self.o.max_cost - self.spent

    def execute(self) -> dict[str, Any]:
        total = len(self.o.cases) * len(self.labels)
        with tempfile.TemporaryDirectory(prefix="ocr-hook-bench-quality-") as tmp:
            for index, case in enumerate(self.o.cases):
                if self.stopped:
                    self.not_run += len(self.labels)
                    continue
                try:
                    clone = ensure_clone(self.o.repos, case, self.o.allow_clone)
                    scratch = materialise(case, clone, Path(tmp) / f"case-{index}")
                except CaseUnavailable as exc:
                    self.unavailable.append({"case": case.id, "reason": str(exc)})
                    self.o.log(f"{case.id}: not run: {exc}")
                    continue
                fix_diff = git(clone, "show", "--format=", "--no-color", case.fix_commit, "--", *case.files)
                for config, label in zip(self.o.configs, self.labels, strict=True):
                    if self.stopped or self.remaining <= 0:
                        self.stopped = self.stopped or f"cost cap of ${self.o.max_cost:.2f} spent"
                        self.not_run += 1
                        continue
                    if self.o.before_review is not None:
                        self.o.before_review(case, index, scratch)
                    self.results[label].append(self._review(case, config, label, scratch, fix_diff))
                shutil.rmtree(scratch, ignore_errors=True)
        if self.stopped:
            self.o.log(f"STOPPED EARLY: {self.stopped}; {self.not_run} of {total} reviews not run")
        return {"configs": dict(zip(self.labels, (str(c) for c in self.o.configs), strict=True)),
                "max_cost_usd": self.o.max_cost, "spent_usd": round(self.spent, 6), "stopped": self.stopped,
                "not_run": self.not_run, "unavailable": self.unavailable, "results": self.results,
                "judge_model": self.o.judge.model if self.o.judge else None}

    def _review(self, case: Case, config: Path, label: str, scratch: Path, fix_diff: str) -> dict[str, Any]:
        result: dict[str, Any] = {"case": case.id, "project": case.slug, "category": case.category,
                                  "language": case.language, "config": label, "reviewed": False, "error": None,
                                  "findings": [], "usage": {}, "wall_s": 0.0, "found": False,
                                  "found_blocking": False, "judged": False, "found_judged": False}
        budget = self.remaining
        started = time.monotonic()
        try:
            proc = subprocess.run(review_command(config, budget), cwd=scratch, env=dict(self.o.env),
                                  capture_output=True, text=True, errors="replace", timeout=CLI_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            result["error"] = f"the CLI ran past {CLI_TIMEOUT_S} s"
            self.o.log(f"{case.id} [{label}]: {result['error']}")
            return result
        result["wall_s"] = round(time.monotonic() - started, 3)
        result["exit_code"] = proc.returncode
        try:
            report = json.loads(proc.stdout)
        except ValueError:
            last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}, no JSON"])[-1]
            result["error"] = last
            self.o.log(f"{case.id} [{label}]: error: {last}")
            return result
        usage = report.get("usage") or {}
        result["usage"] = usage
        self.spent += float(usage.get("cost_usd") or 0.0)
        result["status"] = report.get("status")
        result["fail_on"] = report.get("fail_on")
        result["notes"] = report.get("notes", [])
        if _stopped_by_cap(report):
            # A review cut short by the cap would count as a miss it never had the chance to avoid.
            result["error"] = "cut off by the cost cap"
            self.stopped = f"cost cap of ${self.o.max_cost:.2f} reached during {case.id} [{label}]"
            return result
        result["reviewed"] = True
        for f in report.get("findings", []):
            if f.get("suppressed"):
                continue
            result["findings"].append({
                "path": f.get("path"), "start_line": f.get("start_line"), "end_line": f.get("end_line"),
                "severity": f.get("severity"), "category": f.get("category"), "message": f.get("message"),
                "anchored": f.get("anchored"), "hit": hits(f, case.golden),
                "blocking": blocking(f, str(report.get("fail_on")))})
        located = [f for f in result["findings"] if f["hit"]]
        result["found"] = bool(located)
        result["found_blocking"] = any(f["blocking"] for f in located)
        if self.o.judge is not None:
            self._judge(case, result, located, fix_diff)
        self.o.log(f"{case.id} [{label}]: {result['status']}, {len(result['findings'])} finding(s), "
                   f"{'found' if result['found'] else 'missed'}, ${float(usage.get('cost_usd') or 0):.4f}, "
                   f"{result['wall_s']:.1f} s")
        return result

    def _judge(self, case: Case, result: dict[str, Any], located: list[dict[str, Any]], fix_diff: str) -> None:
        assert self.o.judge is not None
        for finding in located:
            try:
                verdict = self.o.judge.ask(case.description, fix_diff, finding, self.remaining)
            except JudgeUnaffordable as exc:
                self.stopped = f"cost cap of ${self.o.max_cost:.2f} reached while judging {case.id} ({exc})"
                return
            except Exception as exc:  # an API failure leaves this case unjudged; the run goes on
                self.o.log(f"{case.id}: judge request failed: {type(exc).__name__}: {exc}")
                return
            self.spent += verdict.cost_usd
            finding["judged_hit"] = verdict.same_bug is True
        result["judged"] = True
        result["found_judged"] = any(f.get("judged_hit") for f in located)
