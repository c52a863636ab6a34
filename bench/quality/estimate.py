"""`estimate`: what a run would cost, before spending anything: `ocr-hook preview` on every case.

preview never calls the model and needs no key. Its estimate is the product's own (input tokens of
the prompts, the diff and the reviewed files at the expected number of turns, plus output), so the
total printed here is the figure to set `run --max-cost` from.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .cases import Case
from .materialise import CaseUnavailable, ensure_clone, materialise


def estimate(cases: Sequence[Case], configs: Sequence[Path], repos: Path, allow_clone: bool,
             log: Callable[[str], None]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    unavailable: list[dict[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="ocr-hook-bench-estimate-") as tmp:
        for index, case in enumerate(cases):
            try:
                scratch = materialise(case, ensure_clone(repos, case, allow_clone), Path(tmp) / f"case-{index}")
            except CaseUnavailable as exc:
                unavailable.append({"case": case.id, "reason": str(exc)})
                log(f"{case.id}: not estimated: {exc}")
                continue
            for config in configs:
                proc = subprocess.run([sys.executable, "-m", "ocr_hook", "preview", "--staged", "--format", "json",
                                       "--config", str(config.resolve())], cwd=scratch, capture_output=True,
                                      text=True, errors="replace")
                try:
                    data = json.loads(proc.stdout)["estimate"]
                except (ValueError, KeyError):
                    unavailable.append({"case": case.id, "reason": (proc.stderr.strip().splitlines() or ["?"])[-1]})
                    continue
                rows.append({"case": case.id, "config": config.stem, "input_tokens": data.get("input_tokens", 0),
                             "output_tokens": data.get("output_tokens", 0), "cost_usd": data.get("cost_usd", 0.0),
                             "model": data.get("model")})
            shutil.rmtree(scratch, ignore_errors=True)
    return {"rows": rows, "unavailable": unavailable}


def render_estimate(result: dict[str, Any]) -> str:
    lines = [f"{'case':<22}{'config':<12}{'input tokens':>14}{'USD (ceiling)':>15}"]
    totals: dict[str, list[float]] = {}
    for row in result["rows"]:
        lines.append(f"{row['case']:<22}{row['config']:<12}{row['input_tokens']:>14,}{row['cost_usd']:>15.4f}")
        totals.setdefault(row["config"], []).append(row["cost_usd"])
    lines.append("")
    for config, costs in totals.items():
        costs_sorted = sorted(costs)
        median = costs_sorted[len(costs_sorted) // 2]
        lines.append(f"{config}: {len(costs)} cases, total ${sum(costs):.2f}, median ${median:.4f} a case, "
                     f"largest ${costs_sorted[-1]:.4f}")
    for entry in result["unavailable"]:
        lines.append(f"not estimated: {entry['case']}: {entry['reason']}")
    return "\n".join(lines)
