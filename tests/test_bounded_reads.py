"""No file over max_file_bytes is read whole, and memory follows the files reviewed (issue 62 items 4-6): rename
detection, the model's file_read and code_search, a scan beside a big vendor/, a move of more than 1,000 files.
Real repositories, real processes (their peak memory is the point), the real SDK, the fake Messages API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_support import filter_keeps_all
from e2e_support import comment, comment_turn
from fake_api import FakeMessagesAPI, Reply, task_done, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, stage_blob, write
from test_repo_scale import _peak_kb

MB = 1024 * 1024


@pytest.fixture(autouse=True)
def _filter_keeps_everything(fake_api: FakeMessagesAPI) -> None:
    filter_keeps_all(fake_api)


def _commit(repo: Path, message: str) -> str:
    git(repo, "commit", "-q", "--no-verify", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def test_rename_detection_never_loads_a_file_over_the_cap(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    """A big file renamed and regenerated: `git diff --find-renames` loads both sides whole to compare them. The
    listing is taken without rename detection and big files stay out of it; one renamed unchanged is still a
    rename (equal blob ids: exact, nothing read)."""
    big = 40 * MB
    repo = make_repo(tmp_path / "repo")
    write(repo, "app.py", "def handler():\n    return 1\n")
    git(repo, "add", "app.py")
    stage_blob(repo, "dump.sql", big, b"INSERT INTO t VALUES (1, 'a row of a dump nobody reviews by hand');\n")
    stage_blob(repo, "keep.csv", MB, b"1,2,3,a row of a table kept as it is,4,5,6\n")  # over the cap all the same
    base = _commit(repo, "data")
    sha = git(repo, "rev-parse", ":keep.csv").strip()  # moved in the index alone: no work tree copy
    git(repo, "rm", "-q", "--cached", "keep.csv")
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{sha},data/keep.csv")
    git(repo, "rm", "-q", "--cached", "dump.sql")
    stage_blob(repo, "data/dump.sql", big, b"INSERT INTO t VALUES (2, 'a row of a dump nobody reviews by hand');\n")
    write(repo, "app.py", "def handler():\n    return 2\n")
    git(repo, "add", "app.py")
    _commit(repo, "move the data, regenerate the dump")

    without, _ = _peak_kb(repo, sdk_env, "preview", "--base", base, "--format", "json", "app.py")
    with_big, seen = _peak_kb(repo, sdk_env, "preview", "--base", base, "--format", "json")
    files = {f["path"]: f for f in seen["files"]}
    assert sorted(files) == ["app.py", "data/dump.sql", "data/keep.csv", "dump.sql"], files
    assert (files["data/keep.csv"]["status"], files["data/keep.csv"]["old_path"]) == ("renamed", "keep.csv")
    assert files["data/keep.csv"]["reason"] == f"too large: {MB} bytes (max_file_bytes 400000)"
    assert (files["data/dump.sql"]["status"], files["dump.sql"]["status"]) == ("added", "deleted")
    assert files["app.py"]["action"] == "review"
    # Comparing the two dumps would hold both (80 MB) in git's process.
    assert with_big - without < 24 * 1024, (with_big, without)


def test_a_scan_does_not_diff_what_it_skips_by_name(tmp_path: Path, sdk_env: dict[str, str]) -> None:
    """A vendored tree's patch was read, split and parsed for files the selection then skipped by their names:
    16 MB of vendor/ cost 100 MB. They are listed with their counts of lines, as before, and never diffed here."""
    repo = make_repo(tmp_path / "repo")
    write(repo, "app.py", "def handler():\n    return 1\n")
    line = "function helper_{0}(a, b) {{ return a + b * {0}; }} // vendored code nobody reviews here\n"
    for n in range(80):
        write(repo, f"vendor/lib/m{n}.js", "".join(line.format(i) for i in range(2_500)))
    write(repo, "vendor/logo.png", b"\x89PNG\r\n\x1a\n\0\0binary")
    commit_all(repo, "first")
    without, _ = _peak_kb(repo, sdk_env, "preview", "--scan", "--format", "json", "app.py")
    with_vendor, seen = _peak_kb(repo, sdk_env, "preview", "--scan", "--format", "json")
    files = {f["path"]: f for f in seen["files"]}
    assert files["app.py"]["action"] == "review" and len(files) == 82
    m0 = files["vendor/lib/m0.js"]
    assert (m0["action"], m0["added"], m0["reason"]) == (
        "skip", 2_500, "vendored ('vendor/'); re-include with an exclude line '!vendor/'")
    assert files["vendor/logo.png"]["reason"] == "binary"
    assert with_vendor - without < 24 * 1024, (with_vendor, without)


def test_the_tools_never_read_a_file_over_the_cap_whole(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                       sdk_env: dict[str, str]) -> None:
    """The model asks file_read for 5 lines of a file over max_file_bytes and code_search hits it: the first is
    told the file is too large, the second that it was not searched (git grep would load it whole)."""
    big = 4 * MB
    repo = make_repo(tmp_path / "repo")
    write(repo, "app.py", "def handler():\n    return 1\n")
    git(repo, "add", "app.py")
    stage_blob(repo, "data/rows.txt", big, b"row 1 of a table kept as text, nothing in it\n")
    base = _commit(repo, "first")
    write(repo, "app.py", "def handler():\n    return 2  # rows_marker\n")
    write(repo, "data/rows.txt", b"")  # (the work tree's copy plays no part: the snapshot is the commit)
    git(repo, "add", "app.py")
    _commit(repo, "second")
    fake_api.script("return 2  # rows_marker", [
        Reply([tool_use("file_read", {"file_path": "data/rows.txt", "start_line": 1, "end_line": 5})]),
        Reply([tool_use("code_search", {"search_text": "nothing in it", "file_patterns": ["data/"]})]),
        task_done()])
    proc = run_cli(repo, "review", "--base", base, "--format", "json", env=sdk_env)
    report = json.loads(proc.stdout)
    assert report["coverage"]["reviewed"] == ["app.py"], report["coverage"]
    messages = fake_api.requests_for("return 2  # rows_marker")[-1].body["messages"]
    read, search = (json.dumps(m["content"]) for m in (messages[2], messages[4]))
    assert f"`data/rows.txt` has {big} bytes" in read and "1|row 1" not in read, read
    # git grep loads every file it searches whole: the file is left out, and named.
    assert "No matches" in search and "[Not searched, larger than max_file_bytes: data/rows.txt.]" in search, search


def test_a_move_past_the_rename_limit_keeps_its_renames_and_its_baseline(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                       sdk_env: dict[str, str]) -> None:
    """Past git's rename limit (diff.renameLimit: 1,000 files by default; 5 here, so the test moves 12 and stays
    cheap) a move with edits became deletions and additions: a baselined finding in a moved file came back, the
    file reviewed whole as added. With the limit lifted it stays a rename, and the baseline written for the old
    path still names the finding, in the move's own review and in a later change and scan of the moved file."""
    from ocr_hook.findings.model import fingerprint

    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "diff.renameLimit", "5")
    body = "def value_{0}():\n    return compute({0})\n" + "".join(
        f"\n\ndef other_{{0}}_{i}():\n    return {{0}} * {i}\n" for i in range(8))
    for n in range(12):
        write(repo, f"old/p{n}/mod.py", body.format(n))
    code = "return compute(7)"
    write(repo, ".ocr-hook/baseline.json",
          json.dumps({"version": 1, "fingerprints": [fingerprint("old/p7/mod.py", "bug", code)]}))
    write(repo, ".ocr-hook.yaml", "max_files: 1\n")  # the file with the most changed lines: p7
    base = commit_all(repo, "first")
    git(repo, "mv", "old", "new")
    for n in range(12):  # the same name in every directory, each file edited: only the exhaustive search pairs them
        edit = "    # and edited\n" * 3 if n == 7 else "    # moved\n"
        write(repo, f"new/p{n}/mod.py", body.format(n).replace("    return compute", edit + "    return compute"))
    commit_all(repo, "move")
    fake_api.script("# and edited", [comment_turn(comment("compute() may fail.", code, severity="high")),
                                     task_done()])
    proc = run_cli(repo, "review", "--base", base, "--baseline", ".ocr-hook/baseline.json", "--format", "json",
                   env=sdk_env)
    report = json.loads(proc.stdout)
    assert report["coverage"]["reviewed"] == ["new/p7/mod.py"], report["coverage"]["reviewed"]
    (finding,) = report["findings"]
    assert (finding["path"], finding["suppressed"]) == ("new/p7/mod.py", "baseline")
    # Reviewed as the rename it is: its first message names the old path, and no old file is listed as deleted.
    assert "rename from old/p7/mod.py" in json.dumps(fake_api.requests_for("# and edited")[0].body["messages"][0])
    assert not [s for s in report["coverage"]["skipped"] if s["reason"] == "deleted"], report["coverage"]["skipped"]

    # Later: a change to the moved file alone, then a scan. Neither diff knows the move; the finding keeps its name.
    moved = git(repo, "rev-parse", "HEAD").strip()
    write(repo, "new/p7/mod.py", (repo / "new/p7/mod.py").read_text().replace("    return compute",
                                                                            "    # a later edit\n    return compute"))
    commit_all(repo, "later")
    later = run_cli(repo, "review", "--base", moved, "--baseline", ".ocr-hook/baseline.json", "--format", "json",
                    env=sdk_env)
    scan = run_cli(repo, "scan", "--baseline", ".ocr-hook/baseline.json", "--format", "json", env=sdk_env)
    for proc in (later, scan):
        found = json.loads(proc.stdout)
        assert found["coverage"]["reviewed"] == ["new/p7/mod.py"], found["coverage"]["reviewed"]
        assert [(f["path"], f["suppressed"]) for f in found["findings"]] == [("new/p7/mod.py", "baseline")], proc.stderr
