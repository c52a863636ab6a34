"""The release procedure (docs/release.md, issue 58 item 21): `scripts/release.py` makes the tag every documented
pin names from pyproject's version, refuses what would make a pin lie, and moves every pin on a bump.

Each step runs as the docs give it, in a scratch clone of this checkout (its tracked files as they are now).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from gitrepo import git

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
TAG = f"v{VERSION}"


def release(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "scripts/release.py", *args], cwd=clone, capture_output=True, text=True,
                          timeout=60)


def scratch_clone(path: Path) -> Path:
    """This checkout's tracked files that a release reads and writes (the version's two homes, the docs, the
    script), committed in a new repository at `path` (no tags)."""
    wanted = ("pyproject.toml", "README.md", "ocr_hook/__init__.py", "scripts/release.py", "docs/")
    for name in filter(None, git(ROOT, "ls-files", "-z").split("\0")):
        source = ROOT / name
        if name.startswith(wanted) and name.endswith((".md", ".py", ".toml")) and source.is_file():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, path / name)
    git(path.parent, "init", "-q", "-b", "main", str(path))
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "release candidate")
    return path


@pytest.fixture(scope="module")
def steps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    clone = scratch_clone(tmp_path_factory.mktemp("release") / "ocr-hook")
    out: dict[str, object] = {"check": release(clone, "check")}
    readme = clone / "README.md"
    original = readme.read_text(encoding="utf-8")
    readme.write_text(original + "\nedited\n", encoding="utf-8")
    out["dirty"] = release(clone, "tag")
    readme.write_text(original, encoding="utf-8")
    out["tag"] = release(clone, "tag")
    out["head"] = git(clone, "rev-parse", "HEAD").strip()
    out["tagged"] = git(clone, "rev-parse", f"{TAG}^{{commit}}").strip()
    out["again"] = release(clone, "tag")
    out["bump"] = release(clone, "bump", "0.2.0")
    out["bumped-check"] = release(clone, "check")
    out["bumped-texts"] = {p.name: p.read_text(encoding="utf-8") for p in
                           (clone / "pyproject.toml", clone / "ocr_hook" / "__init__.py",
                            clone / "docs" / "recipes" / "pre-commit.md", clone / "README.md")}
    git(clone, "commit", "-q", "-am", "release 0.2.0")
    out["second"] = release(clone, "tag")
    out["second-tagged"] = git(clone, "rev-parse", "v0.2.0^{commit}").strip() == git(clone, "rev-parse", "HEAD").strip()
    git(clone, "commit", "-q", "--allow-empty", "-m", "later")
    out["moved"] = release(clone, "tag")
    return out


def test_tag_makes_the_tag_every_documented_pin_names(steps: dict[str, object]) -> None:
    check = steps["check"]
    assert check.returncode == 0 and check.stdout == f"version {VERSION}, tag {TAG}: not yet made\n", check
    tagged = steps["tag"]
    assert tagged.returncode == 0, tagged.stderr
    assert tagged.stdout == f"tagged {TAG} at {steps['head'][:12]}; publish it: git push origin {TAG}\n"
    assert steps["tagged"] == steps["head"]
    again = steps["again"]
    assert again.returncode == 0
    assert again.stdout.endswith("already tags HEAD (" + steps["head"][:12] + "): nothing to do\n")


def test_tag_refuses_uncommitted_changes_and_never_moves_a_released_tag(steps: dict[str, object]) -> None:
    dirty = steps["dirty"]
    assert dirty.returncode == 1 and dirty.stdout == ""
    assert dirty.stderr == "release.py: error: the work tree has uncommitted changes: commit the release first\n"
    moved = steps["moved"]
    assert moved.returncode == 1 and "v0.2.0 already tags another commit" in moved.stderr


def test_bump_moves_the_version_and_every_pin_together(steps: dict[str, object]) -> None:
    assert steps["bump"].returncode == 0, steps["bump"].stderr
    texts = steps["bumped-texts"]
    assert 'version = "0.2.0"' in texts["pyproject.toml"] and '__version__ = "0.2.0"' in texts["__init__.py"]
    assert "rev: v0.2.0" in texts["pre-commit.md"] and "v0.1.0" not in texts["pre-commit.md"]
    assert "ocr-hook@v0.2.0" in texts["README.md"] and "This version is `0.2.0`" in texts["README.md"]
    check = steps["bumped-check"]
    assert check.returncode == 0 and check.stdout == "version 0.2.0, tag v0.2.0: not yet made\n", check
    assert steps["second"].returncode == 0 and steps["second-tagged"]
