"""Tests must not depend on what the process that started them inherited.

`INHERITED_ENV` is the environment as the suite was started, taken when this module is first imported:
gitrepo imports it before it strips git and ocr-hook variables, so the snapshot is always the original.
Only tool installation reads it (npm needs the user's registry, proxy and cache settings).

`isolate_home` gives the process an empty home of its own: no ~/.gitconfig, no warm ~/.cache, no user
configuration of any tool the tests start. conftest calls it once per process (the controller and every
xdist worker) and again per test with a fresh directory.

`terminal_signals` starts a child as a terminal starts a foreground command, whatever the suite inherited.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType

INHERITED_ENV: Mapping[str, str] = MappingProxyType(dict(os.environ))

# The XDG base directories a child may use instead of $HOME; an inherited value would point at the user's.
_XDG = {"XDG_CONFIG_HOME": ".config", "XDG_CACHE_HOME": ".cache", "XDG_DATA_HOME": ".local/share",
        "XDG_STATE_HOME": ".local/state"}


def home_env(home: Path) -> dict[str, str]:
    """HOME and the XDG directories inside `home` (the cache directory is created: some tests list it)."""
    (home / _XDG["XDG_CACHE_HOME"]).mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), **{name: str(home / rel) for name, rel in _XDG.items()}}


def isolate_home(home: Path) -> None:
    """Point this process (and every child it starts from now on) at `home`, which should be empty."""
    os.environ.update(home_env(home))
    # Anything that would make git read a configuration other than the one gitrepo chose.
    for name in ("XDG_CONFIG_DIRS", "GIT_CONFIG_SYSTEM"):
        os.environ.pop(name, None)


def in_ci() -> bool:
    """Whether the suite was started by CI (`CI=true`, as every CI service sets it)."""
    return INHERITED_ENV.get("CI", "").lower() == "true"


# A POSIX shell starts a background job (`cmd &`, also `nohup cmd &` in a script) with SIGINT and SIGQUIT
# ignored, and an ignored signal stays ignored across exec: a review started from such a suite would never
# see Ctrl-C. A terminal gives a foreground command the default dispositions.
_TERMINAL_SIGNALS = (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def terminal_signals() -> Iterator[None]:
    """While a child is started inside this block it inherits the default disposition of the signals a
    terminal delivers, instead of an ignored one. Only ignored signals are touched (a handled signal is reset
    to the default at exec anyway), and only for the moment the child is started: no code runs in the
    child between fork and exec (preexec_fn is unsafe with the fake API's threads running)."""
    ignored = [sig for sig in _TERMINAL_SIGNALS if signal.getsignal(sig) == signal.SIG_IGN]
    for sig in ignored:
        signal.signal(sig, signal.SIG_DFL)
    try:
        yield
    finally:
        for sig in ignored:
            signal.signal(sig, signal.SIG_IGN)
