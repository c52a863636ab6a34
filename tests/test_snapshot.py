"""The snapshot reader: index or commit content via cat-file, git grep over the same snapshot."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from gitrepo import commit_all, git, head, make_repo, repo_state, write

from ocr_hook.changes.collect import collect_changes
from ocr_hook.changes.scope import Scope
from ocr_hook.changes.snapshot import GitSnapshot, SnapshotClosed, open_snapshot, pathspec_problem
from ocr_hook.changes.snapshot_api import GrepHit


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    write(repo, "src/app.py", "def main():\n    return load_config()\n")
    write(repo, "src/config.py", "def load_config():\n    return {}\n")
    write(repo, "README.md", "Load_Config explained\n")
    commit_all(repo, "initial")
    return repo


def test_staged_snapshot_reads_the_index_never_the_work_tree(repo: Path) -> None:
    write(repo, "src/app.py", "staged\n")
    git(repo, "add", "src/app.py")
    write(repo, "src/app.py", "unstaged edit\n")
    (repo / "src" / "config.py").unlink()  # deleted in the work tree only
    write(repo, "untracked.py", "x\n")
    before = repo_state(repo, exact_index=True)
    change_set = collect_changes(str(repo), Scope("staged"), (), {})
    with open_snapshot(str(repo), change_set) as snap:
        assert snap.read_bytes("src/app.py") == b"staged\n"
        assert snap.read_text("src/config.py") == "def load_config():\n    return {}\n"
        assert snap.read_bytes("untracked.py") is None
        assert "untracked.py" not in snap.paths()
        hits = snap.grep("unstaged").hits
        assert hits == ()
        assert snap.grep("staged", ignore_case=False).hits == (GrepHit("src/app.py", 1, "staged"),)
    assert repo_state(repo, exact_index=True) == before


def test_commit_snapshot_reads_that_commit(repo: Path) -> None:
    first = head(repo)
    write(repo, "src/app.py", "second version\n")
    commit_all(repo, "second")
    snap = GitSnapshot(str(repo), first)
    try:
        assert snap.read_text("src/app.py") == "def main():\n    return load_config()\n"
        assert snap.paths() == ("README.md", "src/app.py", "src/config.py")
        hits = snap.grep("load_config")
        assert [(h.path, h.line_no) for h in hits.hits] == [
            ("README.md", 1), ("src/app.py", 2), ("src/config.py", 1)]
    finally:
        snap.close()


def test_absent_paths_directories_submodules_and_symlinks(repo: Path) -> None:
    os.symlink("../README.md", repo / "src" / "readme-link")
    sha = head(repo)
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sha},vendor/lib")
    git(repo, "add", "-A")
    with GitSnapshot(str(repo), None) as snap:
        assert snap.read_bytes("nope.py") is None
        assert snap.read_bytes("src") is None
        assert snap.read_bytes("vendor/lib") is None
        assert "vendor/lib" not in snap.paths()
        # A symlink's blob is its target text; it is never followed.
        assert snap.read_bytes("src/readme-link") == b"../README.md"
        assert snap.is_symlink("src/readme-link") and not snap.is_symlink("src/app.py")


def test_awkward_names_and_binary_content(repo: Path) -> None:
    blob = bytes(range(256))
    names = ["new\nline.txt", "tab\tname.txt", 'quo"te.txt', "ünï code.txt", "-dash.txt"]
    for name in names:
        write(repo, name, f"needle in {name}\n")
    write(repo, "data.bin", blob)
    git(repo, "add", "-A")
    with GitSnapshot(str(repo), None) as snap:
        for name in names:
            assert snap.read_text(name) == f"needle in {name}\n"
        assert snap.read_bytes("data.bin") == blob
        found = {h.path for h in snap.grep("needle").hits}
        assert found == set(names)
        assert set(names) <= set(snap.paths())


def test_grep_options(repo: Path) -> None:
    write(repo, "dash.txt", "-v is a flag\nfoo(bar)\n")
    git(repo, "add", "dash.txt")
    with GitSnapshot(str(repo), None) as snap:
        assert {h.path for h in snap.grep("load_config").hits} == {"README.md", "src/app.py", "src/config.py"}
        assert {h.path for h in snap.grep("load_config", ignore_case=False).hits} == {"src/app.py", "src/config.py"}
        assert snap.grep("-v", ignore_case=False).hits == (GrepHit("dash.txt", 1, "-v is a flag"),)
        assert [h.path for h in snap.grep(r"foo\(bar\)", perl_regexp=True).hits] == ["dash.txt"]
        assert [h.path for h in snap.grep("foo(bar)").hits] == ["dash.txt"]  # basic regexp: ( is literal
        assert [h.path for h in snap.grep("load_config", ("src/",)).hits] == ["src/app.py", "src/config.py"]
        excluded = snap.grep("load_config", ("*.py", ":(exclude)src/config.py"))
        assert [h.path for h in excluded.hits] == ["src/app.py"]
        assert snap.grep("load_config", (":!src/",)).hits == (GrepHit("README.md", 1, "Load_Config explained"),)


def test_grep_rejects_escaping_pathspecs_with_a_message_for_the_model(repo: Path) -> None:
    with GitSnapshot(str(repo), None) as snap:
        for spec in ("/etc/passwd", "../outside", "src/../../x", ":(exclude)../x", ":!../x", "C:/x", ":/../x"):
            result = snap.grep("x", (spec,))
            assert result.hits == () and result.error and "repository" in result.error, spec
    assert pathspec_problem("src/*.py") is None
    assert pathspec_problem(":(exclude,glob)vendor/**") is None
    assert "unclosed" in (pathspec_problem(":(exclude") or "")


def test_grep_reports_bad_patterns_and_empty_searches(repo: Path) -> None:
    with GitSnapshot(str(repo), None) as snap:
        bad = snap.grep("(unclosed", perl_regexp=True)
        assert bad.hits == () and bad.error and bad.error.startswith("git grep rejected the search")
        assert "\n" not in bad.error
        assert snap.grep("").error


def test_grep_caps_hits_per_file(repo: Path) -> None:
    write(repo, "many.txt", "hit\n" * 250)
    git(repo, "add", "many.txt")
    with GitSnapshot(str(repo), None) as snap:
        result = snap.grep("hit", ("many.txt",), max_per_file=100)
        assert len(result.hits) == 100 and result.truncated_files == ("many.txt",)
        assert [h.line_no for h in result.hits] == list(range(1, 101))
        assert snap.grep("hit", ("many.txt",), max_per_file=300).truncated_files == ()


def test_grep_timeout_stops_git(repo: Path) -> None:
    write(repo, "big.txt", ("x" * 200 + "\n") * 100_000)
    git(repo, "add", "big.txt")
    with GitSnapshot(str(repo), None) as snap:
        result = snap.grep("y$", timeout_s=0.0)
        assert result.hits == () and result.error and "stopped" in result.error


def test_commit_grep_strips_the_revision_prefix(repo: Path) -> None:
    sha = head(repo)
    with GitSnapshot(str(repo), sha) as snap:
        assert snap.grep("def main").hits == (GrepHit("src/app.py", 1, "def main():"),)


def test_many_threads_share_one_snapshot(repo: Path) -> None:
    for i in range(40):
        write(repo, f"t/{i}.txt", f"{i}\n" * (i + 1))
    git(repo, "add", "-A")
    errors: list[str] = []
    with GitSnapshot(str(repo), None) as snap:
        def worker(offset: int) -> None:
            for round_ in range(20):
                i = (offset + round_) % 40
                if snap.read_bytes(f"t/{i}.txt") != f"{i}\n".encode() * (i + 1):
                    errors.append(f"t/{i}.txt")

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []


def test_a_blob_read_again_comes_from_memory_within_the_cap(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with GitSnapshot(str(repo), None) as snap:
        first = snap.read_bytes("src/app.py")
        snap._stop_cat_file()
        assert snap.read_text("src/app.py") == first.decode() and snap._proc is None  # git was not asked
        assert snap.read_bytes("src/config.py") == b"def load_config():\n    return {}\n"
        assert snap._proc is not None  # a blob not read before still comes from git
    monkeypatch.setattr("ocr_hook.changes.snapshot._BLOB_MEMO_BYTES", 60)
    with GitSnapshot(str(repo), None) as snap:
        texts = [snap.read_bytes(p) for p in ("src/app.py", "src/config.py", "README.md", "src/app.py")]
        assert texts[0] == texts[3] and texts[2] == b"Load_Config explained\n"
        assert 0 < snap._blob_bytes <= 60


def test_the_change_sets_files_are_read_without_listing_the_whole_index(repo: Path) -> None:
    names = ["src/app.py", "new dir/a*b[1].py", ":(glob)odd.py", "src/config.py", "link"]
    for name in names[:3]:
        write(repo, name, f"content of {name}\n")
    git(repo, "rm", "-q", "--cached", "src/config.py")
    os.symlink("src/app.py", repo / "link")
    git(repo, "add", "-A", "--", *(f":(literal){n}" for n in names[:3]), "link")
    change_set = collect_changes(str(repo), Scope("staged"), (), {})
    assert sorted(f.path for f in change_set.files) == sorted(names)
    with open_snapshot(str(repo), change_set) as snap, GitSnapshot(str(repo), None) as whole:
        for name in names:
            assert snap.read_bytes(name) == whole.read_bytes(name), name
            assert snap.is_symlink(name) == whole.is_symlink(name), name
        assert snap.read_bytes("new dir/a*b[1].py") == b"content of new dir/a*b[1].py\n"
        assert snap.read_bytes("src/config.py") is None and snap.is_symlink("link")
        assert snap._entries is None  # only the changed paths were listed
        assert snap.read_text("README.md") == "Load_Config explained\n"  # any other path still reads
        assert snap._entries is not None and "README.md" in snap.paths()


def test_close_is_idempotent_and_safe(repo: Path) -> None:
    snap = GitSnapshot(str(repo), None)
    assert snap.read_bytes("README.md") is not None
    proc = snap._proc
    assert proc is not None and proc.poll() is None
    snap.close()
    snap.close()
    assert proc.poll() is not None  # the cat-file process is gone
    with pytest.raises(SnapshotClosed):
        snap.read_bytes("README.md")
    with pytest.raises(SnapshotClosed):
        snap.paths()
    assert snap.grep("x").error


def test_snapshot_of_an_empty_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "only.py", "x = 1\n")
    git(repo, "add", "only.py")
    change_set = collect_changes(str(repo), Scope("staged"), (), {})
    with open_snapshot(str(repo), change_set) as snap:
        assert snap.paths() == ("only.py",)
        assert snap.read_text("only.py") == "x = 1\n"
        assert [h.path for h in snap.grep("x").hits] == ["only.py"]
