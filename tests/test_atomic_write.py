from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from report_samples import ctx, rich_result

from ocr_hook.reports import ReportWriteError, write_report
from ocr_hook.store.atomic import write_atomic


def test_replaces_content_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old", encoding="utf-8")
    write_atomic(target, "new ✓")
    assert target.read_text(encoding="utf-8") == "new ✓"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_new_file_mode_follows_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "r.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "r.txt").stat().st_mode & 0o777 == 0o640


def test_missing_directory_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ReportWriteError, match=r"cannot write .*missing/r\.sarif") as info:
        write_atomic(tmp_path / "missing" / "r.sarif", "x")
    assert "\n" not in str(info.value) and info.value.exit_code == 2


def test_directory_target_is_refused_and_cleaned_up(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(ReportWriteError):
        write_atomic(tmp_path / "out", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_write_failure_midway_keeps_the_old_file(tmp_path: Path) -> None:
    """A real short write: the child process may not grow files beyond 4 KiB (RLIMIT_FSIZE)."""
    target = tmp_path / "report.sarif"
    target.write_text("previous complete report\n", encoding="utf-8")
    script = textwrap.dedent(f"""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        from ocr_hook.store.atomic import write_atomic, ReportWriteError
        try:
            write_atomic({str(target)!r}, "x" * 100_000)
        except ReportWriteError as exc:
            print(exc)
            sys.exit(7)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 7, proc.stderr
    assert proc.stdout.startswith(f"cannot write {target}: File too large")
    assert target.read_text(encoding="utf-8") == "previous complete report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.sarif"]


def test_write_report_unknown_format_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown report format"):
        write_report("xml", rich_result(), ctx(), tmp_path / "r.xml")
    assert list(tmp_path.iterdir()) == []


def test_write_report_each_format(tmp_path: Path) -> None:
    for fmt in ("text", "json", "gitlab"):
        write_report(fmt, rich_result(), ctx(), tmp_path / f"r.{fmt}")
        assert (tmp_path / f"r.{fmt}").read_text(encoding="utf-8").strip()
