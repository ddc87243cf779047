"""Corrupt session files: every usable line is used, every unusable one skipped, and no file
breaks listing or loading of the others. A reload never widens the approval mode."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from .harness import FAUX, reply, text


def user(text: str, timestamp: int = 1_700_000_000_000) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": text}],
                                           "timestamp": timestamp}}


def header(cwd: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "session", "version": 1, "id": "x", "cwd": cwd, "created": 1_700_000_000_000,
            "model": FAUX, **extra}


def write_session(data_dir: Path, session_id: str, *lines: Any) -> Path:
    sessions = data_dir / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    path = sessions / f"{session_id}.jsonl"
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


async def test_corrupt_files_are_skipped_line_by_line_and_never_break_the_others(start_tiller, workspace, tmp_path):
    data = tmp_path / "tiller-data"
    cwd = str(workspace)
    write_session(data, "good", header(cwd), user("a good session"))
    write_session(data, "number", header(cwd), "123", '"text"', "[1, 2]", "null", user("after junk lines"))
    write_session(data, "nullmodel", header(cwd), user("settings with nulls"),
                  {"type": "settings", "model": None, "thinkingLevel": 7, "approvalMode": None})
    write_session(data, "junkfirst", "[1, 2]", "{not json", header(cwd), user("header after junk"))
    write_session(data, "badcwd", header(5), user("cwd is a number"))
    write_session(data, "relcwd", header("some/relative/dir"), user("cwd is relative"))
    write_session(data, "noheader", user("no header at all"))
    (data / "sessions" / "empty.jsonl").write_bytes(b"")
    (data / "sessions" / "blank.jsonl").write_bytes(b"\n\n  \n")
    os.mkfifo(data / "sessions" / "fifo.jsonl")

    client = await start_tiller([reply(text("Going on."))])
    listed = (await client.request("agent/listSessions"))["sessions"]
    assert sorted(s["sessionId"] for s in listed) == ["good", "junkfirst", "nullmodel", "number"]
    assert {s["sessionId"]: s["title"] for s in listed}["number"] == "after junk lines"

    for session_id in ("good", "number", "nullmodel", "junkfirst"):
        loaded = await client.request("agent/loadSession", {"sessionId": session_id})
        assert loaded["messageCount"] == 1 and loaded["model"] == FAUX
    state = await client.request("agent/getState", {"sessionId": "nullmodel"})
    assert state["thinkingLevel"] == "off" and state["approvalMode"] == "ask"

    for session_id, why in [("badcwd", "cwd is not an absolute path"), ("relcwd", "cwd is not an absolute path"),
                            ("noheader", "holds no session header"), ("empty", "is empty"),
                            ("blank", "is empty")]:
        with pytest.raises(JsonRpcException) as raised:
            await client.request("agent/loadSession", {"sessionId": session_id})
        assert raised.value.code == -32005 and why in raised.value.message, raised.value.message
    with pytest.raises(JsonRpcException) as raised:
        await client.request("agent/loadSession", {"sessionId": "fifo"})
    assert raised.value.code == -32001  # not a regular file: no saved session by that name

    # Prompting a session loaded from a damaged file appends to it and it reloads.
    answer = await client.request("agent/prompt", {"sessionId": "number", "text": "go on"})
    assert answer["stopReason"] == "stop"


@pytest.mark.parametrize(("recorded", "later", "expected"), [
    ("ask", "yolo", "ask"),  # a line appended by someone who could write the file
    ("ask", "acceptEdits", "ask"),
    ("acceptEdits", "yolo", "acceptEdits"),
    ("acceptEdits", "ask", "ask"),  # narrowing is always kept
    ("yolo", "acceptEdits", "acceptEdits"),
    (None, "yolo", "ask"),  # no record in the header: the strictest mode
    ("sudo", "yolo", "ask"),
])
async def test_a_reload_never_widens_the_approval_mode_beyond_the_header(start_tiller, workspace, tmp_path,
                                                                          recorded, later, expected):
    extra = {"approvalMode": recorded} if recorded is not None else {}
    write_session(tmp_path / "tiller-data", "s1", header(str(workspace), **extra), user("hello"),
                  {"type": "settings", "model": FAUX, "thinkingLevel": "off", "approvalMode": later})
    client = await start_tiller()
    assert (await client.request("agent/loadSession", {"sessionId": "s1"}))["approvalMode"] == expected


async def test_the_header_records_the_approval_mode_tiller_created_the_file_with(start_tiller, tmp_path):
    client = await start_tiller([reply(text("Hello."))])
    session = await client.new_session(tools=[], approvalMode="acceptEdits")
    await client.request("agent/prompt", {"sessionId": session, "text": "hi"})
    await client.request("agent/setApprovalMode", {"sessionId": session, "mode": "yolo"})
    lines = (tmp_path / "tiller-data" / "sessions" / f"{session}.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["approvalMode"] == "acceptEdits"
    await client.request("agent/closeSession", {"sessionId": session})
    reloaded = await client.request("agent/loadSession", {"sessionId": session})
    assert reloaded["approvalMode"] == "acceptEdits"  # yolo was chosen later: choose it again
