"""The entry points, and the one place that joins the warm worker to the CLI: the `ocr-hook` console script and
`python -m ocr_hook` hand a run to a warm worker where one may serve it (DESIGN.md 14), else run the CLI in this
process; `warm_worker` is the worker's own process, whose forked runs run the CLI. The CLI is imported only
when this process needs it, so a served run stays a thin client."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


def main() -> None:
    _open_standard_streams()
    from ocr_hook.warm.client import delegate

    served = delegate(sys.argv[1:])
    if served is not None:
        sys.exit(served)
    if sys.argv[1:2] == ["review"]:
        _start_first_git_call()
    run_cli = _load_cli()
    run_cli()


def _open_standard_streams() -> None:
    """A standard stream closed by the caller (`2>&-`) is /dev/null for this run, as for a daemon: Python
    leaves sys.stderr None, and the first write would crash with exit 1, which reads as "findings"."""
    import os

    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: this one
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    for name, fd, mode in (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False, errors="backslashreplace"))


def _start_first_git_call() -> None:
    """A review's first question to git (the work tree's top and HEAD), asked before the CLI is imported so
    that git answers while Python imports (ocr_hook.changes.git.start_repo_top)."""
    import os

    from ocr_hook.changes.git import start_repo_top

    try:
        start_repo_top(os.getcwd())
    except OSError:  # the working directory is gone: the review says so itself
        pass


def _load_cli() -> Callable[[], None]:
    """The CLI's entry point; what importing it creates lives as long as the process (ocr_hook.gc_freeze)."""
    from ocr_hook.gc_freeze import import_lasting

    run_cli: Callable[[], None] = import_lasting("ocr_hook.cli").main
    return run_cli


def warm_worker(argv: list[str]) -> None:
    from ocr_hook.cli import main as run_cli
    from ocr_hook.warm import worker

    worker.main(argv, run_cli)


if __name__ == "__main__":
    main()
