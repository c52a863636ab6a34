"""Benchmark: a repository of any size (issue 55): cached re-scans, a 1 GB file, CPU per file, --timeout.

Run: python bench/bench_scale.py --sdists DIR [--big 30000] [--blob-mb 1024] [--rounds 3] [--against OLDER_CHECKOUT]
DIR holds the published sdists (`pip download --no-deps --no-binary :all: django==5.1 requests==2.32.3 -d DIR`).
Every figure is measured in this run, against a baseline measured in the same run, through the real CLI (a child
process; its CPU and peak memory include the git processes it waited for) and the fake Messages API at zero
latency, in process:

1. A cached re-scan of Django 5.1's `django/` + `tests/` (about 3,400 files, unchanged): requests sent (target 0)
   and its wall time over the same re-scan with --no-context (target <= 1.2), median of --rounds interleaved pairs.
2. Peak memory of `preview --scan` and of a cached `scan` of a generated tree at the commit that adds a
   --blob-mb file, minus the same at the commit before it (target <= 50 MB).
3. CPU (user + system) per reviewed file of `scan --no-cache` (standard effort) on the Django tree (target
   <= 10 ms) and the share of its reviewed files given a context pack; on generated trees of 3,000 and --big
   files: their ratio (linear: about 1).
4. `scan --no-cache --timeout T` on the Django tree: wall time past T (target <= 1 s).
With --against DIR (a checkout of other code), only the CPU scan of 3, in turn with DIR's code, --rounds times.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import NamedTuple

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))

from fake_api import FakeMessagesAPI  # noqa: E402
from gitrepo import commit_all, git, make_repo  # noqa: E402  (also isolates git config)

CPU_MS_TARGET = 10  # CPU ms per reviewed file of the Django tree (issue 62.8)
BIG_CAPS = ["--max-cost", "100000", "--max-tokens", "100000000000", "--timeout", "100000", "--concurrency", "8"]


class Measured(NamedTuple):
    wall: float
    cpu: float
    peak_mb: float
    stdout: str
    stderr: str
    code: int


# A small launcher between this process and the CLI: a child forked from this process (which holds the fake
# server's every recorded request) would count this process's pages in its peak RSS. The launcher's children are
# the CLI and, through it, the git processes it waits for.
_LAUNCHER = ("import json, resource, subprocess, sys, time\n"
             "started = time.monotonic()\n"
             "code = subprocess.call(sys.argv[2:])\n"
             "wall = time.monotonic() - started\n"
             "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
             "with open(sys.argv[1], 'w') as fh:\n"
             "    json.dump([code, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss], fh)\n")


def cli(repo: Path, env: dict[str, str], *args: str) -> Measured:
    """`python -m ocr_hook ARGS` as a child: wall time, CPU and peak RSS (its own and its waited-for children's)."""
    with tempfile.TemporaryDirectory() as scratch:
        figures = Path(scratch) / "figures.json"
        proc = subprocess.run([sys.executable, "-c", _LAUNCHER, str(figures), sys.executable, "-m", "ocr_hook", *args],
                              cwd=repo, env=env, capture_output=True)
        code, wall, cpu, peak_kb = json.loads(figures.read_text())
    return Measured(wall, cpu, peak_kb / 1024, proc.stdout.decode("utf-8", "replace"),
                    proc.stderr.decode("utf-8", "replace"), code)


def django_tree(sdists: Path, root: Path) -> Path:
    """Django 5.1's django/ and tests/ from its sdist, committed."""
    archive = next(sdists.glob("[Dd]jango-5.1.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(root / "src", filter="data")
    top = next((root / "src").iterdir())
    repo = make_repo(root / "django")
    for part in ("django", "tests"):
        os.rename(top / part, repo / part)
    requests = next(sdists.glob("requests-2.32.3.tar.gz"), None)
    if requests is not None:  # the second published tree: requests' own sources beside Django's
        with tarfile.open(requests) as tar:
            tar.extractall(root / "src", filter="data")
        os.rename(root / "src" / "requests-2.32.3" / "src" / "requests", repo / "requests")
    commit_all(repo, "django 5.1 + requests 2.32.3")
    return repo


def generated_tree(root: Path, files: int) -> Path:
    """`files` small Python modules in packages of 100, each calling a function of the one before it."""
    repo = make_repo(root / f"gen{files}")
    for i in range(files):
        pkg = repo / f"pkg{i // 100:04}"
        pkg.mkdir(exist_ok=True)
        before = f"from pkg{(i - 1) // 100:04}.m{i - 1:05} import compute_{i - 1}\n\n\n" if i else ""
        call = f"compute_{i - 1}(x) + " if i else ""
        (pkg / f"m{i:05}.py").write_text(f"{before}def compute_{i}(x):\n    return {call}{i}\n")
    commit_all(repo, "generated")
    return repo


def add_blob(repo: Path, path: str, megabytes: int,
             line: bytes = b"INSERT INTO t VALUES (1, 'a row of a dump that nobody reviews by hand');\n") -> None:
    """A committed file of `megabytes` MB of SQL text, streamed into the object store (no work-tree copy)."""
    chunk = line * (1024 * 1024 // len(line) + 1)
    proc = subprocess.Popen(["git", "hash-object", "-w", "--stdin"], cwd=repo, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    left = megabytes * 1024 * 1024
    while left:
        part = chunk[:min(left, len(chunk))]
        proc.stdin.write(part)
        left -= len(part)
    proc.stdin.close()
    sha = proc.stdout.read().decode().strip()
    proc.wait()
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{sha},{path}")
    git(repo, "commit", "-q", "--no-verify", "-m", f"add {path}")


def memory_of_unreviewed_bytes(repo: Path, env: dict[str, str], blob_mb: int) -> None:
    """Issue 62.4-5: peak memory of `preview` when the --blob-mb file (committed at HEAD) is renamed and regenerated
    (rename detection used to load both sides), and of `preview --scan` beside a 196 MB vendor/ (its patch used to
    be parsed for files skipped by name), each against the commit before it (target: about +0 MB)."""
    start = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "rm", "-q", "--cached", "dump.sql")
    add_blob(repo, "data/dump.sql", blob_mb, line=b"INSERT INTO t VALUES (2, 'the same dump, generated again');\n")
    without = cli(repo, env, "preview", "--base", start, "--format", "json", "pkg0000")
    moved = cli(repo, env, "preview", "--base", start, "--format", "json")
    print(f"[memory] preview of a {blob_mb} MB file renamed and regenerated: {moved.peak_mb:.0f} MB, "
          f"{without.peak_mb:.0f} MB without it: {moved.peak_mb - without.peak_mb:+.0f} MB; wall {moved.wall:.2f} s",
          flush=True)
    before = git(repo, "rev-parse", "HEAD").strip()
    text = "".join(f"function vendored_{i}(a, b) {{ return a * {i} + b; }} // nobody reviews this\n"
                   for i in range(1_600))  # about 100 KB: under max_file_bytes, or it would be skipped by size
    for n in range(1_960):
        target = repo / "vendor" / f"lib{n // 100}" / f"m{n}.js"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.replace("nobody", f"file {n}: nobody"))
    commit_all(repo, "vendor 196 MB")
    at_before = cli(repo, env, "preview", "--scan", "--rev", before, "--format", "json")
    at_head = cli(repo, env, "preview", "--scan", "--format", "json")
    print(f"[memory] preview --scan with a 196 MB vendor/: {at_head.peak_mb:.0f} MB, {at_before.peak_mb:.0f} MB "
          f"without: {at_head.peak_mb - at_before.peak_mb:+.0f} MB; wall {at_head.wall:.2f} s vs "
          f"{at_before.wall:.2f} s", flush=True)


def cpu_per_reviewed_file(django: Path, env: dict[str, str], files: int) -> None:
    """3. CPU (user + system of the CLI and the git processes it waited for) per reviewed file of `scan --no-cache`
    at standard effort on the Django tree: every file reviewed, each request answered at once. Beside it, the share
    of the reviewed files whose first request carried a context pack (the packs' run-wide window decides it)."""
    cold = cli(django, env, "scan", "-q", "--no-cache", "--effort", "standard", "--format", "json", *BIG_CAPS)
    report = json.loads(cold.stdout)
    reviewed = len(report["coverage"]["reviewed"]) or 1
    packed = len(report["coverage"].get("context", {}))
    print(f"[cpu] Django tree, {files} files, {reviewed} reviewed: {cold.cpu:.1f} s CPU, "
          f"{1000 * cold.cpu / reviewed:.1f} ms per reviewed file (target <= {CPU_MS_TARGET}), wall {cold.wall:.1f} s, "
          f"{report['status']}; load {os.getloadavg()[0]:.1f}", flush=True)
    requests = report["usage"]["requests"]
    print(f"[cpu] context packs: {packed} of {reviewed} reviewed files ({100 * packed / reviewed:.1f}%); requests: "
          f"{requests} ({requests / reviewed:.2f} a reviewed file: the SDK's own work per request counts in the CPU)",
          flush=True)
    window = next((n for n in report["notes"] if "context pack" in n), None)
    if window:
        print(f"[cpu] the run's note: {window}", flush=True)


def cpu_against(django: Path, env: dict[str, str], older: Path, rounds: int) -> None:
    """The CPU scan of cpu_per_reviewed_file run in turn with another checkout's code (`--against DIR`, e.g. a
    `git worktree add` of an earlier commit, put first on PYTHONPATH): the ratio of the two, the same tree, the
    same load."""
    args = ("scan", "-q", "--no-cache", "--effort", "standard", "--format", "json", *BIG_CAPS)
    older_env = {**env, "PYTHONPATH": str(older)}
    pairs = []
    for _ in range(rounds):
        runs = [cli(django, environ, *args) for environ in (older_env, env)]
        reviewed = [len(json.loads(r.stdout)["coverage"]["reviewed"]) or 1 for r in runs]
        pairs.append([1000 * r.cpu / n for r, n in zip(runs, reviewed, strict=True)])
        print(f"[cpu] {older}: {pairs[-1][0]:.1f} ms per reviewed file, this checkout: {pairs[-1][1]:.1f} ms "
              f"({pairs[-1][1] / pairs[-1][0]:.2f}x); load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"[cpu] this checkout over {older}: median {statistics.median(b / a for a, b in pairs):.2f}x", flush=True)


def cost_follows_change(django: Path, env: dict[str, str], fake: FakeMessagesAPI, scratch: Path) -> None:
    """Issue 62.1-2 (h62a): requests of a commit after a scan and of a second push to a pull request, on a clone
    of the Django tree (the result cache is shared: keys name no repository) so the other figures' tree stays.
    Targets: 1 file each (the one the commit touched)."""
    clone = scratch / "django-h62a"
    git(scratch, "clone", "-q", str(django), str(clone))

    def files_sent(*args: str, environ: dict[str, str] = env) -> tuple[int, list[str]]:
        before = len(fake.requests)
        run = cli(clone, environ, *args, *BIG_CAPS)
        texts = [r.first_user_text for r in fake.requests[before:] if r.path.endswith("/messages")]
        return run.code, sorted({text.split("`")[1] for text in texts if "`" in text})

    def commit(path: str, text: str, message: str) -> None:
        (clone / path).write_text(text, encoding="utf-8")
        git(clone, "commit", "-q", "--no-verify", "-am", message)

    code, sent = files_sent("scan", "-q")
    print(f"[change] scan of the clone (the cache filled above): exit {code}, {len(sent)} file(s) sent", flush=True)
    template = "django/contrib/admin/templates/admin/base.html"
    commit(template, (clone / template).read_text(encoding="utf-8") + "<!-- one line more -->\n", "One template line")
    code, sent = files_sent("scan", "-q")
    print(f"[change] scan after a commit touching one template: {len(sent)} file(s) sent (target 1) {sent[:5]}, "
          f"exit {code}", flush=True)
    functional = "django/utils/functional.py"
    commit(functional, "# A comment line at the top.\n" + (clone / functional).read_text(encoding="utf-8"),
           "A comment at the top of functional.py")
    code, sent = files_sent("scan", "-q")
    print(f"[change] scan after a comment at the top of {functional}: {len(sent)} file(s) sent (target 1) "
          f"{sent[:5]}, exit {code}", flush=True)

    # A pull request of 10 files, then a second push touching one of them, with a description that changed.
    git(clone, "checkout", "-q", "-b", "topic")
    touched = sorted(p for p in git(clone, "ls-files", "django/utils").splitlines() if p.endswith(".py"))[:10]
    for i, path in enumerate(touched):
        (clone / path).write_text((clone / path).read_text(encoding="utf-8") + f"\n\ndef _probe_{i}():\n"
                                  f"    return {i}\n", encoding="utf-8")
    git(clone, "commit", "-q", "--no-verify", "-am", "Add probes to ten modules")
    event = scratch / "h62a-event.json"
    event.write_text(json.dumps({"pull_request": {"title": "Probes", "body": "Ten modules."}}))
    github = {**env, "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)}
    code, first = files_sent("review", "-q", "--base", "main", environ=github)
    commit(touched[3], (clone / touched[3]).read_text(encoding="utf-8") + "# fixed\n", "Fix one probe")
    event.write_text(json.dumps({"pull_request": {"title": "Probes", "body": "Ten modules, one fixed."}}))
    code, second = files_sent("review", "-q", "--base", "main", environ=github)
    print(f"[change] pull request of {len(first)} files, second push touching one: {len(second)} file(s) sent "
          f"(target 1) {second[:5]}, exit {code}", flush=True)


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdists", type=Path, required=True)
    parser.add_argument("--big", type=int, default=30_000)
    parser.add_argument("--blob-mb", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--against", type=Path, help="a checkout of other code: its CPU per reviewed file beside "
                        "this one's, in turn (then only that is measured)")
    args = parser.parse_args()
    print(f"load at start: {load()}", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="ocr-hook-bench-scale-"))
    with FakeMessagesAPI() as fake:
        env = {**os.environ, "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "bench-key-not-secret",
               "NO_PROXY": "127.0.0.1,localhost", "XDG_CACHE_HOME": str(scratch / "cache")}
        django = django_tree(args.sdists, scratch)
        files = len(git(django, "ls-files").splitlines())

        if args.against is not None:
            cpu_against(django, env, args.against.resolve(), args.rounds)
            return
        cpu_per_reviewed_file(django, env, files)

        # 1. Cached re-scans: fill the cache with and without the context pack, then interleave the pairs.
        for flags in ((), ("--no-context",)):
            filled = cli(django, env, "scan", "-q", *flags, *BIG_CAPS)
            print(f"[cache] filled{' ' + flags[0] if flags else ''}: exit {filled.code}, {filled.wall:.1f} s",
                  flush=True)
        ratios, sent = [], []
        for _ in range(args.rounds):
            before = len(fake.requests)
            warm = cli(django, env, "scan", "-q", *BIG_CAPS)
            sent.append(len(fake.requests) - before)
            texts = [r.first_user_text for r in fake.requests[before:]]
            failed = sorted({text.split("`")[1] for text in texts if "`" in text})
            bare = cli(django, env, "scan", "-q", "--no-context", *BIG_CAPS)
            ratios.append(warm.wall / bare.wall)
            print(f"[cache] re-scan {warm.wall:.2f} s, --no-context {bare.wall:.2f} s, requests {sent[-1]} "
                  f"(for {failed}: files whose review fails every time are never cached)", flush=True)
        print(f"[cache] requests per re-scan {sent} (target 0); time over --no-context: median "
              f"{statistics.median(ratios):.2f}x (target <= 1.2)", flush=True)
        cost_follows_change(django, env, fake, scratch)

        # 4. --timeout bounds the whole run.
        bounded = cli(django, env, "scan", "-q", "--no-cache", "--timeout", str(args.timeout), "--max-cost", "100000",
                      "--max-tokens", "100000000000")
        print(f"[timeout] --timeout {args.timeout:g}: wall {bounded.wall:.2f} s, past the limit by "
              f"{bounded.wall - args.timeout:.2f} s (target <= 1), exit {bounded.code}", flush=True)

        # 2. Peak memory with a huge file, against the commit before it.
        small = generated_tree(scratch, 300)
        before = git(small, "rev-parse", "HEAD").strip()
        add_blob(small, "dump.sql", args.blob_mb)
        cli(small, env, "scan", "-q", "--rev", before, *BIG_CAPS)  # the cache: both measured scans are answered
        for what in (("preview", "--scan"), ("scan", "-q")):
            at_before = cli(small, env, *what, "--rev", before, *BIG_CAPS[:4] if what[0] == "scan" else ())
            at_head = cli(small, env, *what, *BIG_CAPS[:4] if what[0] == "scan" else ())
            print(f"[memory] {' '.join(what)}: {at_head.peak_mb:.0f} MB with a {args.blob_mb} MB file, "
                  f"{at_before.peak_mb:.0f} MB without: +{at_head.peak_mb - at_before.peak_mb:.0f} MB (target <= 50); "
                  f"wall {at_head.wall:.2f} s vs {at_before.wall:.2f} s", flush=True)

        memory_of_unreviewed_bytes(small, env, args.blob_mb)

        # 3b. Linear to --big files (generated, no cache).
        per_file = {}
        for count in (3_000, args.big):
            tree = generated_tree(scratch, count)
            run = cli(tree, env, "scan", "-q", "--no-cache", "--effort", "standard", "--format", "json", *BIG_CAPS)
            per_file[count] = run.cpu / max(1, len(json.loads(run.stdout)["coverage"]["reviewed"]))
            print(f"[cpu] generated {count} files: {run.cpu:.1f} s CPU, {1000 * per_file[count]:.1f} ms per file, "
                  f"wall {run.wall:.1f} s, exit {run.code}", flush=True)
        print(f"[cpu] per file at {args.big} over at 3,000: {per_file[args.big] / per_file[3_000]:.2f}x "
              "(linear: about 1)", flush=True)
    print(f"load at end: {load()}", flush=True)
    print(f"scratch left in {scratch}")


if __name__ == "__main__":
    main()
