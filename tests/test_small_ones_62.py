"""Issue 62 item 10, the smaller ones, through the real CLI on one staged change of a real repository:

- a rename whose two names fell into different pathspec batches (with more than 200 files over max_file_bytes
  the others are diffed by name, 500 names a batch) was diffed as a deleted file in one batch and an added one
  in the next, and so reviewed whole as an added file;
- a Git LFS pointer written before git-lfs 1.0 (`version https://hawser.github.com/spec/v1`, which git-lfs
  still reads) was reviewed as code.
`preview` lists what a review would do, with no request: both show there."""

from __future__ import annotations

import json
from typing import Any

import pytest
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
    for i in range(201):  # over the cap: more than 200 of them, so the others are asked for by name
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


def test_a_pre_1_0_lfs_pointer_is_not_code(preview: dict[str, Any]) -> None:
    pointer = preview["d/model.bin"]
    assert pointer["action"] == "skip", pointer
    assert pointer["reason"] == "Git LFS pointer: the file's content is stored outside the repository"
