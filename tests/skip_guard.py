"""A skipped test must be a decision: the run fails when a test was skipped for a reason that is not on the
allow-list in tests/skip_allowlist.py. conftest installs it; `-p skip_guard` loads it into another run.

Under pytest-xdist every worker reports to the controller, which calls pytest_runtest_logreport and
pytest_collectreport with each worker's reports; the guard therefore lives in the controller (or in the
only process) and workers leave it out, so each skip is judged once and the controller sets the exit code.
"""

from __future__ import annotations

import pytest
from skip_allowlist import allowed


class SkipGuard:
    def __init__(self) -> None:
        self.unallowed: list[tuple[str, str]] = []

    def _record(self, report: pytest.CollectReport | pytest.TestReport) -> None:
        if not report.skipped or hasattr(report, "wasxfail"):  # an expected failure is not a skip
            return
        reason = _reason(report)
        if not allowed(reason):
            self.unallowed.append((report.nodeid, reason))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._record(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._record(report)  # a whole module skipped at import

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.unallowed and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.unallowed:
            return
        terminalreporter.section("skips not on the allow-list: the run fails", sep="=", red=True, bold=True)
        for nodeid, reason in self.unallowed:
            terminalreporter.line(f"SKIPPED {nodeid}: {reason}")
        terminalreporter.line("A skip hides a check: remove its cause, or add the reason with its justification "
                              "to tests/skip_allowlist.py.")


def _reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr = report.longrepr
    # Locally a (path, line, "Skipped: why") tuple; a report that came from an xdist worker may carry a list.
    text = str(longrepr[2]) if isinstance(longrepr, tuple | list) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")


def install(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller judges its reports
        return
    config.pluginmanager.register(SkipGuard(), "ocr-hook-skip-guard")


pytest_configure = install
