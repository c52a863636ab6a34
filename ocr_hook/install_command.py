"""The pip command that adds an extra to the ocr-hook installation that is running (DESIGN.md 19).

Nothing is published to a package index, so `pip install 'ocr-hook[mcp]'` finds nothing: the command has to name
where this installation came from. pip records that in the installation's own metadata (PEP 610,
direct_url.json): a directory (editable or not), a VCS URL at a revision, or an archive (a wheel or sdist). The
command runs the interpreter that runs ocr-hook, so the extra lands in this installation and no other (a pipx
venv, a pre-commit hook environment, a project's .venv).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement

DIST = "ocr-hook"


def _local_path(url: str) -> str | None:
    parts = urlsplit(url)
    return unquote(parts.path) if parts.scheme == "file" and parts.netloc in ("", "localhost") else None


def _source(direct_url: dict[str, Any], extra: str) -> tuple[list[str], str] | None:
    """pip's options and the requirement that reinstall this source with the extra; None: not a kind pip writes."""
    url = direct_url.get("url")
    if not isinstance(url, str) or not url:
        return None
    subdirectory = direct_url.get("subdirectory")
    fragment = f"#subdirectory={subdirectory}" if isinstance(subdirectory, str) and subdirectory else ""
    if isinstance(direct_url.get("dir_info"), dict):
        path = _local_path(url)
        if path is None:
            return None
        if subdirectory:
            path = f"{path.rstrip('/')}/{subdirectory}"
        editable = ["-e"] if direct_url["dir_info"].get("editable") else []
        return editable, f"{path}[{extra}]"
    vcs = direct_url.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        # the revision the user asked for (a tag follows the tag) or else the commit they got
        revision = vcs.get("requested_revision") or vcs.get("commit_id")
        at = f"@{revision}" if revision else ""
        return [], f"{DIST}[{extra}] @ {vcs['vcs']}+{url}{at}{fragment}"
    if isinstance(direct_url.get("archive_info"), dict):
        return [], f"{DIST}[{extra}] @ {url}{fragment}"
    return None


def extra_requirements(requires: list[str], extra: str) -> list[str]:
    """The requirements an extra adds, from the distribution's Requires-Dist lines."""
    found = []
    for line in requires:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.marker is not None and requirement.marker.evaluate({"extra": extra}) \
                and not requirement.marker.evaluate({"extra": ""}):
            requirement.marker = None
            found.append(str(requirement))
    return found


def add_extra_command(extra: str, direct_url: dict[str, Any] | None, requires: list[str], python: str,
                      hook_stores: tuple[Path, ...] = ()) -> str:
    """The command that adds `extra` to the installation described by its direct_url.json (None: installed from
    an index or by a tool that records no origin; then the extra's own requirements, which an index has).
    An installation a hook manager built from its clone in one of `hook_stores` (pre-commit, prek) is rebuilt by
    it from the configuration, so the extra goes there."""
    pip = [python, "-m", "pip", "install"]
    source = _source(direct_url, extra) if direct_url else None
    path = _local_path(direct_url.get("url") or "") if direct_url and "dir_info" in direct_url else None
    if path and any(Path(path).is_relative_to(store) for store in hook_stores):
        return f'add additional_dependencies: ["{DIST}[{extra}]"] to the hook in .pre-commit-config.yaml'
    if source is not None:
        options, requirement = source
        return shlex.join([*pip, *options, requirement])
    return shlex.join([*pip, *extra_requirements(requires, extra)])


def upgrade_extra_command(extra: str, requires: list[str], python: str) -> str:
    """The command that upgrades what an extra brings, within the ranges this version of ocr-hook accepts (those
    packages are on PyPI; ocr-hook itself stays as it is)."""
    return shlex.join([python, "-m", "pip", "install", "--upgrade", *extra_requirements(requires, extra)])


def _installed() -> tuple[dict[str, Any] | None, list[str]]:
    # The installed one's metadata says where it came from; a checkout's own ocr_hook.egg-info (setuptools leaves one
    # there, found first when the checkout is the working directory) says nothing.
    found = sorted(metadata.distributions(name=DIST), key=lambda d: d.read_text("direct_url.json") is None)
    if not found:
        # run from a checkout that was never installed (PYTHONPATH): installing that checkout adds the extra
        checkout = Path(__file__).resolve().parents[1]
        if (checkout / "pyproject.toml").is_file():
            return {"url": checkout.as_uri(), "dir_info": {}}, []
        return None, []
    dist = found[0]
    text = dist.read_text("direct_url.json")
    try:
        direct_url = json.loads(text) if text else None
    except ValueError:
        direct_url = None
    return (direct_url if isinstance(direct_url, dict) else None), list(dist.requires or [])


def _hook_stores() -> tuple[Path, ...]:
    """Where pre-commit and prek keep the clones they build hook environments from (their own defaults)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return (Path(os.environ.get("PRE_COMMIT_HOME") or cache / "pre-commit"),
            Path(os.environ.get("PREK_HOME") or cache / "prek"))


def add_extra_hint(extra: str) -> str:
    """add_extra_command for the installation that is running."""
    direct_url, requires = _installed()
    return add_extra_command(extra, direct_url, requires, sys.executable, _hook_stores())


def upgrade_extra_hint(extra: str) -> str:
    """upgrade_extra_command for the installation that is running."""
    return upgrade_extra_command(extra, _installed()[1], sys.executable)
