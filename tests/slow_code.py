"""Code built to be slow for the context pack (issue 41 item 16): one Go (or C) package of many large files and
a change that adds many identifiers, each used name a candidate definition in every file of the package; and
a changed signature whose call sites fill many large Python files. Shared by tests/test_context_limits.py
(small trees) and bench/bench_pack_time.py (the full figures)."""

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


def c_file(index: int, size: int, names: list[str]) -> str:
    """A C file of about `size` bytes that spells every one of `names` in a comment (so the combined `git grep
    -w` makes it a candidate for each) and defines none of them."""
    head = f"/* Looked at for: {' '.join(names)} */\n#include \"big.h\"\n\n"
    block = "".join(f"/* helper{index}_{n} adds its two inputs and takes {n} off the sum. */\nint helper{index}_{n}("
                    f"int a, int b) {{\n    if (a + b > {n}) {{ return a + b - {n}; }}\n    return a + b;\n}}\n\n"
                    for n in range(100))
    return head + (block * (size // len(block) + 1))[:size].rsplit("\n\n", 1)[0] + "\n"


def c_tree(root: Path, files: int = 20, size: int = 90_000, identifiers: int = 200) -> Path:
    """The C shape of go_tree: `files` C files of `size` bytes in one directory, each naming every used name,
    and a staged change to the first adding a function that calls `identifiers` of them."""
    make_repo(root)
    names = [f"missing{k}" for k in range(identifiers)]
    for i in range(files):
        write(root, f"src/file{i:02}.c", c_file(i, size, names))
    commit_all(root, "base")
    uses = "\n".join(f"    total += {name}(total);" for name in names)
    write(root, "src/file00.c", c_file(0, size, names) + f"int sum(int total) {{\n{uses}\n    return total;\n}}\n")
    git(root, "add", "-A")
    return root


def py_callers_tree(root: Path, files: int = 25, size: int = 200_000, calls: int = 200) -> Path:
    """A changed signature whose call sites fill `git grep`'s caps: `files` Python modules of `size` bytes,
    each calling `compute` `calls` times, and a staged change to compute's signature in lib.py. Each file
    that holds a call site is parsed to tell calls from mentions."""
    make_repo(root)
    write(root, "lib.py", "def compute(a):\n    return a\n")
    for i in range(files):
        block = "".join(f"def helper{i}_{n}(a, b):\n    if a + b > {n}:\n        return a + b - {n}\n    return a + b"
                        f"\n\n\n" for n in range(50))
        body = (block * (size // len(block) + 1))[:size].rsplit("\n\n\n", 1)[0]
        write(root, f"pkg/mod{i:03}.py", "from lib import compute\n\n\n" + body + "\n\n\n"
              + "".join(f"value{k} = compute({k})\n" for k in range(calls)))
    commit_all(root, "base")
    write(root, "lib.py", "def compute(a, b=0):\n    return a + b\n")
    git(root, "add", "-A")
    return root
