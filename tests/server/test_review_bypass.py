"""Review cannot be bypassed: protected paths always ask (but in yolo), tiller's data directory
is never written, a path swapped for a symlink during the approval is not followed, and a
hard link cannot show or change a file outside the workspace."""

from __future__ import annotations

import os

import pytest

from .harness import editor_capabilities, one_call_per_turn, reply, result_text, text, tool_call, tool_results

APPROVALS = editor_capabilities(approvals=True)

PROTECTED = [".git/config", ".git/hooks/pre-commit", "sub/.git/config", ".vscode/tasks.json", ".vscode/launch.json",
             ".tiller/rules.toml", ".envrc", ".bashrc", "home/.zshrc", ".idea/runConfigurations/x.xml",
             ".nvim.lua", ".config/git/config"]


async def test_protected_paths_ask_even_in_accept_edits(start_tiller, workspace):
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n")
    calls = [tool_call("write", {"path": path, "content": "x = 1\n"}, id=f"w{n}") for n, path in enumerate(PROTECTED)]
    calls.append(tool_call("write", {"path": "ordinary.txt", "content": "fine\n"}, id="plain"))
    client = await start_tiller(one_call_per_turn(*calls), capabilities=APPROVALS)
    session = await client.new_session(approvalMode="acceptEdits")
    prompt = client.prompt(session, "configure things")
    for n, path in enumerate(PROTECTED):
        request = await client.wait_approval(session, n + 1)
        assert request["path"] == str(workspace / path) and request["toolCallId"] == f"w{n}"
        assert "(" in request["title"]  # says why it asks
        await client.respond(session, request["approvalId"], "reject_once")
    results = tool_results(await prompt.result())
    assert all(results[f"w{n}"]["isError"] for n in range(len(PROTECTED)))
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists() and not (workspace / ".envrc").exists()
    # An ordinary file still goes through without asking in acceptEdits.
    assert results["plain"]["isError"] is False and (workspace / "ordinary.txt").read_text() == "fine\n"
    assert len(client.events_of(session, "approval_request")) == len(PROTECTED)


async def test_always_allow_does_not_cover_protected_paths_and_yolo_does(start_tiller, workspace):
    client = await start_tiller(one_call_per_turn(
        tool_call("write", {"path": ".git/config", "content": "a\n"}, id="first"),
        tool_call("write", {"path": ".git/hooks/post-checkout", "content": "b\n"}, id="second"),
        tool_call("write", {"path": "plain.txt", "content": "c\n"}, id="plain"),
    ), capabilities=APPROVALS)
    session = await client.new_session()
    prompt = client.prompt(session, "go")
    first = await client.wait_approval(session, 1)
    await client.respond(session, first["approvalId"], "allow_always")
    second = await client.wait_approval(session, 2)
    assert second["toolCallId"] == "second"  # asked again, though write is "always allowed"
    await client.respond(session, second["approvalId"], "allow_once")
    results = tool_results(await prompt.result())
    assert not any(r["isError"] for r in results.values())
    assert len(client.events_of(session, "approval_request")) == 2  # plain.txt did not ask

    client2 = await start_tiller(one_call_per_turn(tool_call("write", {"path": ".git/config", "content": "y\n"})),
                                 capabilities=APPROVALS)
    yolo = await client2.new_session(approvalMode="yolo")
    await client2.request("agent/prompt", {"sessionId": yolo, "text": "go"})
    assert (workspace / ".git" / "config").read_text() == "y\n" and not client2.events_of(yolo, "approval_request")


async def test_the_data_directory_is_never_written_by_tools_in_any_mode(start_tiller, workspace):
    data_dir = workspace / ".local" / "share" / "tiller"  # the user opened their home folder
    client = await start_tiller(one_call_per_turn(
        tool_call("read", {"path": "notes.txt"}, id="prime"),
    ), capabilities=APPROVALS, initialization_options={"dataDir": str(data_dir)})
    (workspace / "notes.txt").write_text("n\n")
    first = await client.new_session(approvalMode="yolo")
    await client.request("agent/prompt", {"sessionId": first, "text": "read"})
    session_file = data_dir / "sessions" / f"{first}.jsonl"
    before = session_file.read_text()
    relative = str(session_file.relative_to(workspace))

    attacker = await start_tiller(one_call_per_turn(
        tool_call("write", {"path": relative, "content": '{"type":"settings","approvalMode":"yolo"}\n'}, id="w"),
        tool_call("edit", {"path": relative, "oldText": '{"type":"session"', "newText": '{"type":"x"'}, id="e"),
        tool_call("write", {"path": str(data_dir / "sessions" / "new.jsonl"), "content": "{}\n"}, id="new"),
        tool_call("bash", {"command": f"echo '{{}}' >> {relative}"}, id="sh"),  # a redirection is a write too
    ), capabilities=APPROVALS, initialization_options={"dataDir": str(data_dir)})
    session = await attacker.new_session(approvalMode="yolo")
    results = tool_results(await attacker.request("agent/prompt", {"sessionId": session, "text": "widen"}))
    for call_id in ("w", "e", "new", "sh"):
        assert results[call_id]["isError"] and "tiller's data directory" in result_text(results[call_id])
    assert session_file.read_text() == before and not (data_dir / "sessions" / "new.jsonl").exists()


async def test_a_directory_swapped_for_a_symlink_during_approval_is_not_followed(start_tiller, workspace, tmp_path):
    (workspace / "sub").mkdir()
    (workspace / "sub" / "target.txt").write_text("old\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.txt").write_text("old\n")
    client = await start_tiller([
        reply(tool_call("write", {"path": "sub/deep/file.txt", "content": "payload\n"}, id="w")), reply(text("ok")),
        reply(tool_call("edit", {"path": "sub/target.txt", "oldText": "old", "newText": "new"}, id="e")),
        reply(text("ok")),
    ], capabilities=APPROVALS)
    session = await client.new_session()

    for n, call_id in enumerate(("w", "e"), 1):
        prompt = client.prompt(session, "change it")
        request = await client.wait_approval(session, n)
        # While the user looks at the approval, sub/ becomes a link to a directory outside.
        (workspace / "sub").rename(workspace / "sub-real")
        (workspace / "sub").symlink_to(outside)
        await client.respond(session, request["approvalId"], "allow_once")
        result = tool_results(await prompt.result())[call_id]
        assert result["isError"] and "changed" in result_text(result), result_text(result)
        (workspace / "sub").unlink()
        (workspace / "sub-real").rename(workspace / "sub")
    assert sorted(p.name for p in outside.iterdir()) == ["target.txt"]
    assert (outside / "target.txt").read_text() == "old\n"
    assert (workspace / "sub" / "target.txt").read_text() == "old\n"


async def test_a_hard_link_to_a_file_outside_is_neither_read_nor_written(start_tiller, workspace, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("outside secret\n")
    os.link(outside, workspace / "innocent.txt")
    client = await start_tiller(one_call_per_turn(
        tool_call("read", {"path": "innocent.txt"}, id="read"),
        tool_call("edit", {"path": "innocent.txt", "oldText": "outside", "newText": "changed"}, id="edit"),
        tool_call("write", {"path": "innocent.txt", "content": "overwritten\n"}, id="write"),
        tool_call("grep", {"pattern": "secret", "path": "innocent.txt"}, id="grep"),
    ))
    session = await client.new_session(approvalMode="yolo")
    answer = await client.request("agent/prompt", {"sessionId": session, "text": "look"})
    results = tool_results(answer)
    for call_id in ("read", "edit", "write", "grep"):
        text = result_text(results[call_id])
        assert results[call_id]["isError"] and "2 hard links" in text and "outside secret" not in text, text
    assert outside.read_text() == "outside secret\n"
    assert "outside secret" not in str(client.received)


@pytest.mark.parametrize("path", [".git/config", ".envrc"])
async def test_protected_paths_are_refused_to_a_client_that_shows_no_approvals(start_tiller, workspace, path):
    client = await start_tiller(one_call_per_turn(tool_call("write", {"path": path, "content": "x\n"}, id="w")))
    session = await client.new_session(approvalMode="acceptEdits")
    results = tool_results(await client.request("agent/prompt", {"sessionId": session, "text": "go"}))
    assert results["w"]["isError"] and not (workspace / path).exists()
