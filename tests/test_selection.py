"""File selection: every changed file reviewed or skipped with a reason, secrets never reviewed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pathspec
import pytest
from gitrepo import commit_all, git, head, make_repo, write
from hypothesis import assume, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from ocr_hook import config_files
from ocr_hook.changes.collect import collect_changes
from ocr_hook.changes.globs import GitIgnoreGlobs, check_patterns
from ocr_hook.changes.scope import Scope
from ocr_hook.changes.selection import Selected, is_sensitive, select_files
from ocr_hook.changes.snapshot import GitSnapshot
from ocr_hook.errors import ConfigError
from ocr_hook.settings import Settings, load


def settings(**overrides: Any) -> Settings:
    return load(None, None, {}, environ={})._replace(**overrides)


def select(repo: Path, config: Settings | None = None) -> dict[str, Selected]:
    change_set = collect_changes(str(repo), Scope("staged"), (), {})
    with GitSnapshot(str(repo), None) as snap:
        selected = select_files(change_set, snap, config or settings())
    assert sorted(s.change.path for s in selected) == sorted(f.path for f in change_set.files)
    return {s.change.path: s for s in selected}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    write(repo, "gone.py", "x = 1\n")
    write(repo, "app.py", "a = 1\n")
    commit_all(repo, "initial")
    return repo


SECRETS = [".env", "config/.env.production", "deploy/id_rsa", "home/.ssh/known", "certs/server.pem", "tls.key",
           ".npmrc", "pkg/.pypirc", ".netrc", ".git-credentials", "store.keystore", "credentials.json",
           "secrets.yaml", "cert.p12", "id_ed25519.pub"]


def test_sensitive_files_are_never_reviewed(repo: Path) -> None:
    for path in SECRETS:
        write(repo, path, "TOKEN=abc\n")
    git(repo, "add", "-A")
    # Neither include nor a "!" exclude line can bring a secret back.
    config = settings(include=tuple(SECRETS), exclude=tuple("!" + p for p in SECRETS))
    chosen = select(repo, config)
    for path in SECRETS:
        assert chosen[path].action == "skip", path
        assert chosen[path].reason.startswith("sensitive") and not chosen[path].incomplete
        assert is_sensitive(path, config)
    assert not is_sensitive("app.py", config)
    # A glob that matches by a name's stem never matches source code (issue 58.5): that is code to review.
    assert not [p for p in ("app/secrets.py", "web/secrets.ts", "id_rsa.go", ".env.js") if is_sensitive(p, config)]
    assert is_sensitive("home/.ssh/secrets.py", config)  # a directory rule still holds everything under it


def test_user_sensitive_globs_and_renamed_secrets(repo: Path) -> None:
    write(repo, ".env", "KEY=1\n" * 20)
    write(repo, "internal/keys.txt", "k\n")
    commit_all(repo, "secrets")
    git(repo, "mv", ".env", "settings.txt")  # the content is still the secret
    write(repo, "settings.txt", "KEY=1\n" * 20 + "MORE=2\n")
    write(repo, "internal/keys.txt", "k2\n")
    git(repo, "add", "-A")
    chosen = select(repo, settings(sensitive=("internal/",)))
    assert chosen["settings.txt"].reason in ("sensitive ('.env'): never sent to the model",
                                             "sensitive ('*.env'): never sent to the model")
    assert chosen["internal/keys.txt"].reason == "sensitive ('internal/'): never sent to the model"
    assert is_sensitive("internal/x", settings(sensitive=("internal/",)))


def test_user_cannot_unprotect_sensitive_files(repo: Path) -> None:
    write(repo, "app.py", "a = 2\n")
    git(repo, "add", "app.py")
    with pytest.raises(ConfigError, match="sensitive"):
        select(repo, settings(sensitive=("!.env",)))


def test_policy_skips(repo: Path) -> None:
    git(repo, "rm", "-q", "gone.py")
    write(repo, "img.png", bytes(range(256)))
    os.symlink("app.py", repo / "link.py")
    write(repo, "empty.py", b"")
    git(repo, "add", "-A")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head(repo)},sub")
    chosen = select(repo)
    assert {p: (s.action, s.reason, s.incomplete) for p, s in chosen.items()} == {
        "gone.py": ("skip", "deleted", False),
        "img.png": ("skip", "binary", False),
        "link.py": ("skip", "symlink", False),
        "sub": ("skip", "submodule", False),
        "empty.py": ("skip", "empty file", False),
    }


def test_rename_without_changes_is_skipped(repo: Path) -> None:
    git(repo, "mv", "app.py", "moved.py")
    chosen = select(repo)
    assert chosen["moved.py"].reason == "no content change (rename or mode only)"


DEFAULT_SKIPS = {
    "poetry.lock": "lock file",
    "web/package-lock.json": "lock file",
    "go.sum": "lock file",
    "Cargo.lock": "lock file",
    "vendor/lib/x.go": "vendored",
    "ui/node_modules/a/index.js": "vendored",
    "third_party/z.c": "vendored",
    "dist/app.js": "build output",
    "static/app.min.js": "minified",
    "static/site.min.css": "minified",
    "static/app.js.map": "minified",
    "proto/api_pb2.py": "generated",
    "proto/api.pb.go": "generated",
}


def test_generated_vendored_lock_and_minified_by_name(repo: Path) -> None:
    for path in DEFAULT_SKIPS:
        write(repo, path, "content\n")
    write(repo, "src/real.py", "r = 1\n")
    git(repo, "add", "-A")
    chosen = select(repo)
    for path, label in DEFAULT_SKIPS.items():
        assert chosen[path].action == "skip" and chosen[path].reason.startswith(label + " ("), path
        assert not chosen[path].incomplete
    assert chosen["src/real.py"].action == "review"


def test_generated_marker_in_the_first_lines(repo: Path) -> None:
    write(repo, "gen.go", "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage x\n")
    write(repo, "late.py", "\n" * 10 + "# @generated\n")
    git(repo, "add", "-A")
    chosen = select(repo)
    assert chosen["gen.go"].reason == "generated ('DO NOT EDIT' in the first lines)"
    assert chosen["late.py"].action == "review"


def test_user_exclude_include_and_reinclusion(repo: Path) -> None:
    write(repo, "dist/keep.js", "k = 1\n")
    write(repo, "dist/drop.js", "d = 1\n")
    write(repo, "docs/guide.md", "text\n")
    write(repo, "src/a.py", "a = 1\n")
    write(repo, "src/b.txt", "b\n")
    git(repo, "add", "-A")
    config = settings(exclude=("!dist/keep.js", "docs/"), include=("src/*.py", "dist/"))
    chosen = select(repo, config)
    assert chosen["dist/keep.js"].action == "review"
    assert chosen["dist/drop.js"].reason.startswith("build output")
    assert chosen["docs/guide.md"].reason == "excluded by your exclude pattern 'docs/'"
    assert chosen["src/a.py"].action == "review"
    assert chosen["src/b.txt"].reason == "not matched by your include patterns"


def test_size_limits_make_the_review_incomplete(repo: Path) -> None:
    write(repo, "many_changes.py", "x = 1\n" * 30)
    write(repo, "long_file.py", "y = 1\n" * 5 + "z" * 500 + "\n")
    write(repo, "many_lines.py", "w\n" * 25)
    git(repo, "add", "-A")
    config = settings(max_diff_lines=26, max_file_bytes=400, max_file_lines=20)
    chosen = select(repo, config)
    assert chosen["many_changes.py"].reason == "too large: 30 changed lines (max_diff_lines 26)"
    assert chosen["long_file.py"].reason == "too large: 531 bytes (max_file_bytes 400)"
    assert chosen["many_lines.py"].reason == "too large: 25 lines (max_file_lines 20)"
    assert all(chosen[p].incomplete for p in ("many_changes.py", "long_file.py", "many_lines.py"))


def test_generated_beats_too_large(repo: Path) -> None:
    write(repo, "big_gen.py", "# @generated\n" + "v = 1\n" * 50)
    git(repo, "add", "-A")
    chosen = select(repo, settings(max_diff_lines=10))
    assert chosen["big_gen.py"].reason.startswith("generated") and not chosen["big_gen.py"].incomplete


def test_order_and_max_files(repo: Path) -> None:
    write(repo, "small.py", "s = 1\n")
    write(repo, "big.py", "b = 1\n" * 10)
    write(repo, "auth/login.py", "l = 1\n" * 6)  # risky path: counts double
    write(repo, "tests/test_big.py", "t = 1\n" * 12)  # tests count half
    write(repo, "b_tie.py", "x = 1\n" * 3)
    write(repo, "a_tie.py", "x = 1\n" * 3)
    git(repo, "add", "-A")
    selected = list(select(repo).values())
    order = [s.change.path for s in selected if s.action == "review"]
    assert order == ["auth/login.py", "big.py", "tests/test_big.py", "a_tie.py", "b_tie.py", "small.py"]
    limited = select(repo, settings(max_files=2))
    assert [p for p, s in limited.items() if s.action == "review"] == ["auth/login.py", "big.py"]
    over = [s for s in limited.values() if s.action == "skip"]
    assert len(over) == 4 and all(s.incomplete and "max_files" in s.reason for s in over)


def test_reviews_come_before_skips_and_every_file_once(repo: Path) -> None:
    write(repo, "yarn.lock", "lock\n")
    write(repo, "z.py", "z = 1\n")
    git(repo, "rm", "-q", "gone.py")
    git(repo, "add", "-A")
    selected = list(select(repo).values())
    actions = [s.action for s in selected]
    assert actions == sorted(actions, key=lambda a: a != "review")


# --- lazily compiled globs: the same answers as pathspec over the whole list ------------------------------

def _full_answer(patterns: list[str], path: str) -> tuple[bool | None, int | None]:
    result = pathspec.GitIgnoreSpec.from_lines(patterns).check_file(path)
    return result.include, result.index


def _shipped_patterns() -> list[str]:
    data = config_files.read_yaml("selection.yaml")
    return [*data["sensitive"], *(p for group in data["default_skip"].values() for p in group)]


def _paths_near(patterns: list[str]) -> list[str]:
    """Paths that match a glob, nearly match it, or carry its literal pieces in other places."""
    out = ["app.py", "src/app.py", "README.md", "pkg/mod0.py", "a/b/c.txt", "x.lock.py", "dist.py", "node_modules"]
    for pattern in patterns:
        core = pattern.strip("/").replace("**/", "").replace("*", "x").replace("?", "q")
        out += [core, f"deep/dir/{core}", f"{core}/inner.py", f"{core}.bak", f"pre{core}", f"dir/{core}x/y"]
    return out


def test_shipped_globs_answer_exactly_as_pathspec() -> None:
    patterns = _shipped_patterns()
    globs = GitIgnoreGlobs(patterns)
    matched = 0
    for path in _paths_near(patterns) + SECRETS:
        assert globs.check_file(path) == _full_answer(patterns, path), path
        matched += globs.check_file(path).include is True
    assert matched > len(patterns)  # the paths really exercise the globs, not only the no-match case


def test_an_ordinary_source_path_compiles_nothing() -> None:
    globs = GitIgnoreGlobs(_shipped_patterns())
    for path in ("pkg/mod0.py", "src/main.rs", "web/app.tsx", "lib/util.go"):
        assert globs.check_file(path) == (None, None)
    assert globs._specs == {}  # no pathspec compile was needed


_GLOB_ALPHABET = "ab.*?/![]\\# "


@given(patterns=st.lists(st.text(_GLOB_ALPHABET, min_size=1, max_size=7), min_size=1, max_size=6),
       path=st.lists(st.text("ab.!#[] ", min_size=1, max_size=4), min_size=1, max_size=4).map("/".join))
@hypothesis_settings(max_examples=400, deadline=None)
@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")  # re on generated "[[" classes
def test_any_valid_globs_answer_exactly_as_pathspec(patterns: list[str], path: str) -> None:
    assume(check_patterns(patterns) is None)
    assert GitIgnoreGlobs(patterns).check_file(path) == _full_answer(patterns, path)


def test_an_invalid_user_glob_is_a_config_error(repo: Path) -> None:
    write(repo, "app.py", "a = 2\n")
    git(repo, "add", "app.py")
    for name in ("exclude", "include"):
        with pytest.raises(ConfigError, match=f"setting '{name}'.*'!'"):
            select(repo, settings(**{name: ("!",)}))
    with pytest.raises(ConfigError, match="setting 'sensitive'"):
        is_sensitive("app.py", settings(sensitive=("keys\\",)))
