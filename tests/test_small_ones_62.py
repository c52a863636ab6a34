"""Issue 62 item 10, the smaller ones, through the real CLI on one staged change of a real repository:

- a rename whose two names fell into different pathspec batches (with more than 200 files over max_file_bytes
  the others are diffed by name, 500 names a batch) was diffed as a deleted file in one batch and an added one
  in the next, and so reviewed whole as an added file;
- a Git LFS pointer written before git-lfs 1.0 (`version https://hawser.github.com/spec/v1`, which git-lfs
  still reads) was reviewed as code.
`preview` lists what a review would do, with no request: both show there.

- a run a cap stopped said "budget ran out (...): N file(s) not reviewed", counting the files never begun only:
  the note now says what was done too (reviewed, begun and cut short, never begun). A token cap stops it, so
  no clock is raced: three files, each answered with one comment in a turn billed 49,500 input tokens;
- a cached run's summary counted a file the packs' search left without a pack as a file with a pack of no
  entry ("context: 1 entry for 2 files" after "for 1 file"): a `git` whose grep fails stands in for the search
  that failed (or ran out of time)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import TEST_API_KEY
from fake_api import FakeMessagesAPI, Reply, task_done, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write

HAWSER = ("version https://hawser.github.com/spec/v1\n"
          "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n")
MOVED = "def moved():\n    return 'kept'\n"


@pytest.fixture(scope="module")
def preview(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    repo = make_repo(tmp_path_factory.mktemp("small") / "repo")
    write(repo, ".ocr-hook.yaml", "max_file_bytes: 300\n")
    write(repo, "b/old.py", MOVED)
    for i in range(499):
        write(repo, f"a/f{i:03}.py", f"X = {i}\n")
    commit_all(repo, "base")
    # 499 names (deleted files: no content to read) before the rename's two, which were the 500th and the 501st
    # of the names diffed in batches.
    git(repo, "rm", "-q", "-r", "a")
    for i in range(201):  # over the cap
        write(repo, f"c/big{i:03}.txt", f"{i}\n" + "y" * 400 + "\n")
    git(repo, "mv", "b/old.py", "b/new.py")
    write(repo, "d/model.bin", HAWSER)
    git(repo, "add", "-A")
    proc = run_cli(repo, "preview", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return {f["path"]: f for f in json.loads(proc.stdout)["files"]}


def test_a_rename_split_across_batches_is_a_rename(preview: dict[str, Any]) -> None:
    moved = preview["b/new.py"]
    assert (moved["status"], moved["old_path"]) == ("renamed", "b/old.py"), moved
    assert "b/old.py" not in preview
    assert preview["a/f498.py"]["status"] == "deleted" and preview["c/big200.txt"]["action"] == "skip"


def test_past_the_pathspec_bytes_a_rename_is_diffed_in_one_batch() -> None:
    """Past _MAX_EXCLUDED_BYTES of names set aside, the others are diffed by name in batches (too costly to reach
    through the CLI: 256 KiB of names): a deletion and an addition of the same blob stay in one batch."""
    from ocr_hook.changes.collect import _batches, _grouped
    from ocr_hook.changes.diff_parse import RawEntry

    gone = [RawEntry("D", "100644", "000000", f"{i:040x}", None, f"a/f{i:03}.py", f"a/f{i:03}.py") for i in range(499)]
    moved = [RawEntry("D", "100644", "000000", "f" * 40, None, "b/old.py", "b/old.py"),
             RawEntry("A", "000000", "100644", None, "f" * 40, "b/new.py", "b/new.py")]
    batches = _batches(_grouped([*gone, moved[0], RawEntry("A", "000000", "100644", None, "e" * 40, "z.py", "z.py"),
                                 moved[1]]), 500)
    assert [len(b) for b in batches] == [499, 3]
    assert batches[1][:2] == ["b/old.py", "b/new.py"]


def test_a_pre_1_0_lfs_pointer_is_not_code(preview: dict[str, Any]) -> None:
    pointer = preview["d/model.bin"]
    assert pointer["action"] == "skip", pointer
    assert pointer["reason"] == "Git LFS pointer: the file's content is stored outside the repository"


HEAVY = {"input_tokens": 49_500, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    repo = make_repo(tmp_path_factory.mktemp("capped") / "repo")
    write(repo, "README.md", "demo\n")
    commit_all(repo, "base")
    with FakeMessagesAPI() as api:
        for n, name in enumerate(("alpha", "beta", "gamma")):
            write(repo, f"app/{name}.py", f"def {name}(x):\n    return x + {n}\n")
            comment = {"content": f"{name} adds {n}.", "existing_code": f"return x + {n}", "severity": "low",
                       "category": "bug"}
            api.script(f"def {name}(x)", [Reply([tool_use("code_comment", {"comments": [comment]})], usage=HEAVY),
                                          task_done()])
        git(repo, "add", "-A")
        home = tmp_path_factory.mktemp("home")
        env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": TEST_API_KEY, "ANTHROPIC_AUTH_TOKEN": "",
               "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), "NO_PROXY": "*", "no_proxy": "*",
               "OCR_HOOK_MAX_OUTPUT_TOKENS": "1000"}  # each request's reservation: the estimate and this
        proc = run_cli(repo, "review", "--format", "json", "--max-tokens", "100000", "--concurrency", "1",
                       "--no-review-filter", "--no-cache", env=env)
    return {"proc": proc, "report": json.loads(proc.stdout)}


def test_a_stopped_run_says_what_was_done_and_what_was_not(capped: dict[str, Any]) -> None:
    report = capped["report"]
    assert capped["proc"].returncode == 3, capped["proc"].stderr
    states = sorted([f["reason"].split(":")[0] for f in report["coverage"]["failed"] + report["coverage"]["skipped"]])
    assert len(report["coverage"]["reviewed"]) == 1 and states == ["not reviewed", "review cut short"], report
    said = ("the budget ran out (token cap of 100000 reached): 1 file(s) reviewed, 1 begun and cut short (what the "
            "model said before the stop is kept and reported), 1 not reviewed at all")
    assert said in report["notes"], report["notes"]
    assert len(report["findings"]) == 2  # the reviewed file's comment and the cut one's


@pytest.fixture(scope="module")
def scans(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    base = tmp_path_factory.mktemp("packs")
    repo = make_repo(base / "repo")
    write(repo, "money.py", "def price(cents, rate):\n    return cents * rate\n")
    write(repo, "shop.py", "from money import price\n\n\ndef total(items):\n    return price(items, 2)\n")
    commit_all(repo, "first")
    shim = base / "shim"
    shim.mkdir()
    real = shutil.which("git")
    (shim / "git").write_text(f'#!/bin/sh\nfor a in "$@"; do [ "$a" = grep ] && exit 2; done\nexec "{real}" "$@"\n',
                              encoding="utf-8")
    (shim / "git").chmod(0o755)
    runs = []
    with FakeMessagesAPI() as api:
        api.script("Review the change", [task_done()])
        env = _env(api, tmp_path_factory.mktemp("home"), PATH=f"{shim}:{Path(real or '').parent}")
        for _ in range(2):
            proc = run_cli(repo, "scan", "--format", "json", "--no-review-filter", env=env)
            assert proc.returncode == 0, proc.stderr
            runs.append({"summary": proc.stderr.splitlines()[-2], "report": json.loads(proc.stdout),
                         "sent": len(api.requests)})
    return runs


def _env(api: FakeMessagesAPI, home: Path, **more: str) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": TEST_API_KEY, "ANTHROPIC_AUTH_TOKEN": "",
            "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), "NO_PROXY": "*", "no_proxy": "*", **more}


def test_a_cached_run_counts_the_packs_as_the_review_did(scans: list[dict[str, Any]]) -> None:
    first, cached = scans
    assert cached["sent"] == first["sent"] and sorted(cached["report"]["coverage"]["cached"]) == ["money.py", "shop.py"]
    assert any("context pack cut short or without one" in n for n in first["report"]["notes"])  # grep failed
    assert "(context: 1 entry for 1 file)" in first["summary"], first["summary"]
    assert "(context: 1 entry for 1 file)" in cached["summary"], cached["summary"]
    assert cached["report"]["coverage"]["context"] == first["report"]["coverage"]["context"]
