import io
import threading

import pytest

from ocr_hook.commands.progress import Progress, fit, sanitise


def test_not_a_terminal_one_line_per_event() -> None:
    out = io.StringIO()
    progress = Progress(out, quiet=False, live=False)
    progress.event("src/a.py", "reviewing")
    progress.event("src/a.py", "done", "3 comments")
    progress.event("src/b.py", "cached")
    progress.event("big.sql", "skipped", "larger than max_file_lines (5000)")
    progress.event("src/c.py", "failed", "API error 529 after retries")
    progress.finish("ocr-hook: complete")
    assert out.getvalue().splitlines() == [
        "ocr-hook: reviewing src/a.py",
        "ocr-hook: done src/a.py (3 comments)",
        "ocr-hook: cached src/b.py",
        "ocr-hook: skipped big.sql (larger than max_file_lines (5000))",
        "ocr-hook: failed src/c.py (API error 529 after retries)",
        "ocr-hook: complete",
    ]
    assert "\r" not in out.getvalue()


def test_quiet_writes_nothing() -> None:
    out = io.StringIO()
    progress = Progress(out, quiet=True, live=True)
    progress.event("a.py", "reviewing")
    progress.event("a.py", "failed", "boom")
    progress.finish("summary")
    assert out.getvalue() == ""
    assert progress.quiet and not Progress(out, quiet=False, live=False).quiet


def _screen(raw: str) -> list[str]:
    """What a terminal shows: carriage return moves to column 0 and later text overwrites."""
    lines: list[str] = []
    current: list[str] = []
    column = 0
    for char in raw:
        if char == "\n":
            lines.append("".join(current).rstrip())
            current, column = [], 0
        elif char == "\r":
            column = 0
        else:
            if column < len(current):
                current[column] = char
            else:
                current.append(char)
            column += 1
    if current:
        lines.append("".join(current).rstrip())
    return lines


def test_live_status_line_updates_in_place_and_failures_stay() -> None:
    out = io.StringIO()
    progress = Progress(out, quiet=False, live=True, width=100)
    progress.event("src/a.py", "reviewing")
    progress.event("src/b.py", "reviewing")
    assert _screen(out.getvalue()) == ["ocr-hook: 0/2 files · reviewing 2: src/b.py"]
    progress.event("src/a.py", "done", "2 comments")
    progress.event("src/c.py", "failed", "timeout")
    assert _screen(out.getvalue()) == [
        "ocr-hook: failed src/c.py (timeout)",
        "ocr-hook: 2/3 files · 1 failed · reviewing 1: src/b.py",
    ]
    progress.event("src/b.py", "done")
    progress.event("vendor/x.min.js", "skipped", "excluded")
    progress.finish("ocr-hook: incomplete: 4 files")
    assert _screen(out.getvalue()) == [
        "ocr-hook: failed src/c.py (timeout)",
        "ocr-hook: skipped vendor/x.min.js (excluded)",
        "ocr-hook: incomplete: 4 files",
    ]
    # Done events never become permanent lines on a terminal.
    assert out.getvalue().count("\n") == 3


def test_live_status_never_reaches_the_last_column() -> None:
    out = io.StringIO()
    progress = Progress(out, quiet=False, live=True, width=30)
    progress.event("a/very/long/path/that/does/not/fit/" + "x" * 50 + ".py", "reviewing")
    status = out.getvalue().split("\r")[-1]
    assert len(status) <= 29 and status.endswith("…")
    assert fit("漢" * 40, 29).count("漢") == 14


def test_shorter_status_overwrites_a_longer_one_completely() -> None:
    out = io.StringIO()
    progress = Progress(out, quiet=False, live=True, width=200)
    progress.event("a-rather-long-file-name.py", "reviewing")
    progress.event("a-rather-long-file-name.py", "done")
    assert _screen(out.getvalue()) == ["ocr-hook: 1/1 files"]


def test_untrusted_paths_are_sanitised() -> None:
    out = io.StringIO()
    progress = Progress(out, quiet=False, live=False)
    progress.event("evil\x1b[2J\x1b]0;pwned\x07\rname\u202egnp.exe\ncaf\udce9.py", "failed", "bad\x1b[31m")
    text = out.getvalue()
    assert text.count("\n") == 1
    for raw in ("\x1b", "\x07", "\r", "\u202e", "\udce9"):
        assert raw not in text
    # A name that is not UTF-8 is quoted as git quotes it (issue 55.1): every control and high byte escaped.
    assert '"evil\\033[2J' in text and "\\342\\200\\256" in text and "caf\\351.py" in text and "\\n" in text


def test_sanitise_keeps_ordinary_text_and_escapes_backslashes() -> None:
    assert sanitise("src/漢字/ünïcode file.py") == "src/漢字/ünïcode file.py"
    assert sanitise("a\\x1b") == "a\\\\x1b"  # a literal backslash cannot forge an escape
    assert sanitise("\t") == "\\x09"


def test_unknown_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        Progress(io.StringIO(), quiet=False, live=False).event("a.py", "started")


def test_events_after_finish_are_ignored() -> None:
    out = io.StringIO()
    progress = Progress(out, quiet=False, live=False)
    progress.finish("summary")
    progress.event("a.py", "reviewing")
    assert out.getvalue() == "summary\n"


class _Broken(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_broken_stream_does_not_raise() -> None:
    progress = Progress(_Broken(), quiet=False, live=True, width=80)
    progress.event("a.py", "reviewing")
    progress.event("a.py", "failed", "x")
    progress.finish("summary")


def test_unencodable_text_is_escaped_for_the_stream() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    Progress(stream, quiet=False, live=False).event("漢.py", "done")
    assert raw.getvalue() == b"ocr-hook: done \\u6f22.py\n"


def test_thread_safe_lines_are_never_interleaved() -> None:
    out = io.StringIO()
    progress = Progress(out, quiet=False, live=False)

    def worker(n: int) -> None:
        for i in range(200):
            progress.event(f"dir{n}/file{i}.py", "reviewing")
            progress.event(f"dir{n}/file{i}.py", "done", f"{i} comments")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = out.getvalue().splitlines()
    assert len(lines) == 8 * 200 * 2
    assert all(line.startswith("ocr-hook: reviewing dir") or line.startswith("ocr-hook: done dir")
               for line in lines)


def test_live_counts_are_consistent_under_threads() -> None:
    out = io.StringIO()
    progress = Progress(out, quiet=False, live=True, width=200)

    def worker(n: int) -> None:
        for i in range(100):
            progress.event(f"d{n}/f{i}.py", "reviewing")
            progress.event(f"d{n}/f{i}.py", "done")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert _screen(out.getvalue()) == ["ocr-hook: 400/400 files"]

