"""Imports that last as long as the process (ocr_hook.gc_freeze): made with the collector paused, then frozen,
and the collector on again afterwards, at start-up (the CLI) and before the first request (the SDK).

Each check runs in a fresh interpreter: freezing is process-wide and would otherwise freeze this test run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def python(code: str, cwd: Path) -> list[str]:
    """What `code` prints, run by a fresh interpreter outside the checkout (the installed package)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=cwd).stdout.split()


def test_the_block_runs_with_the_collector_paused_and_what_it_made_is_frozen(tmp_path: Path) -> None:
    code = ("import gc\n"
            "from ocr_hook.gc_freeze import long_lived\n"
            "frozen = gc.get_freeze_count()\n"
            "with long_lived():\n"
            "    paused = not gc.isenabled()\n"
            "    made = [[n] for n in range(1000)]\n"
            "print(paused, gc.isenabled(), gc.get_freeze_count() - frozen >= 1000)")
    assert python(code, tmp_path) == ["True", "True", "True"]


def test_a_collector_that_was_off_stays_off(tmp_path: Path) -> None:
    code = ("import gc\n"
            "from ocr_hook.gc_freeze import long_lived\n"
            "gc.disable()\n"
            "with long_lived():\n"
            "    pass\n"
            "print(gc.isenabled())")
    assert python(code, tmp_path) == ["False"]


def test_an_error_in_the_block_still_turns_the_collector_back_on(tmp_path: Path) -> None:
    code = ("import gc\n"
            "from ocr_hook.gc_freeze import long_lived\n"
            "try:\n"
            "    with long_lived():\n"
            "        import no_such_module_here\n"
            "except ImportError:\n"
            "    print(gc.isenabled())")
    assert python(code, tmp_path) == ["True"]


def test_start_up_freezes_the_cli_and_leaves_the_collector_on(tmp_path: Path) -> None:
    """Whatever runs after start-up (a long review, `ocr-hook mcp`, which serves for hours) finds it on."""
    code = ("import gc\n"
            "from ocr_hook.__main__ import _load_cli\n"
            "frozen = gc.get_freeze_count()\n"
            "run = _load_cli()\n"
            "import ocr_hook.cli\n"
            "print(gc.isenabled(), run is ocr_hook.cli.main, gc.get_freeze_count() - frozen > 10000)")
    assert python(code, tmp_path) == ["True", "True", "True"]


def test_the_sdk_is_frozen_when_the_first_client_is_made(tmp_path: Path) -> None:
    code = ("import gc, sys\n"
            "from ocr_hook.agent.client import client_for\n"
            "from ocr_hook.settings import load\n"
            "settings = load(None, environ={})\n"
            "before = 'anthropic' in sys.modules\n"
            "frozen = gc.get_freeze_count()\n"
            "client_for(settings, {'ANTHROPIC_API_KEY': 'not-a-key', 'ANTHROPIC_BASE_URL': 'http://127.0.0.1:9'})\n"
            "print(before, 'anthropic' in sys.modules, gc.isenabled(), gc.get_freeze_count() - frozen > 50000)")
    assert python(code, tmp_path) == ["False", "True", "True", "True"]


def test_a_module_already_loaded_is_returned_without_freezing_anything(tmp_path: Path) -> None:
    """A long-lived process makes a client per review: only the first may freeze (what is then alive)."""
    code = ("import gc, json\n"
            "from ocr_hook.gc_freeze import import_lasting\n"
            "first = import_lasting('json')\n"
            "frozen = gc.get_freeze_count()\n"
            "print(first is json, import_lasting('json') is json, gc.get_freeze_count() == frozen)")
    assert python(code, tmp_path) == ["True", "True", "True"]
