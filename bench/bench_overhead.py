"""Benchmark: the light paths of `ocr-hook review` against a baseline measured in the same run.

Run: python bench/bench_overhead.py [--runs N] [--python PATH]

Floor: `python -c "import click, yaml"` plus `git diff --cached --quiet`, measured in the same run in the
same scratch repository, in turn with each measured path (one run of each per round, so a change in load
touches both). click and PyYAML are on the design card and a hook must ask git whether anything is staged,
so every run of the CLI does that much work. Measured (median of N runs, the real CLI as a subprocess,
the fake Messages API on 127.0.0.1), against the floor:
  * nothing staged                     target <= 1.3x the floor
  * a fully cached re-run              target <= 1.6x the floor, and zero requests
Each path is also reported as "floor + X ms" (the part this project's own code can still shrink), in CPU
time as well as wall time (CPU ratios suffer much less when the machine is shared), with the git processes
it starts (counted once per path through a logging `git` first on PATH). It also checks, with
`python -X importtime`, that neither path imports the `anthropic` SDK, and each path's own work, timed
inside a process that has already run it once (no start-up, no imports), beside what the target leaves
above the floor for that work and the path's imports together. The older baseline
(`python -c pass` + `git diff --cached`) is printed too, for comparison with earlier figures.

Both paths are measured cold (a process that imports what it needs: CI, `warm: off`, outside pre-commit)
and, beside them, served by the warm worker as under pre-commit (`PRE_COMMIT=1`, the worker started with
`ocr-hook warm start` first and stopped at the end); the targets are the cold figures'.

--python PATH measures another interpreter's install (its `ocr-hook` script next to it), e.g. a
normal, non-editable one: an editable install's site hook alone adds ~10 ms to every start-up.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))

from fake_api import FakeMessagesAPI, Reply, task_done, text, tool_use  # noqa: E402
from gitrepo import commit_all, git, make_repo, write  # noqa: E402  (also isolates git config)

NOTHING_STAGED_TARGET = 1.3  # x the floor
CACHED_TARGET = 1.6  # x the floor


FLOOR_IMPORTS = "import click, yaml"


def ocr_hook_command(python: str = sys.executable) -> list[str]:
    """The installed console script next to the interpreter, else `python -m ocr_hook`."""
    script = Path(python).with_name("ocr-hook")
    return [str(script)] if script.exists() else [python, "-m", "ocr_hook"]


def fake_env(fake: FakeMessagesAPI, cache_home: Path) -> dict[str, str]:
    """os.environ pointed at the fake, with no OCR_HOOK_* / ANTHROPIC_* leaking in from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OCR_HOOK_", "PRE_COMMIT_"))}
    # As on a user's machine, modules load from bytecode: a sandbox's PYTHONDONTWRITEBYTECODE would
    # make every run compile the package from source (the first, untimed run writes the .pyc files).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update({
        "ANTHROPIC_BASE_URL": fake.url,
        "ANTHROPIC_API_KEY": "bench-key-not-secret",
        "XDG_CACHE_HOME": str(cache_home),
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    })
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess[bytes]]:
    """Wall seconds, CPU seconds (user + system) and the finished process."""
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True)
    return time.perf_counter() - start, _children_cpu() - cpu, proc


def median_time(cmd: list[str], cwd: Path, env: dict[str, str], runs: int, expect: int = 0) -> tuple[float, float]:
    """Median wall and median CPU seconds over `runs` runs; exits when the command fails."""
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu, proc = timed(cmd, cwd, env)
        if proc.returncode != expect:
            raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr.decode(errors='replace')}")
        walls.append(wall)
        cpus.append(cpu)
    return statistics.median(walls), statistics.median(cpus)


def interleaved(cmds: list[tuple[list[str], int]], cwd: Path, env: dict[str, str],
                runs: int) -> list[tuple[float, float]]:
    """Median wall and CPU seconds of each (command, expected exit code), run in turn in every round, so a
    change in the machine's load touches the floor and the measured path alike."""
    walls: list[list[float]] = [[] for _ in cmds]
    cpus: list[list[float]] = [[] for _ in cmds]
    for _ in range(runs):
        for i, (cmd, expect) in enumerate(cmds):
            wall, cpu, proc = timed(cmd, cwd, env)
            if proc.returncode != expect:
                raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr.decode(errors='replace')}")
            walls[i].append(wall)
            cpus[i].append(cpu)
    return [(statistics.median(w), statistics.median(c)) for w, c in zip(walls, cpus, strict=True)]


def import_times(cmd: list[str], cwd: Path, env: dict[str, str], python: str) -> dict[str, int]:
    """Each module's own import time in microseconds, from one `python -X importtime` run of `cmd`."""
    target = cmd if cmd[0] == python else [python, *cmd]
    proc = subprocess.run([target[0], "-X", "importtime", *target[1:]], cwd=cwd, env=env, capture_output=True)
    found = {}
    for line in proc.stderr.decode(errors="replace").splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            own, _cumulative, name = line[len("import time:"):].split("|")
            found[name.strip()] = int(own)
    return found


def import_summary(times: dict[str, int], floor: dict[str, int], top: int = 8) -> str:
    extra = {name: us for name, us in times.items() if name not in floor}
    ours = sum(us for name, us in extra.items() if name.startswith("ocr_hook"))
    costly = ", ".join(f"{name} {us / 1000:.1f}" for name, us in sorted(extra.items(), key=lambda kv: -kv[1])[:top])
    return (f"{sum(extra.values()) / 1000:.1f} ms of imports beyond the floor's ({ours / 1000:.1f} ms ocr_hook); "
            f"top (ms, under -X importtime): {costly}")


def imports_sdk(cmd: list[str], cwd: Path, env: dict[str, str], python: str = sys.executable) -> bool:
    """Whether the command imports the `anthropic` package (per `python -X importtime`)."""
    target = cmd if cmd[0] == python else [python, *cmd]  # the console script is Python
    proc = subprocess.run([target[0], "-X", "importtime", *target[1:]], cwd=cwd, env=env, capture_output=True)
    return any(line.split("|")[-1].strip() == "anthropic"
               for line in proc.stderr.decode(errors="replace").splitlines())


_IN_PROCESS = """
import contextlib, io, statistics, sys, time
from ocr_hook.cli import main
def once():
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(sys.argv[2:])
        except SystemExit:
            pass
    return time.perf_counter() - start
once()  # loads every module the path needs
print(statistics.median(once() for _ in range(int(sys.argv[1]))))
"""


def own_work(args: list[str], cwd: Path, env: dict[str, str], python: str, runs: int) -> float:
    """Median seconds of one run of `ocr-hook ARGS` inside a process that has already run it once: the
    path's own work (git, hashing, reading the cache, rendering) without start-up or imports."""
    proc = subprocess.run([python, "-c", _IN_PROCESS, str(runs), *args], cwd=cwd, env=env, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise SystemExit(f"in-process runs failed:\n{proc.stderr}")
    return float(proc.stdout.strip())


def git_processes(cmd: list[str], cwd: Path, env: dict[str, str], shim_dir: Path) -> list[str]:
    """The git subcommands one run of `cmd` starts, through a logging `git` first on PATH."""
    log = shim_dir / "calls.log"
    log.unlink(missing_ok=True)
    subprocess.run(cmd, cwd=cwd, env={**env, "PATH": f"{shim_dir}{os.pathsep}{env.get('PATH', '')}"},
                   capture_output=True)
    calls = []
    for line in log.read_text().splitlines() if log.exists() else []:
        words, i = line.split(" "), 0
        while i < len(words) and words[i].startswith("-"):  # git's own options: --no-pager, -c NAME=VALUE
            i += 2 if words[i] == "-c" else 1
        calls.append(words[i] if i < len(words) else "?")
    return calls


def make_shim(root: Path) -> Path:
    real = shutil.which("git")
    if real is None:
        raise SystemExit("git is not on PATH")
    shim_dir = root / "git-shim"
    shim_dir.mkdir()
    script = shim_dir / "git"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{shim_dir / "calls.log"}"\nexec "{real}" "$@"\n')
    script.chmod(0o755)
    return shim_dir


def warm_env(env: dict[str, str], scratch: Path) -> dict[str, str]:
    """`env` as a commit under pre-commit sees it, with the worker's socket in the scratch directory."""
    runtime = scratch / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    return {**env, "PRE_COMMIT": "1", "OCR_HOOK_WARM": "on", "XDG_RUNTIME_DIR": str(runtime)}


def served_warm(control: list[str], review: list[str], floor: list[tuple[list[str], int]], cwd: Path,
                env: dict[str, str], runs: int, fake: FakeMessagesAPI) -> tuple[float, float, int]:
    """(floor, warm review) median wall seconds, run in turn, with a worker started first and stopped
    after, and the requests the timed runs sent. Wall time only: the CPU is the worker's child's."""
    started = subprocess.run([*control, "warm", "start"], env=env, capture_output=True, text=True)
    if started.returncode != 0:
        raise SystemExit(f"warm start failed: {started.stderr}")
    try:
        # Once untimed: under pre-commit the review's effort is quick, so the cached path's first warm run
        # reviews (and stores) what the cold runs had stored at the standard effort.
        subprocess.run(review, cwd=cwd, env=env, capture_output=True)
        before = len(fake.requests)
        (floor_python, _), (quiet, _), (warm, _) = interleaved([*floor, (review, 0)], cwd, env, runs)
        requests = len(fake.requests) - before
    finally:
        subprocess.run([*control, "warm", "stop"], env=env, capture_output=True)
    return floor_python + quiet, warm, requests


def build_repo(root: Path) -> Path:
    repo = make_repo(root / "repo")
    for n in range(5):
        write(repo, f"pkg/mod{n}.py", "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(30)))
    write(repo, "README.md", "bench\n")
    commit_all(repo, "base")
    return repo


def stage_change(repo: Path) -> None:
    for n in range(3):
        path = f"pkg/mod{n}.py"
        content = (repo / path).read_text() + f"def added_{n}(items):\n    return sum(items) / len(items)\n"
        write(repo, path, content)
        git(repo, "add", "--", path)


def script_reviews(fake: FakeMessagesAPI) -> None:
    # One low-severity finding per file (exit 0 at --fail-on high), so the cache stores real findings.
    for n in range(3):
        fake.script(f"Review the change to `pkg/mod{n}.py`", [
            Reply([tool_use("code_comment", {"comments": [{
                "content": "Division by zero when items is empty.",
                "existing_code": "    return sum(items) / len(items)",
                "severity": "low", "category": "bug"}]})]),
            task_done(),
        ])
    fake.handle(lambda body: "You check code review comments" in str(body.get("system")),
                lambda body: Reply([text('{"wrong": []}')]))


def work_line(work: float, floor: float, target: float) -> str:
    allowance = (target - 1) * floor
    return (f"its own work, in a process that has every module loaded: {work * 1000:.1f} ms; the target leaves "
            f"{allowance * 1000:.1f} ms above the floor for that work and every import the path needs, so "
            f"{(allowance - work) * 1000:.1f} ms for the imports")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--python", default=sys.executable, metavar="PATH",
                        help="interpreter whose ocr-hook install to measure (default: this one)")
    args = parser.parse_args()
    python = str(Path(args.python).absolute())  # not resolved: a venv's python is a symlink

    scratch = Path(tempfile.mkdtemp(prefix="ocr-hook-bench-overhead-"))
    try:
        with FakeMessagesAPI() as fake:
            env = fake_env(fake, scratch / "cache-home")
            repo = build_repo(scratch)
            review_args = ["review", "-q", "--format", "json"]
            review = [*ocr_hook_command(python), *review_args]
            floor_cmd = [python, "-c", FLOOR_IMPORTS]

            # Warm the file-system cache and the interpreter's bytecode caches first.
            for cmd in ([python, "-c", "pass"], floor_cmd, ["git", "diff", "--cached", "--quiet"], review):
                subprocess.run(cmd, cwd=repo, env=env, capture_output=True)

            base_python, cpu_python = median_time([python, "-c", "pass"], repo, env, args.runs)
            base_git, cpu_git = median_time(["git", "diff", "--cached"], repo, env, args.runs)
            baseline, cpu_baseline = base_python + base_git, cpu_python + cpu_git
            quiet = ["git", "diff", "--cached", "--quiet"]
            shim_dir = make_shim(scratch)

            (floor_python, cpu_floor_python), (quiet_git, cpu_quiet_git), (nothing, cpu_nothing) = interleaved(
                [(floor_cmd, 0), (quiet, 0), (review, 0)], repo, env, args.runs)
            floor, cpu_floor = floor_python + quiet_git, cpu_floor_python + cpu_quiet_git
            nothing_requests = len(fake.requests)
            nothing_sdk = imports_sdk(review, repo, env, python)
            nothing_git = git_processes(review, repo, env, shim_dir)
            floor_imports = import_times(floor_cmd, repo, env, python)
            nothing_imports = import_summary(import_times(review, repo, env, python), floor_imports)
            nothing_work = own_work(review_args, repo, env, python, args.runs)
            served = warm_env(env, scratch)
            control = ocr_hook_command(python)
            warm_floor, warm_nothing, warm_nothing_requests = served_warm(
                control, review, [(floor_cmd, 0), (quiet, 0)], repo, served, args.runs, fake)

            stage_change(repo)
            script_reviews(fake)
            seconds_first, _, first = timed(review, repo, env)
            if first.returncode != 0:
                raise SystemExit(f"first review exited {first.returncode}:\n{first.stderr.decode(errors='replace')}")
            first_requests = len(fake.requests)
            # The floor again, beside the cached path (with a change staged, `git diff --cached --quiet` exits 1).
            (floor2_python, cpu_floor2_python), (quiet2, cpu_quiet2), (cached, cpu_cached) = interleaved(
                [(floor_cmd, 0), (quiet, 1), (review, 0)], repo, env, args.runs)
            floor2, cpu_floor2 = floor2_python + quiet2, cpu_floor2_python + cpu_quiet2
            cached_requests = len(fake.requests) - first_requests
            cached_sdk = imports_sdk(review, repo, env, python)
            cached_git = git_processes(review, repo, env, shim_dir)
            cached_imports = import_summary(import_times(review, repo, env, python), floor_imports)
            cached_work = own_work(review_args, repo, env, python, args.runs)
            check_requests = len(fake.requests) - first_requests - cached_requests
            warm_floor2, warm_cached, warm_cached_requests = served_warm(
                control, review, [(floor_cmd, 0), (quiet, 1)], repo, served, args.runs, fake)

        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"machine: {os.cpu_count()} CPUs, load average {load:.2f} (wall ratios suffer under load; "
              f"CPU ratios much less)")
        print(f"interpreter: {python}  command: {' '.join(review)}")
        print(f"baseline: python -c pass {base_python * 1000:.1f} ms + git diff --cached {base_git * 1000:.1f} ms "
              f"= {baseline * 1000:.1f} ms wall, {cpu_baseline * 1000:.1f} ms CPU (medians of {args.runs})")
        print(f"floor:    python -c '{FLOOR_IMPORTS}' {floor_python * 1000:.1f} ms + git diff --cached --quiet "
              f"{quiet_git * 1000:.1f} ms = {floor * 1000:.1f} ms wall, {cpu_floor * 1000:.1f} ms CPU "
              f"(= {floor / baseline:.2f}x the baseline)")
        print(f"nothing staged:   {nothing * 1000:7.1f} ms wall = {nothing / floor:.2f}x the floor = floor + "
              f"{(nothing - floor) * 1000:.1f} ms, {cpu_nothing * 1000:6.1f} ms CPU = {cpu_nothing / cpu_floor:.2f}x"
              f"  (target <= {NOTHING_STAGED_TARGET}x)  requests: {nothing_requests}  imports anthropic: "
              f"{'yes' if nothing_sdk else 'no'}  git processes: {len(nothing_git)} ({' '.join(nothing_git)})")
        print(f"  nothing staged: {nothing_imports}")
        print(f"  nothing staged: {work_line(nothing_work, floor, NOTHING_STAGED_TARGET)}")
        print(f"  served warm (under pre-commit): {warm_nothing * 1000:7.1f} ms wall = "
              f"{warm_nothing / warm_floor:.2f}x the floor beside it ({warm_floor * 1000:.1f} ms); "
              f"requests: {warm_nothing_requests}")
        print(f"first review:     {seconds_first * 1000:7.1f} ms wall  ({first_requests} requests, 3 files)")
        print(f"floor beside the cached runs: {floor2 * 1000:.1f} ms wall, {cpu_floor2 * 1000:.1f} ms CPU")
        print(f"fully cached:     {cached * 1000:7.1f} ms wall = {cached / floor2:.2f}x the floor = floor + "
              f"{(cached - floor2) * 1000:.1f} ms, {cpu_cached * 1000:6.1f} ms CPU = {cpu_cached / cpu_floor2:.2f}x"
              f"  (target <= {CACHED_TARGET}x)  requests: {cached_requests} over {args.runs} re-runs "
              f"(+{check_requests} in the checks)  imports anthropic: {'yes' if cached_sdk else 'no'}  "
              f"git processes: {len(cached_git)} ({' '.join(cached_git)})")
        print(f"  fully cached: {cached_imports}")
        print(f"  fully cached: {work_line(cached_work, floor2, CACHED_TARGET)}")
        print(f"  served warm (under pre-commit): {warm_cached * 1000:7.1f} ms wall = "
              f"{warm_cached / warm_floor2:.2f}x the floor beside it ({warm_floor2 * 1000:.1f} ms); "
              f"requests: {warm_cached_requests} over {args.runs} re-runs (after one untimed run: pre-commit's quick "
              f"effort is reviewed once)")
        ok = (nothing / floor <= NOTHING_STAGED_TARGET and cached / floor2 <= CACHED_TARGET
              and nothing_requests == 0 and cached_requests == 0 and check_requests == 0
              and not nothing_sdk and not cached_sdk)
        print("verdict (cold wall-clock targets, zero requests, no SDK import):", "PASS" if ok else "FAIL")
        warm_ok = (warm_nothing / warm_floor <= NOTHING_STAGED_TARGET and warm_cached / warm_floor2 <= CACHED_TARGET
                   and warm_nothing_requests == 0 and warm_cached_requests == 0)
        print("served warm, the same targets:", "met" if warm_ok else "not met")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
