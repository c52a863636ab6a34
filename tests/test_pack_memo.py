"""The pack memo (DESIGN.md 12, issue 32): an unchanged re-run finds its files' context packs, and so their
result-cache keys, without building them again (no `git grep`, no parsing), and any change to what a pack is
made from (the snapshot, a diff, the settings the packs read) is a miss. Real repositories, the forked CLI, the
real SDK against the fake Messages API; a logging `git` first on PATH counts the processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_support import filter_keeps_all
from e2e_support import comment, comment_turn
from fake_api import FakeMessagesAPI, task_done
from gitrepo import commit_all, git, logging_git, make_repo, run_cli, subcommands, write

from ocr_hook.changes.collect import collect_changes
from ocr_hook.changes.scope import Scope
from ocr_hook.changes.snapshot import open_snapshot
from ocr_hook.context import PackSummary, packs_key
from ocr_hook.settings import load
from ocr_hook.store.result_cache import ResultCache, cache_key

LIB = "def normalise(name):\n    return name.strip().lower()\n"
APP_BEFORE = "from lib import normalise\n\n\ndef lookup(users, name):\n    return users.get(name)\n"
APP_AFTER = "from lib import normalise\n\n\ndef lookup(users, name, default=None):\n" \
            "    return users.get(normalise(name), default)\n"
MAIN = "from app import lookup\n\n\ndef main(users):\n    return lookup(users, 'Ann')\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo")
    for path, text in (("lib.py", LIB), ("app.py", APP_BEFORE), ("main.py", MAIN)):
        write(root, path, text)
    commit_all(root, "base")
    write(root, "app.py", APP_AFTER)
    git(root, "add", "app.py")
    return root


def _script(fake_api: FakeMessagesAPI) -> None:
    fake_api.script("app.py", [comment_turn(comment("Default is ignored for missing users.",
                                                    "return users.get(normalise(name), default)",
                                                    severity="low", suggestion=None)), task_done()])


def test_an_unchanged_re_run_greps_nothing_and_a_changed_definition_elsewhere_is_a_miss(
        repo: Path, tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    filter_keeps_all(fake_api)
    _script(fake_api)
    env, log = logging_git(tmp_path, sdk_env)
    first = run_cli(repo, "review", "--format", "json", env=env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["coverage"]["context"] == {"app.py": {"entries": 2, "cut": 0}}
    assert "grep" in subcommands(log)  # the first run looked for lookup's call sites
    first_prompt = next(r.first_user_text for r in fake_api.requests if r.first_user_text.startswith(
        "Review the change to `app.py`"))
    assert "definition of `normalise`" in first_prompt and "call site of `lookup`" in first_prompt

    sent = len(fake_api.requests)
    again = run_cli(repo, "review", "--format", "json", env=env)
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout)
    assert len(fake_api.requests) == sent and doc["coverage"]["cached"] == ["app.py"]
    assert doc["coverage"]["context"] == {"app.py": {"entries": 2, "cut": 0}}  # as the pack itself said
    assert "grep" not in subcommands(log)

    # The definition changes in the index, outside the reviewed change set (the review is of app.py only):
    # the snapshot is another, so the memo misses, the pack shows the new text, and the file is reviewed anew.
    write(repo, "lib.py", LIB.replace("strip().lower()", "casefold()"))
    git(repo, "add", "lib.py")
    _script(fake_api)
    third = run_cli(repo, "review", "--format", "json", "app.py", env=env)
    assert third.returncode == 0, third.stderr
    assert len(fake_api.requests) > sent and json.loads(third.stdout)["coverage"]["cached"] == []
    assert "return name.casefold()" in fake_api.requests[sent].first_user_text


def test_the_key_names_the_snapshot_the_diffs_and_the_settings_the_packs_read(repo: Path) -> None:
    root = str(repo)

    def key(**settings: object) -> str | None:
        change_set = collect_changes(root, Scope("staged"), [], {})
        with open_snapshot(root, change_set) as snapshot:
            return packs_key(change_set.files, snapshot, load(root, None, settings, {}))

    same = key()
    assert same is not None and key() == same
    assert key(context_tokens=100) != same
    assert key(exclude=["!dist/"]) != same
    assert key(sensitive=["secrets/"]) != same
    write(repo, "notes.txt", "unrelated\n")  # in the work tree only: the index, and so the key, stay
    assert key() == same
    git(repo, "add", "notes.txt")  # another blob in the index: the call-site search would see it
    staged = key()
    assert staged not in (None, same)
    write(repo, "app.py", APP_AFTER + "\n# more\n")
    git(repo, "add", "app.py")
    assert key() not in (None, same, staged)


def test_a_memo_entry_of_another_shape_is_a_miss(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "cache")
    key = cache_key({"packs": "x"})
    cache.put_packs(key, {"a.py": PackSummary("definition of `f`", 1, 0), "b.py": None})
    assert cache.get_packs(key) == {"a.py": PackSummary("definition of `f`", 1, 0), "b.py": None}
    for junk in ({"a.py": ["text", -1, 0]}, {"a.py": ["text", 1]}, {"a.py": [1, 1, 0]}, ["a.py"], "packs"):
        cache.store.write(key, {"packs": junk})
        assert cache.get_packs(key) is None
    assert cache.get_packs(cache_key({"packs": "never written"})) is None


def test_a_failed_search_marks_the_packs_degraded_so_they_are_not_memoised(repo: Path) -> None:
    from ocr_hook.context.pack import degraded, reader_for

    root = str(repo)
    change_set = collect_changes(root, Scope("staged"), [], {})
    settings = load(root, None, {}, {})
    with open_snapshot(root, change_set) as snapshot:
        reader = reader_for(snapshot, settings)
        assert reader.grep(r"\blookup\s*\(", ("*.py",), 10).error is None and not degraded(snapshot, settings)
        assert reader.grep("(", ("*.py",), 10).error is not None  # git rejects the pattern
        assert degraded(snapshot, settings)
