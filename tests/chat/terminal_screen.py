"""`tiller chat` in a pseudo-terminal, read back through a terminal emulator.

prompt_toolkit and rich draw with cursor movements and colours, so the raw output is not
what a person sees; pyte replays it on a virtual screen, and tests look at that screen.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect
import pyte

from .helpers import PATIENCE, chat_env

ROWS, COLUMNS = 60, 110
UP = "\x1b[A"
CTRL_C = "\x03"
CTRL_D = "\x04"


class _AnsweringScreen(pyte.HistoryScreen):
    """A screen, with the lines scrolled off its top, that answers the program's questions
    as a terminal does: prompt_toolkit asks where the cursor is (CPR) to know how much room
    it has below the prompt."""

    def __init__(self, columns: int, lines: int, child: pexpect.spawn) -> None:
        super().__init__(columns, lines, history=1000)
        self.child = child

    def write_process_input(self, data: str) -> None:
        self.child.send(data)


class TerminalScreen:
    def __init__(self, *args: str, env: dict[str, str], cwd: Path) -> None:
        env = {**env, "TERM": "xterm-256color", "XDG_STATE_HOME": str(cwd.parent / "state")}
        self.child = pexpect.spawn(sys.executable, ["-m", "tiller", "chat", *args], env=env, cwd=str(cwd),
                                   dimensions=(ROWS, COLUMNS), encoding="utf-8", codec_errors="replace")
        self.screen = _AnsweringScreen(COLUMNS, ROWS, self.child)
        self.stream = pyte.Stream(self.screen)

    def text(self) -> str:
        """Everything on the screen and above it (scrolled off), as plain lines."""
        scrolled = ["".join(line[x].data for x in range(self.screen.columns)) for line in self.screen.history.top]
        return "\n".join(line.rstrip() for line in [*scrolled, *self.screen.display])

    def _pump(self, timeout: float) -> bool:
        """Feed what the program wrote to the screen; False once it has exited."""
        try:
            self.stream.feed(self.child.read_nonblocking(65536, timeout=timeout))
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            return False
        return True

    def wait_for(self, predicate: Callable[[str], bool], what: str, timeout: float = PATIENCE) -> str:
        deadline = time.monotonic() + timeout
        alive = True
        while time.monotonic() < deadline:
            if predicate(self.text()):
                return self.text()
            if not alive:
                break
            alive = self._pump(0.05)
        raise AssertionError(f"{what} never appeared on the screen:\n{self.text()}")

    def wait_text(self, needle: str, timeout: float = PATIENCE) -> str:
        return self.wait_for(lambda text: needle in text, repr(needle), timeout)

    def type(self, keys: str) -> None:
        self.child.send(keys)

    def wait_exit(self, timeout: float = PATIENCE) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._pump(0.05):
            pass
        self.child.close()
        return self.child.exitstatus if self.child.exitstatus is not None else -(self.child.signalstatus or 0)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def tree(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())


def environment(script: str | None, **extra: str) -> dict[str, str]:
    """chat_env without the terminal size the test runner may have exported."""
    return {k: v for k, v in chat_env(script, **extra).items() if k not in ("COLUMNS", "LINES")}

