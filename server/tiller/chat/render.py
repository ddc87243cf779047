"""How `tiller chat` prints a run when its output is a pipe, a file, or `--json`: plain text
as it streams (thinking dimmed on a terminal), one line per tool call and result; or every
event as a JSON line. Scripts and tests read this output, so it stays exactly this.
(On a terminal, chat/tty.py renders markdown instead.)"""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

MAX_TOOL_LINE = 160


class _Output:
    """Writes that survive a closed pipe (`tiller chat ... | head`)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.broken = False

    def write(self, text: str) -> None:
        if self.broken or not text:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:
            self.broken = True
            try:  # interpreter shutdown must not flush into the closed pipe again
                os.dup2(os.open(os.devnull, os.O_WRONLY), self.stream.fileno())
            except (OSError, ValueError):
                pass


def isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class TerminalRenderer:
    """Text as it streams to stdout; thinking dimmed; tool calls and results one line each.

    ANSI dim is used on stdout only when stdout is a terminal (and on stderr only when
    stderr is one).
    """

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = _Output(out), _Output(err)
        self.color = isatty(out)
        self.err_color = isatty(err)
        self.at_line_start = True
        self.context: dict[str, Any] = {}  # the latest context_usage event

    # stdout

    def _write(self, text: str, dim: bool = False) -> None:
        if not text:
            return
        self.out.write(f"\x1b[2m{text}\x1b[0m" if dim and self.color else text)
        self.at_line_start = text.endswith("\n")

    def end_line(self) -> None:
        if not self.at_line_start:
            self._write("\n")

    def event(self, params: dict[str, Any]) -> None:
        event = params.get("event") or {}
        kind = event.get("type")
        if kind == "message_update":
            inner = event.get("assistantMessageEvent") or {}
            inner_type = inner.get("type")
            if inner_type == "text_delta":
                self._write(inner.get("delta", ""))
            elif inner_type == "thinking_start":
                self.end_line()
            elif inner_type == "thinking_delta":
                self._write(inner.get("delta", ""), dim=True)
            elif inner_type == "thinking_end":
                self.end_line()
        elif kind in ("message_start", "message_end"):
            if (event.get("message") or {}).get("role") == "assistant":
                self.end_line()  # consecutive replies (after steering, tools) start on a new line
        elif kind == "tool_execution_start":
            self.end_line()
            args = json.dumps(event.get("args") or {}, ensure_ascii=False)
            self._write(_clip(f"→ {event.get('toolName', '?')} {args}") + "\n", dim=True)
        elif kind == "tool_execution_end":
            mark = "✗" if event.get("isError") else "✓"
            self.end_line()
            self._write(_clip(f"{mark} {first_line(event.get('result'))}".rstrip()) + "\n", dim=True)
        elif kind == "context_usage":
            self.context = event  # shown after the run
        elif kind in ("compaction_start", "compaction_end"):
            self.end_line()
            self.notice(compaction_notice(event))

    # stderr

    def notice(self, text: str) -> None:
        self.err.write((f"\x1b[2m{text}\x1b[0m" if self.err_color else text) + "\n")

    def error(self, text: str) -> None:
        self.err.write(f"tiller: {text}\n")

    def prompt_marker(self) -> None:
        self.err.write("\x1b[1m>\x1b[0m " if self.err_color else "> ")

    def run_ended(self, result: dict[str, Any], model: str) -> None:
        self.end_line()
        usage = result.get("usage") or {}
        last = next((m for m in reversed(result.get("newMessages") or []) if m.get("role") == "assistant"), None)
        if last and last.get("provider") and last.get("model"):
            model = f"{last['provider']}/{last['model']}"
        cost = float((usage.get("cost") or {}).get("total") or 0.0)
        meter = ""
        if context := self.context:
            meter = (f"; context {context['tokens']:,}/{context['contextWindow']:,} ({context['percent']:.0f}%), "
                     f"session ${session_cost(context):.4f}")
        self.notice(f"[{model}: {usage.get('input', 0)} in, {usage.get('output', 0)} out, ${cost:.4f}{meter}]")


class JsonRenderer(TerminalRenderer):
    """`--json`: every `agent/event` notification's params as one line; nothing else on stdout."""

    def event(self, params: dict[str, Any]) -> None:
        self.out.write(json.dumps(params, ensure_ascii=False) + "\n")

    def end_line(self) -> None:
        pass

    def run_ended(self, result: dict[str, Any], model: str) -> None:
        pass  # the usage is in the events


def compaction_notice(event: dict[str, Any]) -> str:
    """One line saying why and when the context was compacted (or that it was not)."""
    before = event.get("tokensBefore", 0)
    if event["type"] == "compaction_start":
        return f"[compacting the context ({event.get('reason')}): {before:,} tokens]"
    if event.get("summary"):
        return f"[compacted: {before:,} → {event.get('tokensAfter', 0):,} tokens; older turns summarised]"
    return (f"[compaction {'aborted' if event.get('aborted') else 'failed'}: "
            f"{event.get('errorMessage') or 'nothing changed'}]")


def session_cost(context_usage: dict[str, Any]) -> float:
    """The session's billed cost so far, from a context_usage event."""
    return float(((context_usage.get("usage") or {}).get("cost") or {}).get("total") or 0.0)


def first_line(result: Any) -> str:
    for block in (result or {}).get("content") or []:
        if block.get("type") == "text":
            lines = (block.get("text") or "").strip().splitlines()
            return lines[0] if lines else ""
        if block.get("type") == "image":
            return f"[image {block.get('mimeType', '')}]"
    return ""


def _clip(text: str) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= MAX_TOOL_LINE else text[: MAX_TOOL_LINE - 1] + "…"
