"""Review memory end to end (issue 19): fix, commit again, and the re-review converges.

Real scratch repositories, the real CLI in a subprocess, the real SDK over HTTP to the fake Messages API.
The fake is scripted per content version: every version of shop.py carries a line `# version N`, so its
first main-loop message contains `+# version N` (in the change's diff) and no other version's `+` line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_support import is_filter
from e2e_support import assert_clean_stderr
from fake_api import FakeMessagesAPI, Fault, Reply, Turn, first_user_text, text, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write

PATH = "shop.py"
HIGH_CODE = "return price - price * pct / 10"
LOW_CODE = 'return "Item: " + name'
LATE_CODE = "return sum(i.price for i in items)"
FOCUS = "FOCUS OF THIS REVIEW"


def shop(version: int, *, fixed_high: bool = False, fixed_low: bool = False, top: str = "",
         without_label: bool = False) -> str:
    discount = "return price - price * pct / 100" if fixed_high else HIGH_CODE
    label = 'return f"Item: {name}"' if fixed_low else LOW_CODE
    text_ = (f"# version {version}\n{top}"
             "def total(items):\n"
             f"    {LATE_CODE}\n"
             "\n\n"
             "def discount(price, pct):\n"
             f"    {discount}\n")
    if not without_label:
        text_ += ("\n\n"
                  "def label(name):\n"
                  f"    {label}\n")
    return text_


RECHECK_HEAD = "Earlier findings on lines changed since the last review"
CARRIED_HEAD = "Earlier findings on lines the interdiff did not touch"


def recheck_part(opening: str) -> str:
    """The re-review message's list of findings to re-check."""
    return opening.split(RECHECK_HEAD, 1)[1].split(CARRIED_HEAD, 1)[0]


def carried_part(opening: str) -> str:
    """The re-review message's one-line list of carried findings."""
    return opening.split(CARRIED_HEAD, 1)[1].split("The interdiff of", 1)[0]


def line_of(content: str, code: str) -> int:
    return next(i for i, line in enumerate(content.split("\n"), 1) if code in line)


def comment(code: str, severity: str, category: str = "bug", message: str | None = None) -> dict[str, Any]:
    return {"content": message or f"A {severity} problem: {code}", "existing_code": code, "severity": severity,
            "category": category}


def says(*comments: dict[str, Any]) -> list[Reply]:
    return [Reply([tool_use("code_comment", {"comments": list(comments)})])]


def script_version(fake: FakeMessagesAPI, version: int, turns: list[Reply]) -> None:
    fake.script(f"+# version {version}", turns)


FIRST = says(comment(HIGH_CODE, "high", message="Divides by 10: a 15% discount takes 150% off."),
             comment(LOW_CODE, "low", "style", message="Use an f-string for the label."))
LATE = comment(LATE_CODE, "high", message="Items without a price raise AttributeError.")


class FilterAnswers:
    """The review filter's answers: keep everything, unless a test set another answer for a version."""

    def __init__(self) -> None:
        self.by_version: dict[int, Turn] = {}

    def __call__(self, body: dict[str, Any]) -> Turn:
        opening = first_user_text(body)
        for version, turn in self.by_version.items():
            if f"+# version {version}" in opening:
                return turn
        return Reply([text('{"wrong": []}')])


@pytest.fixture(autouse=True)
def filter_answers(fake_api: FakeMessagesAPI) -> FilterAnswers:
    answers = FilterAnswers()
    fake_api.handle(is_filter, answers)
    return answers


def _repo(tmp_path: Path, content: str) -> Path:
    repo = make_repo(tmp_path / "repo")
    write(repo, PATH, "def total(items):\n    return sum(items)\n")
    commit_all(repo, "initial")
    write(repo, PATH, content)
    git(repo, "add", PATH)
    return repo


def _stage(repo: Path, content: str) -> None:
    write(repo, PATH, content)
    git(repo, "add", PATH)


class Reviewer:
    """Runs `ocr-hook review --format json` with one cache directory; counts the requests of each run."""

    def __init__(self, repo: Path, fake: FakeMessagesAPI, env: dict[str, str], cache: Path) -> None:
        self.repo, self.fake, self.env, self.cache = repo, fake, env, cache

    def __call__(self, *args: str) -> tuple[int, dict[str, Any], int]:
        before = len(self.fake.requests)
        proc = run_cli(self.repo, "review", "--format", "json", "--cache-dir", str(self.cache), *args, env=self.env)
        assert_clean_stderr(proc)
        assert proc.returncode in (0, 1), proc.stderr
        return proc.returncode, json.loads(proc.stdout), len(self.fake.requests) - before


def test_fix_commit_again_converges(tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    v1 = shop(1)
    repo = _repo(tmp_path, v1)
    review = Reviewer(repo, fake_api, sdk_env, tmp_path / "cache")
    script_version(fake_api, 1, FIRST)
    code, report, _ = review()
    assert code == 1
    assert sorted((f["severity"], f["status"]) for f in report["findings"]) == [("high", "new"), ("low", "new")]
    assert report["resolved"] == []

    # Fix the high one. The model does not re-report it and raises a new high comment on a line that has
    # not changed since the first review.
    v2 = shop(2, fixed_high=True)
    _stage(repo, v2)
    script_version(fake_api, 2, says(LATE))
    code, report, requests = review()
    second = report
    assert code == 0, report["verdict"]
    found = {f["severity"] + "/" + f["status"]: f for f in report["findings"]}
    assert set(found) == {"low/carried", "high/late"}
    assert found["low/carried"]["start_line"] == line_of(v2, LOW_CODE)
    assert found["high/late"]["start_line"] == line_of(v2, LATE_CODE)
    assert [(r["severity"], r["message"], r["start_line"]) for r in report["resolved"]] == [
        ("high", "Divides by 10: a 15% discount takes 150% off.", line_of(v1, HIGH_CODE))]
    opening = fake_api.requests_for("+# version 2")[0].first_user_text
    assert FOCUS in opening and "Divides by 10" in recheck_part(opening)
    # The carried one is listed on one line, as kept: not to be re-checked.
    assert "Use an f-string" not in recheck_part(opening)
    assert f"- line {line_of(v2, LOW_CODE)} [low style] Use an f-string for the label." in carried_part(opening)
    assert "-    return price - price * pct / 10" in opening  # the interdiff, next to the findings
    assert requests >= 1

    # The same commit with late findings blocking fails; so does a review without memory. Both are
    # answered by the result cache: no request.
    code, report, requests = review("--late-findings", "block")
    assert (code, requests) == (1, 0)
    assert {f["status"] for f in report["findings"]} == {"carried", "late"}
    code, report, requests = review("--no-memory")
    assert (code, requests) == (1, 0)
    assert {f["status"] for f in report["findings"]} == {"new"} and report["resolved"] == []

    # An unchanged re-run: the result cache, no request, the same verdict and statuses.
    code, again, requests = review()
    assert (code, requests) == (0, 0)
    assert sorted((f["message"], f["status"]) for f in again["findings"]) == sorted(
        (f["message"], f["status"]) for f in found.values())
    assert [r["fingerprint"] for r in again["resolved"]] == [r["fingerprint"] for r in second["resolved"]]
    # Without the result cache the same content gets a fresh review, but against memory: the earlier
    # findings are carried and nothing on these unchanged lines can newly block.
    script_version(fake_api, 2, says(LATE, comment(HIGH_CODE.replace("10", "100"), "high",
                                                   message="Another look at the discount.")))
    code, fresh, requests = review("--no-cache")
    assert code == 0 and requests >= 1, fresh["verdict"]
    assert sorted((f["severity"], f["status"]) for f in fresh["findings"]) == [
        ("high", "late"), ("high", "late"), ("low", "carried")]
    assert fresh["resolved"] == []
    code, fresh, requests = review("--no-cache")  # and again: the memory it wrote is the same
    assert code == 0 and {f["status"] for f in fresh["findings"]} == {"late", "carried"}

    # Fix the low one too: it is re-checked, not re-reported, so resolved; the late one stays late.
    v3 = shop(3, fixed_high=True, fixed_low=True)
    _stage(repo, v3)
    script_version(fake_api, 3, says())
    code, report, _ = review()
    assert code == 0, report["verdict"]
    assert sorted((f["severity"], f["status"], f["start_line"]) for f in report["findings"]) == [
        ("high", "late", line_of(v3, LATE_CODE)), ("high", "late", line_of(v3, "pct / 100"))]
    assert [(r["severity"], r["category"]) for r in report["resolved"]] == [("low", "style")]
    opening = fake_api.requests_for("+# version 3")[0].first_user_text
    assert "Use an f-string" in recheck_part(opening) and "Items without a price" not in recheck_part(opening)
    assert "Items without a price" in carried_part(opening)


def test_text_report_labels_and_lists_resolved(tmp_path: Path, fake_api: FakeMessagesAPI,
                                               sdk_env: dict[str, str]) -> None:
    repo = _repo(tmp_path, shop(1))
    cache = tmp_path / "cache"
    script_version(fake_api, 1, FIRST)
    assert run_cli(repo, "review", "--cache-dir", str(cache), env={**sdk_env, "NO_COLOR": "1"}).returncode == 1
    _stage(repo, shop(2, fixed_high=True))
    script_version(fake_api, 2, says(LATE))
    sarif = tmp_path / "out.sarif"
    proc = run_cli(repo, "review", "--cache-dir", str(cache), "--sarif-output", str(sarif),
                   env={**sdk_env, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(carried from the last review)" in proc.stdout
    assert "(late: on lines unchanged since the last review; advisory)" in proc.stdout
    assert "Resolved since the last review: 1" in proc.stdout
    assert "Divides by 10" in proc.stdout.split("Resolved since the last review: 1")[1]
    log = json.loads(sarif.read_text())
    run = log["runs"][0]
    states = sorted((r["properties"]["severity"], r["baselineState"]) for r in run["results"])
    assert states == [("high", "new"), ("low", "unchanged")]
    notes = [n["message"]["text"] for n in run["invocations"][0]["toolExecutionNotifications"]]
    assert any(n.startswith("resolved since the last review:") and "Divides by 10" in n for n in notes)
    assert all("Divides by 10" not in r["message"]["text"] for r in run["results"])
    from validators import validate_sarif

    validate_sarif(sarif)


def test_base_at_two_successive_commits(tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, PATH, "def total(items):\n    return sum(items)\n")
    commit_all(repo, "initial")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, PATH, shop(1))
    commit_all(repo, "feature: discounts")
    review = Reviewer(repo, fake_api, sdk_env, tmp_path / "cache")
    script_version(fake_api, 1, FIRST)
    code, report, _ = review("--base", "main")
    assert code == 1 and len(report["findings"]) == 2
    write(repo, PATH, shop(2, fixed_high=True))
    commit_all(repo, "fix the discount")
    script_version(fake_api, 2, says())
    code, report, _ = review("--base", "main")
    assert code == 0, report["verdict"]
    assert [(f["severity"], f["status"]) for f in report["findings"]] == [("low", "carried")]
    assert [r["severity"] for r in report["resolved"]] == ["high"]
    # Another base is another line of work: nothing remembered there.
    git(repo, "branch", "-q", "other", "main")
    code, report, _ = review("--base", "other")
    assert report["resolved"] == [] and {f["status"] for f in report["findings"]} == {"new"}
    # --commit and --from/--to neither read nor write a line of work's memory; each is the repository's latest
    # review (issue 58 item 19: `ocr-hook apply` and `dismiss` take its findings), and nothing else changes.
    remembered = {p: p.read_bytes() for p in (tmp_path / "cache" / "memory").rglob("*.json")}
    script_version(fake_api, 2, says(LATE))
    for scope in (["--commit", "HEAD"], ["--from", "HEAD~1", "--to", "HEAD"]):
        code, report, _ = review(*scope, "--no-cache")
        assert code == 1 and report["resolved"] == [] and {f["status"] for f in report["findings"]} == {"new"}
    now = {p: p.read_bytes() for p in (tmp_path / "cache" / "memory").rglob("*.json")}
    changed = [p for p in now if now[p] != remembered.get(p)]
    assert now.keys() == remembered.keys() and len(changed) == 1 and b'"line":null' in now[changed[0]]


def test_guidance_edit_means_full_review_with_a_note(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                     sdk_env: dict[str, str]) -> None:
    repo = _repo(tmp_path, shop(1))
    review = Reviewer(repo, fake_api, sdk_env, tmp_path / "cache")
    script_version(fake_api, 1, FIRST)
    assert review()[0] == 1
    write(repo, "REVIEW.md", "Money is in cents; flag float arithmetic on prices.\n")
    git(repo, "add", "REVIEW.md")
    git(repo, "commit", "-q", "-m", "guidance", "--", "REVIEW.md")  # shop.py stays staged
    _stage(repo, shop(2, fixed_high=True))
    script_version(fake_api, 2, says(comment(LOW_CODE, "low", "style", message="Use an f-string.")))
    code, report, _ = review()
    assert code == 0
    assert any("review memory not used for shop.py: the guidance changed since the last review" in n
               for n in report["notes"]), report["notes"]
    assert FOCUS not in fake_api.requests_for("+# version 2")[0].first_user_text
    assert report["resolved"] == [] and [f["status"] for f in report["findings"]] == ["new"]


def test_lines_inserted_above_a_carried_finding_move_it(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                        sdk_env: dict[str, str]) -> None:
    v1 = shop(1)
    repo = _repo(tmp_path, v1)
    review = Reviewer(repo, fake_api, sdk_env, tmp_path / "cache")
    script_version(fake_api, 1, FIRST)
    assert review()[0] == 1
    v2 = shop(2, top="import math\nimport os\n\n\n")
    _stage(repo, v2)
    script_version(fake_api, 2, says())
    code, report, _ = review()
    assert code == 1  # a carried finding blocks as before
    lines = sorted((f["severity"], f["status"], f["start_line"]) for f in report["findings"])
    assert lines == [("high", "carried", line_of(v2, HIGH_CODE)), ("low", "carried", line_of(v2, LOW_CODE))]
    assert line_of(v2, HIGH_CODE) == line_of(v1, HIGH_CODE) + 4
    assert report["resolved"] == []


def test_finding_whose_lines_were_deleted_is_resolved(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                      sdk_env: dict[str, str]) -> None:
    repo = _repo(tmp_path, shop(1))
    review = Reviewer(repo, fake_api, sdk_env, tmp_path / "cache")
    script_version(fake_api, 1, FIRST)
    assert review()[0] == 1
    _stage(repo, shop(2, without_label=True))
    script_version(fake_api, 2, says(comment(HIGH_CODE, "high", message="Still divides by 10.")))
    code, report, _ = review()
    assert code == 1
    assert [(f["severity"], f["status"]) for f in report["findings"]] == [("high", "carried")]
    assert [r["severity"] for r in report["resolved"]] == ["low"]


def test_corrupt_memory_means_a_full_review_never_an_error(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                           sdk_env: dict[str, str]) -> None:
    repo = _repo(tmp_path, shop(1))
    cache = tmp_path / "cache"
    review = Reviewer(repo, fake_api, sdk_env, cache)
    script_version(fake_api, 1, FIRST)
    assert review()[0] == 1
    entries = list((cache / "memory").rglob("*.json"))
    assert len(entries) == 2  # the line of work's record and the repository's latest review
    for junk, entry in zip((b"{\"format\": 1, \"key\"", b"\xff\xfe"), entries, strict=True):
        entry.write_bytes(junk)
    _stage(repo, shop(2, fixed_high=True))
    script_version(fake_api, 2, says(LATE))
    code, report, _ = review()
    assert code == 1  # a full review: the new high comment is new, not late
    assert {f["status"] for f in report["findings"]} == {"new"} and report["resolved"] == []
    assert FOCUS not in fake_api.requests_for("+# version 2")[0].first_user_text
    for entry in (cache / "memory").rglob("*.json"):  # rewritten whole
        json.loads(entry.read_text())


def test_two_reviews_of_one_repository_at_once_leave_no_torn_files(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                   sdk_env: dict[str, str]) -> None:
    repo = _repo(tmp_path, shop(1))
    cache = tmp_path / "cache"
    script_version(fake_api, 1, FIRST)
    args = [sys.executable, "-m", "ocr_hook", "review", "--format", "json", "--cache-dir", str(cache), "--no-cache"]
    procs = [subprocess.Popen(args, cwd=repo, env=sdk_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 1, err
        assert len(json.loads(out)["findings"]) == 2
    entries = list((cache / "memory").rglob("*"))
    assert [p for p in entries if p.name.endswith(".tmp")] == []
    docs = [json.loads(p.read_text()) for p in entries if p.suffix == ".json"]
    assert len(docs) == 2 and all(d["format"] == 1 for d in docs)
    # And memory read back from them works: the fix is a re-review.
    review = Reviewer(repo, fake_api, sdk_env, cache)
    _stage(repo, shop(2, fixed_high=True))
    script_version(fake_api, 2, says())
    code, report, _ = review()
    assert code == 0 and [r["severity"] for r in report["resolved"]] == ["high"]


def test_mcp_review_returns_the_same_statuses_and_resolved(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                           sdk_env: dict[str, str],
                                                           filter_answers: FilterAnswers) -> None:
    import anyio
    from jsonschema import Draft202012Validator
    from test_mcp_server import serving

    from ocr_hook.mcp_server.tools import REVIEW_OUTPUT

    repo = _repo(tmp_path, shop(1))
    env = {**sdk_env, "OCR_HOOK_CACHE_DIR": str(tmp_path / "cache")}
    script_version(fake_api, 1, FIRST)
    script_version(fake_api, 2, says(LATE))
    # Issue 28: the third review fixes the low one while its filter fails (HTTP 500 after the retries).
    script_version(fake_api, 3, says(LATE))
    filter_answers.by_version[3] = Fault(status=500, headers={"retry-after-ms": "10"}, times=100)
    cli = Reviewer(repo, fake_api, sdk_env, tmp_path / "cache")
    cli_run: list[tuple[int, dict[str, Any], int]] = []

    async def main() -> list[dict[str, Any]]:
        docs = []
        async with serving(repo, env, tmp_path / "stderr.txt") as client:
            for content in (None, shop(2, fixed_high=True), shop(3, fixed_high=True, fixed_low=True)):
                if content is not None:
                    if len(docs) == 2:
                        cli_run.append(cli())  # the CLI after the MCP server's second review
                    _stage(repo, content)
                result = await client.call("review", {})
                assert not result.is_error, result.content
                docs.append(result.structured_content)
        return docs

    first, second, third = anyio.run(main)
    for doc in (first, second, third):
        Draft202012Validator(REVIEW_OUTPUT).validate(doc)
    assert first["exit_code"] == 1 and {f["status"] for f in first["findings"]} == {"new"}
    assert second["exit_code"] == 0, second["verdict"]
    assert sorted((f["severity"], f["status"]) for f in second["findings"]) == [("high", "late"), ("low", "carried")]
    assert [r["severity"] for r in second["resolved"]] == ["high"]
    # The CLI sees the same: its unchanged re-run is the result cache with the MCP run's statuses.
    [(code, report, requests)] = cli_run
    assert (code, requests) == (0, 0)
    assert report["findings"] == second["findings"] and report["resolved"] == second["resolved"]
    # A failed filter never keeps a fixed finding: the low one is resolved, the commit would pass.
    assert third["exit_code"] == 0 and [r["severity"] for r in third["resolved"]] == ["low"], third["verdict"]
    assert any("review filter skipped, all comments kept" in n for n in third["notes"]), third["notes"]

# --- issue 28: a degraded step never keeps a fixed finding blocking (PRE_COMMIT=1: the quick profile) ----------

PRICEY_FILTER = "claude-filter-pricey"
NOT_RECHECKED = "lines changed since the last review; not re-checked"


def _at_commit_time(repo: Path, fake: FakeMessagesAPI, env: dict[str, str], cache: Path,
                    *args: str) -> tuple[int, dict[str, Any], int]:
    """A review as pre-commit runs it (PRE_COMMIT=1: effort auto is quick); any exit code."""
    before = len(fake.requests)
    proc = run_cli(repo, "review", "--format", "json", "--cache-dir", str(cache), *args,
                   env={**env, "PRE_COMMIT": "1"})
    assert_clean_stderr(proc)
    return proc.returncode, json.loads(proc.stdout), len(fake.requests) - before


@pytest.mark.parametrize("failure", ["unreadable", "http_500", "cost_cap"])
def test_a_failed_filter_never_keeps_a_fixed_finding_blocking(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                              sdk_env: dict[str, str], filter_answers: FilterAnswers,
                                                              failure: str) -> None:
    repo = _repo(tmp_path, shop(1))
    if failure == "cost_cap":
        # The filter's model costs more than the run's whole cap: the budget refuses every filter request
        # (at the first review too, which still blocks: its comments are kept).
        price = {"input": 1_000_000.0, "output": 1_000_000.0, "cache_write": 1_000_000.0, "cache_read": 1_000_000.0}
        write(repo, ".ocr-hook.yaml", json.dumps({"filter_model": PRICEY_FILTER, "pricing": {PRICEY_FILTER: price}}))
    elif failure == "unreadable":  # a local model answering prose
        filter_answers.by_version[2] = Reply([text("These comments all look reasonable to me.")])
    else:
        filter_answers.by_version[2] = Fault(status=500, headers={"retry-after-ms": "10"}, times=100)
    cache = tmp_path / "cache"
    script_version(fake_api, 1, FIRST)
    code, report, _ = _at_commit_time(repo, fake_api, sdk_env, cache)
    assert code == 1 and report["coverage"]["effort"] == {PATH: "quick"}

    _stage(repo, shop(2, fixed_high=True))
    script_version(fake_api, 2, says(LATE))  # a high comment: the quick profile's filter is due
    code, report, _ = _at_commit_time(repo, fake_api, sdk_env, cache)
    assert code == 0, report["verdict"]
    assert [(r["severity"], r["message"]) for r in report["resolved"]] == [
        ("high", "Divides by 10: a 15% discount takes 150% off.")]
    assert sorted((f["severity"], f["status"]) for f in report["findings"]) == [("high", "late"), ("low", "carried")]
    assert all(f["anchor_note"] != NOT_RECHECKED for f in report["findings"])
    filter_notes = [n for n in report["notes"] if "review filter" in n]
    assert filter_notes and all("all comments kept" in n for n in filter_notes), report["notes"]
    assert any(is_filter(r.body) for r in fake_api.requests) is (failure != "cost_cap")
    if failure == "unreadable":  # the file stays out of the result cache: reviewed again, and still passes
        code, again, requests = _at_commit_time(repo, fake_api, sdk_env, cache)
        assert code == 0 and requests >= 1, again["verdict"]


def test_a_main_loop_cut_off_by_the_cost_cap_keeps_the_rechecked_finding(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                        sdk_env: dict[str, str]) -> None:
    repo = _repo(tmp_path, shop(1))
    cache = tmp_path / "cache"
    script_version(fake_api, 1, FIRST)
    assert _at_commit_time(repo, fake_api, sdk_env, cache)[0] == 1
    _stage(repo, shop(2, fixed_high=True))
    # The first round is billed past the $2 cap: the budget refuses the next round, the loop is cut short.
    script_version(fake_api, 2, [Reply([tool_use("code_comment", {"comments": [LATE]})],
                                       usage={"output_tokens": 150_000})])
    code, report, _ = _at_commit_time(repo, fake_api, sdk_env, cache)
    assert code == 1 and report["status"] == "incomplete", report["verdict"]  # blocked, and incomplete
    assert report["coverage"]["failed"][0]["reason"].startswith("review cut short: cost cap")
    assert report["resolved"] == []
    kept = [f for f in report["findings"] if f["message"].startswith("Divides by 10")]
    assert [(f["severity"], f["status"], f["anchor_note"]) for f in kept] == [("high", "carried", NOT_RECHECKED)]


# --- issue 28: what a re-review sends ------------------------------------------------------------------------

FAR_LINE = "    return 'far away: helper 230'"


def _long_shop(version: int, *, fixed_high: bool = False) -> str:
    helpers = "".join(f"\n\ndef helper_{n}():\n    return 'far away: helper {n}'\n" for n in range(240))
    return shop(version, fixed_high=fixed_high) + helpers


def test_a_rereview_sends_the_interdiff_windows_not_the_whole_file(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                   sdk_env: dict[str, str]) -> None:
    v1 = _long_shop(1)
    repo = _repo(tmp_path, v1)
    cache = tmp_path / "cache"
    script_version(fake_api, 1, FIRST)
    assert _at_commit_time(repo, fake_api, sdk_env, cache)[0] == 1
    v2 = _long_shop(2, fixed_high=True)
    _stage(repo, v2)
    far = line_of(v2, FAR_LINE)
    still = comment("return price - price * pct / 100", "high", "security", message="pct may be over 100.")
    script_version(fake_api, 2, [Reply([tool_use("file_read", {"file_path": PATH, "start_line": far - 2,
                                                                "end_line": far + 2})]), *says(still)])
    code, report, _ = _at_commit_time(repo, fake_api, sdk_env, cache)
    assert code == 1 and [r["severity"] for r in report["resolved"]] == ["high"], report["verdict"]
    # The filter judging the new comment sees what the re-review's first message showed, not the whole file.
    [judged] = [r for r in fake_api.requests_for("+# version 2") if is_filter(r.body)]
    assert "The interdiff of `shop.py`" in judged.first_user_text and FAR_LINE not in judged.first_user_text

    first = next(r for r in fake_api.requests_for("+# version 1") if not is_filter(r.body))
    again = [r for r in fake_api.requests_for("+# version 2") if not is_filter(r.body)]
    opening = again[0].first_user_text
    assert FOCUS in opening
    numbered = [int(line.split("|", 1)[0]) for line in opening.split("\n") if line.split("|", 1)[0].isdigit()]
    fixed = line_of(v2, "pct / 100")
    assert numbered == list(range(1, fixed + 41))  # the interdiff (line 1 and the fix) with 40 lines around
    assert "helper_100" not in opening and FAR_LINE not in opening  # neither the far lines nor the whole diff
    assert "@@" in opening and opening.count("\n+") < 10  # only the interdiff's hunks
    assert "file_read_diff" in opening and "file_read" in opening
    assert len(opening) < len(first.first_user_text) / 4
    # The cached prefix is the first review's, byte for byte.
    assert again[0].body["tools"] == first.body["tools"] and again[0].body["system"] == first.body["system"]
    # The far line is one file_read away.
    result = again[1].body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and not result.get("is_error")
    assert f"{far}|{FAR_LINE}" in result["content"]

