"""Imports whose objects last as long as the process, made with the garbage collector paused, then frozen.

Importing a large package (click and the CLI at start-up, the SDK before the first request) creates tens of
thousands of objects (modules, classes, functions) that live until the process exits. Every collection that
runs while they are created, and the full one the interpreter runs at exit, walks them all and frees none of
them: about 4 ms of a run with nothing staged, and about 0.3 s of the SDK's one-second import, on a 2-core
machine. Frozen (`gc.freeze`), later collections skip them; whatever the run creates afterwards is collected
as usual, and the collector is on again (unless it was off before). What little garbage the import itself
left (a few hundred objects) is frozen with it.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType


@contextmanager
def long_lived() -> Iterator[None]:
    """Run the block with the collector paused, then freeze every object alive at its end."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def import_lasting(name: str) -> ModuleType:
    """The module `name`, imported the long-lived way the first time this process asks for it. Later calls
    freeze nothing: a process that lives on (`ocr-hook mcp` makes a client per review) would otherwise freeze
    whatever garbage was waiting for a collection each time."""
    module = sys.modules.get(name)
    if module is None:
        with long_lived():
            __import__(name)
        module = sys.modules[name]
    return module
