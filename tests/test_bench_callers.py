"""bench/bench_callers.py's core on one tiny synthetic history (a real git repository): the miner finds the
commit that added a parameter and fixed its caller, the case is staged with only the callee's new version,
and the pack the product builds for it is scored by the bench's independent call reading."""

from __future__ import annotations

import sys
from pathlib import Path

from gitrepo import commit_all, git, make_repo, write

from ocr_hook.changes.collect import collect_changes
from ocr_hook.changes.scope import Scope
from ocr_hook.changes.snapshot import open_snapshot
from ocr_hook.context import build_pack
from ocr_hook.settings import load

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

from bench_callers import entries, mine, real_calls, score_pack, stage_case  # noqa: E402

LIB = "def fetch(url):\n    return url\n"
USER = ('"""Call fetch(url) to get it."""\nfrom lib import fetch\n\n\n'
        'def go():\n    return fetch(\n        "x",\n    )\n')


def test_mined_case_is_staged_and_scored_by_the_independent_reading(tmp_path) -> None:
    history = make_repo(tmp_path / "history")
    write(history, "lib.py", LIB)
    write(history, "app/user.py", USER)
    commit_all(history, "base")
    write(history, "lib.py", LIB.replace("(url)", "(url, timeout)"))
    write(history, "app/user.py", USER.replace("fetch(\n", "fetch(3,\n"))
    commit_all(history, "fetch takes a timeout")

    [case] = mine(history, "tiny", limit=5)
    assert (case.callee, case.kind, case.name, case.callers) == ("lib.py", "params-added", "fetch",
                                                                  [("app/user.py", 6)])

    repo = tmp_path / "staged"
    stage_case(history, case, repo)
    assert git(repo, "diff", "--cached", "--name-only").split() == ["lib.py"]

    change_set = collect_changes(str(repo), Scope("staged"), [], {})
    with open_snapshot(str(repo), change_set) as snapshot:
        pack = build_pack(change_set.files[0], snapshot, load(str(repo), None, {}, {}))
    assert pack is not None
    text = pack.render()
    result = score_pack(repo, case, text, tokens=0)
    assert result.shown == [True]
    assert (result.call_entries, result.real_entries) == (1, 1)

    # the reading is independent and can say no: the docstring's mention is no call, the call's lines are;
    # an entry numbered off the call is neither shown nor real
    assert real_calls(USER, "app/user.py", "fetch") == {6, 7, 8}
    forged = text.replace("6|", "1|").replace("7|", "2|").replace("8|", "3|")
    wrong = score_pack(repo, case, forged, tokens=0)
    assert wrong.shown == [False] and wrong.real_entries == 0 and len(entries(forged)) == 1
    assert real_calls("const r = fetch(\n  'x')\n// fetch(y)\n", "a.js", "fetch") == {1, 2}
