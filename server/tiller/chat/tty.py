"""`tiller chat` on a terminal: markdown, a line editor with history, a live status line.

Used when stdin and stdout are both terminals (and not `--json`); pipes and files get the
plain renderer, whose output tests and scripts read.

- Input: prompt_toolkit, with history kept in `$XDG_STATE_HOME/tiller/chat_history`. The
  prompt stays open while a reply streams (a line typed then steers the run), so its bottom
  toolbar is the status line: a spinner while waiting for the model, the model, context use
  and cost. Output goes above the prompt (`TtyRenderer.show`).
- Output: rich renders each markdown block of a reply as soon as it is complete
  (`MarkdownBlocks`): headings, lists and highlighted code, which a terminal cannot
  re-render once printed line by line.
"""

from __future__ import annotations

import collections
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app_or_none
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.history import FileHistory, InMemoryHistory
from rich.console import Console, RenderableType
from rich.markdown import Markdown
from rich.text import Text

from .markdown_blocks import MarkdownBlocks
from .render import TerminalRenderer, compaction_notice, first_line, session_cost

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def history_path() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "tiller" / "chat_history"


class Status:
    """What the status line shows, kept up to date from the session's events."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.context_window = 0
        self.context_used = 0
        self.cost = 0.0
        self.running = False
        self.waiting_since: float | None = None  # waiting for the model's first token

    def on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind in ("agent_start", "turn_start"):
            self.running, self.waiting_since = True, time.monotonic()
        elif kind in ("message_update", "tool_execution_start"):
            self.waiting_since = None
        elif kind == "message_end" and (message := event.get("message") or {}).get("role") == "assistant":
            if message.get("provider") and message.get("model"):
                self.model = f"{message['provider']}/{message['model']}"
        elif kind == "context_usage":  # the host's count of the next request, and the session's bill
            self.context_used = int(event.get("tokens") or 0)
            self.context_window = int(event.get("contextWindow") or self.context_window)
            self.cost = session_cost(event)
        elif kind == "agent_end":
            self.running, self.waiting_since = False, None

    def line(self) -> str:
        parts = [self.model]
        if self.context_window:
            share = 100 * self.context_used / self.context_window
            parts.append(f"context {_tokens(self.context_used)}/{_tokens(self.context_window)} ({share:.0f}%)")
        parts.append(f"${self.cost:.4f}")
        text = " · ".join(parts)
        if self.waiting_since is not None:
            elapsed = time.monotonic() - self.waiting_since
            return f"{SPINNER[int(elapsed * 10) % len(SPINNER)]} waiting for the model {elapsed:.0f}s · {text}"
        return f"{'… ' if self.running else ''}{text}"


def _tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


class TtyRenderer(TerminalRenderer):
    """Renders events with rich; every line ends above the prompt (see module doc)."""

    def __init__(self, status: Status) -> None:
        self.console = Console(force_terminal=True, highlight=False, soft_wrap=False)
        self.status = status
        self.blocks = MarkdownBlocks()
        self.thinking: list[str] = []
        self.at_line_start = True

    def show(self, renderable: RenderableType | str) -> None:
        """Print above the prompt if one is open: hide it, print, let it redraw below.
        (Synchronous, so lines come out in the order they were shown even while a prompt
        opens or closes, which prompt_toolkit's stdout proxy does not promise.)"""
        app = get_app_or_none()
        if app is None or not app.is_running:
            self.console.print(renderable)
            return
        app.renderer.erase()
        self.console.print(renderable)
        request_position = getattr(app, "_request_absolute_cursor_position", None)
        if request_position is not None:  # room below the prompt for the status line
            request_position()
        app.invalidate()

    def event(self, params: dict[str, Any]) -> None:
        event = params.get("event") or {}
        self.status.on_event(event)
        kind = event.get("type")
        if kind == "message_update":
            inner = event.get("assistantMessageEvent") or {}
            inner_type = inner.get("type")
            if inner_type == "text_delta":
                for block in self.blocks.feed(inner.get("delta", "")):
                    self.show(Markdown(block))
            elif inner_type == "thinking_delta":
                self.thinking.append(inner.get("delta", ""))
            elif inner_type == "thinking_end":
                self._flush_thinking()
            elif inner_type == "text_end":
                self.end_line()
        elif kind == "message_end":
            self.end_line()
        elif kind == "tool_execution_start":
            self.end_line()
            args = json.dumps(event.get("args") or {}, ensure_ascii=False)
            self.show(Text(_clip_line(f"→ {event.get('toolName', '?')} {args}", self.console.width), style="dim"))
        elif kind == "tool_execution_end":
            mark = "✗" if event.get("isError") else "✓"
            line = f"{mark} {first_line(event.get('result'))}".rstrip()
            self.show(Text(_clip_line(line, self.console.width), style="red dim" if event.get("isError") else "dim"))
        elif kind in ("compaction_start", "compaction_end"):
            self.end_line()
            self.notice(compaction_notice(event))

    def _flush_thinking(self) -> None:
        text = "".join(self.thinking).strip()
        self.thinking = []
        if text:
            self.show(Text(text, style="dim italic"))

    def end_line(self) -> None:
        """Print what is left of the streamed reply (its last block)."""
        self._flush_thinking()
        if rest := self.blocks.flush():
            self.show(Markdown(rest))

    def notice(self, text: str) -> None:
        self.show(Text(text, style="dim"))

    def error(self, text: str) -> None:
        self.show(Text(f"tiller: {text}", style="bold red"))

    def prompt_marker(self) -> None:
        pass  # the prompt is prompt_toolkit's

    def run_ended(self, result: dict[str, Any], model: str) -> None:
        self.end_line()
        usage = result.get("usage") or {}
        cost = float((usage.get("cost") or {}).get("total") or 0.0)
        self.notice(f"[{self.status.model}: {usage.get('input', 0)} in, {usage.get('output', 0)} out, ${cost:.4f}]")


def _clip_line(text: str, width: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


class PromptLines:
    """Lines typed at a prompt_toolkit prompt, with the interface of `StdinLines`.

    `streaming` picks the prompt: the idle `> `, or while a reply streams the steering prompt.
    Ctrl-C at the prompt calls `on_interrupt` (abort, or quit when idle) and keeps
    prompting; Ctrl-D ends the input.
    """

    def __init__(self, status: Status, on_interrupt: Callable[[], None], history: Path | None = None) -> None:
        self.on_interrupt = on_interrupt

        def toolbar() -> ANSI:
            return ANSI(f"\x1b[2m{status.line()}\x1b[0m")

        if history is not None:
            try:
                history.parent.mkdir(parents=True, exist_ok=True)
                stored: FileHistory | InMemoryHistory = FileHistory(str(history))
            except OSError:
                stored = InMemoryHistory()
        else:
            stored = InMemoryHistory()
        self.session: PromptSession[str] = PromptSession(history=stored, bottom_toolbar=toolbar, refresh_interval=0.1)
        # While a reply streams: erased when done (an approval question may take its place;
        # a steering line is echoed by the chat as "↳ steering: …").
        self.steering: PromptSession[str] = PromptSession(history=stored, bottom_toolbar=toolbar,
                                                          refresh_interval=0.1, erase_when_done=True)
        # Answers to approvals: no history, so "y" never comes back with the Up key.
        self.questions: PromptSession[str] = PromptSession(bottom_toolbar=toolbar, refresh_interval=0.1)
        self.streaming = False
        self._lines: collections.deque[str] = collections.deque()
        self._eof = False

    async def get(self) -> str | None:
        if self._lines:
            return self._lines.popleft()
        while not self._eof:
            try:
                if self.streaming:
                    return await self.steering.prompt_async("steer› ")
                return await self.session.prompt_async("> ")
            except KeyboardInterrupt:
                self.on_interrupt()
            except EOFError:
                self._eof = True
        return None

    async def ask(self, question: str) -> str | None:
        """One answer to a question; None on Ctrl-C or Ctrl-D."""
        try:
            return await self.questions.prompt_async(question)
        except (KeyboardInterrupt, EOFError):
            return None

    def unget(self, line: str) -> None:
        self._lines.appendleft(line)

    @property
    def at_eof(self) -> bool:
        return self._eof and not self._lines
