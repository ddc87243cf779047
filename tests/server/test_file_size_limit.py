"""A file-size limit (`ulimit -f`) does not kill the server: the append that would pass it
fails, the session file is cut back to its last whole record, a persistence_error says so,
and the session goes on with every message in memory."""

from __future__ import annotations

import asyncio
import json
import resource
import sys
from pathlib import Path

from tests.support.raw_lsp import RawServer

from .harness import faux_script, reply, server_env, text

LIMIT = 256 * 1024  # bytes: room for the session's first lines and the shadow repository


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


async def test_a_reply_past_the_file_size_limit_is_reported_and_the_server_goes_on(tmp_path: Path, workspace: Path):
    script = faux_script(tmp_path / "faux.json", [reply(text("x" * (LIMIT + 1000))), reply(text("Short."))],
                         chunk_chars=65536)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tiller", "serve", env=server_env(tmp_path, TILLER_FAUX_SCRIPT=script),
        cwd=str(workspace), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, limit=256 * 1024 * 1024, preexec_fn=limited,
    )
    server = RawServer(process)
    try:
        assert "result" in await server.initialize(workspace)
        session = (await server.request("agent/newSession", {"approvalMode": "yolo"}))["result"]["sessionId"]
        first = await server.request("agent/prompt", {"sessionId": session, "text": "a long one"})
        assert first["result"]["stopReason"] == "stop"
        errors = [m["params"]["event"] for m in server.received
                  if m.get("method") == "agent/event" and m["params"]["event"]["type"] == "persistence_error"]
        assert errors and "File too large" in errors[0]["message"]
        second = await server.request("agent/prompt", {"sessionId": session, "text": "and a short one"})
        assert second["result"]["stopReason"] == "stop" and process.returncode is None  # still serving
        state = (await server.request("agent/getState", {"sessionId": session}))["result"]
        assert [m["role"] for m in state["messages"]] == ["user", "assistant", "user", "assistant"]
        # The file holds whole records only: the one that did not fit was cut back.
        saved = (tmp_path / "tiller-data" / "sessions" / f"{session}.jsonl").read_text()
        assert saved.endswith("\n") and all(json.loads(line) for line in saved.splitlines())
        assert await server.shutdown() == 0
    finally:
        await server.close()
