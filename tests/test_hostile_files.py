"""What a file on disk can do to ocr-hook, tried through the real CLI (issue 33, items 7 to 12).

A dismissals file is hand-edited and merged; the cache directory is shared, restored by CI and may hold
links; two commands run at once; a report's directory goes away while a paid review runs. Every case
here reproduced a traceback, a hang, a lost entry or a file written outside the cache before the fix.
The promises: a bad file is one line and exit 2; an unexpected exception is one line and exit 4; a
corrupt, linked or special cache entry is a miss; what `dismiss` did not write it leaves byte-for-byte.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from agent_support import is_filter
from e2e_support import CALC_PATH, assert_clean_stderr, calc_repo, comment, comment_turn
from fake_api import FakeMessagesAPI, Reply, first_user_text, task_done, text
from gitrepo import commit_all, git, run_cli, write

DISMISSALS = ".ocr-hook/dismissed.yaml"
FP = ["%032x" % (0xA11CE + n) for n in range(3)]


def one_line_error(proc: Any, code: int = 2) -> str:
    assert_clean_stderr(proc)
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def entry_text(fp: str, *, on: str = "2026-01-02", expires: str | None = None, eol: str = "\n",
               indent: str = "  ") -> str:
    lines = [f"{indent}- fingerprint: {fp}", f"{indent}  path: {CALC_PATH}", f"{indent}  category: bug",
             f"{indent}  severity: high", f"{indent}  message: m", f"{indent}  reason: on purpose",
             f"{indent}  'on': {on}"] + ([f"{indent}  expires: {expires}"] if expires else [])
    return eol.join(lines) + eol


def report_file(path: Path, *fps: str) -> Path:
    """A JSON report as `ocr-hook review --json-output` writes it, with one finding per fingerprint."""
    findings = [{"path": CALC_PATH, "start_line": 2, "end_line": 2, "severity": "high", "category": "bug",
                 "message": f"finding {fp[:6]}", "fingerprint": fp} for fp in fps]
    path.write_text(json.dumps({"findings": findings}))
    return path


def listed(repo: Path) -> list[str]:
    data = yaml.safe_load((repo / DISMISSALS).read_text(encoding="utf-8"))
    return [e["fingerprint"] for e in data["dismissed"]]


# --- item 7: an impossible date; any unexpected exception ---------------------------------------------------


def test_an_impossible_date_is_a_one_line_config_error_in_every_command(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                         sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    report = report_file(tmp_path / "report.json", FP[2])
    for bad, line_no in (({"on": "2024-02-30"}, 15), ({"expires": "2027-13-01"}, 16)):
        write(repo, DISMISSALS, "dismissed:\n" + entry_text(FP[0]) + entry_text(FP[1], **bad))
        for args in (["dismissed"], ["dismiss", FP[2], "--reason", "x", "--from", str(report)], ["review"]):
            line = one_line_error(run_cli(repo, *args, env=sdk_env))
            assert DISMISSALS in line and f"line {line_no}:" in line and "date" in line, line
    assert fake_api.requests == []
    # Committed at HEAD (the trusted revision), the bad file cannot block the commit that fixes it.
    commit_all(repo, "bad dismissals")
    write(repo, DISMISSALS, "dismissed:\n" + entry_text(FP[0]))
    write(repo, CALC_PATH, "def add(a, b):\n    return a + b + 0\n")
    git(repo, "add", "-A")
    fixed = run_cli(repo, "review", "--no-cache", "--no-memory", "--format", "json", env=sdk_env)
    assert_clean_stderr(fixed)
    assert fixed.returncode == 0, fixed.stderr
    assert any("line 16:" in n and "date" in n for n in json.loads(fixed.stdout)["notes"])


def test_an_unexpected_exception_is_one_line_and_exit_4_with_the_traceback_on_request(tmp_path: Path) -> None:
    # A settings file nested deeper than PyYAML's pure-Python constructor can recurse: a RecursionError
    # nothing expects (a stand-in for any bug of ours; if it ever becomes a config error, pick another).
    repo = calc_repo(tmp_path / "repo")
    write(repo, ".ocr-hook.yaml", "[" * 800)
    line = one_line_error(run_cli(repo, "dismissed"), code=4)
    assert line.startswith("ocr-hook: internal error: RecursionError") and "--verbose" in line, line
    verbose = run_cli(repo, "--verbose", "dismissed")
    assert verbose.returncode == 4 and "Traceback" in verbose.stderr
    assert verbose.stderr.rstrip().splitlines()[-1] == line


# --- item 8: two dismiss runs at once ------------------------------------------------------------------------


def test_two_dismiss_runs_at_once_keep_both_entries(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path / "repo")
    write(repo, DISMISSALS, "dismissed:\n" + entry_text(FP[0]))
    # The barrier: each run reads its --from report from a FIFO. Opening a FIFO for writing returns once
    # the run has opened it for reading, so both runs are past their start-up (and, without a lock, past
    # reading the dismissals file) before either gets a finding to add.
    fifos = [tmp_path / f"report{n}.json" for n in (1, 2)]
    for fifo in fifos:
        os.mkfifo(fifo)
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(run_cli, repo, "dismiss", fp, "--reason", f"reason {n}", "--from", str(fifo),
                            timeout=60) for n, (fp, fifo) in enumerate(zip(FP[1:], fifos, strict=True))]
        fds = [open_when_read(fifo, run) for fifo, run in zip(fifos, runs, strict=True)]  # both, then write
        for fd, fp in zip(fds, FP[1:], strict=True):
            with os.fdopen(fd, "w") as handle:
                handle.write(json.dumps({"findings": [{"path": CALC_PATH, "severity": "high", "category": "bug",
                                                       "message": "m", "fingerprint": fp}]}))
        procs = [r.result() for r in runs]
    for proc in procs:
        assert_clean_stderr(proc)
        assert proc.returncode == 0 and "dismissed" in proc.stdout, proc.stderr
    assert sorted(listed(repo)) == sorted(FP)
    assert git(repo, "ls-files", "--others").split() == [DISMISSALS]  # the lock lives outside the work tree


def open_when_read(fifo: Path, run: Any) -> int:
    """The FIFO's write end, once a reader has it open (ENXIO until then); a bounded wait that fails when the
    run ended first."""
    import errno

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            if run.done():
                pytest.fail(f"the run ended before reading its report: {run.result()}")
            time.sleep(0.002)
            continue
        os.set_blocking(fd, True)
        return fd
    pytest.fail(f"nobody opened {fifo} for reading")


# --- item 9: duplicate keys; append, never rewrite -----------------------------------------------------------


@pytest.mark.parametrize(("text_", "line"), [
    ("dismissed:\n" + entry_text(FP[0]) + "dismissed:\n" + entry_text(FP[1]), 9),
    ("dismissed:\n" + entry_text(FP[0]).replace("  severity: high", "  path: other.py"), 5),
])
def test_a_duplicate_key_is_an_error_naming_its_line(tmp_path: Path, text_: str, line: int) -> None:
    repo = calc_repo(tmp_path / "repo")
    write(repo, DISMISSALS, text_)
    before = (repo / DISMISSALS).read_bytes()
    for args in (["dismissed"], ["dismiss", FP[2], "--reason", "x", "--from",
                                 str(report_file(tmp_path / "r.json", FP[2]))]):
        message = one_line_error(run_cli(repo, *args))
        assert f"line {line}" in message and "duplicate key" in message, message
    assert (repo / DISMISSALS).read_bytes() == before


def test_dismiss_appends_and_keeps_comments_crlf_and_the_other_entries_byte_for_byte(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path / "repo")
    hand_written = ("# Reviewed by the security team; keep this list short.\r\n"
                    "dismissed:\r\n"
                    "    # the ledger one\r\n" + entry_text(FP[0], eol="\r\n", indent="    ")
                    + "    - {fingerprint: " + FP[1] + ", path: calc.py, category: bug, severity: low, message: m,"
                    " reason: flow style, 'on': 2026-01-03}   # a comment at the end\r\n")
    write(repo, DISMISSALS, hand_written)
    proc = run_cli(repo, "dismiss", FP[2], "--reason", "third", "--from", str(report_file(tmp_path / "r.json", FP[2])))
    assert_clean_stderr(proc)
    assert proc.returncode == 0, proc.stderr
    now = (repo / DISMISSALS).read_bytes()
    assert now.startswith(hand_written.encode())
    added = now[len(hand_written.encode()):]
    assert added.count(b"\r\n") == added.count(b"\n") > 5, added  # the file's own line endings
    assert listed(repo) == FP


# --- item 10: links, special files and sizes ----------------------------------------------------------------


def test_the_dismissals_file_is_not_read_through_a_link_nor_past_its_cap(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path / "repo")
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("dismissed:\n" + entry_text(FP[0]))
    (repo / ".ocr-hook").mkdir()
    (repo / DISMISSALS).symlink_to(outside)
    assert "symbolic link" in one_line_error(run_cli(repo, "dismissed"))
    (repo / DISMISSALS).unlink()
    os.mkfifo(repo / DISMISSALS)  # would block any reader that opens it
    assert "not a regular file" in one_line_error(run_cli(repo, "dismissed", timeout=30))
    (repo / DISMISSALS).unlink()
    write(repo, DISMISSALS, "dismissed:\n" + entry_text(FP[0]) + "# padding\n" * 500_000)
    assert "larger than" in one_line_error(run_cli(repo, "dismissed"))


def test_a_fifo_or_a_link_at_a_cache_entry_is_a_miss(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                     sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    cache = tmp_path / "cache"
    args = ("review", "--format", "json", "--cache-dir", str(cache))
    first = run_cli(repo, *args, env=sdk_env)
    assert first.returncode == 0, first.stderr
    sent = len(fake_api.requests)
    entries = sorted(p for p in cache.rglob("*.json") if p.is_file())
    assert len(entries) >= 3  # the result cache, review memory, the model's capabilities
    secret = tmp_path / "secret.json"
    secret.write_text("{}")
    for n, path in enumerate(entries):
        path.unlink()
        if n % 2:
            path.symlink_to(secret)
        else:
            os.mkfifo(path)
    again = run_cli(repo, *args, env=sdk_env, timeout=60)
    assert_clean_stderr(again)
    assert again.returncode == 0, again.stderr
    assert len(fake_api.requests) > sent  # reviewed again: nothing was read from the FIFOs and links
    assert secret.read_text() == "{}"


# --- item 11: the cache stays inside itself ------------------------------------------------------------------


def test_symlinked_cache_subdirectories_are_never_written_or_pruned_through(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                            sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    cache, outside = tmp_path / "cache", tmp_path / "outside"
    outside.mkdir()
    victim = outside / ".victim.tmp"  # what prune deletes in a shard: a temporary file of a dead run
    victim.write_text("not the cache's")
    old = time.time() - 7200
    os.utime(victim, (old, old))
    (cache / "memory").mkdir(parents=True)
    for shard in (f"{n:02x}" for n in range(256)):
        (cache / shard).symlink_to(outside, target_is_directory=True)
        (cache / "memory" / shard).symlink_to(outside, target_is_directory=True)
    (cache / "capabilities").symlink_to(outside, target_is_directory=True)
    proc = run_cli(repo, "review", "--format", "json", "--cache-dir", str(cache), env=sdk_env)
    assert_clean_stderr(proc)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in outside.iterdir()) == [".victim.tmp"]
    notes = json.loads(proc.stdout)["notes"]
    assert any("symbolic link" in n for n in notes), notes


def test_cache_dir_from_the_repository_config_is_ignored_and_a_relative_one_is_settled(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    planted = tmp_path / "planted-by-a-pull-request"
    write(repo, ".ocr-hook.yaml", f"cache_dir: {planted}\n")
    home_cache = tmp_path / "xdg"
    env = {**sdk_env, "XDG_CACHE_HOME": str(home_cache)}
    proc = run_cli(repo, "review", "--format", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert not planted.exists() and (home_cache / "ocr-hook").is_dir()
    assert any("cache_dir" in n and "ignored" in n for n in json.loads(proc.stdout)["notes"])
    (repo / ".ocr-hook.yaml").unlink()
    # In the user's own settings file a relative cache_dir means beside that file, never the current directory.
    user_config = tmp_path / "user" / "ocr-hook.yaml"
    user_config.parent.mkdir()
    user_config.write_text("cache_dir: my-cache\n")
    proc = run_cli(repo, "review", "--format", "json", "--config", str(user_config), env=env)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "user" / "my-cache").is_dir() and not (repo / "my-cache").exists()
    # An environment variable has no place of its own: a relative one is refused.
    line = one_line_error(run_cli(repo, "review", env={**env, "OCR_HOOK_CACHE_DIR": "rel-cache"}))
    assert "OCR_HOOK_CACHE_DIR" in line and "absolute" in line, line
    assert not (repo / "rel-cache").exists()


def test_numbers_that_overflow_a_float_in_cache_records_are_a_miss(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                   sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    cache = tmp_path / "cache"
    args = ("review", "--format", "json", "--cache-dir", str(cache), "--no-cache")  # memory and capabilities
    assert run_cli(repo, *args, env=sdk_env).returncode == 0

    def huge(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: 10 ** 400 if k in ("at", "fetched_at") else huge(v) for k, v in value.items()}
        return [huge(v) for v in value] if isinstance(value, list) else value

    touched = 0
    for path in cache.rglob("*.json"):
        data = json.loads(path.read_text())
        if huge(data) != data:
            path.write_text(json.dumps(huge(data)))
            touched += 1
    assert touched >= 2
    write(repo, CALC_PATH, "def add(a, b):\n    return a - b - 0\n")
    git(repo, "add", CALC_PATH)
    proc = run_cli(repo, *args, env=sdk_env)  # reads memory (and merges into it) and the capability record
    assert_clean_stderr(proc)
    assert proc.returncode == 0, proc.stderr


# --- item 12: outputs ------------------------------------------------------------------------------------------


def test_one_path_for_two_outputs_is_refused_before_any_request(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    out = tmp_path / "out.json"
    line = one_line_error(run_cli(repo, "review", "--json-output", str(out), "--sarif-output",
                                  f"{tmp_path}/./out.json", env=sdk_env))
    assert "--json-output" in line and "--sarif-output" in line and "same file" in line, line
    assert fake_api.requests == [] and not out.exists()


def _high_finding_then(fake: FakeMessagesAPI, action: Callable[[], None]) -> None:
    """The review of calc.py raises a high finding; its first request runs `action` (in this process) first:
    after the run's up-front checks, before any report is written."""
    fake.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
    started = threading.Event()

    def first_turn(body: Any) -> bool:
        return (f"Review the change to `{CALC_PATH}`" in first_user_text(body)
                and not any(m.get("role") == "assistant" for m in body.get("messages", [])))

    def act_then_comment(body: Any) -> Reply:
        if not started.is_set():
            started.set()
            action()
        return comment_turn(comment("Subtraction where addition is meant.", severity="high"))

    fake.handle(first_turn, act_then_comment)
    fake.script(f"Review the change to `{CALC_PATH}`", [task_done(), task_done()])


def test_a_report_that_cannot_be_written_after_the_review_keeps_the_verdict(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                            sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    out_dir = tmp_path / "out"
    out_dir.mkdir()

    def lose_the_directory() -> None:
        out_dir.rename(tmp_path / "gone")
        out_dir.write_text("a file where the directory was")

    _high_finding_then(fake_api, lose_the_directory)
    proc = run_cli(repo, "review", "--no-cache", "--format", "text", "--json-output", str(out_dir / "r.json"),
                   "--sarif-output", str(tmp_path / "r.sarif"), env=sdk_env)
    assert_clean_stderr(proc)
    assert proc.returncode == 1, proc.stderr  # the verdict: a blocking finding
    assert "Subtraction where addition is meant." in proc.stdout  # the text report
    printed = proc.stdout[proc.stdout.index('{\n  "'):]
    assert json.loads(printed)["exit_code"] == 1  # the JSON report that could not be written, on stdout
    [line] = [x for x in proc.stderr.splitlines() if "could not be written" in x]
    assert str(out_dir / "r.json") in line and "standard output" in line, line
    assert json.loads((tmp_path / "r.sarif").read_text())["version"] == "2.1.0"  # the other output is written


def test_leftovers_of_interrupted_writes_are_cleaned_up_on_the_next_run(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                        sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    out = tmp_path / "out"
    out.mkdir()
    old = time.time() - 7200
    dead = [out / ".r.json.4242.0badcafe.tmp", repo / ".ocr-hook" / ".dismissed.yaml.77.12345678.tmp"]
    alive = out / ".r.json.4243.feedf00d.tmp"  # a concurrent writer's, just made
    foreign = [out / ".r.json.tmp", out / ".other.json.4242.0badcafe.tmp", out / "r.json.4242.0badcafe.tmp"]
    for path in [*dead, alive, *foreign]:
        path.parent.mkdir(exist_ok=True)
        path.write_text("partial")
        if path != alive:
            os.utime(path, (old, old))
    assert run_cli(repo, "review", "--no-cache", "--json-output", str(out / "r.json"), env=sdk_env).returncode == 0
    proc = run_cli(repo, "dismiss", FP[0], "--reason", "x", "--from", str(report_file(tmp_path / "rep.json", FP[0])))
    assert proc.returncode == 0, proc.stderr
    assert [p.exists() for p in dead] == [False, False]
    assert alive.exists() and all(p.exists() for p in foreign)
