"""Benchmark: what one `review` call through `ocr-hook mcp` costs on top of the review itself.

Run: python bench/bench_mcp_overhead.py [--runs N] [--files N]

A scratch repository with N staged files, every one already in the result cache (a fully cached review:
no request is sent), the fake Messages API on 127.0.0.1. Measured in the same run, medians of N:
  * cli       `ocr-hook review -q --format json` as a subprocess (what an agent's shell command costs)
  * pipeline  runner.run_review in this process: the server's work for one call, without the protocol
  * mcp call  `tools/call review` to a running server through the SDK's stdio client, round trip
  * overhead  mcp call - pipeline: JSON-RPC, argument checks, the worker thread, the JSON document on the
              wire and its validation against the output schema by the client. Goal: under 100 ms.
The server's start-up (process, imports, initialize) is paid once per session and reported apart.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))

import anyio  # noqa: E402
from fake_api import FakeMessagesAPI, Reply, task_done, text, tool_use  # noqa: E402
from gitrepo import commit_all, git, make_repo, write  # noqa: E402  (also isolates git config)
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from ocr_hook.mcp_server.arguments import review_call  # noqa: E402
from ocr_hook.mcp_server.runner import RunControl, run_review  # noqa: E402

GOAL_MS = 100.0


def _env(fake: FakeMessagesAPI, cache_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OCR_HOOK_", "PRE_COMMIT_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update({"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "bench-key-not-secret",
                "XDG_CACHE_HOME": str(cache_home), "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost"})
    return env


def _repo(root: Path, files: int) -> Path:
    make_repo(root)
    for i in range(files):
        write(root, f"src/mod{i}.py", f"def f{i}(a, b):\n    return a + b\n")
    commit_all(root, "base")
    for i in range(files):
        write(root, f"src/mod{i}.py", f"def f{i}(a, b):\n    return a - b\n")
    git(root, "add", "-A")
    return root


def _ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--files", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, FakeMessagesAPI() as fake:
        repo = _repo(Path(tmp) / "repo", args.files)
        env = _env(fake, Path(tmp) / "cache")
        fake.handle(lambda body: "You check code review comments" in str(body.get("system")),
                    lambda body: Reply([text('{"wrong": []}')]))
        fake.default(lambda body: task_done())
        for i in range(args.files):
            fake.script(f"src/mod{i}.py", [Reply([tool_use("code_comment", {"comments": [{
                "content": "Subtracts instead of adding.", "existing_code": "return a - b", "severity": "high",
                "category": "bug"}]})]), task_done()])
        cli = [sys.executable, "-m", "ocr_hook", "review", "-q", "--format", "json"]
        first = subprocess.run(cli, cwd=repo, env=env, capture_output=True)  # fills the result cache
        assert first.returncode == 1, first.stderr
        sent = len(fake.requests)

        cli_times = []
        for _ in range(args.runs + 1):
            started = time.perf_counter()
            proc = subprocess.run(cli, cwd=repo, env=env, capture_output=True)
            cli_times.append(time.perf_counter() - started)
            assert proc.returncode == 1, proc.stderr
        cli_times = cli_times[1:]

        os.environ.update(env)
        call = review_call({})
        root = str(repo.resolve())
        pipeline_times = []
        for _ in range(args.runs + 1):
            started = time.perf_counter()
            doc = run_review(root, call, lambda path, kind, detail: None, RunControl())
            pipeline_times.append(time.perf_counter() - started)
            assert doc["exit_code"] == 1 and len(doc["coverage"]["cached"]) == args.files
        pipeline_times = pipeline_times[1:]

        async def serve() -> tuple[float, list[float]]:
            params = StdioServerParameters(command=sys.executable, args=["-m", "ocr_hook", "mcp"], env=env,
                                           cwd=str(repo))
            started = time.perf_counter()
            with open(os.devnull, "w") as devnull:
                async with stdio_client(params, errlog=devnull) as (read, write_), \
                        ClientSession(read, write_) as session:
                    await session.initialize()
                    await session.list_tools()  # the client learns the output schema it validates with
                    startup = time.perf_counter() - started
                    times = []
                    for _ in range(args.runs + 1):
                        started = time.perf_counter()
                        result = await session.call_tool("review", {})
                        times.append(time.perf_counter() - started)
                        assert not result.is_error and result.structured_content["exit_code"] == 1
                    return startup, times[1:]

        startup, call_times = anyio.run(serve)
        assert len(fake.requests) == sent, "a cached review sent requests"

    cli_ms, pipeline_ms, call_ms = _ms(cli_times), _ms(pipeline_times), _ms(call_times)
    overhead = call_ms - pipeline_ms
    print(f"fully cached review of {args.files} staged files, median of {args.runs} runs each")
    print(f"  cli subprocess      {cli_ms:8.1f} ms")
    print(f"  pipeline in-process {pipeline_ms:8.1f} ms")
    print(f"  mcp call            {call_ms:8.1f} ms   ({call_ms / cli_ms:.2f}x the cli subprocess)")
    print(f"  mcp overhead        {overhead:8.1f} ms   (mcp call - pipeline; goal < {GOAL_MS:.0f} ms: "
          f"{'met' if overhead < GOAL_MS else 'NOT met'})")
    print(f"  server start-up     {startup * 1000:8.1f} ms   (once per session: process, imports, initialize)")
    return 0 if overhead < GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
