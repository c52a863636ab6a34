"""What Windows and macOS users of pre-commit have that Linux developers rarely see: output streams in a code
page that cannot show every character (cp1252 pipes, ASCII consoles), Git for Windows' CRLF work trees,
Windows paths, a replace that another process briefly blocks, and case-insensitive file systems.

The streams' encoding is set as a user's machine sets it, with PYTHONIOENCODING and PYTHONUTF8=0 (the forked
CLI applies PYTHONIOENCODING the way the interpreter does; tests/test_forked_cli.py compares it with a real
process)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path, PureWindowsPath

import pytest
from agent_support import is_filter
from e2e_support import CALC_PATH, calc_repo, comment, comment_turn
from fake_api import FakeMessagesAPI, Fault, Reply, task_done, text
from gitrepo import commit_all, git, make_repo, run_cli, write

from ocr_hook import streams
from ocr_hook.changes.globs import GitIgnoreGlobs
from ocr_hook.errors import FatalError
from ocr_hook.store import atomic
from ocr_hook.store.result_cache import default_cache_dir

NON_LATIN = "除以零 — 結果は未定義 · ✓ 😀 naïve"


# --- the streams ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["cp1252", "ascii", "latin-1"])
def test_a_safe_stream_writes_everything_its_encoding_cannot_show_as_stand_ins_or_escapes(encoding: str) -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding, errors="strict")
    streams.make_safe(stream)
    stream.write("3 files → 2 │ 除 😀 é —\n")
    stream.flush()
    out = raw.getvalue().decode(encoding)
    assert out.startswith("3 files -> 2 | \\u9664 \\ud83d\\ude00 ")
    # What the encoding can show stays as it is: cp1252 has é and the dash, latin-1 only é, ASCII neither.
    assert out.endswith({"cp1252": "é —\n", "latin-1": "é -\n", "ascii": "\\u00e9 -\n"}[encoding])


def test_escapes_inside_a_json_string_decode_to_the_original_text() -> None:
    shown = streams.safe_text(json.dumps({"m": "除 😀"}, ensure_ascii=False), "ascii")
    assert json.loads(shown) == {"m": "除 😀"}


def test_a_utf8_stream_is_left_alone() -> None:
    stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    streams.make_safe(stream)
    assert stream.errors == "strict"


def _finding_run(fake_api: FakeMessagesAPI) -> None:
    fake_api.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
    fake_api.script(CALC_PATH, [comment_turn(comment(content=NON_LATIN, severity="high")), task_done()])


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
def test_a_blocked_review_in_a_narrow_code_page_prints_its_report_and_keeps_its_exit_code(
        encoding: str, tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    _finding_run(fake_api)
    env = {**sdk_env, "PYTHONIOENCODING": encoding, "NO_COLOR": "1"}
    report = tmp_path / "report.json"
    proc = run_cli(repo, "review", "--no-cache", "--format", "text", "--json-output", str(report), env=env)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "UnicodeEncodeError" not in proc.stderr
    assert "\\u9664\\u4ee5\\u96f6 " in proc.stdout and "\\U" not in proc.stdout  # the model's text escaped
    if encoding == "ascii":
        assert "\\u9664\\u4ee5\\u96f6 - " in proc.stdout  # and its dash a stand-in
    # The report file is UTF-8 whatever the streams are, and holds the message exactly.
    (finding,) = json.loads(report.read_text(encoding="utf-8"))["findings"]
    assert finding["message"] == NON_LATIN
    # JSON on stdout stays exact too: escapes inside strings are JSON's own.
    _finding_run(fake_api)
    as_json = run_cli(repo, "review", "--no-cache", "--format", "json", env=env)
    assert as_json.returncode == 1, as_json.stderr
    assert json.loads(as_json.stdout)["findings"][0]["message"] == NON_LATIN


def test_every_file_is_utf8_whatever_the_locale(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                 sdk_env: dict[str, str]) -> None:
    """A real interpreter without UTF-8 mode in the C locale (its default text encoding is ASCII) and a
    cp1252 pipe, as on Windows: the reports and the patch are still UTF-8 and hold the text exactly."""
    repo = calc_repo(tmp_path / "repo")
    _finding_run(fake_api)
    out = tmp_path / "out"
    out.mkdir()
    env = {**sdk_env, "PYTHONIOENCODING": "cp1252", "PYTHONUTF8": "0", "LC_ALL": "C", "LANG": "C",
           "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "ocr_hook", "review", "--no-cache", "--fail-on", "low",
                           "--json-output", str(out / "r.json"), "--sarif-output", str(out / "r.sarif"),
                           "--gitlab-output", str(out / "gl.json"), "--patch-output", str(out / "fix.patch")],
                          cwd=repo, env=env, capture_output=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert b"Traceback" not in proc.stderr
    assert json.loads((out / "r.json").read_text(encoding="utf-8"))["findings"][0]["message"] == NON_LATIN
    sarif = json.loads((out / "r.sarif").read_text(encoding="utf-8"))
    assert sarif["runs"][0]["results"][0]["message"]["text"].startswith(NON_LATIN)
    assert NON_LATIN in json.loads((out / "gl.json").read_text(encoding="utf-8"))[0]["description"]
    assert "return a + b" in (out / "fix.patch").read_text(encoding="utf-8")


def test_clean_failed_preview_and_doctor_runs_never_crash_on_an_ascii_stream(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    env = {**sdk_env, "PYTHONIOENCODING": "ascii", "NO_COLOR": "1"}
    fake_api.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
    fake_api.script(CALC_PATH, [task_done()])
    clean = run_cli(repo, "review", "--no-cache", env=env)
    # Every try answered 500 (retry-after 0: the SDK retries at once): the file fails, exit 3.
    fake_api.script(CALC_PATH, [Fault(status=500, headers={"retry-after": "0"}, times=10)])
    failed = run_cli(repo, "review", "--no-cache", env=env)
    preview = run_cli(repo, "preview", env=env)
    doctor = run_cli(repo, "doctor", env=env)
    assert (clean.returncode, failed.returncode, preview.returncode) == (0, 3, 0), failed.stderr
    assert doctor.returncode in (0, 2)
    for proc in (clean, failed, preview, doctor):
        assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
        (proc.stdout + proc.stderr).encode("ascii")  # nothing the stream could not take got through raw


# --- Git for Windows' line endings -------------------------------------------------------------------------


def _crlf_repo(root: Path) -> Path:
    """core.autocrlf=true as Git for Windows sets it: the index holds LF, the work tree CRLF."""
    repo = make_repo(root)
    git(repo, "config", "core.autocrlf", "true")
    write(repo, ".gitattributes", "* text=auto\n")
    write(repo, CALC_PATH, "def add(a, b):\r\n    return a + b\r\n\r\n\r\ndef scale(x):\r\n    return x * 2\r\n")
    commit_all(repo, "base")
    write(repo, CALC_PATH, "def add(a, b):\r\n    return a - b\r\n\r\n\r\ndef scale(x):\r\n    return x * 2\r\n")
    git(repo, "add", CALC_PATH)
    assert git(repo, "show", f":{CALC_PATH}").count("\r") == 0  # LF in the index, as on Windows
    return repo


def test_on_a_crlf_work_tree_the_fixes_patch_applies_and_a_fix_resolves_the_finding(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = _crlf_repo(tmp_path / "repo")
    fake_api.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
    fake_api.script(CALC_PATH, [comment_turn(comment(severity="high", suggestion="return b + a")), task_done()])
    patch = tmp_path / "fixes.patch"
    env = {**sdk_env, "NO_COLOR": "1"}
    first = run_cli(repo, "review", "--format", "text", "--patch-output", str(patch), env=env)
    assert first.returncode == 1, first.stderr
    assert "return b + a" in first.stdout  # the suggested code shown is what the patch applies
    # docs/commands.md's command: the fix goes into the index and the work tree, which keeps its CRLF.
    git(repo, "apply", "--index", str(patch))
    assert git(repo, "show", f":{CALC_PATH}").splitlines()[1] == "    return b + a"
    assert (repo / CALC_PATH).read_bytes().split(b"\n")[1] == b"    return b + a\r"
    # Review memory's interdiff across the CRLF work tree: the fixed finding resolves, the commit passes.
    fake_api.script(CALC_PATH, [task_done()])
    again = run_cli(repo, "review", "--format", "json", env=env)
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout)
    assert doc["findings"] == [] and [r["path"] for r in doc["resolved"]] == [CALC_PATH]


# --- Windows paths and a replace held up by another process ------------------------------------------------


def test_the_cache_defaults_to_the_windows_user_cache_directory() -> None:
    environ = {"LOCALAPPDATA": r"C:\Users\Ann\AppData\Local", "USERPROFILE": r"C:\Users\Ann"}
    got = default_cache_dir(environ, platform="win32")
    assert PureWindowsPath(str(got).replace("/", "\\")) == PureWindowsPath(r"C:\Users\Ann\AppData\Local\ocr-hook\Cache")
    # A relative LOCALAPPDATA would put the cache inside the work tree: not used.
    assert "Ann" not in str(default_cache_dir({"LOCALAPPDATA": r"AppData\Local", "HOME": "/home/ann"},
                                              platform="win32"))


def test_a_replace_refused_for_a_moment_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.json"
    target.write_text("old", encoding="utf-8")
    real_replace, refused = os.replace, []

    def replace(src: str, dst: str) -> None:
        if not refused:  # what Windows answers while a virus scanner or an editor holds the target open
            refused.append(dst)
            raise PermissionError(13, "The process cannot access the file because it is being used")
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace)
    atomic.write_atomic(target, "new — ✓")
    assert refused and target.read_text(encoding="utf-8") == "new — ✓"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # no temporary file left


def test_a_replace_refused_for_good_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.json"

    def replace(src: str, dst: str) -> None:
        raise PermissionError(13, "Access is denied")

    monkeypatch.setattr(atomic.os, "replace", replace)
    monkeypatch.setattr(atomic, "REPLACE_WAITS_S", (0.0, 0.0))
    with pytest.raises(FatalError) as caught:
        atomic.write_atomic(target, "x")
    assert "report.json" in str(caught.value) and "\n" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []


# --- case-insensitive file systems ------------------------------------------------------------------------


def test_globs_match_regardless_of_case_where_git_ignores_case() -> None:
    globs = GitIgnoreGlobs([".env", "secrets/**", "*.PEM"])
    folded = GitIgnoreGlobs([".env", "secrets/**", "*.PEM"], ignore_case=True)
    for path in (".ENV", "Secrets/key.txt", "certs/site.pem"):
        assert globs.check_file(path).include is None
        assert folded.check_file(path).include is True
    assert folded.check_file("src/app.py").include is None


def test_a_sensitive_file_in_other_case_is_never_sent_where_the_repository_ignores_case(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo", {"config/.ENV": "API_TOKEN=hunter2\n"})
    git(repo, "config", "core.ignorecase", "true")  # what git init sets on macOS's and Windows' file systems
    fake_api.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
    fake_api.script(CALC_PATH, [task_done()])
    proc = run_cli(repo, "review", "--no-cache", "--format", "json", env=sdk_env)
    assert proc.returncode == 0, proc.stderr
    skipped = {e["path"]: e["reason"] for e in json.loads(proc.stdout)["coverage"]["skipped"]}
    assert "config/.ENV" in skipped and "sensitive" in skipped["config/.ENV"]
    assert all("hunter2" not in json.dumps(r.body) for r in fake_api.requests)
