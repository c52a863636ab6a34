"""Scopes → ChangeSet on real repositories: what is compared with what, and what is reviewed."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitrepo import commit_all, git, head, make_repo, repo_state, write

from ocr_hook.changes import git as g
from ocr_hook.changes.collect import collect_changes, repo_relative_paths
from ocr_hook.changes.model import ChangeSet, FileStatus
from ocr_hook.changes.scope import Scope
from ocr_hook.errors import FatalError, GitError

ZERO = "0" * 40


def collect(repo: Path, scope: Scope, paths: tuple[str, ...] = (), environ: dict[str, str] | None = None
            ) -> ChangeSet:
    before = repo_state(repo, exact_index=True)
    change_set = collect_changes(str(repo), scope, paths, environ or {})
    assert repo_state(repo, exact_index=True) == before
    return change_set


def names(change_set: ChangeSet) -> dict[str, FileStatus]:
    return {f.path: f.status for f in change_set.files}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    write(repo, "a.py", "a = 1\n")
    write(repo, "b.py", "b = 1\n")
    commit_all(repo, "initial")
    return repo


def test_staged_is_the_index_against_head_not_the_work_tree(repo: Path) -> None:
    write(repo, "a.py", "a = 2\n")
    git(repo, "add", "a.py")
    write(repo, "a.py", "a = 3  # unstaged\n")
    write(repo, "b.py", "b = 2  # unstaged\n")
    write(repo, "untracked.py", "u = 1\n")
    change_set = collect(repo, Scope("staged"))
    assert names(change_set) == {"a.py": FileStatus.MODIFIED}
    added = [line.text for h in change_set.files[0].hunks for line in h.lines if line.kind == "+"]
    assert added == ["a = 2"]
    assert change_set.target is None
    assert change_set.base == head(repo)
    assert "staged" in change_set.description


def test_staged_in_an_empty_repository_is_against_the_empty_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "first.py", "x = 1\n")
    write(repo, "other.py", "y = 1\n")
    git(repo, "add", "first.py")
    change_set = collect(repo, Scope("staged"))
    assert names(change_set) == {"first.py": FileStatus.ADDED}
    assert change_set.base == g.empty_tree(str(repo))
    assert "no commits yet" in change_set.description


def test_staged_with_nothing_staged_is_empty(repo: Path) -> None:
    write(repo, "a.py", "a = 9\n")
    assert collect(repo, Scope("staged")).files == ()


def test_staged_reads_a_hooks_temporary_index(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `git commit b.py` runs hooks with GIT_INDEX_FILE pointing at a temporary index: review that one.
    temp_index = tmp_path / "temp-index"
    write(repo, "b.py", "b = 2\n")
    monkeypatch.setenv("GIT_INDEX_FILE", str(temp_index))
    git(repo, "read-tree", "HEAD")
    git(repo, "add", "b.py")
    change_set = collect_changes(str(repo), Scope("staged"), (), {})
    assert names(change_set) == {"b.py": FileStatus.MODIFIED}
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert collect(repo, Scope("staged")).files == ()


def test_staged_refuses_unmerged_paths(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    write(repo, "a.py", "a = 'other'\n")
    commit_all(repo, "other")
    git(repo, "checkout", "-q", "main")
    write(repo, "a.py", "a = 'main'\n")
    commit_all(repo, "main")
    git(repo, "merge", "-q", "other", check=False)
    with pytest.raises(GitError, match="merge conflict in progress"):
        collect(repo, Scope("staged"))


@pytest.mark.parametrize("kind", ["both modified", "deleted by them", "deleted by us", "both added"])
def test_every_kind_of_conflict_is_refused_with_or_without_paths(repo: Path, kind: str) -> None:
    # The check runs only when the index's raw listing is not empty: every kind of conflict must show there.
    git(repo, "checkout", "-q", "-b", "other")
    if kind == "deleted by them":
        git(repo, "rm", "-q", "a.py")
    else:
        write(repo, "new.py" if kind == "both added" else "a.py", "x = 'other'\n")
    commit_all(repo, "other")
    git(repo, "checkout", "-q", "main")
    if kind == "deleted by us":
        git(repo, "rm", "-q", "a.py")
    else:
        write(repo, "new.py" if kind == "both added" else "a.py", "x = 'main'\n")
    commit_all(repo, "main")
    git(repo, "merge", "-q", "other", check=False)
    assert g.unmerged_paths(str(repo))
    for paths in ((), ("b.py",)):
        with pytest.raises(GitError, match="merge conflict in progress"):
            collect(repo, Scope("staged"), paths)


def test_nothing_staged_is_an_empty_change_set(repo: Path) -> None:
    change_set = collect(repo, Scope("staged"))
    assert change_set.files == () and change_set.base == head(repo)


def test_base_is_merge_base_to_head(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "feature.py", "f = 1\n")
    commit_all(repo, "feature")
    git(repo, "checkout", "-q", "main")
    write(repo, "b.py", "b = 'main moved on'\n")
    main_tip = commit_all(repo, "main moves")
    git(repo, "checkout", "-q", "feature")
    change_set = collect(repo, Scope("base", base="main"))
    assert names(change_set) == {"feature.py": FileStatus.ADDED}  # main's own change is not ours
    assert change_set.target == head(repo)
    assert change_set.base != main_tip
    assert "main" in change_set.description


def test_base_works_on_a_detached_head(repo: Path) -> None:
    write(repo, "c.py", "c = 1\n")
    commit_all(repo, "c")
    git(repo, "checkout", "-q", "--detach", "HEAD")
    write(repo, "d.py", "d = 1\n")
    commit_all(repo, "d on detached head")
    assert names(collect(repo, Scope("base", base="main"))) == {"d.py": FileStatus.ADDED}
    write(repo, "a.py", "a = 5\n")
    git(repo, "add", "a.py")
    assert names(collect(repo, Scope("staged"))) == {"a.py": FileStatus.MODIFIED}


def test_range_from_to(repo: Path) -> None:
    first = head(repo)
    write(repo, "a.py", "a = 2\n")
    commit_all(repo, "two")
    git(repo, "rm", "-q", "b.py")
    last = commit_all(repo, "three")
    change_set = collect(repo, Scope("range", from_ref=first, to_ref="HEAD"))
    assert names(change_set) == {"a.py": FileStatus.MODIFIED, "b.py": FileStatus.DELETED}
    assert (change_set.base, change_set.target) == (first, last)


def test_commit_against_first_parent_and_root_against_empty_tree(repo: Path) -> None:
    root = head(repo)
    write(repo, "a.py", "a = 2\n")
    second = commit_all(repo, "two")
    change_set = collect(repo, Scope("commit", commit=second))
    assert names(change_set) == {"a.py": FileStatus.MODIFIED}
    assert change_set.base == root
    root_set = collect(repo, Scope("commit", commit=root))
    assert names(root_set) == {"a.py": FileStatus.ADDED, "b.py": FileStatus.ADDED}
    assert root_set.base == g.empty_tree(str(repo))
    assert "root commit" in root_set.description


def test_merge_commit_is_reviewed_against_its_first_parent(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "side")
    write(repo, "side.py", "s = 1\n")
    commit_all(repo, "side")
    git(repo, "checkout", "-q", "main")
    write(repo, "a.py", "a = 'main'\n")
    commit_all(repo, "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    assert names(collect(repo, Scope("commit", commit="HEAD"))) == {"side.py": FileStatus.ADDED}


@pytest.mark.parametrize("scope", [
    Scope("base", base="nope"),
    Scope("range", from_ref="HEAD", to_ref="nope"),
    Scope("commit", commit="nope"),
])
def test_unknown_refs(repo: Path, scope: Scope) -> None:
    with pytest.raises(GitError, match="unknown ref 'nope'"):
        collect(repo, scope)


def _with_remote(repo: Path, tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    return remote


def test_push_uses_pre_commit_refs(repo: Path, tmp_path: Path) -> None:
    _with_remote(repo, tmp_path)
    remote_tip = head(repo)
    write(repo, "a.py", "a = 'pushed'\n")
    local_tip = commit_all(repo, "to push")
    env = {"PRE_COMMIT_FROM_REF": remote_tip, "PRE_COMMIT_TO_REF": local_tip}
    change_set = collect(repo, Scope("push"), environ=env)
    assert names(change_set) == {"a.py": FileStatus.MODIFIED}
    assert (change_set.base, change_set.target) == (remote_tip, local_tip)
    assert "PRE_COMMIT_FROM_REF" in change_set.description


def test_push_of_a_new_branch_reviews_commits_not_on_any_remote(repo: Path, tmp_path: Path) -> None:
    _with_remote(repo, tmp_path)
    pushed = head(repo)
    git(repo, "checkout", "-q", "-b", "topic")
    write(repo, "t1.py", "t = 1\n")
    commit_all(repo, "t1")
    write(repo, "t2.py", "t = 2\n")
    tip = commit_all(repo, "t2")
    for env in ({"PRE_COMMIT_FROM_REF": ZERO, "PRE_COMMIT_TO_REF": tip}, {}):
        change_set = collect(repo, Scope("push"), environ=env)
        assert names(change_set) == {"t1.py": FileStatus.ADDED, "t2.py": FileStatus.ADDED}
        assert (change_set.base, change_set.target) == (pushed, tip)
        assert "2 commits not on any remote" in change_set.description


def test_push_containing_the_root_commit_is_against_the_empty_tree(repo: Path) -> None:
    write(repo, "a.py", "a = 2\n")
    commit_all(repo, "second")
    change_set = collect(repo, Scope("push"), environ={})
    assert names(change_set) == {"a.py": FileStatus.ADDED, "b.py": FileStatus.ADDED}
    assert change_set.base == g.empty_tree(str(repo))
    assert "root commit" in change_set.description and "2 commits not on any remote" in change_set.description


def test_push_with_everything_already_on_a_remote_is_empty(repo: Path, tmp_path: Path) -> None:
    _with_remote(repo, tmp_path)
    change_set = collect(repo, Scope("push"), environ={})
    assert change_set.files == ()
    assert "nothing to review" in change_set.description


def test_push_deleting_a_branch_reviews_nothing(repo: Path) -> None:
    env = {"PRE_COMMIT_FROM_REF": head(repo), "PRE_COMMIT_TO_REF": ZERO}
    assert collect(repo, Scope("push"), environ=env).files == ()


def test_paths_restrict_the_review_literally(repo: Path) -> None:
    write(repo, "src/x.py", "x = 1\n")
    write(repo, "src/y.py", "y = 1\n")
    write(repo, "*.py", "literal star\n")
    write(repo, "a.py", "a = 2\n")
    git(repo, "add", "-A")
    assert set(names(collect(repo, Scope("staged"), ("src",)))) == {"src/x.py", "src/y.py"}
    assert set(names(collect(repo, Scope("staged"), ("*.py",)))) == {"*.py"}
    assert set(names(collect(repo, Scope("staged"), ("a.py", "src/y.py")))) == {"a.py", "src/y.py"}
    assert collect(repo, Scope("staged"), ("missing",)).files == ()
    assert "in src" in collect(repo, Scope("staged"), ("src",)).description


def test_repo_relative_paths(repo: Path, tmp_path: Path) -> None:
    sub = repo / "src"
    sub.mkdir()
    root = str(repo)
    assert repo_relative_paths(root, str(sub), ("x.py", "../a.py")) == ("src/x.py", "a.py")
    assert repo_relative_paths(root, str(repo), (str(sub / "x.py"),)) == ("src/x.py",)
    assert repo_relative_paths(root, str(sub), ("..",)) == ()
    assert repo_relative_paths(root, str(repo), ()) == ()
    with pytest.raises(FatalError, match="outside the repository"):
        repo_relative_paths(root, str(repo), ("../elsewhere",))
    with pytest.raises(FatalError, match="outside the repository"):
        repo_relative_paths(root, str(repo), (str(tmp_path),))


def test_thousand_staged_files(repo: Path) -> None:
    for i in range(1000):
        write(repo, f"many/f{i:04}.py", f"value = {i}\n")
    git(repo, "add", "many")
    change_set = collect(repo, Scope("staged"))
    assert len(change_set.files) == 1000
    assert all(f.status is FileStatus.ADDED and f.added == 1 for f in change_set.files)
