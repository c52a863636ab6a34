"""The language server applies the dismissals file as a review does (issue 58.16): one entry, one finding.

In-process (the State the server keeps, no editor): a report whose two findings share a fingerprint (the same
line quoted at two call sites, the second critical) and a dismissals file that dismissed the first. The editor
must show the critical one, as the review counts it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from gitrepo import commit_all, make_repo

LINE = "    return eval(expr)\n"
TEXT = "def a(expr):\n" + LINE + "\n\ndef b(expr):\n" + LINE


def test_a_dismissal_hides_its_own_finding_not_a_more_severe_one_at_another_call_site(tmp_path: Path) -> None:
    from ocr_hook.findings import dismissals
    from ocr_hook.findings.model import fingerprint
    from ocr_hook.lsp.server import State

    repo = make_repo(tmp_path / "repo")
    (repo / "app.py").write_text(TEXT, encoding="utf-8")
    commit_all(repo, "app")
    fp = fingerprint("app.py", "security", LINE)

    def finding(line: int, severity: str, message: str) -> dict[str, object]:
        return {"path": "app.py", "start_line": line, "end_line": line, "severity": severity,
                "category": "security", "message": message, "suggestion": None, "anchored": True,
                "fingerprint": fp, "status": "new"}

    old = finding(2, "low", "eval of a constant expression; harmless here.")
    new = finding(6, "critical", "eval() of the caller's input runs arbitrary code.")
    report = tmp_path / "review.json"
    report.write_text(json.dumps({"tool": {"name": "ocr-hook"}, "status": "failed", "exit_code": 1,
                                  "findings": [old, new]}), encoding="utf-8")
    (repo / ".ocr-hook").mkdir()
    entry = dismissals.new_entry(old, "constant input", (), "dev", dt.date.today(), None)
    (repo / ".ocr-hook" / "dismissed.yaml").write_text(dismissals.file_text([entry]), encoding="utf-8")

    state = State(str(repo.resolve()), str(report), 60.0)
    state.load()
    assert state.note is None, state.note
    placed = state.placement((repo / "app.py").resolve().as_uri(), TEXT)
    assert placed is not None
    shown = [(s.start_line, s.finding.severity.value) for s in placed.shown]
    # Before: every finding of the dismissed fingerprint was hidden, the critical one too.
    assert shown == [(6, "critical")]
