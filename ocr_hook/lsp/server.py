"""The language server's protocol side (pygls): documents in, diagnostics, code actions and commands out.

Everything shown is read from disk (ocr_hook.lsp.reviewed) and placed on today's text (ocr_hook.lsp.placement).
Opening, editing and saving a file only re-place what is already known; a review runs only through the
`ocr-hook.review` command, as the CLI (a child process: the same settings, budget, cache, memory and gate).
A finished review, wherever it ran, rewrites review memory's latest entry: a cheap stat of that file (and of the
dismissals file, the settings file and the report) on a fixed cadence re-publishes every open file's diagnostics.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import sys
import uuid
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from ocr_hook import __version__
from ocr_hook.errors import FatalError
from ocr_hook.findings import Finding, Severity
from ocr_hook.lsp.placement import LineEdit, Placement, fix_edit, overlapping, place
from ocr_hook.lsp.reviewed import Reviewed, dismissals, from_memory, from_report, signature, undismissed, whole_finding

SOURCE = "ocr-hook"
REVIEW, DISMISS, SHOW = "ocr-hook.review", "ocr-hook.dismiss", "ocr-hook.show"
# Offered when the editor cannot ask for free text (window/showMessageRequest has buttons only); an editor that
# can (the VS Code client) passes the reason as the command's second argument.
REASONS = ("The code is correct as written", "Intended behaviour", "Handled elsewhere")
_SEVERITY = {Severity.CRITICAL: lsp.DiagnosticSeverity.Error, Severity.HIGH: lsp.DiagnosticSeverity.Error,
             Severity.MEDIUM: lsp.DiagnosticSeverity.Warning, Severity.LOW: lsp.DiagnosticSeverity.Information}
_CHANGE_DELAY_S = 0.25  # edits in a burst re-place once


class State:
    """What the server knows: the repository, where to look, and the last reading."""

    def __init__(self, root: str, report: str | None, poll_s: float) -> None:
        self.root, self.report, self.poll_s = root, report, poll_s
        self.reviewed: Reviewed | None = None
        self.dismissed: tuple[Any, ...] = ()  # the dismissals file's entries
        self.dismissals_file = ""
        self.note: str | None = None  # one line: no review yet, broken settings, unreadable report
        self.watched: list[str] = []
        self.seen: tuple[Any, ...] = ()
        self.reviewing = False
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.watcher: asyncio.Task[None] | None = None

    def load(self) -> None:
        """Read everything again (on start, and when a watched file changed)."""
        from ocr_hook.settings import load
        from ocr_hook.store.memory import latest_review_entry
        from ocr_hook.store.result_cache import run_cache_dir

        # Each file's signature is taken before it is read: one taken after would match a write that came between
        # (the reading saw the old text, the signature the new one), and that write would never be read.
        self.watched, seen = [], []  # (the paths, and their signatures as they were before each was read)

        def watch(path: str) -> None:
            self.watched.append(path)
            seen.extend(signature([path]))

        watch(os.path.join(self.root, ".ocr-hook.yaml"))
        self.reviewed, self.dismissed, self.note = None, (), None
        try:
            settings = load(self.root, None, flags={}, environ=os.environ)
            watch(os.path.join(self.root, settings.dismissals_file))
            if self.report is not None:
                watch(self.report)
                self.reviewed = from_report(self.root, self.report)
            elif not settings.memory:
                self.note = ("review memory is off (setting memory: false): nothing to show; start the server "
                             "with --from REPORT.json")
            else:
                cache_dir = run_cache_dir(settings.cache_dir, os.environ)
                watch(latest_review_entry(cache_dir, self.root))
                self.reviewed = from_memory(self.root, cache_dir)
                if self.reviewed is None:
                    self.note = "no review of this repository yet: run ocr-hook review (or commit with the hook)"
            self.dismissals_file = settings.dismissals_file
            self.dismissed = dismissals(self.root, settings.dismissals_file)
        except FatalError as exc:
            self.note = f"{exc}".splitlines()[0] if str(exc) else type(exc).__name__
        self.seen = tuple(seen)

    def origin(self) -> str:
        return self.reviewed.origin if self.reviewed is not None else "the review"

    def changed(self) -> bool:
        return signature(self.watched) != self.seen

    def relative(self, uri: str) -> str | None:
        path = to_fs_path(uri)
        if path is None:
            return None
        rel = os.path.relpath(os.path.realpath(path), self.root)
        return None if rel.startswith("..") or os.path.isabs(rel) else rel.replace(os.sep, "/")

    def placement(self, uri: str, text: str) -> Placement | None:
        path = self.relative(uri)
        if path is None or self.reviewed is None:
            return None
        findings = undismissed([f for f in self.reviewed.findings.get(path, ()) if f.suppressed is None],
                               self.dismissed, self.dismissals_file)
        if not findings:
            return Placement([], [], True)
        reviewed, digest = self.reviewed.text_of(path)
        return place(findings, reviewed, digest, text)


def build(root: str, report: str | None, poll_s: float) -> LanguageServer:
    server = LanguageServer("ocr-hook", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
    state = State(os.path.realpath(root), report, poll_s)

    def diagnostics(uri: str) -> list[lsp.Diagnostic]:
        doc = server.workspace.get_text_document(uri)
        placed = state.placement(uri, doc.source)
        if placed is None:
            return []
        lines = doc.lines
        codec = server.workspace.position_codec
        out = []
        for s in placed.shown:
            f = s.finding
            last = lines[s.end_line - 1].rstrip("\r\n") if s.end_line <= len(lines) else ""
            out.append(lsp.Diagnostic(
                range=lsp.Range(lsp.Position(s.start_line - 1, 0),
                                lsp.Position(s.end_line - 1, codec.client_num_units(last))),
                message=f"[{f.severity.value.upper()}] {f.category.value}: {f.message.strip()}"
                        + ("" if f.status == "new" else f" ({f.status})"),
                severity=_SEVERITY[f.severity], code=f.fingerprint[:8], source=SOURCE,
                data={"fingerprint": f.fingerprint}))
        if placed.stale:
            count = len(placed.stale)
            out.append(lsp.Diagnostic(
                range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), severity=lsp.DiagnosticSeverity.Hint,
                source=SOURCE, code="stale",
                message=f"{count} finding{'s' if count != 1 else ''} of {state.origin()} "
                        f"{'are' if count != 1 else 'is'} on lines changed since, not shown "
                        f"({', '.join(f.fingerprint[:8] for f in placed.stale[:5])}); run {REVIEW} or commit to "
                        "review the change"))
        return out

    def publish(uri: str) -> None:
        doc = server.workspace.get_text_document(uri)
        server.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics(uri), version=doc.version))

    def publish_all() -> None:
        for uri in list(server.workspace.text_documents):
            publish(uri)

    def say(message: str, kind: lsp.MessageType = lsp.MessageType.Info) -> None:
        from ocr_hook.commands.progress import sanitise

        server.window_show_message(lsp.ShowMessageParams(type=kind, message=f"ocr-hook: {sanitise(message)}"))

    def reload() -> None:
        before = state.note
        state.load()
        if state.note and state.note != before:  # e.g. settings broken since: said once, as at the start
            say(state.note, lsp.MessageType.Warning)
        publish_all()

    async def watch() -> None:
        while True:
            await asyncio.sleep(state.poll_s)
            try:
                if state.changed():
                    reload()
            except Exception as exc:  # one bad reading (a file half-written) must not end the watch for the session
                server.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Error,
                                                               message=f"ocr-hook: reading the review failed: {exc!r}"))

    @server.feature(lsp.INITIALIZED)
    def initialized(_params: lsp.InitializedParams) -> None:
        state.load()
        if state.note:
            say(state.note, lsp.MessageType.Warning)
        # Kept: the loop holds its tasks weakly, and a sleeping watch nothing refers to is collected, which ended
        # the watch for the session at a random moment (a settings file broken later was then never said).
        state.watcher = asyncio.get_running_loop().create_task(watch())

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        earlier = state.pending.pop(uri, None)
        if earlier is not None:
            earlier.cancel()
        state.pending[uri] = asyncio.get_running_loop().call_later(_CHANGE_DELAY_S, _publish_later, uri)

    def _publish_later(uri: str) -> None:
        state.pending.pop(uri, None)
        if uri in server.workspace.text_documents:
            publish(uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: lsp.DidSaveTextDocumentParams) -> None:
        if state.changed():
            reload()  # as the watch would: a note that is new (settings broken since) is said, never swallowed
        else:
            publish(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: lsp.DidCloseTextDocumentParams) -> None:
        server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                              diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]))
    def code_actions(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        doc = server.workspace.get_text_document(uri)
        placed = state.placement(uri, doc.source)
        if placed is None:
            return []
        actions: list[lsp.CodeAction] = []
        for s in overlapping(placed.shown, params.range.start.line + 1, params.range.end.line + 1):
            f, short = s.finding, s.finding.fingerprint[:8]
            if f.fix is not None:
                actions.append(_fix_action(uri, f, doc.source if s.fixable else None, short))
            actions.append(lsp.CodeAction(
                title=f"ocr-hook: dismiss {short} (record why it is wrong)", kind=lsp.CodeActionKind.QuickFix,
                command=lsp.Command(title=f"Dismiss {short}", command=DISMISS, arguments=[f.fingerprint])))
            actions.append(lsp.CodeAction(
                title=f"ocr-hook: show the whole finding {short}", kind=lsp.CodeActionKind.Empty,
                command=lsp.Command(title=f"Show {short}", command=SHOW, arguments=[f.fingerprint])))
        return actions

    def _fix_action(uri: str, f: Finding, text: str | None, short: str) -> lsp.CodeAction:
        title = f"ocr-hook: apply the suggested fix {short}"
        edit = fix_edit(f, text) if text is not None else \
            f"{f.path} changed since {state.origin()}: the fix is not applied"
        if isinstance(edit, str):
            return lsp.CodeAction(title=title, kind=lsp.CodeActionKind.QuickFix,
                                  disabled=lsp.CodeActionDisabled(reason=edit))
        return lsp.CodeAction(title=title, kind=lsp.CodeActionKind.QuickFix, is_preferred=True,
                              edit=lsp.WorkspaceEdit(changes={uri: [_text_edit(edit)]}))

    def find(fingerprint: Any) -> Finding | None:
        if state.reviewed is None or not isinstance(fingerprint, str):
            return None
        return next((f for items in state.reviewed.findings.values() for f in items
                     if f.fingerprint == fingerprint), None)

    @server.command(SHOW)
    def show(*args: Any) -> str | None:
        f = find(args[0] if args else None)
        if f is None:
            say("that finding is not in the last review any more", lsp.MessageType.Warning)
            return None
        text = whole_finding(f)
        server.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Info, message=text))
        return text

    @server.command(DISMISS)
    async def dismiss(*args: Any) -> str | None:
        f = find(args[0] if args else None)
        if f is None:
            say("that finding is not in the last review any more; nothing dismissed", lsp.MessageType.Warning)
            return None
        reason = args[1] if len(args) > 1 and isinstance(args[1], str) and args[1].strip() else None
        if reason is None:
            chosen = await server.window_show_message_request_async(lsp.ShowMessageRequestParams(
                type=lsp.MessageType.Info,
                message=f"ocr-hook: why is {f.fingerprint[:8]} wrong? (recorded in the dismissals file; it "
                        "teaches later reviews)",
                actions=[lsp.MessageActionItem(title=r) for r in REASONS]))
            if chosen is None:
                return None
            reason = chosen.title
        from ocr_hook.commands import dismiss as dismiss_cmd

        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):  # its lines are for a terminal; the protocol owns stdout
                dismiss_cmd.run([f.fingerprint], reason, (), None,
                                state.reviewed.dismiss_from if state.reviewed else None, None)
        except FatalError as exc:
            say(str(exc).splitlines()[0], lsp.MessageType.Error)
            return None
        said = out.getvalue().strip().splitlines()
        say(" ".join(said) if said else f"dismissed {f.fingerprint[:8]}")
        reload()
        return "\n".join(said)

    @server.command(REVIEW)
    async def review(*args: Any) -> dict[str, Any] | None:
        if state.reviewing:
            say("a review is already running", lsp.MessageType.Warning)
            return None
        state.reviewing = True
        try:
            return await _review(args[0] if args and isinstance(args[0], str) else None)
        finally:
            state.reviewing = False

    async def _review(uri: str | None) -> dict[str, Any]:
        import json
        import tempfile

        path = state.relative(uri) if uri else None
        token = str(uuid.uuid4())
        progress = bool(getattr(getattr(server.client_capabilities, "window", None), "work_done_progress", False))
        if progress:
            await server.work_done_progress.create_async(token)
            server.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(
                title="ocr-hook review", message=f"the staged change{f' of {path}' if path else ''}"))
        with tempfile.TemporaryDirectory(prefix="ocr-hook-lsp-") as tmp:
            report = os.path.join(tmp, "report.json")
            argv = [sys.executable, "-m", "ocr_hook", "review", "--staged", "--json-output", report,
                    *(["--", path] if path else [])]
            proc = await asyncio.create_subprocess_exec(*argv, cwd=state.root, stdin=asyncio.subprocess.DEVNULL,
                                                        stdout=asyncio.subprocess.DEVNULL,
                                                        stderr=asyncio.subprocess.PIPE)
            last_error = ""
            assert proc.stderr is not None
            async for raw in proc.stderr:
                line = raw.decode("utf-8", "replace").strip()
                if line:
                    last_error = line
                    if progress:
                        server.work_done_progress.report(token, lsp.WorkDoneProgressReport(message=line[:200]))
            code = await proc.wait()
            verdict = ""
            with contextlib.suppress(OSError, ValueError):
                with open(report, encoding="utf-8") as fh:
                    verdict = str(json.load(fh).get("verdict") or "")
        verdict = verdict or last_error or f"exit {code}"
        if progress:
            server.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message=verdict[:200]))
        say(f"review: {verdict}", lsp.MessageType.Error if code >= 2 else lsp.MessageType.Info)
        reload()
        return {"exit_code": code, "verdict": verdict}

    return server


def _text_edit(edit: LineEdit) -> lsp.TextEdit:
    return lsp.TextEdit(range=lsp.Range(lsp.Position(edit.start, 0), lsp.Position(edit.end, 0)), new_text=edit.text)


def serve(root: str, report: str | None, poll_s: float) -> int:
    build(root, report, poll_s).start_io()
    return 0

