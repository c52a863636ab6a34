"""A file whose name is not UTF-8 is reviewed, commented on, anchored, cached and reported (issue 62 items 3
and 10): git's paths are bytes, ocr-hook holds them decoded with surrogateescape, and a lone surrogate in any
text sent to the API fails the request. The model's comment on such a file failed it (exit 3, "a response that
could not be read"), so did the review filter's request, and the file never reached the result cache.

Every report writes such a name in one defined way: as git shows it by default (core.quotePath), the name in
double quotes with each byte above 0x7F as an octal escape (`"caf\\351.py"`); SARIF's URI percent-encodes the
bytes (`caf%E9.py`). One staged change in a real repository, the real CLI and SDK, the fake Messages API: the
first run reviews it, the second answers from the cache."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from agent_support import filter_keeps_all, is_filter
from conftest import TEST_API_KEY
from fake_api import FakeMessagesAPI, Reply, task_done, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write

LATIN1 = "caf\udce9.py"  # b"caf\xe9.py": Latin-1, not UTF-8 (held decoded with surrogateescape)
SHOWN = '"caf\\351.py"'  # as git shows it with core.quotePath (its default)
CODE = "def price(text):\n    return eval(text)\n"
QUOTE = "return eval(text)"
LONG_MESSAGE = "eval() of a caller's text runs arbitrary code. " + "Really. " * 600  # over 4,000: shortened


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as api:
        filter_keeps_all(api)
        comment = {"content": LONG_MESSAGE, "existing_code": QUOTE, "severity": "medium", "category": "security"}
        api.script("def price(text)", [Reply([tool_use("code_comment", {"comments": [comment]})]), task_done()])
        yield api


@pytest.fixture(scope="module")
def runs(fake: FakeMessagesAPI, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("home")
    env = {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": TEST_API_KEY, "ANTHROPIC_AUTH_TOKEN": "",
           "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), "NO_PROXY": "*", "no_proxy": "*",
           "NO_COLOR": "1"}
    repo = make_repo(tmp_path_factory.mktemp("names") / "repo")
    write(repo, "app.py", "X = 1\n")
    commit_all(repo, "base")
    write(repo, LATIN1, CODE)
    git(repo, "add", "-A")
    out = tmp_path_factory.mktemp("out")
    done: dict[str, Any] = {}
    for name in ("first", "again"):
        files = {kind: out / f"{name}.{kind}" for kind in ("json", "sarif", "gitlab")}
        before = len(fake.requests)
        proc = run_cli(repo, "review", "--format", "text", "--json-output", str(files["json"]),
                       "--sarif-output", str(files["sarif"]), "--gitlab-output", str(files["gitlab"]), env=env)
        raw = {kind: path.read_bytes() for kind, path in files.items()}
        done[name] = {"proc": proc, "raw": raw, "sent": fake.requests[before:],
                      **{kind: json.loads(data.decode("utf-8")) for kind, data in raw.items()}}
    return done


def test_the_file_is_reviewed_commented_on_and_anchored(runs: dict[str, Any]) -> None:
    first = runs["first"]
    assert first["proc"].returncode == 0, first["proc"].stdout + first["proc"].stderr
    report = first["json"]
    assert report["coverage"]["reviewed"] == [SHOWN] and report["coverage"]["failed"] == [], report["coverage"]
    (finding,) = report["findings"]
    assert (finding["path"], finding["start_line"], finding["anchored"]) == (SHOWN, 2, True)
    # The review filter saw the comment (its request names the file as git shows it) and kept it.
    (checked,) = [r for r in first["sent"] if is_filter(r.body)]
    asked = checked.first_user_text
    assert f"The diff of `{SHOWN}`" in asked and '+++ "b/caf\\351.py"' in asked and "\ufffd" not in asked, asked


def test_a_second_run_sends_nothing(runs: dict[str, Any]) -> None:
    again = runs["again"]
    assert again["proc"].returncode == 0, again["proc"].stderr
    assert again["sent"] == []
    assert again["json"]["coverage"]["cached"] == [SHOWN]
    assert [f["path"] for f in again["json"]["findings"]] == [SHOWN]


def test_every_report_writes_the_name_as_git_shows_it(runs: dict[str, Any]) -> None:
    for run in (runs["first"], runs["again"]):
        # Nothing but Unicode text in any file: no lone surrogate escape, which strict readers refuse.
        for kind, data in run["raw"].items():
            assert b"\\udc" not in data.lower(), kind
        text = run["proc"].stdout
        assert f"{SHOWN}:2" in text and "\udce9" not in text and "\ufffd" not in text, text
        (entry,) = [e for e in run["gitlab"] if e["check_name"] == "ocr-hook/security"]
        assert entry["location"] == {"path": SHOWN, "lines": {"begin": 2, "end": 2}}
        (result,) = run["sarif"]["runs"][0]["results"]
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "caf%E9.py"


def test_a_note_about_the_file_names_it_as_git_shows_it(runs: dict[str, Any]) -> None:
    """The model's overlong comment was shortened, which a note about the file says, in every report."""
    said = f"{SHOWN}: 1 comment(s) with overlong quotes or text were shortened"
    first = runs["first"]
    assert said in first["json"]["notes"], first["json"]["notes"]
    assert f"  - {said}" in first["proc"].stdout
    notified = [n["message"]["text"] for n in first["sarif"]["runs"][0]["invocations"][0]["toolExecutionNotifications"]]
    assert said in notified, notified
