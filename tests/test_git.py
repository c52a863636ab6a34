"""ocr_hook.changes.git against real scratch repositories."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitrepo import commit_all, git, logging_git, make_repo, repo_state, subcommands, write

from ocr_hook.changes import git as g
from ocr_hook.errors import GitError

EMPTY_TREE_SHA1 = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _two_branches(tmp_path: Path) -> tuple[Path, str, str]:
    """main: A-B, feature: A-C. Returns (repo, sha of A, sha of C)."""
    repo = make_repo(tmp_path / "repo")
    write(repo, "f.txt", "a\n")
    a = commit_all(repo, "A")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "g.txt", "c\n")
    c = commit_all(repo, "C")
    git(repo, "checkout", "-q", "main")
    write(repo, "f.txt", "b\n")
    commit_all(repo, "B")
    git(repo, "checkout", "-q", "feature")
    return repo, a, c


def test_repo_root_from_a_subdirectory(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    sub = repo / "a" / "b"
    sub.mkdir(parents=True)
    assert Path(g.repo_root(str(sub))).resolve() == repo.resolve()


def test_repo_root_outside_a_repository_is_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(GitError) as info:
        g.repo_root(str(tmp_path))
    message = str(info.value)
    assert message.startswith("not a git repository:")
    assert "\n" not in message


def test_repo_root_of_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="not a directory"):
        g.repo_root(str(tmp_path / "nope"))


def test_repo_top_gives_root_and_head_in_one_call(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    sub = repo / "a"
    sub.mkdir()
    unborn = g.repo_top(str(sub))
    assert (Path(unborn.root).resolve(), unborn.head) == (repo.resolve(), None)
    assert unborn.root == g.repo_root(str(sub)) and g.head_commit(str(repo)) is None
    write(repo, "f.txt", "x\n")
    sha = commit_all(repo)
    assert g.repo_top(str(sub)) == (g.repo_root(str(sub)), sha)
    assert g.head_commit(str(repo)) == sha and g.has_head(str(repo))


def test_repo_top_fails_like_repo_root(tmp_path: Path) -> None:
    for where in (tmp_path, tmp_path / "nope"):
        with pytest.raises(GitError) as expected:
            g.repo_root(str(where))
        with pytest.raises(GitError) as got:
            g.repo_top(str(where))
        assert str(got.value) == str(expected.value)
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(GitError, match=r"cannot use .* as a git work tree"):
        g.repo_top(str(repo / ".git"))


def test_resolve_commit_names_the_unknown_ref(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "f.txt", "x\n")
    sha = commit_all(repo)
    assert g.resolve_commit(str(repo), "HEAD") == sha
    assert g.resolve_commit(str(repo), sha[:7]) == sha
    for bad in ("no-such-branch", "--output=/tmp/x", "HEAD~5", ""):
        with pytest.raises(GitError) as info:
            g.resolve_commit(str(repo), bad)
        assert f"unknown ref {bad!r}" in str(info.value)


def test_resolve_commit_peels_tags_and_refuses_trees(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "f.txt", "x\n")
    sha = commit_all(repo)
    git(repo, "tag", "-a", "-m", "v1", "v1")
    assert g.resolve_commit(str(repo), "v1") == sha
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    with pytest.raises(GitError, match="unknown ref"):
        g.resolve_commit(str(repo), tree)


def test_empty_repository_has_no_head_and_an_empty_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    before = repo_state(repo, exact_index=True)
    assert g.has_head(str(repo)) is False
    assert g.empty_tree(str(repo)) == EMPTY_TREE_SHA1
    assert repo_state(repo, exact_index=True) == before  # hash-object without -w writes nothing
    assert git(repo, "count-objects").startswith("0 objects")


def test_merge_base_and_first_parent(tmp_path: Path) -> None:
    repo, a, c = _two_branches(tmp_path)
    assert g.merge_base(str(repo), g.resolve_commit(str(repo), "main"), c) == a
    assert g.first_parent(str(repo), c) == a
    assert g.first_parent(str(repo), a) is None


def test_merge_base_of_unrelated_histories(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "f.txt", "x\n")
    one = commit_all(repo)
    git(repo, "checkout", "-q", "--orphan", "other")
    write(repo, "f.txt", "y\n")
    two = commit_all(repo)
    with pytest.raises(GitError, match="unrelated"):
        g.merge_base(str(repo), one, two)


def test_merge_base_missing_in_a_shallow_clone_says_how_to_fix_it(tmp_path: Path) -> None:
    origin, _, _ = _two_branches(tmp_path)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", "--no-single-branch", f"file://{origin}", str(clone))
    assert g.is_shallow(str(clone))
    main = g.resolve_commit(str(clone), "origin/main")
    head = g.resolve_commit(str(clone), "HEAD")
    with pytest.raises(GitError) as info:
        g.merge_base(str(clone), main, head)
    message = str(info.value)
    assert "shallow" in message and "git fetch --unshallow" in message and "git fetch --deepen" in message
    assert g.shallow_commits(str(clone)) >= {main, head}


def test_unmerged_paths_are_detected(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "f.txt", "base\n")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "other")
    write(repo, "f.txt", "other\n")
    commit_all(repo, "other")
    git(repo, "checkout", "-q", "main")
    write(repo, "f.txt", "main\n")
    commit_all(repo, "main")
    git(repo, "merge", "-q", "other", check=False)
    assert g.unmerged_paths(str(repo)) == ["f.txt"]
    with pytest.raises(GitError, match=r"merge conflict in progress: unmerged paths 'f\.txt'"):
        g.check_no_unmerged(str(repo))


def test_run_git_failure_is_a_one_line_git_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(GitError) as info:
        g.run_git(str(repo), ["cat-file", "-p", "deadbeef"])
    assert str(info.value).startswith("git cat-file failed: fatal:")
    assert "\n" not in str(info.value)


def test_pinned_options_beat_user_config(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "core.quotePath", "true")
    git(repo, "config", "color.ui", "always")
    write(repo, "ünï.txt", "x\n")
    git(repo, "add", ".")
    out = g.git_text(str(repo), ["diff", "--cached", "--name-only", *g.DIFF_OPTIONS])
    assert out == "ünï.txt\n"


def test_git_env_drops_external_diff_and_disables_optional_locks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "/bin/false")
    monkeypatch.setenv("GIT_INDEX_FILE", "/some/index")
    env = g.git_env()
    assert "GIT_EXTERNAL_DIFF" not in env
    assert env["GIT_OPTIONAL_LOCKS"] == "0"
    assert env["GIT_INDEX_FILE"] == "/some/index"  # a hook's temporary index is what gets committed


def test_zero_sha() -> None:
    assert g.is_zero_sha("0" * 40)
    assert not g.is_zero_sha("")
    assert not g.is_zero_sha("0" * 39 + "1")


# --- prefetch: commands started early, taken once, ended with their run --------------------------------------


def test_a_prefetched_command_runs_once_and_its_answer_is_taken(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "f.txt", "a\n")
    head = commit_all(repo, "A")
    env, log = logging_git(tmp_path, {})
    monkeypatch.setenv("PATH", env["PATH"])
    root = str(repo)
    g.prefetch(root, [["rev-parse", "HEAD"]])  # outside a run's scope: nothing starts
    assert subcommands(log) == []
    with g.prefetching():
        g.prefetch(root, [["rev-parse", "HEAD"], ["rev-parse", "--verify", "--quiet", "no-such-ref"]])
        assert g.git_text(root, ["rev-parse", "HEAD"]).strip() == head
        with pytest.raises(GitError, match="git rev-parse failed"):  # a failure is the same as run late
            g.run_git(root, ["rev-parse", "--verify", "--quiet", "no-such-ref"])
        assert subcommands(log) == ["rev-parse", "rev-parse"]
        assert g.git_text(root, ["rev-parse", "HEAD"]).strip() == head  # taken once: the next call runs
        assert subcommands(log) == ["rev-parse"]


def test_what_a_run_prefetched_and_never_took_ends_with_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An MCP server or the warm worker serves many runs: a later run never takes an earlier run's answer."""
    repo = make_repo(tmp_path / "repo")
    write(repo, "f.txt", "a\n")
    first = commit_all(repo, "A")
    root = str(repo)
    with g.prefetching():
        g.prefetch(root, [["rev-parse", "HEAD"]])
    write(repo, "f.txt", "b\n")
    second = commit_all(repo, "B")
    env, log = logging_git(tmp_path, {})
    monkeypatch.setenv("PATH", env["PATH"])
    with g.prefetching():
        assert g.git_text(root, ["rev-parse", "HEAD"]).strip() == second != first
    assert subcommands(log) == ["rev-parse"]


def test_repo_top_takes_the_answer_the_entry_point_started_early(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "f.txt", "a\n")
    head = commit_all(repo, "A")
    outside = tmp_path / "outside"
    outside.mkdir()
    env, log = logging_git(tmp_path, {})
    monkeypatch.setenv("PATH", env["PATH"])
    g.start_repo_top(str(repo))
    g.start_repo_top(str(repo))  # once per directory
    top = g.repo_top(str(repo))
    assert Path(top.root).resolve() == repo.resolve() and top.head == head
    # The same process told review memory's question too: the common directory and the branch.
    common, branch = g.learned_head(top.root) or ("", "")
    assert Path(common).resolve() == (repo / ".git").resolve() and branch == "refs/heads/main"
    assert subcommands(log) == ["rev-parse"]
    g.start_repo_top(str(outside))  # not a work tree: the same one-line error as when asked late
    with pytest.raises(GitError, match="not a git repository"):
        g.repo_top(str(outside))
    assert subcommands(log) == ["rev-parse", "rev-parse"]  # the early one, then the query that words it


def test_repo_top_before_the_first_commit_and_on_a_detached_head(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    top = g.repo_top(str(repo))
    assert Path(top.root).resolve() == repo.resolve() and top.head is None
    write(repo, "f.txt", "a\n")
    head = commit_all(repo, "A")
    git(repo, "checkout", "-q", "--detach")
    top = g.repo_top(str(repo))
    assert top.head == head and (g.learned_head(top.root) or ("", ""))[1] == "HEAD"
