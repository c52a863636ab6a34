"""The review memory store: keyed by repository and line of work, corrupt entries forgotten, bounded."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gitrepo import commit_all, git, make_repo, write

from ocr_hook.changes.scope import Scope
from ocr_hook.findings import Category, Finding, Severity
from ocr_hook.store.files import JsonFileStore
from ocr_hook.store.memory import (
    FileReview,
    MemoryStore,
    last_review_findings,
    line_of_work,
    open_memory,
    repository_id,
)


def _finding(path: str = "a.py", line: int = 2, severity: Severity = Severity.HIGH, status: str = "new") -> Finding:
    return Finding(path=path, start_line=line, end_line=line, severity=severity, category=Category.BUG,
                   message=f"problem on {line}", suggestion="x = 1", anchored=True, fingerprint=f"fp{line}",
                   existing_code="x = 0", status=status)


def as_sent(text: str) -> str:
    """The mask of these tests: their texts hold no secret, so they are stored as given."""
    return text


def _repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    write(repo, "a.py", "x = 0\n")
    commit_all(repo, "base")
    return repo


def test_round_trip_and_latest_review(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    cache = tmp_path / "cache"
    assert last_review_findings(cache, repo) is None
    store = open_memory(cache, str(repo), Scope("staged"), {})
    assert store is not None and store.line == "branch:main"
    findings = [_finding(), _finding(line=5, severity=Severity.LOW, status="late")]
    store.record([FileReview("a.py", "x = 0\n", {"models": "m"}, findings)], findings, mask=as_sent)
    again = open_memory(cache, str(repo), Scope("staged"), {})
    loaded = again.load()
    assert list(loaded) == ["a.py"]
    assert loaded["a.py"].content == "x = 0\n" and loaded["a.py"].context == {"models": "m"}
    assert [(f.start_line, f.status) for f in loaded["a.py"].findings] == [(2, "new"), (5, "late")]
    raw = json.loads(store.store.entry(store.record_key).read_text())
    assert [f["lines_text"] for f in raw["files"]["a.py"]["findings"]] == ["", ""]  # lines 2 and 5 of 1
    store.record([FileReview("a.py", "x = 0\ny = 1\n", {}, [_finding(line=2)])], [], mask=as_sent)
    raw = json.loads(store.store.entry(store.record_key).read_text())
    assert [f["lines_text"] for f in raw["files"]["a.py"]["findings"]] == ["y = 1"]
    store.record([FileReview("a.py", "x = 0\n", {"models": "m"}, findings)], findings, mask=as_sent)
    latest = last_review_findings(cache, repo)
    assert latest is not None
    assert [(d["path"], d["start_line"], d["end_line"], d["severity"], d["status"]) for d in latest] == [
        ("a.py", 2, 2, "high", "new"), ("a.py", 5, 5, "low", "late")]
    assert {"category", "message", "suggestion", "fingerprint"} <= set(latest[0])


def test_lines_of_work_are_kept_apart(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    cache = tmp_path / "cache"
    main = open_memory(cache, str(repo), Scope("staged"), {})
    main.record([FileReview("a.py", "x = 0\n", {}, [_finding()])], [_finding()], mask=as_sent)
    git(repo, "checkout", "-q", "-b", "feature")
    feature = open_memory(cache, str(repo), Scope("staged"), {})
    assert feature.line == "branch:feature" and feature.load() == {}
    git(repo, "checkout", "-q", "--detach")
    assert line_of_work(str(repo), Scope("staged"), {}).startswith("detached:")
    assert line_of_work(str(repo), Scope("commit", commit="HEAD"), {}) is None
    assert line_of_work(str(repo), Scope("range", from_ref="HEAD", to_ref="HEAD"), {}) is None
    assert open_memory(cache, str(repo), Scope("commit", commit="HEAD"), {}) is None


def test_base_line_of_work_names_head_branch_from_ci_and_the_base(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    git(repo, "branch", "-q", "target")
    assert line_of_work(str(repo), Scope("base", base="target"), {}) == "branch:main base:target"
    env = {"GITHUB_BASE_REF": "target", "GITHUB_HEAD_REF": "topic"}
    assert line_of_work(str(repo), Scope("base", base="auto"), env) == "topic base:target"
    git(repo, "checkout", "-q", "--detach")  # as CI checks out a pull request's merge commit
    assert line_of_work(str(repo), Scope("base", base="target"), env) == "topic base:target"
    for env in ({"CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "target", "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "topic"},
                {"BITBUCKET_PR_DESTINATION_BRANCH": "target", "BITBUCKET_BRANCH": "topic"},
                {"SYSTEM_PULLREQUEST_TARGETBRANCH": "refs/heads/target",
                 "SYSTEM_PULLREQUEST_SOURCEBRANCH": "refs/heads/topic"},
                {"CHANGE_TARGET": "target", "CHANGE_BRANCH": "topic", "BRANCH_NAME": "PR-1"},
                {"BUILDKITE_PULL_REQUEST_BASE_BRANCH": "target", "BUILDKITE_BRANCH": "topic"}):
        assert line_of_work(str(repo), Scope("base", base="auto"), env) == "topic base:target", env


def test_worktrees_share_the_repository(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "other")
    assert repository_id(tmp_path / "wt") == repository_id(repo)


def test_corrupt_and_foreign_entries_are_forgotten(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    cache = tmp_path / "cache"
    store = open_memory(cache, str(repo), Scope("staged"), {})
    store.record([FileReview("a.py", "x = 0\n", {}, [_finding()]),
                  FileReview("b.py", "y\n", {}, [])], [_finding()], mask=as_sent)
    entry = store.store.entry(store.record_key)
    doc = json.loads(entry.read_text())
    doc["files"]["a.py"]["content"] = "tampered\n"  # no longer matches its hash
    entry.write_text(json.dumps(doc))
    assert list(store.load()) == ["b.py"]
    for junk in (b"", b"{", b"\xff", b"[]", b"[" * 100_000):
        entry.write_bytes(junk)
        assert store.load() == {}
    latest = store.store.entry(store.latest_key)
    latest.write_bytes(b"{\"format\": 1")
    assert last_review_findings(cache, repo) is None
    # An entry of another repository copied under this key is not this repository's memory.
    other = MemoryStore(cache, "/elsewhere/.git", "branch:main")
    other.record([FileReview("a.py", "x\n", {}, [])], [], mask=as_sent)
    entry.write_bytes(other.store.entry(other.record_key).read_bytes())
    assert store.load() == {}
    assert last_review_findings(tmp_path / "nothing", tmp_path / "not-a-repo") is None


def test_prune_keeps_the_newest_entries(tmp_path: Path) -> None:
    import os

    store = JsonFileStore(tmp_path, format_version=1, max_entry_bytes=1000, what="test")
    keys = [f"{n:064x}" for n in range(6)]
    for age, key in enumerate(reversed(keys)):
        assert store.write(key, {"n": key})
        os.utime(store.entry(key), (1000 - age, 1000 - age))
    assert store.prune(4) == 2
    assert [k for k in keys if store.read(k) is not None] == keys[2:]
    assert not store.write("f" * 64, {"big": "x" * 2000}) and "too large" in (store.last_error or "")


def test_prune_by_total_size_keeps_the_newest(tmp_path: Path) -> None:
    import os

    store = JsonFileStore(tmp_path, format_version=1, max_entry_bytes=10_000, what="test")
    keys = [f"{n:064x}" for n in range(4)]
    for age, key in enumerate(keys):
        assert store.write(key, {"pad": "x" * 1000})
        os.utime(store.entry(key), (2000 - age, 2000 - age))  # keys[0] is the newest
    size = store.entry(keys[0]).stat().st_size
    assert store.prune(10, max_bytes=2 * size + 10) == 2
    assert [k for k in keys if store.read(k) is not None] == keys[:2]
    assert store.prune(10, max_bytes=1) == 1  # the newest entry always stays
    assert [k for k in keys if store.read(k) is not None] == keys[:1]


def test_a_line_of_work_stays_within_its_size_bound(tmp_path: Path, monkeypatch) -> None:
    import ocr_hook.store.memory as memory_store

    repo = _repo(tmp_path)
    monkeypatch.setattr(memory_store, "MAX_RECORD_BYTES", 20_000)
    store = open_memory(tmp_path / "cache", str(repo), Scope("staged"), {})
    store.record([FileReview("old.py", "o\n" * 3000, {}, [])], [], mask=as_sent)
    store.record([FileReview("new.py", "n\n" * 3000, {}, []),
                  FileReview("huge.py", "h\n" * 20_000, {}, [])], [], mask=as_sent)
    assert sorted(store.load()) == ["new.py"]  # huge.py never fits; old.py made room for the newer file
    assert store.last_error is None


_HAMMER = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from ocr_hook.findings import Category, Finding, Severity
from ocr_hook.store.memory import FileReview, MemoryStore, last_review_findings

store = MemoryStore(Path(sys.argv[1]), "/repo/.git", "branch:main")
me = sys.argv[2]
for round_ in range(40):
    findings = [Finding(path=f"{me}{n}.py", start_line=1, end_line=1, severity=Severity.LOW,
                        category=Category.STYLE, message=me * 300, suggestion=None, anchored=True,
                        fingerprint=f"{me}{n}") for n in range(5)]
    store.record([FileReview(f"{me}{n}.py", me * 5000 + "\\n", {}, findings[n:n + 1]) for n in range(5)],
                 findings, mask=str)
    loaded = store.load()
    if not loaded or any(r.content not in ("A" * 5000 + "\\n", "B" * 5000 + "\\n") for r in loaded.values()):
        print("BAD", round_)
        sys.exit(1)
if store.last_error:
    print("WRITE ERROR", store.last_error)
    sys.exit(1)
print("OK")
"""


def test_two_processes_recording_at_once_leave_whole_documents(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    script = tmp_path / "hammer.py"
    script.write_text(_HAMMER)
    cache = tmp_path / "cache"
    # Each compiles the checkout's modules into a cache of its own: two processes starting at once were seen to
    # read a bytecode file the other was writing ("marshal data too short"), which is no failure of the store's.
    procs = [subprocess.Popen([sys.executable, str(script), str(cache), who, str(root)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path / f"pyc-{who}")})
             for who in ("A", "B")]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and out.startswith("OK"), out + err
    files = list((cache / "memory").rglob("*"))
    assert [p for p in files if p.name.endswith(".tmp")] == []
    for path in (p for p in files if p.suffix == ".json"):
        json.loads(path.read_text())  # every document whole


def test_an_unchanged_rerun_marks_the_record_used_without_rewriting_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    cache = tmp_path / "cache"
    store = open_memory(cache, str(repo), Scope("staged"), {})
    findings = [_finding()]
    store.record([FileReview("a.py", "x = 0\n", {"models": "m"}, findings)], findings, mask=as_sent)
    record, latest = store.store.entry(store.record_key), store.store.entry(store.latest_key)
    written = record.read_bytes(), latest.read_bytes()
    for path in (record, latest):
        os.utime(path, (1_000_000, 1_000_000))

    # The same files, context and findings (a re-run answered from the result cache): nothing rewritten,
    # both entries marked as just used, so pruning keeps them.
    again = open_memory(cache, str(repo), Scope("staged"), {})
    again.record([FileReview("a.py", "x = 0\n", {"models": "m"}, findings)], findings, mask=as_sent)
    assert (record.read_bytes(), latest.read_bytes()) == written
    assert record.stat().st_mtime > 1_000_000 and latest.stat().st_mtime > 1_000_000

    # Anything different is written: the findings of the run, a file's context, its content.
    again.record([FileReview("a.py", "x = 0\n", {"models": "m"}, findings)], [], mask=as_sent)
    assert json.loads(latest.read_text())["findings"] == []
    again.record([FileReview("a.py", "x = 0\n", {"models": "other"}, findings)], [], mask=as_sent)
    assert json.loads(record.read_text())["files"]["a.py"]["context"] == {"models": "other"}
    again.record([FileReview("a.py", "x = 1\n", {"models": "other"}, findings)], [], mask=as_sent)
    assert again.load()["a.py"].content == "x = 1\n"


def test_memory_keeps_the_text_as_sent_and_an_unchanged_rerun_masks_nothing(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    store = open_memory(tmp_path / "cache", str(repo), Scope("staged"), {})
    masked: list[str] = []

    def mask(text: str) -> str:
        masked.append(text)
        return text.replace("hunter2", "[MASKED]")

    files = [FileReview("a.py", "password = 'hunter2'\n", {"models": "m"}, [_finding(line=1)])]
    store.record(files, [], mask=mask)
    assert masked == ["password = 'hunter2'\n"]
    raw = store.store.entry(store.record_key).read_text()
    assert "hunter2" not in raw and store.load()["a.py"].content == "password = '[MASKED]'\n"
    store.record(files, [], mask=mask)  # the same text as reviewed: recognised by its digest, not re-masked
    assert len(masked) == 1
    store.record([files[0]._replace(text="password = 'hunter3'\n")], [], mask=mask)
    assert len(masked) == 2 and store.load()["a.py"].content == "password = 'hunter3'\n"


def test_the_remembered_files_are_read_on_first_use_only(tmp_path: Path) -> None:
    """A run whose files all come from the result cache never parses its line of work's record."""
    repo = _repo(tmp_path)
    store = open_memory(tmp_path / "cache", str(repo), Scope("staged"), {})
    store.record([FileReview("a.py", "x = 0\n", {}, [_finding()])], [], mask=as_sent)
    reads: list[int] = []
    load = store.load
    store.load = lambda: reads.append(1) or load()  # type: ignore[method-assign]
    view = store.remembered()
    assert reads == []
    assert view.get("a.py") is not None and "b.py" not in view and list(view) == ["a.py"]
    assert reads == [1]
