"""The language server's reading of the repository: a write that lands while it reads is read next time.

In-process (the State the server keeps, no editor): the settings file is written again during a reading (as an
editor's save or a terminal's command can, while the server's watch reads), so the reading saw the old text.
The server must see the file as changed afterwards; it took each file's signature after reading, which matched
the new text, so that write was never read (the settings broken later were never said, in full-suite runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitrepo import commit_all, make_repo


def test_a_write_during_a_reading_is_read_next_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ocr_hook.settings
    from ocr_hook.lsp.server import State

    repo = make_repo(tmp_path / "repo")
    settings = repo / ".ocr-hook.yaml"
    settings.write_text("review_filter: false\n", encoding="utf-8")
    commit_all(repo, "base")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    state = State(str(repo.resolve()), None, 60.0)
    state.load()
    assert state.note is not None and state.note.startswith("no review of this repository yet")
    assert not state.changed()

    real = ocr_hook.settings.load

    def load_then_written(*args: object, **kwargs: object) -> object:
        read = real(*args, **kwargs)  # type: ignore[arg-type]
        settings.write_text("fail_on: [\n", encoding="utf-8")  # lands after the text was read
        return read

    monkeypatch.setattr(ocr_hook.settings, "load", load_then_written)
    state.load()
    monkeypatch.setattr(ocr_hook.settings, "load", real)
    assert state.changed()  # before: False, and the broken settings were never read
    state.load()
    assert state.note is not None and ".ocr-hook.yaml: line 2: " in state.note
