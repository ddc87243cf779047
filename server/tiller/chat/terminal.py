"""`tiller chat`: the terminal front end of the headless client.

Everything about terminals lives here: rendering `agent/event` notifications as text (or as
JSON lines), reading the user's lines from stdin, Ctrl-C, exit codes. The protocol itself
is `client.py`.

    one-shot     tiller chat "PROMPT"   stream one run, exit 0 / 1 (error) / 130 (aborted)
    interactive  tiller chat            a prompt per line; a line typed while a run streams
                                        is sent as agent/steer; Ctrl-C aborts the run, a
                                        second Ctrl-C (or Ctrl-C / EOF at the prompt) quits
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import collections
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from typing import Any, TextIO

from ..protocol.errors import ErrorCode  # light: the protocol package imports nothing heavy
from .client import AgentClient, RpcError

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_ABORTED = 0, 1, 2, 130
MAX_TOOL_LINE = 160
OFFLINE_PROVIDER = "local/"
OFFLINE_NOTICE = ("tiller: on the small offline model ({model}: text only, no tools). For a real model set "
                  "ANTHROPIC_API_KEY or OPENAI_API_KEY, or see README.md#using-real-providers")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", nargs="?", help="one prompt to run; without it, chat interactively")
    parser.add_argument("--model", help='"provider/modelId" (default: the server\'s, else the local model)')
    parser.add_argument("--json", action="store_true", help="print every agent/event notification as one JSON line")
    parser.add_argument("--cwd", help="the workspace: rootUri and the session's cwd (default: the current directory)")
    parser.add_argument("--verbose", action="store_true", help="pass the server's log (stderr) through")
    parser.add_argument("--resume", nargs="?", const="", metavar="ID",
                        help="continue a saved session (default: the most recent one of this directory)")


def run(args: argparse.Namespace) -> int:
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    cwd = os.path.realpath(args.cwd or os.getcwd())
    if not os.path.isdir(cwd):
        print(f"tiller: --cwd: not a directory: {args.cwd}", file=sys.stderr)
        return EXIT_USAGE
    app = ChatApp(prompt=args.prompt, model=args.model, json_mode=args.json, cwd=cwd, verbose=args.verbose,
                  resume=args.resume)
    return asyncio.run(app.main())


# --- rendering ---------------------------------------------------------------------------


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


def _isatty(stream: TextIO) -> bool:
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
        self.color = _isatty(out)
        self.err_color = _isatty(err)
        self.at_line_start = True

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
            self._write(_clip(f"{mark} {_first_line(event.get('result'))}".rstrip()) + "\n", dim=True)

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
        self.notice(f"[{model}: {usage.get('input', 0)} in, {usage.get('output', 0)} out, ${cost:.4f}]")


class JsonRenderer(TerminalRenderer):
    """`--json`: every `agent/event` notification's params as one line; nothing else on stdout."""

    def event(self, params: dict[str, Any]) -> None:
        self.out.write(json.dumps(params, ensure_ascii=False) + "\n")

    def end_line(self) -> None:
        pass

    def run_ended(self, result: dict[str, Any], model: str) -> None:
        pass  # the usage is in the events


def _first_line(result: Any) -> str:
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


# --- stdin -------------------------------------------------------------------------------


class StdinLines:
    """Lines from a file descriptor, read by a daemon thread (stdin may be a pipe, a file or
    a terminal; `loop.add_reader` refuses regular files). `os.read` rather than
    `sys.stdin`: a daemon thread blocked inside a buffered reader would hold its lock at
    interpreter shutdown."""

    def __init__(self, fd: int) -> None:
        self._loop = asyncio.get_running_loop()
        self._lines: collections.deque[str] = collections.deque()
        self._eof = False
        self._changed = asyncio.Event()
        threading.Thread(target=self._read, args=(fd,), name="tiller-chat-stdin", daemon=True).start()

    def _read(self, fd: int) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pending = ""
        while True:
            try:
                data = os.read(fd, 1 << 14)
            except InterruptedError:
                continue
            except OSError:
                data = b""
            pending += decoder.decode(data, final=not data)
            *lines, pending = pending.split("\n")
            if not data and pending:
                lines.append(pending)
            if lines:
                self._loop.call_soon_threadsafe(self._push, [line.rstrip("\r") for line in lines], False)
            if not data:
                self._loop.call_soon_threadsafe(self._push, [], True)
                return

    def _push(self, lines: list[str], eof: bool) -> None:
        self._lines.extend(lines)
        self._eof = self._eof or eof
        self._changed.set()

    async def get(self) -> str | None:
        """The next line, or None at end of input."""
        while not self._lines:
            if self._eof:
                return None
            self._changed.clear()
            await self._changed.wait()
        return self._lines.popleft()

    def unget(self, line: str) -> None:
        self._lines.appendleft(line)

    @property
    def at_eof(self) -> bool:
        return self._eof and not self._lines


# --- the command -------------------------------------------------------------------------


class ResumeError(Exception):
    pass


class ChatApp:
    def __init__(self, *, prompt: str | None, model: str | None, json_mode: bool, cwd: str,
                 verbose: bool = False, stdin_fd: int = 0, out: TextIO | None = None,
                 err: TextIO | None = None, server_command: list[str] | None = None,
                 resume: str | None = None) -> None:
        self.prompt_text = prompt
        self.resume = resume  # None: a new session; "": the latest of cwd; else an id
        self.model = model
        self.cwd = cwd
        self.verbose = verbose
        self.stdin_fd = stdin_fd
        self.server_command = server_command
        out, err = out or sys.stdout, err or sys.stderr
        self.ui: TerminalRenderer = JsonRenderer(out, err) if json_mode else TerminalRenderer(out, err)
        self.client: AgentClient | None = None
        self.session_id = ""
        self.session_model = ""
        self.queue: dict[str, list[str]] = {"steering": [], "followUp": []}
        self._run: asyncio.Task[Any] | None = None
        self._aborting = False
        self._abort_task: asyncio.Future[None] | None = None
        self._quit = asyncio.Event()

    # --- lifecycle ------------------------------------------------------------------------

    async def main(self) -> int:
        log_dir = tempfile.mkdtemp(prefix="tiller-chat-")
        log_path = os.path.join(log_dir, "server.log")
        keep_log = False
        code = EXIT_ERROR
        loop = asyncio.get_running_loop()
        with open(log_path, "wb") as log:
            command = self.server_command or [sys.executable, "-m", "tiller", "serve"]
            if self.verbose and self.server_command is None:
                command += ["--log-level", "INFO"]
            self.client = await AgentClient.spawn(
                command, stderr=None if self.verbose else log,
                on_event=self._on_event, on_notification=self._on_notification,
            )
            loop.add_signal_handler(signal.SIGINT, self._on_sigint)
            try:
                if not await self._until_quit(self._open_session()):
                    code = EXIT_ABORTED  # Ctrl-C while the server was starting
                elif self.prompt_text is not None:
                    code = await self._one_shot(self.prompt_text)
                else:
                    code = await self._interactive()
            except RpcError as error:
                self.ui.error(error.message)
                code = EXIT_USAGE if error.code == ErrorCode.MODEL_NOT_FOUND else EXIT_ERROR
            except ResumeError as error:
                self.ui.error(str(error))
                code = EXIT_USAGE
            except ConnectionError as error:
                keep_log = True
                status = self.client.process.returncode
                self.ui.error(f"{error} (server exit code {status})" if status is not None else str(error))
                code = EXIT_ERROR
            finally:
                loop.remove_signal_handler(signal.SIGINT)
                self.ui.end_line()
                # After a second Ctrl-C the user wants out now: give the server less time.
                status = await self.client.shutdown(timeout=1.0 if self._quit.is_set() else 5.0)
                if status not in (0, None) and code == EXIT_OK:
                    keep_log = True
        if keep_log and not self.verbose:
            self.ui.notice(f"server log: {log_path}")
        else:
            shutil.rmtree(log_dir, ignore_errors=True)
        return code

    async def _open_session(self) -> None:
        assert self.client is not None
        await self.client.initialize(self.cwd)
        if self.resume is not None:
            session = await self._resume_session()
        else:
            session = await self.client.new_session(cwd=self.cwd, model=self.model)
        self.session_id, self.session_model = session["sessionId"], session["model"]
        if self.session_model.startswith(OFFLINE_PROVIDER):
            self.ui.notice(OFFLINE_NOTICE.format(model=self.session_model))

    async def _resume_session(self) -> dict[str, Any]:
        assert self.client is not None
        session_id = self.resume
        if not session_id:
            listed = (await self.client.request("agent/listSessions", {"cwd": self.cwd}))["sessions"]
            if not listed:
                raise ResumeError(f"No saved session for {self.cwd} to resume")
            session_id = listed[0]["sessionId"]  # newest first
        session = await self.client.request("agent/loadSession", {"sessionId": session_id})
        if self.model:
            await self.client.request("agent/setModel", {"sessionId": session_id, "model": self.model})
            session["model"] = self.model
        self.ui.notice(f"resumed session {session_id} ({session.get('messageCount', 0)} messages)")
        return session

    async def _until_quit(self, work: Any) -> bool:
        """Await `work` unless the user quits first (then cancel it): True if it finished."""
        task = asyncio.ensure_future(work)
        quit_wait = asyncio.ensure_future(self._quit.wait())
        await asyncio.wait({task, quit_wait}, return_when=asyncio.FIRST_COMPLETED)
        quit_wait.cancel()
        if task.done():
            task.result()  # re-raises
            return True
        task.cancel()
        return False

    def _on_event(self, params: dict[str, Any]) -> None:
        if params.get("sessionId") != self.session_id:
            return
        event = params.get("event") or {}
        if event.get("type") == "queue_update":
            self.queue = {"steering": list(event.get("steering") or []), "followUp": list(event.get("followUp") or [])}
        self.ui.event(params)

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "window/showMessage" and isinstance(params, dict):
            self.ui.notice(f"server: {params.get('message', '')}")
        elif method == "window/logMessage" and self.verbose and isinstance(params, dict):
            self.ui.notice(f"server log: {params.get('message', '')}")

    def _on_sigint(self) -> None:
        if self._run is not None and not self._run.done() and not self._aborting:
            self._aborting = True
            self.ui.end_line()
            self.ui.notice("aborting… (Ctrl-C again to quit)")
            self._abort_task = asyncio.ensure_future(self._abort())
        else:
            self._quit.set()

    async def _abort(self) -> None:
        assert self.client is not None
        try:
            await self.client.abort(self.session_id)
        except (RpcError, ConnectionError):
            pass

    # --- runs -----------------------------------------------------------------------------

    async def _one_shot(self, text: str) -> int:
        result = await self._run_prompt(text, None)
        if result is None:
            return EXIT_ABORTED
        return self._report(result)

    async def _interactive(self) -> int:
        lines = StdinLines(self.stdin_fd)
        tty = _isatty(sys.stdin) if self.stdin_fd == 0 else False
        if tty:
            self.ui.notice(f"tiller chat · {self.session_model} · {self.cwd}\n"
                           "Enter sends; typing while a reply streams steers it; Ctrl-C aborts; Ctrl-D quits.")
        while True:
            if tty:
                self.ui.prompt_marker()
            line = await self._next_line(lines)
            if line is None:
                return EXIT_OK
            if not line.strip():
                continue
            result = await self._run_prompt(line, lines)
            if result is None:
                return EXIT_ABORTED
            self._report(result)
            if not await self._after_run(result, lines):
                return EXIT_ABORTED

    async def _next_line(self, lines: StdinLines) -> str | None:
        """The next line typed at the idle prompt; None at EOF or Ctrl-C."""
        get = asyncio.ensure_future(lines.get())
        return get.result() if await self._until_quit(get) else None

    async def _run_prompt(self, text: str, lines: StdinLines | None) -> dict[str, Any] | None:
        """One `agent/prompt`; lines typed meanwhile are steering. None if the user quit."""
        assert self.client is not None
        run = asyncio.ensure_future(self.client.prompt(self.session_id, text))
        self._run, self._aborting = run, False
        quit_wait = asyncio.ensure_future(self._quit.wait())
        line_wait: asyncio.Future[str | None] | None = None
        try:
            while not run.done():
                waits: set[asyncio.Future[Any]] = {run, quit_wait}
                if lines is not None and not lines.at_eof and not self._aborting:
                    if line_wait is None:
                        line_wait = asyncio.ensure_future(lines.get())
                    waits.add(line_wait)
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if quit_wait.done():
                    return None
                if line_wait is not None and line_wait.done():
                    line, line_wait = line_wait.result(), None
                    if line is not None and self._aborting and lines is not None:
                        lines.unget(line)  # typed after Ctrl-C: the next prompt, not steering
                    elif line is not None and line.strip():
                        await self._steer(line)
            return run.result()
        finally:
            quit_wait.cancel()
            if line_wait is not None:
                typed = line_wait.result() if line_wait.done() and not line_wait.cancelled() else None
                if typed is not None and lines is not None:
                    lines.unget(typed)  # typed as the run ended
                line_wait.cancel()
            self._run = None

    async def _steer(self, line: str) -> None:
        assert self.client is not None
        self.ui.end_line()
        self.ui.notice(f"↳ steering: {line}")
        await self.client.steer(self.session_id, line)

    async def _after_run(self, result: dict[str, Any], lines: StdinLines) -> bool:
        """A steer that arrived after the run's last look at its queue is still queued: run
        it now (or, after an abort, drop it and say so) rather than leave it for later.
        False if the user quit meanwhile."""
        assert self.client is not None
        while self.queue["steering"] or self.queue["followUp"]:
            cleared = await self.client.clear_queue(self.session_id)
            texts = [*cleared.get("steering", []), *cleared.get("followUp", [])]
            self.queue = {"steering": [], "followUp": []}
            if not texts:
                break
            if result.get("stopReason") == "aborted":
                self.ui.notice(f"dropped queued message(s): {' | '.join(texts)}")
                break
            next_result = await self._run_prompt("\n\n".join(texts), lines)
            if next_result is None:
                return False
            self._report(next_result)
            result = next_result
        return True

    def _report(self, result: dict[str, Any]) -> int:
        self.ui.run_ended(result, self.session_model)
        stop = result.get("stopReason")
        if stop == "error":
            self.ui.error(result.get("errorMessage") or "the run failed")
            return EXIT_ERROR
        if stop == "aborted":
            self.ui.error("aborted")
            return EXIT_ABORTED
        return EXIT_OK
