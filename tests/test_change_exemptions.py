"""A pull request cannot lower its own gate through files that are not settings (issue 58 items 1-5 and 8,
DESIGN.md 5: "a change cannot lower the gate that judges it").

One repository: `main` holds the trusted settings (fail_on high, a baseline file) and each branch a pull request
that adds the same eval() backdoor, which the fake Messages API answers with a critical finding. The control
branch fails the gate; each attack branch passed it before (exit 0, "PASSED — review complete"). Now its own
`.gitattributes`, baseline entries and a `secrets.py` name no longer hide the code, and what the change does to
exempt its own code (a generated marker, an inline marker, a dismissal, a vendored or generated path) is named
in every output and fails the gate under `change_exemptions: block`. Through the real CLI, real git, the real
SDK against the fake API; the delegate path for item 1 (collection happens before any provider)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import TEST_API_KEY
from e2e_support import Run, run_review
from fake_api import FakeMessagesAPI, Reply, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write

from ocr_hook.findings.model import fingerprint

EVIL = "import os\n\n\ndef run(cmd):\n    return eval(cmd)\n"
QUOTE = "return eval(cmd)"
FINDING = {"content": "eval() of a caller's string runs arbitrary code.", "existing_code": QUOTE,
           "severity": "critical", "category": "security"}
BASE_SETTINGS = "fail_on: high\nbaseline: .ocr-hook-baseline.json\n"


def _baseline(*fingerprints: str) -> str:
    return json.dumps({"version": 1, "fingerprints": sorted(fingerprints)}, indent=2) + "\n"


def _dismissal(path: str) -> str:
    return ("dismissed:\n"
            f"- fingerprint: {fingerprint(path, 'security', QUOTE)}\n  path: {path}\n  category: security\n"
            "  severity: critical\n  message: eval() of a caller's string runs arbitrary code.\n"
            "  reason: the input is trusted\n  on: 2026-12-01\n")


# Each pull request: the files it adds on top of main.
BRANCHES: dict[str, dict[str, str]] = {
    "control": {"app/evil.py": EVIL},
    "attributes": {"app/evil.py": EVIL, ".gitattributes": "* -diff\napp/evil.py binary\n"},
    "baseline": {"app/evil.py": EVIL,
                 ".ocr-hook-baseline.json": _baseline("0" * 32, fingerprint("app/evil.py", "security", QUOTE))},
    "secrets": {"app/secrets.py": EVIL},
    "exemptions": {
        "gen/evil.py": "# @generated\n" + EVIL,
        "app/inline.py": EVIL.replace("    return eval", "    # ocr-hook: ignore\n    return eval"),
        "app/dismissed.py": EVIL,
        ".ocr-hook/dismissed.yaml": _dismissal("app/dismissed.py"),
        "third_party/evil.py": EVIL,
        "app/evil_pb2.py": EVIL,
    },
    # item 8: a revision whose own settings turn the gate off, scanned from a work tree at main
    "gate-off": {"app/evil.py": EVIL, ".ocr-hook.yaml": "fail_on: never\neffort: quick\n"},
}
EXEMPTED = {"gen/evil.py": "generated marker '@generated' the change wrote",
            "app/inline.py": "an inline 'ocr-hook: ignore' it added at line 5",
            "app/dismissed.py": "a dismissal it added",
            "third_party/evil.py": "vendored path rule 'third_party/'",
            "app/evil_pb2.py": "generated path rule '*_pb2.py'"}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as api:
        api.script("eval(cmd)", [Reply([tool_use("code_comment", {"comments": [FINDING]}),
                                        tool_use("task_done", {"state": "DONE"})])])
        yield api


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_repo(tmp_path_factory.mktemp("exemptions") / "repo")
    write(root, "app/util.py", "def double(x):\n    return 2 * x\n")
    write(root, ".ocr-hook.yaml", BASE_SETTINGS)
    write(root, ".ocr-hook-baseline.json", _baseline("0" * 32))
    commit_all(root, "base")
    for name, files in BRANCHES.items():
        git(root, "checkout", "-q", "-b", name, "main")
        for path, text in files.items():
            write(root, path, text)
        commit_all(root, name)
    git(root, "checkout", "-q", "main")
    return root


@pytest.fixture(scope="module")
def env(fake: FakeMessagesAPI, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    return {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": TEST_API_KEY, "ANTHROPIC_AUTH_TOKEN": "",
            "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), "NO_PROXY": "*", "no_proxy": "*"}


@pytest.fixture(scope="module", params=["api", "claude-code"])
def runs(request: pytest.FixtureRequest, repo: Path, env: dict[str, str], fake: FakeMessagesAPI,
         tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Each pull request reviewed with the API provider, and with the real Claude Code CLI (provider: claude-code,
    only a Claude login as credential) against the same fake: what is reviewed or suppressed is decided before
    any provider, and must be the same through both."""
    out = tmp_path_factory.mktemp(f"out-{request.param}")
    if request.param == "claude-code":
        env = {**env, "OCR_HOOK_PROVIDER": "claude-code", "ANTHROPIC_API_KEY": "",
               "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-test", "HOME": str(out / "home")}
    done: dict[str, Run] = {}
    for name in ("control", "attributes", "baseline", "secrets", "exemptions"):
        git(repo, "checkout", "-q", name)
        mark = len(fake.requests)
        done[name] = run_review(repo, env, out / name, "--base", "main", "--no-review-filter")
        agents = {r.headers["user-agent"].split("/")[0] for r in fake.requests[mark:]}
        assert agents == ({"claude-cli"} if request.param == "claude-code" else {"AsyncAnthropic"}), agents
    git(repo, "checkout", "-q", "main")
    return done


def _everywhere(run: Run, text: str) -> None:
    """`text` in the text report, the JSON notes and the SARIF file."""
    assert text in run.proc.stdout, run.proc.stdout
    assert any(text in note for note in run.report["notes"]), run.report["notes"]
    assert text in json.dumps(run.sarif), "not in the SARIF notes"


def test_the_control_fails_the_gate(runs: dict[str, Run]) -> None:
    run = runs["control"]
    assert run.code == 1 and [f["path"] for f in run.report["findings"]] == ["app/evil.py"], run.proc.stdout


def test_its_own_gitattributes_make_no_file_binary(runs: dict[str, Run]) -> None:
    """Item 1: `* -diff` / `evil.py binary` in the pull request's .gitattributes (git diff reads the work tree's)."""
    run = runs["attributes"]
    assert run.code == 1, run.proc.stdout
    assert run.coverage_state("app/evil.py") == ("reviewed", "")
    assert [f["severity"] for f in run.report["findings"]] == ["critical"]


def test_baseline_entries_it_adds_are_named_and_never_honoured(runs: dict[str, Run]) -> None:
    """Item 4: the baseline's content comes from the trusted revision in a review of a range."""
    run = runs["baseline"]
    assert run.code == 1, run.proc.stdout
    assert [f["suppressed"] for f in run.report["findings"]] == [None]
    _everywhere(run, "baseline .ocr-hook-baseline.json has 1 entry that ")
    note = next(n for n in run.report["notes"] if n.startswith("baseline "))
    assert "not honoured: they would have silenced app/evil.py (critical security at line 5" in note


def test_a_source_file_named_secrets_is_reviewed(runs: dict[str, Run]) -> None:
    """Item 5: `secrets.*` no longer matches source code by its stem."""
    run = runs["secrets"]
    assert run.code == 1 and run.coverage_state("app/secrets.py") == ("reviewed", ""), run.proc.stdout


def test_what_a_change_does_to_exempt_its_own_code_is_named(runs: dict[str, Run]) -> None:
    """Items 2, 3, 5 and the dismissals a change adds, under the default `change_exemptions: allow`: they pass,
    each named with its file (and the finding it silences) in the verdict line and every output."""
    run = runs["exemptions"]
    assert run.code == 0, run.proc.stdout
    verdict = run.report["verdict"]
    assert verdict.startswith("PASSED — review complete") and "5 exemptions the change makes" in verdict
    for path, how in EXEMPTED.items():
        _everywhere(run, f"{path} ({how}")
        assert f"{path} (" in verdict
    silenced = "silencing critical security at line 6: eval() of a caller's string runs arbitrary code."
    assert f"app/inline.py (an inline 'ocr-hook: ignore' it added at line 5, {silenced})" in verdict
    gitlab = json.dumps(run.gitlab)  # GitLab shows the notes about one file, at that file
    assert all(f"the change exempts its own code: {path} (" in gitlab for path in EXEMPTED)
    # The pull request's summary, as `ocr-hook publish --from` writes it from this report, leads with the verdict.
    from ocr_hook.findings.serial import load_report
    from ocr_hook.publish.plan import Earlier, plan_publish, summary_body

    body, _ = summary_body(plan_publish(load_report(str(run.out_dir / "report.json")), {}, Earlier()),
                           max_chars=65_000)
    assert all(f"{path} (" in body for path in EXEMPTED), body


def test_under_block_each_exemption_fails_the_gate_and_the_change_cannot_allow_its_own(
        repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    """`change_exemptions: block` on the trusted side; the pull request's own `.ocr-hook.yaml` says `allow`,
    which, read at the trusted revision like every setting of a range, changes nothing for its own review."""
    git(repo, "checkout", "-q", "-b", "strict", "main")
    write(repo, ".ocr-hook.yaml", BASE_SETTINGS + "change_exemptions: block\n")
    commit_all(repo, "strict")
    git(repo, "checkout", "-q", "-b", "lenient", "strict")
    write(repo, ".ocr-hook.yaml", BASE_SETTINGS + "change_exemptions: allow\n")
    for path, text in BRANCHES["exemptions"].items():
        write(repo, path, text)
    commit_all(repo, "lenient")
    try:
        run = run_review(repo, env, tmp_path / "out", "--base", "strict", "--no-review-filter")
    finally:
        git(repo, "checkout", "-q", "main")
    assert run.code == 1, run.proc.stdout
    assert run.report["verdict"].startswith("FAILED — 5 exemptions the change makes for its own code "
                                            "(change_exemptions: block")
    for path, how in EXEMPTED.items():
        _everywhere(run, f"{path} ({how}")


def test_scan_rev_judges_the_revision_by_its_own_settings(repo: Path, env: dict[str, str]) -> None:
    """Item 8: from a work tree at main (fail_on high), `scan --rev gate-off` uses gate-off's fail_on: never."""
    proc = run_cli(repo, "scan", "--rev", "gate-off", "--no-cache", "--no-review-filter", "--format", "json",
                   "app/evil.py", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    assert report["fail_on"] == "never" and len(report["findings"]) == 1
    # its preview reads the same settings (gate-off's effort: quick)
    preview = run_cli(repo, "preview", "--scan", "--rev", "gate-off", "--format", "json", "app/evil.py", env=env)
    assert preview.returncode == 0, preview.stderr
    assert [f["effort"] for f in json.loads(preview.stdout)["files"]] == ["quick"]


class _Host:
    def __init__(self, repo: Path, env: dict[str, str]) -> None:
        self.repo, self.env = repo, env

    def run(self, *args: str) -> Any:
        proc = run_cli(self.repo, "delegate", *args, env=self.env)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc


def test_delegate_mode_reviews_a_file_its_own_gitattributes_call_binary(repo: Path, env: dict[str, str]) -> None:
    """Item 1 through `delegate start/finish --base main`: the host agent is given the file and its finding fails."""
    host = _Host(repo, {**env, "ANTHROPIC_API_KEY": ""})
    git(repo, "checkout", "-q", "attributes")
    try:
        started = host.run("start", "--base", "main")
        assert started.returncode == 0, started.stderr
        brief = json.loads(started.stdout)
        assert "app/evil.py" in [f["path"] for f in brief["files"]], brief
        session = brief["session"]
        for tool, payload in (("code_comment", {"comments": [FINDING]}), ("task_done", {"state": "DONE"})):
            call = host.run("call", session, "--file", "app/evil.py", tool, json.dumps(payload))
            assert call.returncode == 0, call.stderr
        finished = host.run("finish", session, "-q", "--format", "json")
    finally:
        git(repo, "checkout", "-q", "main")
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert [f["severity"] for f in json.loads(finished.stdout)["findings"]] == ["critical"]
