"""Every install, pin and update command the README, docs/ and the product's own messages hand a user works as
pasted (issue 54 items 3-4, DESIGN.md 19).

Nothing is published to a package index: ocr-hook installs from a clone or from the repository's URL. The docs
write that URL with the placeholder the README explains (`https://github.com/YOUR-ORG/ocr-hook`, and the same on
GitLab or Gitea); here it becomes a scratch clone of this checkout with the release tag the maintainer pushes,
`v` + pyproject's version, made by `scripts/release.py tag` as docs/release.md says. What each check proves:

- an install command: pip parses it and resolves it to this project at pyproject's version with every extra it
  names (`pip install --dry-run --no-deps --no-index --no-build-isolation --report`: pip clones the URL at the
  tag or reads the directory and builds the metadata, offline). The project's dependencies come from PyPI and
  are not fetched here. A requirement naming ocr-hook without a source fails: no index has it. A requirement of
  another package (an extra's own, `anthropic[vertex]`) is on PyPI: it must parse, and must not be ocr-hook;
- a pin (`rev:`, `ocr-hook@…`): it equals `v` + pyproject's version, which `ocr-hook --version` prints;
- `pre-commit autoupdate` (and `--freeze`) as the docs give them: pre-commit fetches the clone, finds the tag and
  the hooks the README's configuration names, and leaves the pin on the release (or freezes it to its commit);
- the product's messages: every `pip install` in ocr-hook's own text passes the same checks, and the command
  ocr_hook.install_command builds for each kind of installation the docs' commands make (a directory, editable,
  a VCS URL at a tag; their direct_url.json is what pip's own report records) resolves to this project with
  the extra.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from gitrepo import git
from packaging.requirements import InvalidRequirement, Requirement

from ocr_hook import __version__
from ocr_hook.install_command import add_extra_command

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
TAG = f"v{VERSION}"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# The product's own text: the package, the Action, the agent skill. install_command.py is left out: its docstring
# quotes the command that fails, and what it builds is run below for each kind of installation.
PRODUCT = [p for p in sorted((ROOT / "ocr_hook").rglob("*.py")) if p.name != "install_command.py"] + \
    [ROOT / "action.yml", *sorted(p for p in (ROOT / "action").iterdir() if p.is_file()),  # (not a __pycache__)
     *sorted((ROOT / "skills").rglob("*.md"))]
# A command stops at a backtick (inline code), a shell separator or a comment.
INSTALL = re.compile(r"\b((?:python3? -m )?pipx? install\b[^`\n]*)")
PLACEHOLDER_URL = re.compile(r"https://[^\s\"'@]*?YOUR-[^\s\"'@]*?/ocr-hook(?:\.git)?")
PIN = re.compile(r"(?:\brev:\s*|ocr-hook@)([^\s\"'#`|]+)")
# --ignore-installed: the report lists what the command would install even where this ocr-hook is installed
# already (CI's venv installs the checkout; without it pip finds the requirement satisfied and reports nothing)
ISOLATED_PIP = ["--isolated", "--disable-pip-version-check", "--dry-run", "--ignore-installed", "--no-deps",
                "--no-index", "--no-build-isolation", "--quiet"]


def install_commands(text: str) -> list[str]:
    """The install commands a text hands out, each up to the first shell separator or comment. A bare
    `pip install` (the tool named in prose, no arguments) is not a command."""
    found = []
    for match in INSTALL.finditer(text):
        tokens = []
        for token in shlex.split(match.group(1), comments=True):
            if token in ("&&", "||", ";", "|") or token.startswith("#"):
                break
            tokens.append(token.rstrip(";"))
        if len(tokens) > tokens.index("install") + 1:
            found.append(shlex.join(tokens))
    return found


def clone_url(clone: Path) -> str:
    """The scratch clone's URL with its host named, `file://localhost/…`: git reads it as `file:///…`, but the pip
    Python 3.11 bundles (23.2.1, what a newcomer's fresh venv has) rejects `ocr-hook[mcp] @ git+file:///…` as an
    invalid requirement (its packaging wants a host in the URL of a `name @ url` requirement)."""
    return "file://localhost" + clone.as_uri().removeprefix("file://")


def substituted(command: str, clone: Path) -> str:
    """The documented substitution: the placeholder URL of the repository becomes the scratch clone's."""
    return PLACEHOLDER_URL.sub(clone_url(clone), command)


PATH_EXTRAS = re.compile(r"^(?P<source>.*?)(?:\[(?P<extras>[^\]]*)\])?$")


def ocr_hook_requirements(command: str) -> tuple[list[str], list[tuple[bool, str, str, frozenset[str]]]]:
    """What is wrong with a command before pip runs, and each requirement of ocr-hook it names as (editable,
    source, the requirement as written, its extras). Other packages' requirements (from PyPI) only parse."""
    tokens = shlex.split(command)
    args = tokens[tokens.index("install") + 1:]
    editable = "-e" in args or "--editable" in args  # -U, -q and the like change nothing a dry run shows
    requirements = [a for a in args if not a.startswith("-")]
    if not requirements:
        return [f"{command!r}: installs nothing"], []
    problems, ours = [], []
    for requirement in requirements:
        try:
            parsed = Requirement(requirement)
        except InvalidRequirement:  # a path or a bare URL, perhaps with extras
            found = PATH_EXTRAS.match(requirement)
            assert found
            extras = frozenset(e.strip() for e in (found["extras"] or "").split(",") if e.strip())
            ours.append((editable, found["source"], requirement, extras))
            continue
        if parsed.name == "ocr-hook" and not parsed.url:
            problems.append(f"{command!r}: {requirement!r} names no source, and no package index has ocr-hook")
        elif parsed.name == "ocr-hook":
            ours.append((editable, parsed.url or "", requirement, frozenset(parsed.extras)))
    return problems, ours


def run_all(commands: dict[str, list[str]], clone: Path, tmp: Path,
            origins: dict[tuple[bool, str], dict] | None = None) -> list[str]:
    """What is wrong with each distinct command, run as pasted from the clone's root (empty: they all work).
    The requirements of one source (a path, a URL at a revision) go to one pip run, as pip takes several.
    `origins` gets, for each (editable, source), the direct_url.json an install would write (pip's report's
    download_info is that record)."""
    distinct = sorted({substituted(c, clone) for cs in commands.values() for c in cs})
    problems: list[str] = []
    groups: dict[tuple[bool, str], list[tuple[str, str, frozenset[str]]]] = {}
    for command in distinct:
        found, ours = ocr_hook_requirements(command)
        problems += found
        for editable, source, requirement, extras in ours:
            groups.setdefault((editable, source), []).append((command, requirement, extras))

    def resolve(index: int, editable: bool, source: str, members: list[tuple[str, str, frozenset[str]]]) -> list[str]:
        report = tmp / f"report-{index}.json"
        requirements = sorted({requirement for _, requirement, _ in members})
        if editable:  # -e applies to the one requirement after it
            requirements = [arg for requirement in requirements for arg in ("-e", requirement)]
        proc = subprocess.run([sys.executable, "-m", "pip", "install", *ISOLATED_PIP, "--report", str(report),
                               *requirements],
                              cwd=clone, capture_output=True, text=True, timeout=120)
        commands = sorted({command for command, _, _ in members})
        if proc.returncode != 0:
            return [f"{commands!r}: pip says: {proc.stderr.strip()[-400:]}"]
        wrong = []
        for item in json.loads(report.read_text(encoding="utf-8"))["install"]:
            if origins is not None:
                origins[editable, source] = item["download_info"]
            meta = item["metadata"]
            if meta["name"] != "ocr-hook" or meta["version"] != VERSION:
                wrong.append(f"{commands!r}: resolve to {meta['name']} {meta['version']}, not ocr-hook {VERSION}")
            for command, _, extras in members:
                if missing := extras - set(meta.get("provides_extra") or []):
                    wrong.append(f"{command!r}: ocr-hook has no extra {sorted(missing)}")
        return wrong

    with ThreadPoolExecutor(max_workers=2) as pool:  # pip mostly waits on git and setuptools
        results = pool.map(lambda ig: resolve(ig[0], *ig[1][0], ig[1][1]), enumerate(sorted(groups.items())))
        return problems + [problem for found in results for problem in found]


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of this checkout as it is now (tracked files, uncommitted edits included), with the release tag."""
    path = tmp_path_factory.mktemp("ocr-hook-clone") / "ocr-hook"
    files = git(ROOT, "ls-files", "-z").split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, path / name)
    git(path.parent, "init", "-q", "-b", "main", str(path))
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "release")
    # Tagged as docs/release.md tells the maintainer to: the script makes the tag from pyproject's version, and
    # refuses when a pin or __version__ says another (issue 58 item 21).
    tagged = subprocess.run([sys.executable, "scripts/release.py", "tag"], cwd=path, capture_output=True, text=True,
                            timeout=60)
    assert tagged.returncode == 0 and tagged.stdout.startswith(f"tagged {TAG} at "), tagged.stdout + tagged.stderr
    return path


@pytest.fixture(scope="module")
def docs_run(clone: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[tuple[bool, str], dict]]:
    """The docs' install commands run once: what is wrong with them, and the origin each kind records."""
    commands = {str(p.relative_to(ROOT)): install_commands(p.read_text(encoding="utf-8")) for p in DOCS}
    assert sum(map(len, commands.values())) >= 20, commands  # the extraction sees the docs' commands
    origins: dict[tuple[bool, str], dict] = {}
    return run_all(commands, clone, tmp_path_factory.mktemp("docs-reports"), origins), origins


def test_every_install_command_in_the_readme_and_docs_works_as_pasted(docs_run: tuple[list[str], dict]) -> None:
    assert docs_run[0] == []


def product_text(path: Path) -> str:
    """What a file of the product can show a user: a module's strings (messages, help, docstrings; an f-string's
    literal parts), not its comments; any other file whole."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".sh":  # the Action's script: what it prints, not the commands it runs itself
        return "\n".join(line for line in text.splitlines() if line.strip().startswith(("echo", "summary")))
    if path.suffix != ".py":
        return text
    strings = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.JoinedStr):
            strings.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.append(node.value)
    return "\n".join(strings)


def test_every_install_command_in_the_product_s_own_messages_works_as_pasted(clone: Path, tmp_path: Path) -> None:
    commands = {str(p.relative_to(ROOT)): install_commands(product_text(p)) for p in PRODUCT}
    assert any(commands.values())  # e.g. provider vertex's `pip install 'anthropic[vertex]'`
    assert run_all(commands, clone, tmp_path) == []


def test_the_extra_command_of_each_kind_of_installation_works_as_pasted(
        clone: Path, tmp_path: Path, docs_run: tuple[list[str], dict[tuple[bool, str], dict]]) -> None:
    # the origins pip records for the docs' own installs from a clone, an editable clone and the URL at the tag
    origins = docs_run[1]
    kinds = {"directory": origins[False, "."], "editable": origins[True, "."],
             "vcs": origins[False, f"git+{clone_url(clone)}@{TAG}"]}
    # (a wheel's archive_info is tests/test_install_command.py's: building one here would double this test's time)
    assert [sorted(k for k in info if k.endswith("_info")) for info in kinds.values()] == \
        [["dir_info"], ["dir_info"], ["vcs_info"]]
    requires = ['mcp<3,>=2.3; extra == "mcp"']
    commands = {name: [add_extra_command("mcp", info, requires, "python")] for name, info in kinds.items()}
    assert commands["editable"][0].startswith("python -m pip install -e ")
    assert f"@ git+{clone_url(clone)}@{TAG}" in commands["vcs"][0]
    assert run_all(commands, clone, tmp_path) == []


def test_every_pin_in_the_docs_is_the_release_tag_of_this_version() -> None:
    assert __version__ == VERSION
    printed = subprocess.run([sys.executable, "-m", "ocr_hook", "--version"], capture_output=True, text=True,
                             timeout=60, check=True).stdout
    assert VERSION in printed.split(), printed
    pins = {(str(p.relative_to(ROOT)), pin) for p in DOCS for pin in PIN.findall(p.read_text(encoding="utf-8"))}
    assert len(pins) >= 5  # pre-commit's rev:, pip's @v…, the Action's uses: across the pages
    assert {where: pin for where, pin in pins if pin != TAG} == {}


def test_pre_commit_autoupdate_as_documented_keeps_or_freezes_the_release_pin(clone: Path, tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    config_text = substituted(re.findall(r"```yaml\n(repos:.*?)```", readme, re.S)[0], clone)
    documented = {line.split("#")[0].strip() for p in DOCS for line in p.read_text(encoding="utf-8").splitlines()
                  if line.strip().startswith("pre-commit autoupdate")}
    assert "pre-commit autoupdate" in documented and "pre-commit autoupdate --freeze" in documented, documented
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    pre_commit = shutil.which("pre-commit")
    assert pre_commit
    for command in sorted(documented):
        repo = tmp_path / command.replace(" ", "-")
        git(tmp_path, "init", "-q", str(repo))
        (repo / ".pre-commit-config.yaml").write_text(config_text, encoding="utf-8")
        proc = subprocess.run([pre_commit, *shlex.split(command)[1:]], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        after = (repo / ".pre-commit-config.yaml").read_text(encoding="utf-8")
        rev = yaml.safe_load(after)["repos"][0]["rev"]
        if "--freeze" in command:
            assert rev == git(clone, "rev-parse", f"{TAG}^{{commit}}").strip() and f"# frozen: {TAG}" in after
        else:
            assert rev == TAG, after


@pytest.mark.parametrize(("text", "found"), [
    ("run `pip install '.[docs]' && mkdocs serve` here", ["pip install '.[docs]'"]),
    ('    - pip install "git+https://x/YOUR-ORG/ocr-hook@v1"  # pinned', ["pip install git+https://x/YOUR-ORG/ocr-hook@v1"]),
    ("with one `pip install`, which", []),
    ("python -m pip install -e '/a b[mcp]'", ["python -m pip install -e '/a b[mcp]'"]),
])
def test_the_extraction_reads_commands_as_a_shell_would(text: str, found: list[str]) -> None:
    assert install_commands(text) == found


def test_a_command_naming_no_source_or_a_missing_extra_fails(clone: Path, tmp_path: Path) -> None:
    problems = run_all({"x": ["pip install 'ocr-hook[claude-code]'", "pip install '.[no-such-extra]'"]}, clone,
                       tmp_path)
    assert len(problems) == 2, problems
    assert any("names no source" in p for p in problems) and any("no extra" in p for p in problems), problems
