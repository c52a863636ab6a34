"""One fingerprint, two findings (issue 58 item 16): a fingerprint is path, category and quoted code, so the same
line quoted at another call site has the fingerprint of a finding dismissed or baselined before. An entry of the
dismissals file or of a baseline suppresses one finding, never a more severe one, and among several findings of
its fingerprint the one its message names (findings.one_each, the rule the forge's dismissals follow).

Through the real CLI (one staged review, real git, the real SDK against the fake Messages API): in `a.py` a
dismissed eval() and in `b.py` a baselined one each get a new critical finding at another call site quoting the
same line; before, each was swallowed (exit 0, "PASSED"). `c.py` and `d.py` are the controls: the recorded finding
raised again in other words, at its own severity, stays suppressed. `dismiss` then adds the new finding's own entry.
"""

from __future__ import annotations

import json
from pathlib import Path

from fake_api import FakeMessagesAPI, Reply, tool_use
from gitrepo import commit_all, git, make_repo, run_cli, write
from report_samples import finding

from ocr_hook.findings.model import Severity, fingerprint
from ocr_hook.findings.one_each import match
from ocr_hook.findings.suppress import BaselineEntry

QUOTE = "return eval(cmd)"
OLD = "def load(cmd):\n    return eval(cmd)\n"
NEW_SITE = OLD + "\n\ndef run(cmd):\n    return eval(cmd)\n"
RECORDED = "eval() of the trusted configuration value."
NEW = "eval() of a request parameter runs arbitrary code."
REWORDED = "eval() on the configuration string."


def _comment(content: str, severity: str) -> Reply:
    return Reply([tool_use("code_comment", {"comments": [
        {"content": content, "existing_code": QUOTE, "severity": severity, "category": "security"}]}),
        tool_use("task_done", {"state": "DONE"})])


def _dismissal(path: str) -> str:
    return (f"- fingerprint: {fingerprint(path, 'security', QUOTE)}\n  path: {path}\n  category: security\n"
            f"  severity: high\n  message: {RECORDED}\n  reason: the configuration is ours\n  on: 2026-12-01\n")


def test_a_recorded_finding_never_swallows_a_more_severe_one_at_another_call_site(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    for name in ("a", "b", "c", "d"):
        write(repo, f"app/{name}.py", OLD)
    write(repo, ".ocr-hook/dismissed.yaml", "dismissed:\n" + _dismissal("app/a.py") + _dismissal("app/c.py"))
    entries = [{"fingerprint": fingerprint(f"app/{name}.py", "security", QUOTE), "severity": "high",
                "message": RECORDED} for name in ("b", "d")]
    write(repo, ".ocr-hook-baseline.json", json.dumps({"version": 2, "findings": entries}))
    write(repo, ".ocr-hook.yaml", "fail_on: high\nbaseline: .ocr-hook-baseline.json\n")
    commit_all(repo, "legacy code, one finding dismissed and one baselined")
    for name in ("a", "b"):
        write(repo, f"app/{name}.py", NEW_SITE)
        fake_api.script(f"Review the change to `app/{name}.py`", [_comment(NEW, "critical")])
    for name in ("c", "d"):
        write(repo, f"app/{name}.py", "# loads the configuration\n" + OLD)
        fake_api.script(f"Review the change to `app/{name}.py`", [_comment(REWORDED, "high")])
    git(repo, "add", "-A")

    proc = run_cli(repo, "review", "--no-cache", "--no-review-filter", "--format", "json", env=sdk_env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    got = {f["path"]: (f["start_line"], f["severity"], f["suppressed"]) for f in report["findings"]}
    assert got == {"app/a.py": (6, "critical", None), "app/b.py": (6, "critical", None),
                   "app/c.py": (3, "high", "dismissed"), "app/d.py": (3, "high", "baseline")}, got
    # the fingerprint is the dismissed one's: said, so nobody wonders why the dismissal did not hold
    short = fingerprint("app/a.py", "security", QUOTE)[:8]
    assert any(n.startswith(f"app/a.py:6 (critical security) shares the fingerprint {short} of a finding dismissed")
               for n in report["notes"]), report["notes"]
    # Found wrong too, it is dismissed beside the first entry (before: "already dismissed ... not added again").
    saved = tmp_path / "report.json"
    saved.write_text(proc.stdout)
    added = run_cli(repo, "dismiss", short, "--from", str(saved), "--reason", "only admins reach run()", env=sdk_env)
    assert added.returncode == 0 and "dismissed " + short in added.stdout, added.stdout + added.stderr
    text = (repo / ".ocr-hook/dismissed.yaml").read_text()
    assert text.count(f"fingerprint: {fingerprint('app/a.py', 'security', QUOTE)}") == 2
    assert f"severity: critical\n  message: {NEW}\n  reason: only admins reach run()" in text, text


def test_among_findings_of_one_fingerprint_each_entry_takes_the_one_its_message_names() -> None:
    """Pure: the same rule where anchoring kept two findings of one fingerprint apart."""
    first = finding(path="m.py", start=2, severity="high", message=RECORDED, existing=QUOTE)
    other = first._replace(start_line=9, end_line=9, message=NEW)
    entry = BaselineEntry(first.fingerprint, "high", RECORDED)
    assert match([other, first], {first.fingerprint: [entry]}) == {1: entry}  # the one named, not the other
    assert match([other._replace(message=REWORDED), first._replace(message=REWORDED)],
                 {first.fingerprint: [entry]}) == {}  # two, neither named: which one was recorded is unknown
    assert match([other], {first.fingerprint: [entry]}) == {0: entry}  # alone: whatever the wording this time
    assert match([other._replace(severity=Severity.CRITICAL)], {first.fingerprint: [entry]}) == {}
    two = [entry, BaselineEntry(first.fingerprint)]  # a version 1 entry: any severity
    assert match([other, first], {first.fingerprint: two}) == {1: entry, 0: two[1]}
