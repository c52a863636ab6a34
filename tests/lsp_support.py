"""A real LSP client for the language server's tests: pygls's own LanguageClient, over stdio, against
`python -m ocr_hook lsp` started as an editor starts it.

The client runs on an event loop in a thread of its own, so the tests stay plain functions: each call waits
for the server's answer; notifications (diagnostics, messages, progress) are collected and waited on as events
(a condition, with a bound that is only a failure's deadline).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar, Union

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

T = TypeVar("T")
DEADLINE_S = 60.0


class EditorClient:
    def __init__(self, root: Path, env: dict[str, str], *args: str, answer: str | None = None) -> None:
        """`answer`: the title picked when the server asks (window/showMessageRequest); None: the first one."""
        self.root = root
        self.answer = answer
        self.changed = threading.Condition()
        self.published: list[lsp.PublishDiagnosticsParams] = []
        self.messages: list[lsp.ShowMessageParams] = []
        self.asked: list[lsp.ShowMessageRequestParams] = []
        self.progress: list[Any] = []
        self.logs: list[lsp.LogMessageParams] = []  # window/logMessage: shown when a wait fails
        self.versions: dict[str, int] = {}
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = LanguageClient("ocr-hook-tests", "1")
        self._code_actions_as_sent()
        self._listen()
        self.run(self.client.start_io(sys.executable, "-m", "ocr_hook", "lsp", *args, cwd=str(root), env=env))
        caps = lsp.ClientCapabilities(window=lsp.WindowClientCapabilities(work_done_progress=True))
        self.run(self.client.initialize_async(lsp.InitializeParams(
            capabilities=caps, process_id=None, root_uri=from_fs_path(str(root)),
            workspace_folders=[lsp.WorkspaceFolder(uri=from_fs_path(str(root)), name="repo")])))
        self.client.initialized(lsp.InitializedParams())

    def _code_actions_as_sent(self) -> None:
        """lsprotocol 2025.0.0's converter reads a code action that carries a command (and no edit) as a bare
        Command, its command object turned into a string; editors tell them apart by the type of `command`, as
        the protocol says: so does this client."""
        converter = self.client.protocol._converter

        def structure(item: Any, _type: Any) -> Any:
            return converter.structure(item, lsp.Command if isinstance(item.get("command"), str) else lsp.CodeAction)

        converter.register_structure_hook(Union[lsp.Command, lsp.CodeAction], structure)  # noqa: UP007

    def _note(self, item: Any, into: list[Any]) -> None:
        with self.changed:
            into.append(item)
            self.changed.notify_all()

    def _listen(self) -> None:
        c = self.client

        @c.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
            self._note(params, self.published)

        @c.feature(lsp.WINDOW_SHOW_MESSAGE)
        def message(params: lsp.ShowMessageParams) -> None:
            self._note(params, self.messages)

        @c.feature(lsp.WINDOW_LOG_MESSAGE)
        def log(params: lsp.LogMessageParams) -> None:
            self._note(params, self.logs)

        @c.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
        def ask(params: lsp.ShowMessageRequestParams) -> lsp.MessageActionItem | None:
            self._note(params, self.asked)
            titles = [a.title for a in params.actions or []]
            title = self.answer if self.answer is not None else (titles[0] if titles else None)
            return None if title is None else lsp.MessageActionItem(title=title)

        @c.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def create(_params: lsp.WorkDoneProgressCreateParams) -> None:
            return None

        @c.feature(lsp.PROGRESS)
        def progress(params: lsp.ProgressParams) -> None:
            self._note(params.value, self.progress)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(DEADLINE_S)

    def wait_for(self, check: Callable[[], T | None], what: str) -> T:
        """The first non-None `check()`, re-tried each time a notification arrives."""
        with self.changed:
            found = check()
            if found is None and not self.changed.wait_for(lambda: check() is not None, DEADLINE_S):
                server = getattr(self.client, "_server", None)
                ended = getattr(server, "returncode", None)
                raise AssertionError(f"no {what} within {DEADLINE_S:.0f} s (server "
                                     f"{'running' if ended is None else f'ended with {ended}'}; its log: "
                                     f"{[m.message for m in self.logs][-5:]})")
            return check() if found is None else found  # type: ignore[return-value]

    def uri(self, path: str) -> str:
        uri = from_fs_path(str(self.root / path))
        assert uri is not None
        return uri

    def diagnostics_after(self, path: str, seen: int, check: Callable[[list[lsp.Diagnostic]], bool] = lambda d: True
                          ) -> list[lsp.Diagnostic]:
        """The first diagnostics for `path` published after the first `seen` notifications that pass `check`."""
        uri = self.uri(path)

        def found() -> list[lsp.Diagnostic] | None:
            for p in self.published[seen:]:
                if p.uri == uri and check(list(p.diagnostics)):
                    return list(p.diagnostics)
            return None

        return self.wait_for(found, f"diagnostics for {path}")

    def open(self, path: str, text: str) -> list[lsp.Diagnostic]:
        seen = len(self.published)
        self.versions[path] = 1
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(
            uri=self.uri(path), language_id="python", version=1, text=text)))
        return self.diagnostics_after(path, seen)

    def change(self, path: str, text: str) -> list[lsp.Diagnostic]:
        """The whole text replaced (a range over all of it), as an editor sends a revert."""
        seen = len(self.published)
        self.versions[path] += 1
        end = lsp.Position(line=text.count("\n") + 10_000, character=0)
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=self.uri(path), version=self.versions[path]),
            [lsp.TextDocumentContentChangePartial(range=lsp.Range(lsp.Position(0, 0), end), text=text)]))
        version = self.versions[path]
        uri = self.uri(path)

        def found() -> list[lsp.Diagnostic] | None:
            for p in self.published[seen:]:
                if p.uri == uri and p.version == version:
                    return list(p.diagnostics)
            return None

        return self.wait_for(found, f"diagnostics for {path} version {version}")

    def save(self, path: str) -> list[lsp.Diagnostic]:
        seen = len(self.published)
        self.client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(self.uri(path))))
        return self.diagnostics_after(path, seen)

    def code_actions(self, path: str, line: int, diagnostics: list[lsp.Diagnostic]) -> list[lsp.CodeAction]:
        result = self.run(self.client.text_document_code_action_async(lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(self.uri(path)),
            range=lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0)),
            context=lsp.CodeActionContext(diagnostics=diagnostics))))
        return [a for a in result or [] if isinstance(a, lsp.CodeAction)]

    def command(self, name: str, *arguments: Any) -> Any:
        return self.run(self.client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command=name, arguments=list(arguments))))

    def close(self) -> None:
        try:
            self.run(self.client.shutdown_async(None))
            self.client.exit(None)
            self.run(self.client.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
