"""Code built to be slow for the context pack (issue 41 item 16): one Go package of many large files and a
change that adds many identifiers, each used name a candidate definition in every file of the package.
Shared by tests/test_context_deadline.py (a small tree) and bench/bench_pack_time.py (the full figure)."""

from __future__ import annotations

from pathlib import Path

from gitrepo import commit_all, git, make_repo, write


def go_file(index: int, size: int) -> str:
    """A Go file of about `size` bytes: functions whose names no added line uses (the search finds nothing)."""
    parts = ["package big\n\n"]
    count = 0
    while sum(map(len, parts)) < size:
        parts.append(f"// helper{index}_{count} adds its two inputs and takes {count} off the sum when the sum is "
                     f"larger than that.\nfunc helper{index}_{count}(a int, b int) int {{\n\tif a+b > {count} {{ "
                     f"return a + b - {count} }}\n\treturn a + b\n}}\n\n")
        count += 1
    return "".join(parts)


def go_tree(root: Path, files: int = 20, size: int = 90_000, identifiers: int = 200) -> Path:
    """A repository with `files` Go files of `size` bytes in one package, committed, and a staged change to
    one of them adding a function that uses `identifiers` names defined nowhere."""
    make_repo(root)
    write(root, "go.mod", "module example.com/big\n\ngo 1.21\n")
    for i in range(files):
        write(root, f"big/file{i:02}.go", go_file(i, size))
    commit_all(root, "base")
    uses = "\n".join(f"\ttotal += missing{k}(total)" for k in range(identifiers))
    write(root, "big/file00.go", go_file(0, size) + f"func Sum(total int) int {{\n{uses}\n\treturn total\n}}\n")
    git(root, "add", "-A")
    return root
