"""The warm worker (issue 31, DESIGN.md 14): real processes, a real worker, the real SDK over HTTP to the fake.

One worker serves the module (started by `ocr-hook warm start`, the way the first review starts one); the
clients are real `python -m ocr_hook` processes, because the client's own start-up is the point; the cold
runs to compare with are the suite's forked CLI (the same code, cold: OCR_HOOK_WARM=off). The last test
kills the worker, and the review after it starts a new one with a short warm_idle, which is then waited
out. The suite's environment has OCR_HOOK_WARM=off (tests/gitrepo.py); here it is turned on, with the
sockets in a directory of this module's own, and nothing may be left running at the end.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_support import is_filter
from ci_repos import without_ci
from e2e_support import CALC_PATH, calc_repo, comment, comment_turn
from fake_api import FakeMessagesAPI, Reply, task_done, text
from gitrepo import commit_all, make_repo, run_cli, write
from hermetic import terminal_signals

from ocr_hook.errors import ConfigError
from ocr_hook.settings import load
from ocr_hook.warm import client, control, protocol

pytestmark = pytest.mark.skipif(sys.platform not in ("linux", "darwin"), reason="no warm worker on this system")

SERVED = "ocr-hook: warm: served by the worker"


def _short_dir() -> Path:
    # A Unix socket's path is limited to about 100 bytes: pytest's tmp_path is too deep for it.
    path = Path(tempfile.mkdtemp(prefix="ocr-w-"))
    path.chmod(0o700)
    return path


def leftovers(runtime: Path) -> list[str]:
    """Processes whose command line names `runtime` (every worker has its socket path in argv)."""
    found = subprocess.run(["pgrep", "-af", str(runtime)], capture_output=True, text=True).stdout
    return [line for line in found.splitlines() if str(os.getpid()) != line.split()[0]]


@pytest.fixture(scope="module")
def runtime() -> Iterator[Path]:
    path = _short_dir()
    yield path
    run_cli(path, "warm", "stop", env={"XDG_RUNTIME_DIR": str(path)})
    assert leftovers(path) == []
    shutil.rmtree(path, ignore_errors=True)


def warm_env(runtime: Path, env: dict[str, str], **more: str) -> dict[str, str]:
    """A developer's commit: pre-commit's variable, and none of a CI system's (the suite itself may run in CI,
    where `warm: auto` is off by design)."""
    return {**without_ci(env), "PRE_COMMIT": "1", "OCR_HOOK_WARM": "auto", "XDG_RUNTIME_DIR": str(runtime),
            "NO_COLOR": "1", **more}


def statuses(runtime: Path) -> list[dict]:
    proc = run_cli(runtime, "warm", "status", "--format", "json", env={"XDG_RUNTIME_DIR": str(runtime)})
    assert proc.returncode == 0, proc.stderr
    return [w["status"] for w in json.loads(proc.stdout)["workers"]]


@pytest.fixture(scope="module")
def worker(runtime: Path) -> dict:
    started = run_cli(runtime, "warm", "start", env={"XDG_RUNTIME_DIR": str(runtime)})
    assert started.returncode == 0, started.stderr
    (status,) = statuses(runtime)
    assert status["version"] and status["socket"] == protocol.socket_path(str(runtime / "ocr-hook"))
    return status


def real_cli(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    with terminal_signals():
        return subprocess.run([sys.executable, "-m", "ocr_hook", *args], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)


def popen_cli(repo: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    with terminal_signals():
        return subprocess.Popen([sys.executable, "-m", "ocr_hook", *args], cwd=repo, env=env, text=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def without_served_line(stderr: str) -> str:
    lines = stderr.splitlines(keepends=True)
    assert any(line.startswith(SERVED) for line in lines), f"not served warm: {stderr}"
    return "".join(line for line in lines if not line.startswith(SERVED))


def timeless_text(report: str) -> str:
    """The text report without the run's duration (its summary line's last field)."""
    return re.sub(r" · [0-9.]+s$", " · <elapsed>", report, flags=re.MULTILINE)


def timeless(path: Path) -> object:
    def strip(node: object) -> object:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in ("elapsed_s", "startTimeUtc", "endTimeUtc")}
        return [strip(v) for v in node] if isinstance(node, list) else node

    return strip(json.loads(path.read_text()))


def sent(fake: FakeMessagesAPI, since: int) -> list[tuple[str, str | None, str]]:
    """Each request's path, key (SDK 2.x sends it as a bearer token) and body; the fake numbers its tool-use
    ids across runs, so not those."""
    return [(r.path, r.headers.get("authorization"),
             re.sub(r"toolu_\d+", "toolu_N", json.dumps(r.body, sort_keys=True))) for r in fake.requests[since:]]


def keys(fake: FakeMessagesAPI) -> set[str | None]:
    return {r.headers.get("authorization") for r in fake.requests}


REVIEW = ("review", "--no-cache", "--no-memory", "--verbose", "--format", "text")


@pytest.fixture
def calc(tmp_path: Path, fake_api: FakeMessagesAPI) -> Path:
    fake_api.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
    fake_api.script(CALC_PATH, [comment_turn(comment(severity="high")), task_done()])
    return calc_repo(tmp_path / "calc")


def test_cold_and_warm_reviews_of_a_change_are_the_same(worker: dict, runtime: Path, calc: Path, tmp_path: Path,
                                                        fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    results = []
    for name, mode in (("cold", "off"), ("warm", "auto")):
        out = tmp_path / "out"  # the same paths for both runs: the report names them
        out.mkdir()
        before = len(fake_api.requests)
        fake_api.cache.clear()  # each run starts with the fake's prompt cache as cold as the other's
        args = (*REVIEW, "--json-output", str(out / "r.json"), "--sarif-output", str(out / "r.sarif"))
        env = warm_env(runtime, sdk_env, OCR_HOOK_WARM=mode)
        proc = run_cli(calc, *args, env=env) if mode == "off" else real_cli(calc, env, *args)
        results.append((proc, out.rename(tmp_path / name), sent(fake_api, before)))
    (cold, cold_out, cold_sent), (warm, warm_out, warm_sent) = results
    assert cold.returncode == warm.returncode == 1, cold.stderr  # the high finding blocks
    assert timeless_text(warm.stdout) == timeless_text(cold.stdout) and "Subtraction in add()" in cold.stdout
    assert without_served_line(warm.stderr) == cold.stderr
    assert f"(pid {worker['pid']})" in warm.stderr
    assert timeless(warm_out / "r.json") == timeless(cold_out / "r.json")
    assert timeless(warm_out / "r.sarif") == timeless(cold_out / "r.sarif")
    assert warm_sent == cold_sent and len(cold_sent) >= 2  # the review and its filter, byte for byte the same


def test_each_run_takes_its_callers_endpoint_key_and_directory(worker: dict, runtime: Path, calc: Path,
                                                               tmp_path: Path, fake_api: FakeMessagesAPI,
                                                               sdk_env: dict[str, str]) -> None:
    other = make_repo(tmp_path / "other")
    write(other, "notes.py", "x = 1\n")
    commit_all(other, "base")
    write(other, "notes.py", "x = 2\n")
    subprocess.run(["git", "add", "notes.py"], cwd=other, check=True)
    with FakeMessagesAPI() as second:
        env = warm_env(runtime, sdk_env, ANTHROPIC_BASE_URL=second.url, ANTHROPIC_API_KEY="second-key-123")
        proc = real_cli(other, env, *REVIEW, "--format", "json")
        assert proc.returncode == 0, proc.stderr
        without_served_line(proc.stderr)
        assert json.loads(proc.stdout)["coverage"]["reviewed"] == ["notes.py"]
        assert second.requests and keys(second) == {"Bearer second-key-123"}
    assert fake_api.requests == []
    proc = real_cli(calc, warm_env(runtime, sdk_env), *REVIEW, "--format", "json")
    without_served_line(proc.stderr)
    assert json.loads(proc.stdout)["coverage"]["reviewed"] == [CALC_PATH]
    assert fake_api.requests and keys(fake_api) == {f"Bearer {sdk_env['ANTHROPIC_API_KEY']}"}


def test_a_run_trusts_the_ca_its_caller_names_not_the_workers(worker: dict, runtime: Path, tmp_path: Path,
                                                              sdk_env: dict[str, str]) -> None:
    """The worker built its TLS trust before any run, from its own environment (ocr_hook.agent.tls)."""
    tls_dir = Path(__file__).parent / "data" / "tls"
    repo = calc_repo(tmp_path / "calc")
    with FakeMessagesAPI(tls=(tls_dir / "server.pem", tls_dir / "server.key")) as https:
        https.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
        env = warm_env(runtime, sdk_env, ANTHROPIC_BASE_URL=https.url)
        env.pop("SSL_CERT_DIR", None)
        trusted = real_cli(repo, {**env, "SSL_CERT_FILE": str(tls_dir / "ca.pem")}, *REVIEW, "--format", "json")
        without_served_line(trusted.stderr)
        assert json.loads(trusted.stdout)["coverage"]["reviewed"] == [CALC_PATH], trusted.stderr
        sent_before = len(https.requests)
        assert sent_before >= 1
        env.pop("SSL_CERT_FILE", None)
        untrusted = real_cli(repo, env, *REVIEW, "--format", "json")
        without_served_line(untrusted.stderr)
        assert untrusted.returncode == 3, untrusted.stderr  # not reviewed: the worker's trust was not used
        assert "CERTIFICATE_VERIFY_FAILED" in untrusted.stdout, untrusted.stdout
        assert len(https.requests) == sent_before


def test_two_commits_at_once_get_two_runs(worker: dict, runtime: Path, tmp_path: Path, fake_api: FakeMessagesAPI,
                                          sdk_env: dict[str, str]) -> None:
    both_in_flight = threading.Event()
    lock = threading.Lock()
    arrived = []

    def answer(body: dict) -> Reply:
        with lock:
            arrived.append(1)
            if len(arrived) == 2:
                both_in_flight.set()
        return Reply(task_done().blocks, hold=both_in_flight)  # neither is answered before both have asked

    fake_api.default(answer)
    repos = [calc_repo(tmp_path / name) for name in ("a", "b")]
    procs = [popen_cli(repo, warm_env(runtime, sdk_env), *REVIEW) for repo in repos]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert both_in_flight.is_set() and all(SERVED in err for _, err in outputs)


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, queue = [], list(children.get(pid, []))
    while queue:
        current = queue.pop()
        found.append(current)
        queue.extend(children.get(current, []))
    return found


@pytest.mark.parametrize(("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated"),
                                                   (signal.SIGKILL, -9, "")], ids=["ctrl-c", "sigterm", "sigkill"])
def test_a_signal_to_the_client_reaches_the_run(sig: int, code: int, word: str, worker: dict, runtime: Path,
                                                tmp_path: Path, fake_api: FakeMessagesAPI,
                                                sdk_env: dict[str, str]) -> None:
    fake_api.default(lambda body: Reply(task_done().blocks, hold=threading.Event()))  # never answered
    repo = calc_repo(tmp_path / "calc")
    proc = popen_cli(repo, warm_env(runtime, sdk_env), *REVIEW)
    try:
        assert fake_api.wait_for_requests(1, timeout=60)
        runs = _descendants(worker["pid"]) if sys.platform == "linux" else []
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, stderr
    if word:
        assert stderr.splitlines()[-1] == f"ocr-hook: {word}" and "Traceback" not in stderr
    # The handler and the run it forked: gone with the client, whichever way it ended (SIGKILL: no orphan).
    assert len(runs) >= 2 or sys.platform != "linux"
    assert all(control.wait_gone(pid) for pid in runs)


def test_a_start_up_that_differs_from_the_workers_runs_cold(worker: dict, runtime: Path, tmp_path: Path,
                                                            sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "idle")
    commit_all(repo, "empty")  # nothing staged: a cold run stays cheap
    env = warm_env(runtime, sdk_env, PYTHONWARNINGS="ignore::DeprecationWarning")
    proc = real_cli(repo, env, "review", "--verbose")
    assert proc.returncode == 0, proc.stderr
    assert "ocr-hook: warm: the worker differs in start_up; running cold" in proc.stderr
    assert SERVED not in proc.stderr


def test_the_client_imports_only_what_it_needs_to_connect(worker: dict, runtime: Path, tmp_path: Path,
                                                          sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "idle")
    commit_all(repo, "empty")
    code = ("import atexit, json, sys\n"
            "before = set(sys.modules)\n"
            "atexit.register(lambda: print(json.dumps(sorted(set(sys.modules) - before))))\n"
            "sys.argv = ['ocr-hook', 'review', '--verbose']\n"
            "from ocr_hook.__main__ import main\n"
            "main()\n")
    with terminal_signals():
        proc = subprocess.run([sys.executable, "-c", code], cwd=repo, env=warm_env(runtime, sdk_env),
                              capture_output=True, text=True, timeout=60)
    assert SERVED in proc.stderr and proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.splitlines()[-1])
    heavy = ("anthropic", "asyncio", "httpx", "pydantic", "yaml", "unidiff", "tempfile", "hashlib",
             "ocr_hook.settings", "ocr_hook.commands", "ocr_hook.agent", "ocr_hook.changes")
    assert [m for m in loaded if m.split(".")[0] in heavy or m.startswith(heavy)] == []
    assert "ocr_hook.warm.client" in loaded  # the walk really saw the client's modules


def test_status_and_doctor_show_the_worker(worker: dict, runtime: Path, calc: Path, sdk_env: dict[str, str]) -> None:
    proc = run_cli(runtime, "warm", "status", env={"XDG_RUNTIME_DIR": str(runtime)})
    assert proc.stdout.startswith(f"worker pid {worker['pid']}, ocr-hook {worker['version']}, ")
    assert f"socket {worker['socket']}" in proc.stdout and "exits after 900 s idle" in proc.stdout
    doctor = run_cli(calc, "doctor", env=warm_env(runtime, sdk_env))
    line = next(line for line in doctor.stdout.splitlines() if " warm " in line)
    assert "OK" in line and f"pid {worker['pid']}" in line and "auto" in line


class FakeOldWorker:
    """A listener on the worker's socket that answers a hello as another version would (or never)."""

    def __init__(self, path: str, answer: dict | None) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(4)
        self.answer = answer
        self.got: list[dict] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            chan = protocol.Channel(conn)
            message, _ = chan.receive()
            self.got.append(message or {})
            if self.answer is not None:
                chan.send(self.answer)
            chan.receive()  # until the client hangs up

    def close(self) -> None:
        self.listener.close()
        self.thread.join(timeout=30)


@pytest.mark.parametrize("answer", [
    {"ok": True, "pid": 1, "identity": {"version": "0.0.1", "files": "0"}, "start_up": {}},
    None,  # accepts, never answers: the client gives up after 200 ms
], ids=["older-version", "no-answer"])
def test_an_odd_worker_means_a_cold_run(answer: dict | None, tmp_path: Path, sdk_env: dict[str, str]) -> None:
    runtime = _short_dir()
    try:
        sockets = runtime / "ocr-hook"
        sockets.mkdir(mode=0o700)
        fake = FakeOldWorker(protocol.socket_path(str(sockets)), answer)
        repo = make_repo(tmp_path / "idle")
        commit_all(repo, "empty")
        proc = real_cli(repo, warm_env(runtime, sdk_env), "review", "--verbose")
        fake.close()
        assert proc.returncode == 0 and "PASSED" in proc.stdout, proc.stderr
        assert fake.got and fake.got[0]["op"] == "hello"  # it asked, it did not hand the run over
        why = "differs in identity" if answer else "TimeoutError"
        assert why in proc.stderr and "running cold" in proc.stderr and SERVED not in proc.stderr
    finally:
        shutil.rmtree(runtime)


def test_warm_off_ci_no_warm_and_no_pre_commit_never_start_a_worker(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    runtime = _short_dir()
    try:
        repo = make_repo(tmp_path / "idle")
        commit_all(repo, "empty")
        for extra, args in (({"OCR_HOOK_WARM": "off"}, ()), ({"CI": "true"}, ()), ({}, ("--no-warm",)),
                            ({"PRE_COMMIT": ""}, ())):
            proc = run_cli(repo, "review", "--verbose", *args, env=warm_env(runtime, sdk_env, **extra))
            assert proc.returncode == 0 and "warm" not in proc.stderr, (extra, proc.stderr)
        write(repo, ".ocr-hook.yaml", "warm: off\n")  # YAML reads it as false
        env = warm_env(runtime, sdk_env)
        del env["OCR_HOOK_WARM"]  # the environment would win over the file
        proc = real_cli(repo, env, "review", "--verbose")
        assert proc.returncode == 0 and "warm" not in proc.stderr, proc.stderr
        assert list(runtime.iterdir()) == []  # no socket directory, no spawn lock: nothing was even tried
    finally:
        shutil.rmtree(runtime)
    assert protocol.wanted("on", {}, platform="win32") is False
    assert protocol.wanted("auto", {"PRE_COMMIT": "1"}, platform="darwin") is True


def test_the_warm_settings(tmp_path: Path) -> None:
    (tmp_path / ".ocr-hook.yaml").write_text("warm: on\nwarm-idle: 60\n")
    settings = load(tmp_path, environ={})
    assert (settings.warm, settings.warm_idle) == ("on", 60.0)
    assert load(None, environ={"OCR_HOOK_WARM": "off"}).warm == "off"
    with pytest.raises(ConfigError, match="'warm' must be one of auto, on, off"):
        load(None, environ={"OCR_HOOK_WARM": "sometimes"})
    with pytest.raises(ConfigError, match="warm_idle"):
        load(None, environ={"OCR_HOOK_WARM_IDLE": "0"})
    config = str(tmp_path / ".ocr-hook.yaml")
    assert client.settings(["review", "--config", config], {}) == ("on", 60.0)
    assert client.settings(["review"], {"OCR_HOOK_CONFIG": config, "OCR_HOOK_WARM": "off"}) == ("off", 60.0)
    assert client.settings(["review"], {"OCR_HOOK_WARM": "sometimes"}) is None  # cold: the run says what is wrong


# --- last: the module's worker is killed here -------------------------------------------------------------

def test_a_killed_worker_is_replaced_by_the_next_review_and_the_new_one_leaves_when_idle(
        worker: dict, runtime: Path, calc: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    os.kill(worker["pid"], signal.SIGKILL)
    assert control.wait_gone(worker["pid"])
    assert Path(worker["socket"]).exists()  # left behind: nobody listens on it
    env = warm_env(runtime, sdk_env, OCR_HOOK_WARM_IDLE="0.5")
    idle = make_repo(calc.parent / "idle")
    commit_all(idle, "empty")  # nothing staged: the cold run here stays cheap (no SDK import)
    cold = real_cli(idle, env, "review", "--verbose")
    assert cold.returncode == 0 and "PASSED" in cold.stdout, cold.stderr
    assert "ocr-hook: warm: a stale socket (nobody listening); running cold, started a worker (pid " in cold.stderr
    new_pid = int(cold.stderr.split("started a worker (pid ")[1].split(")")[0])
    # Wait until it listens: the worker holds the spawn lock until then.
    lock = os.open(runtime / "ocr-hook" / "spawn.lock", os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
    finally:
        os.close(lock)
    warm = real_cli(calc, env, *REVIEW)
    assert f"{SERVED} (pid {new_pid})" in warm.stderr
    assert warm.returncode == 1 and "Subtraction in add()" in warm.stdout
    assert control.wait_gone(new_pid, timeout=60)  # the event: it exits by itself after 0.5 s without a run
    assert not Path(worker["socket"]).exists()
    log = (Path(env["XDG_CACHE_HOME"]) / "ocr-hook" / "warm.log").read_text()
    assert f"pid {new_pid}: exiting: no run for 0.5 s (warm_idle)" in log
