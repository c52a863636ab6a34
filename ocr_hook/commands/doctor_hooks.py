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


def passes_push_lines(root: str) -> bool:
    """Whether the installed pre-push hook hands ocr-hook the lines git gives it: a plain script and husky's do,
    lefthook's only from a script with `use_stdin: true` (pre-commit and prek name the range themselves)."""
    found = installed(root, "pre-push")
    if found.manager == "lefthook":
        return _lefthook_problem(root, "pre-push", _config(root, found)[0]) == ""
    return found.manager in ("plain", "husky")


def hook_rows(root: str) -> list[Row] | None:
    """One row per installed hook, or None when no manager but pre-commit installed any (doctor's
    pre-commit check then says what it always said)."""
    found = [installed(root, hook) for hook in HOOKS]
    if all(f.manager in (None, "pre-commit") for f in found):
        return None
    rows = [_row(root, f) for f in found if f.manager is not None]
    # prek (or pre-commit) installed one hook while its configuration also names ocr-hook for the other.
    for missing in (f for f in found if f.manager is None):
        manager = next(f.manager for f in found if f.manager is not None)
        if manager in ("pre-commit", "prek") and missing.hook in _stages(root, _config(root, missing, manager)[0]):
            rows.append(Row("warn", f"{missing.hook}: ocr-hook configured for it, but {manager} did not install it",
                            f"{manager} install --hook-type {missing.hook}"))
    return rows


def _row(root: str, found: Installed) -> Row:
    manager, hook = found.manager or "plain", found.hook
    config_name, config = _config(root, found)
    where = f" ({config_name})" if config_name else ""
    if manager in ("pre-commit", "prek"):
        runs = hook in _stages(root, config_name)
    elif manager == "lefthook":
        problem = _lefthook_problem(root, hook, config_name)
        if problem:
            return Row("warn", f"{hook}: installed by lefthook, {problem}{where}", _fix(manager, hook))
        runs = True
    else:
        runs = runs_ocr_hook(manager, found.text or "", config)
    if runs:
        return Row("ok", f"{hook}: installed by {manager}, runs ocr-hook{where}")
    return Row("warn", f"{hook}: installed by {manager}, which does not run ocr-hook{where}", _fix(manager, hook))


def _stages(root: str, names: str) -> set[str]:
    """The git hooks the pre-commit/prek configuration files `names` (as _config lists them) run ocr-hook in."""
    import tomllib

    import yaml

    from ocr_hook.commands.doctor import _ocr_hook_stages

    found: set[str] = set()
    for name in filter(None, names.split(", ")):
        text = _read(Path(root, name)) or ""
        try:  # prek.toml has the same repos and hooks as the YAML file
            found |= set(_ocr_hook_stages(tomllib.loads(text) if name.endswith(".toml") else yaml.safe_load(text))
                         .values())
        except (tomllib.TOMLDecodeError, yaml.YAMLError):  # doctor's pre-commit check says where it is broken
            found |= set(HOOKS) if "ocr-hook" in text else set()
    return found


def _lefthook_problem(root: str, hook: str, names: str) -> str:
    """Why lefthook's `hook` does not review (\"\": it does), from the sections of its configuration files."""
    import yaml

    entries: list[tuple[str, str, dict]] = []  # (command | script, name, its settings)
    for name in filter(None, names.split(", ")):
        try:
            section = (yaml.safe_load(_read(Path(root, name)) or "") or {}).get(hook)
        except (yaml.YAMLError, AttributeError):
            return f"whose {name} cannot be read"
        section = section if isinstance(section, dict) else {}
        for kind in ("commands", "scripts"):
            table = section.get(kind)
            for entry, spec in (table.items() if isinstance(table, dict) else ()):
                entries.append((kind[:-1], str(entry), spec if isinstance(spec, dict) else {}))
        for job in section.get("jobs") if isinstance(section.get("jobs"), list) else ():
            if isinstance(job, dict):
                kind = "script" if job.get("script") else "command"
                entries.append((kind, str(job.get("script") or job.get("name") or ""), job))
    ours = [(kind, name, spec) for kind, name, spec in entries if _lefthook_runs_us(root, hook, kind, name, spec)]
    if not ours:
        return "which does not run ocr-hook"
    if hook != "pre-push":
        return ""
    kind, name, spec = ours[0]
    if kind == "command":
        return (f"runs ocr-hook as the command {name!r}, which lefthook skips when the checked-out branch has "
                "nothing to push (`git push origin feat` from main)")
    if spec.get("use_stdin") is not True:
        return f"runs ocr-hook from the script {name!r} without `use_stdin: true`: every push fails (exit 2)"
    return ""


def _lefthook_runs_us(root: str, hook: str, kind: str, name: str, spec: dict) -> bool:
    if kind == "command":
        return "ocr-hook" in str(spec.get("run", ""))
    # A script is a file in a source directory (lefthook's source_dir and source_dir_local defaults).
    return any("ocr-hook" in (_read(Path(root, where, hook, name)) or "") for where in (".lefthook", ".lefthook-local"))


def _config(root: str, found: Installed, manager: str | None = None) -> tuple[str, str | None]:
    """The file that says what the manager (by default the hook's) runs, and its text."""
    top = Path(root)
    manager = manager or found.manager
    if manager in ("pre-commit", "prek"):
        names: tuple[str, ...] = (".pre-commit-config.yaml", ".pre-commit-config.yml", "prek.toml")
    elif manager == "lefthook":
        names = _LEFTHOOK_FILES
    elif manager == "husky":
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
        what = "an `ocr-hook` command running" if hook == "pre-commit" else "a script (with `use_stdin: true`) running"
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
