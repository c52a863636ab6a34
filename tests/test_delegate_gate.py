"""Delegate mode against a host, a repository or a local user that wants a pass it did not earn (issue 52 items
10-16, DESIGN.md 15's session-6 amendment): start fixes the session's selection and gate, finish judges exactly
the files start listed and never with a lower gate, the session store trusts only this user's directories, and
hostile inputs get exit 2 or the tool's error. Through the forked CLI and the MCP SDK's own client."""

# ruff: noqa: F811 (the fixtures `repo` and `no_request` are test_delegate's, imported to be used by name)
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from gitrepo import git, logging_git, run_cli, subcommands, write
from test_delegate import EVAL_COMMENT, Host, no_request, one_error_line, repo  # noqa: F401 (fixtures)
from test_mcp_server import serving

ROOT = Path(__file__).resolve().parents[1]


def _session_file(cache: Path, session: str) -> Path:
    return cache / "delegate" / session[:2] / f"{session}.json"


def _env(no_request: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return {**no_request, "OCR_HOOK_CACHE_DIR": str(tmp_path / "cache"), "OCR_HOOK_MEMORY": "false"}


# ------------------------------------------------------------------------ item 10: fixed at start


AFTER_START = {
    "OCR_HOOK_EXCLUDE": ({"OCR_HOOK_EXCLUDE": "*"}, None),
    "OCR_HOOK_SENSITIVE": ({"OCR_HOOK_SENSITIVE": "*.py"}, None),
    "OCR_HOOK_FAIL_ON": ({"OCR_HOOK_FAIL_ON": "never"}, None),
    "settings file exclude": ({}, "exclude: ['*']\n"),
    "settings file include": ({}, "include: ['nothing/*']\n"),
    "settings file fail_on": ({}, "fail_on: never\nsensitive: ['*.py']\n"),
}


def test_settings_changed_after_start_never_let_a_file_pass(repo: Path, no_request: dict[str, str],
                                                           tmp_path: Path) -> None:
    env = _env(no_request, tmp_path)
    host = Host(repo, env)
    session = host.start()["session"]
    host.call(session, "calc.py", "code_comment", {"comments": [EVAL_COMMENT]})  # calc.py never closed
    for what, (variables, settings_file) in AFTER_START.items():
        if settings_file is not None:
            write(repo, ".ocr-hook.yaml", settings_file)  # unstaged: the snapshot has not moved
        proc = Host(repo, {**env, **variables}).finish(session, "--format", "json")
        (repo / ".ocr-hook.yaml").unlink(missing_ok=True)
        doc = json.loads(proc.stdout)
        assert proc.returncode == 1, (what, proc.stderr)  # the critical finding blocks; calc.py was judged
        assert doc["status"] == "incomplete" and doc["coverage"]["reviewed"] == [], what
        assert [f["path"] for f in doc["coverage"]["failed"]] == ["calc.py"], what
        assert [f["severity"] for f in doc["findings"]] == ["critical"], what


def test_mcp_finish_keeps_starts_gate_whatever_the_settings_file_says_later(
        repo: Path, no_request: dict[str, str], tmp_path: Path) -> None:
    env = _env(no_request, tmp_path)

    async def main() -> tuple[Any, dict[str, Any]]:
        async with serving(repo, env, tmp_path / "stderr.txt") as client:
            started = (await client.call("delegate_start", {})).structured_content
            assert started is not None
            session = started["session"]
            # Item 15 (hostile inputs) on the same server: an input nested deeper than any real one is a tool error.
            deep: Any = {"file_path": "calc.py"}
            for _ in range(120):
                deep = {"x": deep}
            nested = await client.call("delegate_call", {"session": session, "file": "calc.py", "tool": "file_read",
                                                         "input": deep})
            for tool, tool_input in (("code_comment", {"comments": [EVAL_COMMENT]}), ("task_done", {"state": "DONE"})):
                await client.call("delegate_call", {"session": session, "file": "calc.py", "tool": tool,
                                                    "input": tool_input})
            write(repo, ".ocr-hook.yaml", "fail_on: never\nexclude: ['*']\n")
            done = await client.call("delegate_finish", {"session": session, "fail_on": "never"})
            assert done.structured_content is not None
            return nested, done.structured_content

    nested, doc = anyio.run(main)
    assert doc["exit_code"] == 1 and doc["fail_on"] == "high" and doc["coverage"]["reviewed"] == ["calc.py"]
    assert nested.is_error and nested.content[0].text.startswith("ocr-hook: error: "), nested
    assert "nested" in nested.content[0].text and "internal error" not in nested.content[0].text


# ------------------------------------------------------------------------ item 11: never a lower gate


def test_finish_flags_cannot_lower_starts_gate(repo: Path, no_request: dict[str, str], tmp_path: Path) -> None:
    env = _env(no_request, tmp_path)
    host = Host(repo, env)
    open_session = host.start()["session"]
    warned = host.finish(open_session, "--on-error", "warn", "--format", "json")
    assert warned.returncode == 3, warned.stderr
    assert json.loads(warned.stdout)["status"] == "incomplete"

    session = host.start()["session"]
    host.call(session, "calc.py", "code_comment", {"comments": [EVAL_COMMENT]})
    host.call(session, "calc.py", "task_done", {"state": "DONE"})
    never = host.finish(session, "--fail-on", "never", "--filter-mode", "added", "--format", "json")
    assert never.returncode == 1, never.stdout + never.stderr
    (finding,) = json.loads(never.stdout)["findings"]
    baseline = tmp_path / "baseline.json"  # a baseline that would wave the finding through
    baseline.write_text(json.dumps({"version": 1, "fingerprints": [finding["fingerprint"]]}))
    refused = host.finish(session, "--baseline", str(baseline))
    one_error_line(refused, "--baseline", "start")


def test_on_error_warn_at_start_passes_the_exit_code_but_never_the_status(repo: Path, no_request: dict[str, str],
                                                                           tmp_path: Path) -> None:
    """A host reading only the exit code would call this a pass: the skill and the docs read the status."""
    write(repo, ".ocr-hook.yaml", "on_error: warn\n")
    env = _env(no_request, tmp_path)
    host = Host(repo, env)
    session = host.start()["session"]
    proc = host.finish(session, "--format", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["status"] == "incomplete"
    skill = (ROOT / "skills" / "ocr-hook-review" / "SKILL.md").read_text(encoding="utf-8")
    docs = (ROOT / "docs" / "delegate.md").read_text(encoding="utf-8")
    for text in (skill, docs):
        assert '"status"' in text and "incomplete" in text
        assert "never a pass" in text.lower() or "is not a pass" in text.lower()


# ------------------------------------------------------------------------ item 12: another local user


OTHER_UID = 4242  # no user of this machine: a directory that is not ours


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give files away")
def test_store_directories_another_user_made_are_never_used(repo: Path, no_request: dict[str, str],
                                                            tmp_path: Path) -> None:
    shared = tmp_path / "shared-cache"
    shared.mkdir(mode=0o777)
    shared.chmod(0o1777)
    sessions = shared / "delegate"
    sessions.mkdir()
    for n in range(256):  # the other user's shards, writable by all
        (sessions / f"{n:02x}").mkdir()
    for path in [sessions, *sessions.iterdir()]:
        path.chmod(0o777)
        os.chown(path, OTHER_UID, OTHER_UID)
    env = {**no_request, "OCR_HOOK_CACHE_DIR": str(shared), "OCR_HOOK_MEMORY": "false"}
    proc = Host(repo, env).run("start")
    one_error_line(proc, "not this user's own")
    assert list(sessions.glob("??/*.json")) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give files away")
def test_a_session_another_user_put_in_place_is_refused(repo: Path, no_request: dict[str, str],
                                                       tmp_path: Path) -> None:
    """In a shared cache_dir without the sticky bit, another user can move our `delegate/` away and put their
    own in its place, with a session of the same id whose files are all DONE."""
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    shared.chmod(0o777)
    env = {**no_request, "OCR_HOOK_CACHE_DIR": str(shared), "OCR_HOOK_MEMORY": "false"}
    host = Host(repo, env)
    session = host.start()["session"]
    ours = _session_file(shared, session)
    forged = json.loads(ours.read_text())
    forged["files"]["calc.py"]["state"] = "DONE"
    (shared / "delegate").rename(shared / "moved-away")
    planted = _session_file(shared, session)
    planted.parent.mkdir(parents=True)
    planted.write_text(json.dumps(forged))
    for path in (shared / "delegate", planted.parent, planted):
        path.chmod(0o777)
        os.chown(path, OTHER_UID, OTHER_UID)
    one_error_line(host.finish(session), "not this user's own")


# ------------------------------------------------------------------------ item 13: collect once


def test_finish_collects_the_changes_once(repo: Path, no_request: dict[str, str], tmp_path: Path) -> None:
    env = _env(no_request, tmp_path)
    host = Host(repo, env)
    session = host.start()["session"]
    host.call(session, "calc.py", "task_done", {"state": "DONE"})
    logged_env, log = logging_git(tmp_path, env)
    proc = Host(repo, logged_env).finish(session)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = log.read_text(encoding="utf-8")
    called = subcommands(log)
    assert called.count("diff") == 1, lines


# ------------------------------------------------------------------------ item 14: --config kept absolute


def test_a_relative_config_is_the_file_start_read(repo: Path, no_request: dict[str, str], tmp_path: Path) -> None:
    write(repo, "myconf.yaml", "fail_on: high\nmemory: false\n")
    write(repo, "sub/myconf.yaml", "fail_on: never\nmemory: false\n")
    env = {**no_request, "OCR_HOOK_CACHE_DIR": str(tmp_path / "cache")}
    host = Host(repo, env)
    session = host.start("--config", "myconf.yaml")["session"]
    host.call(session, "calc.py", "code_comment", {"comments": [EVAL_COMMENT]})
    host.call(session, "calc.py", "task_done", {"state": "DONE"})
    proc = run_cli(repo / "sub", "delegate", "finish", session, "-q", env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr


# ------------------------------------------------------------------------ item 15: hostile inputs


def test_input_nested_deep_is_exit_2(repo: Path, no_request: dict[str, str], tmp_path: Path) -> None:
    env = _env(no_request, tmp_path)
    host = Host(repo, env)
    session = host.start()["session"]
    proc = host.run("call", session, "--file", "calc.py", "file_read", "[" * 100_000 + "]" * 100_000)
    one_error_line(proc, "nested")
    deep: Any = {"file_path": "calc.py"}
    for _ in range(200):
        deep = {"x": deep}
    proc = host.run("call", session, "--file", "calc.py", "file_read", json.dumps(deep))
    one_error_line(proc, "nested")


PLANTED = {
    "files a list": lambda d: d.update(files=[]),
    "calls a string": lambda d: d["files"]["calc.py"].update(calls="1"),
    "scope too short": lambda d: d.update(scope=["staged"]),
    "a comment's content a list": lambda d: d["files"]["calc.py"].update(
        comments=[{**EVAL_COMMENT, "content": ["x"]}]),
    "settings a string": lambda d: d.update(settings="fail_on: never"),
}


def test_a_planted_session_of_wrong_types_or_lock_is_exit_2(repo: Path, no_request: dict[str, str],
                                                             tmp_path: Path) -> None:
    env = _env(no_request, tmp_path)
    host = Host(repo, env)
    session = host.start()["session"]
    path = _session_file(tmp_path / "cache", session)
    written = path.read_text()
    for what, plant in PLANTED.items():
        data = json.loads(written)
        plant(data)
        path.write_text(json.dumps(data))
        proc = host.run("call", session, "--file", "calc.py", "task_done", '{"state": "DONE"}')
        assert proc.returncode == 2, (what, proc.stderr)
        one_error_line(proc, "unreadable")
        one_error_line(host.finish(session), "unreadable")
    path.write_text(written)
    lock = path.with_suffix(".lock")
    lock.unlink()  # (the calls above left it)
    lock.mkdir()  # a directory where the lock goes
    one_error_line(host.run("call", session, "--file", "calc.py", "task_done", '{"state": "DONE"}'), "lock")
    lock.rmdir()
    (tmp_path / "elsewhere").mkdir()
    lock.symlink_to(tmp_path / "elsewhere")  # a link
    one_error_line(host.run("call", session, "--file", "calc.py", "task_done", '{"state": "DONE"}'), "lock")


def test_code_search_with_a_nul_is_the_models_error(repo: Path, no_request: dict[str, str], tmp_path: Path) -> None:
    env = _env(no_request, tmp_path)
    host = Host(repo, env)
    session = host.start()["session"]
    answer = host.call(session, "calc.py", "code_search", {"search_text": "eval\u0000(", "file_patterns": ["*.py"]})
    assert "failed on our side" not in answer and "NUL" in answer, answer


# ------------------------------------------------------------------------ item 16: output size


def test_the_system_text_is_printed_once_however_many_files(repo: Path, no_request: dict[str, str],
                                                           tmp_path: Path) -> None:
    marker = "GUIDANCE-MARKER-7f3"
    write(repo, "REVIEW.md", f"{marker}: flag every eval.\n")
    git(repo, "add", "REVIEW.md")
    git(repo, "commit", "-q", "-m", "guidance", "REVIEW.md")
    for n in range(10):
        write(repo, f"mod{n}.py", f"def f{n}(x):\n    return eval(x)\n")
    git(repo, "add", ".")
    proc = Host(repo, _env(no_request, tmp_path)).run("start")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["files"]) == 11 and proc.stdout.count(marker) == 1
    assert {f["system"] for f in doc["files"]} == set(doc["systems"]) == {"s1"}
    skill = (ROOT / "skills" / "ocr-hook-review" / "SKILL.md").read_text(encoding="utf-8")
    assert "delegate start > " in skill and "systems" in skill


def test_the_mcp_page_names_the_delegate_tools_and_needs_no_key_for_them() -> None:
    page = (ROOT / "docs" / "mcp-server.md").read_text(encoding="utf-8")
    for tool in ("delegate_start", "delegate_call", "delegate_finish"):
        assert f"`{tool}`" in page
    assert "no API key" in page
