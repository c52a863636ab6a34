"""The agent package must stay reusable by any entry point: no CLI, pre-commit or report code reachable."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import ocr_hook

PACKAGE_ROOT = Path(ocr_hook.__file__).resolve().parent
FORBIDDEN = ("click", "pre_commit", "ocr_hook.reports", "ocr_hook.cli", "ocr_hook.commands")


def module_file(name: str) -> Path | None:
    """The source file of an ocr_hook module, or None when `name` is not one (e.g. a function)."""
    parts = name.split(".")
    if parts[0] != "ocr_hook":
        return None
    base = PACKAGE_ROOT.joinpath(*parts[1:])
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def imports_of(name: str, path: Path) -> set[str]:
    """Every module `path` imports anywhere (top level or inside functions), as absolute names."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, node.module] if node.module else anchor)
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from pkg import module`
    return found


def with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def reachable_from(start: list[str]) -> dict[str, str]:
    """Every module reachable from `start` → the module that first imported it."""
    seen: dict[str, str] = {name: "(start)" for name in start}
    queue = list(start)
    while queue:
        current = queue.pop()
        path = module_file(current)
        if path is None:
            continue
        for imported in imports_of(current, path):
            for name in with_parents(imported):
                if name in seen:
                    continue
                if name.startswith("ocr_hook") and module_file(name) is None:
                    continue  # a name imported from a module, not a module
                seen[name] = current
                queue.append(name)
    return seen


def agent_modules() -> list[str]:
    return ["ocr_hook.agent"] + [f"ocr_hook.agent.{p.stem}" for p in sorted((PACKAGE_ROOT / "agent").glob("*.py"))
                                 if p.stem != "__init__"]


def test_agent_package_reaches_no_entry_point_code() -> None:
    graph = reachable_from(agent_modules())
    assert "ocr_hook.agent.loop" in graph and "ocr_hook.anchoring" in graph  # the walk really follows imports
    bad = {name: via for name, via in graph.items()
           if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)}
    assert bad == {}, f"forbidden imports reachable from ocr_hook.agent: {bad}"


def test_walker_would_notice_a_forbidden_import() -> None:
    graph = reachable_from(["ocr_hook.cli"])
    assert "click" in graph


def test_importing_the_agent_loads_neither_the_sdk_nor_the_cli(tmp_path) -> None:
    code = ("import sys, ocr_hook.agent, ocr_hook.agent.run\n"
            "print(sorted(m for m in ('anthropic', 'click', 'pre_commit', 'jsonschema') if m in sys.modules))")
    # Run outside the checkout, so the installed package is what gets imported.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout
    assert out.strip() == "[]"
