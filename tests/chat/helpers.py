"""Running the real `tiller chat` (which runs the real `tiller serve`) with a faux model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Generous: a guard against hangs, never a performance assertion.
PATIENCE = 60.0


def chat_env(script: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.endswith("_BASE_URL")}
    env["TILLER_MODEL"] = "faux/faux-1"
    # Saved sessions go next to the script (a test's tmp_path), never to the user's data dir.
    env["TILLER_DATA_DIR"] = str(Path(script).parent / "data") if script else tempfile.mkdtemp(prefix="tiller-chat-test-")
    env.pop("TILLER_FAUX_SCRIPT", None)
    if script is not None:
        env["TILLER_FAUX_SCRIPT"] = script
    env.update(extra)
    return env


def write_script(tmp_path: Path, responses: list[dict[str, Any]], *, chunk_chars: int = 3, delay_ms: float = 0,
                 name: str = "script.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"chunkChars": chunk_chars, "delayMs": delay_ms, "responses": responses}))
    return str(path)


def text_reply(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


def run_chat(*args: str, script: str | None, cwd: Path | None = None, input: str | None = None,
             timeout: float = PATIENCE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tiller", "chat", *args], capture_output=True, text=True, encoding="utf-8",
        env=chat_env(script), cwd=cwd, input=input, timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL,
    )


class ChatProcess:
    """`tiller chat` with piped stdin; stdout and stderr collected by threads as they arrive."""

    def __init__(self, *args: str, script: str, cwd: Path | None = None, **env: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tiller", "chat", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=chat_env(script, **env), cwd=cwd,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._changed = threading.Condition()
        self._pumps = [threading.Thread(target=self._pump, args=(stream, sink), daemon=True)
                       for stream, sink in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for pump in self._pumps:
            pump.start()

    def _pump(self, stream: Any, sink: list[str]) -> None:
        # Small reads so a partial line (a streamed delta) is seen as soon as it is written.
        decoder_buffer = b""
        while chunk := os.read(stream.fileno(), 4096):
            decoder_buffer += chunk
            try:
                text = decoder_buffer.decode("utf-8")
            except UnicodeDecodeError:
                continue
            decoder_buffer = b""
            with self._changed:
                sink.append(text)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def stdout(self) -> str:
        with self._changed:
            return "".join(self.out)

    @property
    def stderr(self) -> str:
        with self._changed:
            return "".join(self.err)

    def wait_for(self, predicate: Callable[[], bool], what: str, timeout: float = PATIENCE) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: predicate() or self.proc.poll() is not None, timeout):
                raise AssertionError(f"timed out waiting for {what}\nstdout: {''.join(self.out)!r}\n"
                                     f"stderr: {''.join(self.err)!r}")
        if not predicate():
            # The process ended: collect all it wrote, then decide.
            for pump in self._pumps:
                pump.join(timeout)
            if not predicate():
                raise AssertionError(f"chat exited ({self.proc.returncode}) before {what}\n"
                                     f"stdout: {''.join(self.out)!r}\nstderr: {''.join(self.err)!r}")

    def wait_stdout(self, needle: str, count: int = 1) -> None:
        self.wait_for(lambda: "".join(self.out).count(needle) >= count, f"{needle!r} x{count} on stdout")

    def wait_stderr(self, needle: str, count: int = 1) -> None:
        self.wait_for(lambda: "".join(self.err).count(needle) >= count, f"{needle!r} x{count} on stderr")

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait(self, timeout: float = PATIENCE) -> int:
        code = self.proc.wait(timeout)
        for pump in self._pumps:  # everything written has been collected
            pump.join(timeout)
        return code

    def json_events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
