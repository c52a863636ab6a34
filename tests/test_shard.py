from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocr_hook.changes.shard import parse_shard, shard_select
from ocr_hook.errors import ConfigError

PATHS = [f"src/module_{i}/file_{i}.py" for i in range(103)]


@given(st.lists(st.text(min_size=1, max_size=20), max_size=60), st.integers(min_value=1, max_value=7))
def test_shards_partition_the_paths_and_stay_balanced(paths: list[str], count: int) -> None:
    shards = [shard_select(paths, f"{i}/{count}") for i in range(1, count + 1)]
    assert set().union(*shards) == set(paths)
    assert sum(len(s) for s in shards) == len(set(paths))
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1


def test_order_of_input_does_not_matter() -> None:
    assert shard_select(PATHS, "2/3") == shard_select(list(reversed(PATHS)), "2/3")


def test_same_split_in_another_process_with_another_hash_seed() -> None:
    code = "import sys; from ocr_hook.changes.shard import shard_select; " \
           f"print(sorted(shard_select({PATHS!r}, '3/4')))"
    outs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}).stdout
        for seed in ("1", "2")
    }
    assert outs == {repr(sorted(shard_select(PATHS, "3/4"))) + "\n"}


def test_one_shard_is_everything() -> None:
    assert shard_select(PATHS, "1/1") == set(PATHS)


@pytest.mark.parametrize("bad", ["", "1", "0/3", "4/3", "1/0", "a/b", "-1/2", "1/2/3", "1.5/2"])
def test_bad_shard_specs(bad: str) -> None:
    with pytest.raises(ConfigError, match="--shard"):
        parse_shard(bad)


def test_spaces_are_tolerated() -> None:
    assert parse_shard(" 2 / 5 ") == (2, 5)
