"""The agent package must stay reusable by any entry point: no CLI, pre-commit or report code reachable."""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from pathlib import Path

from agent_support import filter_keeps_all
from fake_api import FakeMessagesAPI, Reply, task_done, tool_use
from gitrepo import commit_all, git, logging_git, make_repo, run_cli, subcommands, write

import ocr_hook

PACKAGE_ROOT = Path(ocr_hook.__file__).resolve().parent
FORBIDDEN = ("click", "pre_commit", "ocr_hook.reports", "ocr_hook.cli", "ocr_hook.commands", "mcp",
             "ocr_hook.mcp_server", "ocr_hook.publish")


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


@functools.cache  # every module is parsed once per test process, however many checks read it
def imports_of(name: str, path: Path) -> frozenset[str]:
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
    return frozenset(found)


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
    assert "ocr_hook.agent.loop" in graph and "ocr_hook.findings.anchoring" in graph  # the walk really follows imports
    bad = {name: via for name, via in graph.items()
           if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)}
    assert bad == {}, f"forbidden imports reachable from ocr_hook.agent: {bad}"


def test_the_history_knows_every_ci_system_cienv_knows() -> None:
    """review's history entry asks cienv for a request number only where a CI system's variable is set."""
    from ocr_hook import cienv
    from ocr_hook.commands.review import CI_SYSTEM_VARIABLES

    assert sorted(CI_SYSTEM_VARIABLES) == sorted(system.RUNS_HERE for system in cienv.SYSTEMS)


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


# --- the light paths of `ocr-hook review` (a hook runs them on every commit) ------------------------------

LIGHT_RUN = r"""
import atexit, json, sys
# (Not difflib: click itself loads it to parse "-q", trying it as a long option first. pathlib counts only
# where the interpreter did not load it at start-up: an editable install's site hook does.)
WATCH = ("anthropic", "asyncio", "jsonschema", "pathspec", "unidiff", "tempfile", "hashlib", "pathlib",
         "ocr_hook.secrets_mask", "ocr_hook.agent.loop", "ocr_hook.agent.registry", "mcp", "ocr_hook.mcp_server",
         "ocr_hook.cienv", "ocr_hook.changes.ci_base", "ocr_hook.guidance", "ocr_hook.findings.fixes",
         "ocr_hook.publish", "ocr_hook.context", "ocr_hook.context.pack", "ocr_hook.context.tree_lang", "tree_sitter",
         "ocr_hook.agent.conversation", "fractions",
         "ocr_hook.findings.model",  # the findings' types: their classes cost start-up time to create
         # A repository without check files needs none of their code; the hint's program and rerun command
         # need neither shutil (it brings bz2, lzma and zlib) nor shlex outside pre-commit; a commit's review
         # has no intent to gather nor exemptions to name (issue 62.9).
         "ocr_hook.checks.model", "ocr_hook.checks.load", "ocr_hook.agent.checks_stage", "shutil", "shlex",
         "ocr_hook.context.intent", "ocr_hook.findings.exemptions")
preloaded = set(sys.modules)
atexit.register(lambda: open(sys.argv[1], "w").write(json.dumps(
    sorted(m for m in WATCH if m in sys.modules and m not in preloaded))))
atexit.register(lambda: open(sys.argv[1] + ".ours", "w").write(json.dumps(
    sorted(m for m in sys.modules if m.startswith("ocr_hook")))))
from ocr_hook.cli import cli, main
atexit.register(lambda: open(sys.argv[1] + ".commands", "w").write(json.dumps(sorted(cli.commands))))
main(["review", "-q", "--format", "json"])
"""


def light_run(repo: Path, env: dict[str, str], out: Path) -> tuple[dict, list[str]]:
    proc = subprocess.run([sys.executable, "-c", LIGHT_RUN, str(out)], cwd=repo, env=env, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    ours = json.loads(Path(f"{out}.ours").read_text())
    assert "ocr_hook.cli" in ours and upward_imports(ours) == []  # the idle path's modules import only downward
    # The other commands' options are never created (ocr_hook.cli_more loads when one of them is asked for).
    assert json.loads(Path(f"{out}.commands").read_text()) == ["review", "scan"]
    assert "ocr_hook.cli_more" not in ours
    return json.loads(proc.stdout), json.loads(out.read_text())


def test_nothing_staged_loads_only_the_start_up_code(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "app.py", "x = 1\n")
    commit_all(repo, "initial")
    report, loaded = light_run(repo, sdk_env, tmp_path / "modules.json")
    assert report["status"] == "complete" and report["coverage"]["reviewed"] == []
    assert loaded == []
    # With a patch file asked for, it is written empty, still without the fixes' code (pathlib and hashlib
    # aside: output paths are checked with the one, and the atomic writer's tempfile loads the other).
    patch = tmp_path / "fixes.patch"
    patch.write_text("stale\n")
    report, loaded = light_run(repo, {**sdk_env, "OCR_HOOK_PATCH_OUTPUT": str(patch)}, tmp_path / "modules2.json")
    assert report["status"] == "complete"
    assert patch.read_text() == ""
    assert [m for m in loaded if m not in ("pathlib", "hashlib")] == []


def test_a_fully_cached_run_loads_neither_the_sdk_nor_the_event_loop(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                     sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "calc.py", "def add(a, b):\n    return a + b\n")
    commit_all(repo, "initial")
    write(repo, "calc.py", "def add(a, b):\n    return a - b\n")
    git(repo, "add", "calc.py")
    filter_keeps_all(fake_api)
    fake_api.script("calc.py", [Reply([tool_use("code_comment", {"comments": [{
        "content": "Subtracts.", "existing_code": "return a - b", "severity": "low", "category": "bug"}]})]),
        task_done()])
    first = run_cli(repo, "review", "-q", "--format", "json", env=sdk_env)
    assert first.returncode == 0, first.stderr
    sent = len(fake_api.requests)
    logged_env, calls = logging_git(tmp_path, sdk_env)
    report, loaded = light_run(repo, logged_env, tmp_path / "modules.json")
    assert len(fake_api.requests) == sent
    assert report["coverage"]["cached"] == ["calc.py"] and len(report["findings"]) == 1
    # Outside CI no system names a pull request: none of cienv's modules is loaded; a run without checks counts
    # none (tally.checks). The context pack's listing of the index (ls-files) is started only for a file that
    # needs a pack; the trusted revision's (ls-tree) is read for the guidance, part of the cache key.
    ours = json.loads(Path(f"{tmp_path / 'modules.json'}.ours").read_text())
    assert [m for m in ours if m.startswith(("ocr_hook.cienv", "ocr_hook.tally.checks"))] == []
    started = subcommands(calls)
    assert "ls-files" not in started
    assert started.count("cat-file") == 1  # the sizes' `cat-file --batch-command` reads the blobs too (62.9)
    # unidiff parses the diff, the project's guidance is part of the cache key and the cached finding's fix is
    # settled against the others; the entry's pack is checked against the pack memo without the context
    # package; the keys are sha256 digests without OpenSSL (ocr_hook.digest); review memory finds the file
    # already recorded by its digest, so nothing is masked; the budget does no arithmetic,
    # so fractions stay unloaded; the cache, memory and history are read through os.path (pathlib would bring
    # urllib and ipaddress); nothing else on the watch list is needed.
    assert loaded == ["ocr_hook.findings.fixes", "ocr_hook.findings.model", "ocr_hook.guidance", "unidiff"]


# --- floors: every import points down the flow (DESIGN.md section 1) ---------------------------------------

# A room is a package or a loose module of ocr_hook/. Bottom first; a room may import only rooms on lower floors
# (imports inside functions and under TYPE_CHECKING count: they are dependencies all the same). A new room
# fails test_every_room_has_a_floor until it is given its place here.
FLOORS: tuple[tuple[str, ...], ...] = (
    # the ground: no ocr_hook import
    ("errors", "config_files", "secrets_mask", "streams", "ci_log", "bounded_read", "gc_freeze", "digest",
     "install_command", "provider_auto"),  # install_command: the pip command that adds an extra to the running
    # installation; provider_auto: what `provider: auto` finds (the settings resolve it)
    ("settings",),
    ("cienv", "hookenv"),  # what the CI system says (`--base auto`, memory's line of work); which git hook runs us
    ("changes",),
    ("findings",),  # pure, shared by everything above: the agent, the store, the reports, the commands
    ("checks",),  # the team's checks (DESIGN.md 20): their types, files and overrides; the pass is the agent's
    ("tickets",),  # linked tickets (issue 60): their types and the references in a change's texts (pure)
    ("outcome",),  # what a run produced
    ("tally",),  # what became of the findings (DESIGN.md 18): history entries, counts, charts; pure
    ("guidance",),
    ("effort",),
    ("budget",),  # what a run may spend (pure arithmetic; the pack counts its tokens with it)
    ("context",),  # what the change uses, what calls it, what it is for (DESIGN.md 12)
    ("store",),  # what ocr-hook keeps on disk
    ("agent",),
    ("delegate",),  # delegate sessions (DESIGN.md 15): a host agent's review through the agent's own tools
    ("gate",),
    ("reports",),
    ("publish",),
    ("warm",),  # the warm worker, its thin client and its control (DESIGN.md 14); __main__ joins it to the CLI
    ("commands",),
    ("mcp_server", "lsp"),  # lsp: the language server (DESIGN.md 21), beside the MCP server: both serve the commands
    ("cli",),
    ("cli_more",),  # the commands a hook never runs: they import cli's options; cli's group loads them by name
    ("__main__",),
)
FLOOR = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}


def room_of(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if parts[0] == "ocr_hook" and len(parts) > 1 else None


def all_modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE_ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and parts[0] != "config":  # shipped data (config/), installed as ocr_hook.config: no code
            names.append(".".join(["ocr_hook", *parts]))
    return names


def cross_room_imports(modules: list[str]) -> set[tuple[str, str]]:
    """(importing module, imported ocr_hook module) for every import from one room into another."""
    found = set()
    for name in modules:
        path = module_file(name)
        if path is None:
            continue
        for imported in imports_of(name, path):
            target = imported
            while target and module_file(target) is None:  # `from pkg.mod import name`: the module
                target = target.rpartition(".")[0]
            here, there = room_of(name), room_of(target)
            if there is not None and here is not None and here != there:
                found.add((name, target))
    return found


def upward_imports(modules: list[str]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, b in cross_room_imports(modules)
                  if FLOOR.get(room_of(b), -1) >= FLOOR.get(room_of(a), -1))


def test_every_room_has_a_floor() -> None:
    rooms = {room_of(name) for name in all_modules()} - {None}
    assert rooms - set(FLOOR) == set(), "give the new room its floor in FLOORS"
    assert set(FLOOR) - rooms == set(), "a room in FLOORS no longer exists"


def test_every_import_points_down_the_flow() -> None:
    modules = all_modules()
    imports = cross_room_imports(modules)
    rooms = {room_of(name) for name in modules} - {None}
    packages = {r for r in rooms if (PACKAGE_ROOT / r).is_dir()}
    edges = {(room_of(a), room_of(b)) for a, b in imports}
    print(f"\nhouse: {len(rooms)} rooms ({len(packages)} packages, {len(rooms) - len(packages)} loose modules "
          f"with __main__), {len(edges)} room-to-room imports, {len(imports)} module imports between rooms")
    assert ("ocr_hook.guidance.rules", "ocr_hook.settings") in imports  # the walk sees imports (and resolves them)
    assert upward_imports(modules) == []


def test_the_floor_check_would_notice_an_upward_import() -> None:
    assert upward_imports(["ocr_hook.cli"]) == []
    FLOOR["cli"], saved = -1, FLOOR["cli"]  # pretend the command line sat at the bottom
    try:
        assert "ocr_hook.cli -> ocr_hook.errors" in upward_imports(["ocr_hook.cli"])
    finally:
        FLOOR["cli"] = saved
