"""The git hooks that run ocr-hook, read from disk: which manager installed each (ocr_hook.hookenv decides
from the file's text) and whether what it runs includes ocr-hook. Used by `doctor` and, for the skip hint
of a blocked commit, by `review`.

pre-commit's own installation is checked in doctor.py as before; the rows here cover the other managers,
whose fixes are their own commands (`pre-commit install` would replace prek's or lefthook's hook).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from ocr_hook.hookenv import manager_of, runs_ocr_hook

HOOKS = ("pre-commit", "pre-push")
_SCOPE = {"pre-commit": "--staged", "pre-push": "--push"}
_DOC = "docs/hook-managers.md"
_LEFTHOOK_FILES = ("lefthook.yml", "lefthook.yaml", ".lefthook.yml", ".lefthook.yaml", "lefthook-local.yml",
                   ".config/lefthook.yml")
_MAX_READ = 64 * 1024


class Installed(NamedTuple):
    hook: str  # "pre-commit" | "pre-push"
    path: Path
    text: str | None  # None: no such hook
    hooks_path: str  # core.hooksPath, "" when unset
    manager: str | None


class Row(NamedTuple):
    status: str  # "ok" | "warn"
    message: str
    fix: str = ""


def installed(root: str, hook: str) -> Installed:
    """The hook file git would run for `hook` (core.hooksPath honoured), and who wrote it."""
    from ocr_hook.changes.git import run_git

    where = run_git(root, ["rev-parse", "--git-path", f"hooks/{hook}"]).stdout.decode("utf-8", "replace").strip()
    hooks_path = run_git(root, ["config", "--get", "core.hooksPath"], ok_codes=(0, 1)).stdout
    path = Path(root, where)
    text = _read(path) if path.is_file() and path.stat().st_mode & 0o111 else None
    configured = hooks_path.decode("utf-8", "replace").strip()
    return Installed(hook, path, text, configured, manager_of(text, configured))


def running_manager(root: str, scope_kind: str, environ: Mapping[str, str]) -> str | None:
    """The manager of the hook that runs this review (the blocked report's skip hint names its command)."""
    try:
        found = installed(root, "pre-push" if scope_kind == "push" else "pre-commit")
    except Exception:  # a hint is never worth failing a report for: no hook named, pre-commit's by default
        return None
    if found.manager in ("pre-commit", "prek") and environ.get("PRE_COMMIT") != "1":
        return None  # their hook is installed, but something else runs us (a manual run in a terminal)
    return found.manager


def hook_rows(root: str) -> list[Row] | None:
    """One row per installed hook, or None when no manager but pre-commit installed any (doctor's
    pre-commit check then says what it always said)."""
    found = [installed(root, hook) for hook in HOOKS]
    if all(f.manager in (None, "pre-commit") for f in found):
        return None
    return [_row(root, f) for f in found if f.manager is not None]


def _row(root: str, found: Installed) -> Row:
    manager, hook = found.manager or "plain", found.hook
    config_name, config = _config(root, found)
    where = f" ({config_name})" if config_name else ""
    if runs_ocr_hook(manager, found.text or "", config):
        return Row("ok", f"{hook}: installed by {manager}, runs ocr-hook{where}")
    return Row("warn", f"{hook}: installed by {manager}, which does not run ocr-hook{where}", _fix(manager, hook))


def _config(root: str, found: Installed) -> tuple[str, str | None]:
    """The file that says what the manager runs, and its text."""
    top = Path(root)
    if found.manager in ("pre-commit", "prek"):
        names: tuple[str, ...] = (".pre-commit-config.yaml", ".pre-commit-config.yml", "prek.toml")
    elif found.manager == "lefthook":
        names = _LEFTHOOK_FILES
    elif found.manager == "husky":
        # husky's hook runs <dir>/<hook> beside the <dir>/_ that core.hooksPath names.
        script = (top / found.hooks_path).parent / found.hook
        return str(script.relative_to(top)) if script.is_relative_to(top) else str(script), _read(script)
    else:
        return "", None
    texts = [(name, _read(top / name)) for name in names]
    present = [(name, text) for name, text in texts if text is not None]
    return (", ".join(name for name, _ in present), "\n".join(text or "" for _, text in present)) if present \
        else ("", None)


def _fix(manager: str, hook: str) -> str:
    scope = _SCOPE[hook]
    if manager in ("pre-commit", "prek"):
        hook_id = "ocr-hook" if hook == "pre-commit" else "ocr-hook-push"
        stage = "" if hook == "pre-commit" else " --hook-type pre-push"
        return f"add `- id: {hook_id}` to .pre-commit-config.yaml ({_DOC}, {manager}), then `{manager} install{stage}`"
    if manager == "lefthook":
        what = "an `ocr-hook` command running" if hook == "pre-commit" else "a script (with use_stdin) running"
        return f"add {what} `ocr-hook review {scope}` under `{hook}:` in lefthook.yml ({_DOC}, lefthook), then " \
               "`lefthook install`"
    if manager == "husky":
        return f"add the line `ocr-hook review {scope}` to .husky/{hook} ({_DOC}, husky)"
    return f"add `ocr-hook review {scope}` to the {hook} hook ({_DOC}, plain git hooks)"


def _read(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(_MAX_READ).decode("utf-8", "replace")
    except OSError:
        return None
