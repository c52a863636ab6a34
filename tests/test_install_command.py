"""The command a message hands a user to add an extra names the installation that is running (DESIGN.md 19), from
its PEP 610 direct_url.json: each kind pip writes. tests/test_docs_commands.py runs these commands (pip --dry-run)
for real installations' metadata."""

from __future__ import annotations

import shlex
from pathlib import Path

from ocr_hook.install_command import add_extra_command, extra_requirements, upgrade_extra_command

PY = "/home/u/.venv/bin/python"
REQUIRES = ["anthropic>=0.40", 'mcp<3,>=2.3; extra == "mcp"', 'mcp<3,>=2.3; extra == "test"',
            'claude-agent-sdk<0.3,>=0.2.189; extra == "claude-code"', 'pytest>=8; extra == "test"']


def test_a_directory_install_reinstalls_that_directory_with_the_extra() -> None:
    direct = {"url": "file:///home/u/src/ocr%20hook", "dir_info": {}}
    assert add_extra_command("mcp", direct, REQUIRES, PY) == \
        f"{PY} -m pip install '/home/u/src/ocr hook[mcp]'"


def test_an_editable_install_stays_editable() -> None:
    direct = {"url": "file:///work/ocr-hook", "dir_info": {"editable": True}}
    assert add_extra_command("claude-code", direct, REQUIRES, PY) == \
        f"{PY} -m pip install -e '/work/ocr-hook[claude-code]'"


def test_a_vcs_install_names_the_url_and_the_revision_the_user_asked_for() -> None:
    direct = {"url": "https://github.com/acme/ocr-hook", "vcs_info": {
        "vcs": "git", "commit_id": "0123abcd", "requested_revision": "v0.1.0"}}
    assert add_extra_command("mcp", direct, REQUIRES, PY) == \
        f"{PY} -m pip install 'ocr-hook[mcp] @ git+https://github.com/acme/ocr-hook@v0.1.0'"
    # no revision asked for: the commit installed, not whatever the default branch is now
    del direct["vcs_info"]["requested_revision"]  # type: ignore[attr-defined]
    direct["subdirectory"] = "tools/ocr"
    assert shlex.split(add_extra_command("mcp", direct, REQUIRES, PY))[-1] == \
        "ocr-hook[mcp] @ git+https://github.com/acme/ocr-hook@0123abcd#subdirectory=tools/ocr"


def test_a_wheel_or_archive_install_names_the_file() -> None:
    direct = {"url": "file:///tmp/dist/ocr_hook-0.1.0-py3-none-any.whl", "archive_info": {"hashes": {}}}
    assert shlex.split(add_extra_command("mcp", direct, REQUIRES, PY)) == \
        [PY, "-m", "pip", "install", "ocr-hook[mcp] @ file:///tmp/dist/ocr_hook-0.1.0-py3-none-any.whl"]


def test_without_a_recorded_origin_the_extra_s_own_requirements_are_named() -> None:
    # an index install (or a tool that writes no direct_url.json): the extra's packages are on PyPI
    for direct in (None, {}, {"url": "https://example.com/x", "dir_info": {}}, {"url": "file:///x"}):
        assert add_extra_command("claude-code", direct, REQUIRES, PY) == \
            f"{PY} -m pip install 'claude-agent-sdk<0.3,>=0.2.189'"


def test_extra_requirements_reads_the_markers_not_the_text() -> None:
    assert extra_requirements(REQUIRES, "mcp") == ["mcp<3,>=2.3"]
    assert extra_requirements(REQUIRES, "test") == ["mcp<3,>=2.3", "pytest>=8"]
    assert extra_requirements([*REQUIRES, 'tomli; python_version < "3.11"'], "docs") == []
    assert upgrade_extra_command("claude-code", REQUIRES, "python") == \
        "python -m pip install --upgrade 'claude-agent-sdk<0.3,>=0.2.189'"


def test_a_hook_manager_s_environment_gets_the_extra_from_the_hook_s_configuration() -> None:
    # pre-commit installs its clone of the hook's repository with `pip install .`: a command run in that
    # environment would be lost when pre-commit rebuilds it, so the extra goes where pre-commit reads it
    stores = (Path("/home/u/.cache/pre-commit"), Path("/home/u/.cache/prek"))
    direct = {"url": "file:///home/u/.cache/pre-commit/repo4f2a_x1", "dir_info": {}}
    assert add_extra_command("claude-code", direct, REQUIRES, PY, stores) == \
        'add additional_dependencies: ["ocr-hook[claude-code]"] to the hook in .pre-commit-config.yaml'
    elsewhere = {"url": "file:///home/u/src/ocr-hook", "dir_info": {}}
    assert add_extra_command("claude-code", elsewhere, REQUIRES, PY, stores).startswith(f"{PY} -m pip install ")
