"""Release ocr-hook: the tag every documented pin names, made from pyproject's version (docs/release.md).

Nothing is published to a package index; a release is a tag, `v` + the version in pyproject.toml, on the
commit that carries that version. Every pin in README.md and docs/ (`rev: vX.Y.Z`, `ocr-hook@vX.Y.Z`) names
it, so the pins resolve only once the tag is on the repository users install from.

    python scripts/release.py check            # the version, its tag, whether the tag exists, stale pins
    python scripts/release.py bump 0.2.0       # set the version (pyproject, ocr_hook/__init__.py) and every pin
    python scripts/release.py tag              # tag HEAD `v<version>` after the checks; prints the push command

`tag` refuses (exit 1, one line) a work tree with changes, a pin that is not the version's tag, a version
that differs between pyproject.toml and ocr_hook/__init__.py, and a tag of that name on another commit. On
the commit it names already, it does nothing and says so.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"(?:\brev:\s*|ocr-hook@)([^\s\"'#`|]+)")
VERSION_LINE = re.compile(r'^(version\s*=\s*")([^"]+)(")', re.M)
INIT_LINE = re.compile(r'^(__version__\s*=\s*")([^"]+)(")', re.M)
SEMVER = re.compile(r"\d+\.\d+\.\d+(?:[-.]?(?:a|b|rc)\d+)?")


class ReleaseError(Exception):
    """What stops a release step; str(exc) is one line."""


def docs(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def version(root: Path) -> str:
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def stale_pins(root: Path, tag: str) -> list[str]:
    """Every pin in the docs that is not `tag`, as `FILE: PIN`."""
    return [f"{path.relative_to(root)}: {pin}" for path in docs(root)
            for pin in PIN.findall(path.read_text(encoding="utf-8")) if pin != tag]


def _git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ReleaseError(f"git {' '.join(args)}: {(proc.stderr.strip().splitlines() or ['failed'])[0]}")
    return proc.stdout.strip()


def _tag_commit(root: Path, tag: str) -> str | None:
    proc = subprocess.run(["git", "rev-parse", "-q", "--verify", f"refs/tags/{tag}^{{commit}}"], cwd=root,
                          capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def check(root: Path) -> list[str]:
    """What stands between HEAD and a release of pyproject's version (empty: nothing)."""
    ver = version(root)
    problems = [f"pin {p} is not v{ver}" for p in stale_pins(root, f"v{ver}")]
    found = INIT_LINE.search((root / "ocr_hook" / "__init__.py").read_text(encoding="utf-8"))
    if found is None or found.group(2) != ver:
        problems.append(f"ocr_hook/__init__.py's __version__ is not {ver} (pyproject.toml's)")
    return problems


def bump(root: Path, new: str) -> list[str]:
    """Set the version to `new` in pyproject.toml and ocr_hook/__init__.py, and every mention of the old tag
    and version in the docs (pins and prose alike); the files changed."""
    if not SEMVER.fullmatch(new):
        raise ReleaseError(f"{new!r} is not a version (X.Y.Z)")
    old = version(root)
    changed = []
    for path, pattern in ((root / "pyproject.toml", VERSION_LINE), (root / "ocr_hook" / "__init__.py", INIT_LINE)):
        text = path.read_text(encoding="utf-8")
        updated = pattern.sub(lambda m: m.group(1) + new + m.group(3), text, count=1)
        if updated != text:
            path.write_text(updated, encoding="utf-8")
            changed.append(str(path.relative_to(root)))
    for path in docs(root):
        text = path.read_text(encoding="utf-8")
        # The tag first; then the bare version where the prose quotes it (`0.1.0`).
        updated = re.sub(rf"\bv{re.escape(old)}\b", f"v{new}", text).replace(f"`{old}`", f"`{new}`")
        if updated != text:
            path.write_text(updated, encoding="utf-8")
            changed.append(str(path.relative_to(root)))
    return changed


def tag(root: Path) -> str:
    """Tag HEAD `v<version>`; what was done, in one line."""
    ver = version(root)
    name = f"v{ver}"
    if _git(root, "status", "--porcelain", "--untracked-files=no"):
        raise ReleaseError("the work tree has uncommitted changes: commit the release first")
    problems = check(root)
    if problems:
        raise ReleaseError(f"{problems[0]} ({len(problems)} problem(s); python scripts/release.py bump {ver} "
                           "sets them all)")
    head = _git(root, "rev-parse", "HEAD")
    at = _tag_commit(root, name)
    if at == head:
        return f"{name} already tags HEAD ({head[:12]}): nothing to do"
    if at is not None:
        raise ReleaseError(f"{name} already tags another commit ({at[:12]}): bump the version for a new release")
    _git(root, "tag", name)  # lightweight: pre-commit autoupdate --freeze then pins the commit itself
    return f"tagged {name} at {head[:12]}; publish it: git push origin {name}"


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(prog="release.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    sub.add_parser("check", help="the version, its tag and what stands before a release")
    bumped = sub.add_parser("bump", help="set the version and every pin in the docs")
    bumped.add_argument("version")
    sub.add_parser("tag", help="tag HEAD v<version>")
    args = parser.parse_args(argv)
    try:
        if args.step == "bump":
            changed = bump(root, args.version)
            print(f"version {args.version}: {', '.join(changed) or 'nothing changed'}; commit, then "
                  "python scripts/release.py tag")
        elif args.step == "tag":
            print(tag(root))
        else:
            ver = version(root)
            at = _tag_commit(root, f"v{ver}")
            print(f"version {ver}, tag v{ver}: " + (f"exists ({at[:12]})" if at else "not yet made"))
            for problem in check(root):
                print(f"  {problem}")
            return 1 if check(root) else 0
    except ReleaseError as exc:
        print(f"release.py: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
