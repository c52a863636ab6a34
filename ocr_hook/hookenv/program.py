"""How the user's shell runs this ocr-hook, for the commands the output hands them (DESIGN.md 19: every
command works as pasted, in the environment that printed it).

pre-commit (and prek) install a hook's package in an environment of their own and put its script directory
first on PATH for the hook only (pre-commit's languages/python.py: `PATH=<env>/bin:$PATH`, `VIRTUAL_ENV`).
The docs tell their users they need not install ocr-hook; for them a bare `ocr-hook apply` is "command not
found". So, under pre-commit, when no `ocr-hook` is on PATH but that environment's own, the commands name this
installation's script by its absolute path, which works from any shell.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping

NAME = "ocr-hook"


def program(environ: Mapping[str, str], *, prefix: str = sys.prefix,
            which: Callable[..., str | None] | None = None) -> str:
    """`ocr-hook`, or (under pre-commit, nothing else on PATH) this installation's script, shell-quoted. `which`:
    shutil.which unless given; shutil and shlex load only under pre-commit (every report asks, most runs are not
    under it, and shutil brings the compression modules: ~3 ms of a cached run, issue 62.9)."""
    if environ.get("PRE_COMMIT") != "1":
        return NAME
    scripts = os.path.join(prefix, "Scripts" if os.name == "nt" else "bin")
    script = os.path.join(scripts, NAME + (".exe" if os.name == "nt" else ""))
    if not os.path.isfile(script):
        return NAME  # (not a script installation, e.g. run as `python -m ocr_hook`: nothing better to name)
    own = os.path.realpath(scripts)
    rest = [p for p in environ.get("PATH", "").split(os.pathsep) if p and os.path.realpath(p) != own]
    if which is None:
        import shutil

        which = shutil.which
    if which(NAME, path=os.pathsep.join(rest)):
        return NAME  # the user's shell finds an ocr-hook of its own
    import shlex

    return shlex.quote(script)
