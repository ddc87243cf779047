"""`tiller chat`: the terminal front end of the headless client.

Everything about terminals lives here: rendering `agent/event` notifications as text (or as
JSON lines), reading the user's lines from stdin, Ctrl-C, exit codes. The protocol itself
is `client.py`.

    one-shot     tiller chat "PROMPT"   stream one run, exit 0 / 1 (error) / 130 (aborted)
    interactive  tiller chat            a prompt per line; a line typed while a run streams
                                        is sent as agent/steer; Ctrl-C aborts the run, a
                                        second Ctrl-C (or Ctrl-C / EOF at the prompt) quits;
                                        /rewind lists checkpoints and goes back to one;
                                        /mode shows or sets the approval mode (plan too)
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import collections
import os
import shutil
import signal
import sys
import tempfile
import threading
from typing import TYPE_CHECKING, Any, TextIO

from ..environment import withhold_secrets_from_a_launcher
from ..protocol.errors import ErrorCode  # light: the protocol package imports nothing heavy
from ..protocol.modes import APPROVAL_MODES
from .client import AgentClient, RpcError
from .mode_command import is_mode_command, mode_command
from .render import JsonRenderer, TerminalRenderer, isatty
from .rewind_command import is_rewind_command, rewind_command

if TYPE_CHECKING:  # the terminal front end (prompt_toolkit, rich) is imported only when used
    from .tty import PromptLines, Status, TtyRenderer

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_ABORTED = 0, 1, 2, 130
OFFLINE_PROVIDER = "local/"
OFFLINE_NOTICE = ("tiller: on the small offline model ({model}: text only, no tools). For a real model set "
                  "ANTHROPIC_API_KEY or OPENAI_API_KEY, or see README.md#using-real-providers")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", nargs="?", help="one prompt to run; without it, chat interactively")
    parser.add_argument("--model", help='"provider/modelId" (default: the server\'s, else the local model)')
    parser.add_argument("--json", action="store_true", help="print every agent/event notification as one JSON line")
    parser.add_argument("--cwd", help="the workspace: rootUri and the session's cwd (default: the current directory)")
    parser.add_argument("--verbose", action="store_true", help="pass the server's log (stderr) through")
    parser.add_argument("--approval-mode", choices=APPROVAL_MODES,
                        help="how edits, writes and commands are approved (default: the server's, ask); "
                             "plan changes nothing")
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
                  resume=args.resume, approval_mode=args.approval_mode)
    return asyncio.run(app.main())


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
                 resume: str | None = None, approval_mode: str | None = None) -> None:
        self.prompt_text = prompt
        self.approval_mode = approval_mode
        self.resume = resume  # None: a new session; "": the latest of cwd; else an id
        self.model = model
        self.cwd = cwd
        self.verbose = verbose
        self.stdin_fd = stdin_fd
        self.server_command = server_command
        # On a terminal (both ends, not --json): markdown, a line editor, approvals asked.
        self.tty = not json_mode and out is None and stdin_fd == 0 and isatty(sys.stdin) and isatty(sys.stdout)
        out, err = out or sys.stdout, err or sys.stderr
        self.ui: TerminalRenderer = JsonRenderer(out, err) if json_mode else TerminalRenderer(out, err)
        self.status: Status | None = None
        self.prompt_lines: PromptLines | None = None
        if self.tty:
            from .tty import Status, TtyRenderer

            self.status = Status(model or "")
            self.ui = TtyRenderer(self.status)
        self._approvals: collections.deque[dict[str, Any]] = collections.deque()
        self._approval_arrived = asyncio.Event()
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
            withhold_secrets_from_a_launcher()  # the server holds the keys now; bash is our grandchild
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
        # Approvals are asked only where someone can answer them: on a terminal.
        await self.client.initialize(self.cwd, approvals=self.tty)
        if self.resume is not None:
            session = await self._resume_session()
        else:
            session = await self.client.new_session(cwd=self.cwd, model=self.model, approval_mode=self.approval_mode)
        self.session_id, self.session_model = session["sessionId"], session["model"]
        if self.session_model.startswith(OFFLINE_PROVIDER):
            self.ui.notice(OFFLINE_NOTICE.format(model=self.session_model))
        if self.status is not None:
            await self._start_status()

    async def _start_status(self) -> None:
        assert self.client is not None and self.status is not None
        self.status.model = self.session_model
        found = await self.client.request("agent/listModels", {"query": self.session_model, "all": True})
        models = found.get("models") or []
        known = next((m for m in models if f"{m.get('provider')}/{m.get('id')}" == self.session_model), None)
        self.status.context_window = int((known or {}).get("contextWindow") or 0)
        from .tty import PromptLines, history_path

        self.prompt_lines = PromptLines(self.status, self._on_sigint, history_path())

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
        if self.approval_mode:
            await self.client.request("agent/setApprovalMode", {"sessionId": session_id, "mode": self.approval_mode})
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
        elif event.get("type") == "approval_request" and self.tty:
            self._approvals.append(event)
            self._approval_arrived.set()
        self.ui.event(params)

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "window/showMessage" and isinstance(params, dict):
            self.ui.notice(f"server: {params.get('message', '')}")
        elif method == "window/logMessage" and self.verbose and isinstance(params, dict):
            self.ui.notice(f"server log: {params.get('message', '')}")

    def _on_sigint(self) -> None:
        if self._run is not None and not self._run.done() and not self._aborting:
            self._aborting = True
            # Deltas may still arrive until the abort lands: a newline here would split the
            # reply in a redirected stdout. On a terminal it keeps the notice on its own line.
            if self.ui.color:
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
        result = await self._run_prompt(text, self.prompt_lines)
        if result is None:
            return EXIT_ABORTED
        return self._report(result)

    async def _interactive(self) -> int:
        lines: StdinLines | PromptLines = self.prompt_lines or StdinLines(self.stdin_fd)
        tty = isatty(sys.stdin) if self.stdin_fd == 0 else False
        if tty:
            self.ui.notice(f"tiller chat · {self.session_model} · {self.cwd}\n"
                           "Enter sends; typing while a reply streams steers it; Ctrl-C aborts; Ctrl-D quits.")
        while True:
            if tty:
                self.ui.prompt_marker()
            if self.prompt_lines is not None:
                self.prompt_lines.streaming = False
            line = await self._next_line(lines)
            if line is None:
                return EXIT_OK
            if not line.strip():
                continue
            if is_rewind_command(line) and self.client is not None:
                await rewind_command(self.client, self.session_id, line, self.ui)
                continue
            if is_mode_command(line) and self.client is not None:
                await mode_command(self.client, self.session_id, line, self.ui)
                continue
            result = await self._run_prompt(line, lines)
            if result is None:
                return EXIT_ABORTED
            self._report(result)
            if not await self._after_run(result, lines):
                return EXIT_ABORTED

    async def _next_line(self, lines: StdinLines | PromptLines) -> str | None:
        """The next line typed at the idle prompt; None at EOF or Ctrl-C."""
        get = asyncio.ensure_future(lines.get())
        return get.result() if await self._until_quit(get) else None

    async def _run_prompt(self, text: str, lines: StdinLines | PromptLines | None) -> dict[str, Any] | None:
        """One `agent/prompt`; lines typed meanwhile are steering, approvals are asked as
        they come. None if the user quit."""
        assert self.client is not None
        if self.prompt_lines is not None:
            self.prompt_lines.streaming = True
        run = asyncio.ensure_future(self.client.prompt(self.session_id, text))
        self._run, self._aborting = run, False
        quit_wait = asyncio.ensure_future(self._quit.wait())
        approval_wait = asyncio.ensure_future(self._approval_arrived.wait())
        line_wait: asyncio.Future[str | None] | None = None
        try:
            while not run.done():
                waits: set[asyncio.Future[Any]] = {run, quit_wait, approval_wait}
                if lines is not None and not lines.at_eof and not self._aborting:
                    if line_wait is None:
                        line_wait = asyncio.ensure_future(lines.get())
                    waits.add(line_wait)
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if quit_wait.done():
                    return None
                if approval_wait.done() and self.prompt_lines is not None:
                    if line_wait is not None:  # the steering prompt makes way for the question
                        line_wait.cancel()
                        await asyncio.wait([line_wait])
                        line_wait = None
                    await self._answer_approvals(self.prompt_lines)
                    approval_wait = asyncio.ensure_future(self._approval_arrived.wait())
                    continue
                if line_wait is not None and line_wait.done():
                    line, line_wait = line_wait.result(), None
                    if line is not None and self._aborting and lines is not None:
                        lines.unget(line)  # typed after Ctrl-C: the next prompt, not steering
                    elif line is not None and line.strip():
                        await self._steer(line)
            return run.result()
        finally:
            quit_wait.cancel()
            approval_wait.cancel()
            if line_wait is not None:
                typed = line_wait.result() if line_wait.done() and not line_wait.cancelled() else None
                if typed is not None and lines is not None:
                    lines.unget(typed)  # typed as the run ended
                line_wait.cancel()
                await asyncio.wait([line_wait])  # the steering prompt is gone before what follows
            self._run = None

    async def _answer_approvals(self, lines: PromptLines) -> None:
        """Ask each pending approval on the terminal and send the answer; Ctrl-C rejects."""
        from . import approval_prompt

        assert self.client is not None
        self._approval_arrived.clear()
        while self._approvals:
            event = self._approvals.popleft()
            self.ui.end_line()
            self._tty_ui().show(approval_prompt.describe(event))
            options = event.get("options") or []
            answer = await self._approval_answer(lines, options)
            try:
                await self.client.request("agent/respondApproval", {
                    "sessionId": self.session_id, "approvalId": event.get("approvalId"),
                    "optionId": approval_prompt.option_for(answer.option_id, options),
                    **({"message": answer.message} if answer.message else {}),
                })
            except RpcError as error:  # answered elsewhere, or cancelled by an abort
                self.ui.notice(f"approval not sent: {error.message}")

    def _tty_ui(self) -> TtyRenderer:
        from .tty import TtyRenderer

        assert isinstance(self.ui, TtyRenderer)
        return self.ui

    async def _approval_answer(self, lines: PromptLines, options: list[dict[str, Any]]) -> Any:
        from . import approval_prompt

        while True:
            typed = await lines.ask(approval_prompt.question(options))
            if typed is None:  # Ctrl-C / Ctrl-D
                self.ui.notice("rejected")
                return approval_prompt.Answer("reject_once")
            parsed = approval_prompt.parse(typed, options)
            if parsed is None:
                continue
            kind, wants_reason = parsed
            if wants_reason:
                reason = await lines.ask(approval_prompt.REASON_QUESTION)
                return approval_prompt.Answer(kind, (reason or "").strip() or None)
            return approval_prompt.Answer(kind)

    async def _steer(self, line: str) -> None:
        assert self.client is not None
        self.ui.end_line()
        self.ui.notice(f"↳ steering: {line}")
        await self.client.steer(self.session_id, line)

    async def _after_run(self, result: dict[str, Any], lines: StdinLines | PromptLines | None) -> bool:
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

