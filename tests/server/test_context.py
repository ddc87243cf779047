"""Editor context: the model sees the editor's unsaved buffer, not the file on disk."""

from __future__ import annotations

import json

import pytest
from lsprotocol import types

from tests.support.sse_server import Reply, SSEServer

from .harness import editor_capabilities, openai_env, openai_text, reply, text


def position(line: int, character: int) -> dict:
    return {"line": line, "character": character}


async def test_the_model_sees_the_unsaved_buffer_selection_not_the_disk(start_tiller, workspace):
    source = workspace / "app.py"
    source.write_text("def on_disk():\n    return 'DISK VERSION'\n")
    notes = workspace / "notes.md"
    notes.write_text("Only on disk: NOTES_ON_DISK\n")
    uri = source.as_uri()

    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("Looks fine.")))
        client = await start_tiller(env=openai_env(server))
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1,
                text="def unsaved():\n    return 'BUFFER VERSION'\n# trailing line\n",
            )
        ))
        # An incremental edit, as VS Code sends while the user types: BUFFER -> EDITED.
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(1, 12), end=types.Position(1, 18)), text="EDITED",
            )],
        ))
        session = await client.new_session(model="openai/test-model", tools=[])
        answer = await client.request("agent/prompt", {
            "sessionId": session,
            "text": "Explain this",
            "context": [
                {"uri": uri, "range": {"start": position(1, 4), "end": position(1, 29)}},
                {"uri": notes.as_uri()},  # not open in the editor: read from disk
            ],
        })

    assert answer["stopReason"] == "stop"
    sent = json.dumps(server.requests[0].json["messages"][-1])  # the user message the model got
    assert "Explain this" in sent
    assert "return 'EDITED VERSION'" in sent  # the selection, from the edited buffer
    assert "DISK VERSION" not in sent and "BUFFER VERSION" not in sent
    assert "def unsaved" not in sent and "trailing line" not in sent  # only the selected range
    assert "NOTES_ON_DISK" in sent
    # The user message in the transcript carries the same attachments.
    user = answer["newMessages"][0]
    assert user["role"] == "user" and "EDITED VERSION" in json.dumps(user["content"])


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
async def test_selection_ranges_count_in_the_negotiated_position_encoding(start_tiller, workspace, encoding):
    before, selected = "总结😀 ", "pick me ✓ 👍"
    line = f"{before}{selected} rest"

    codec, width = {"utf-8": ("utf-8", 1), "utf-16": ("utf-16-le", 2), "utf-32": ("utf-32-le", 4)}[encoding]

    def units(value: str) -> int:
        return len(value.encode(codec)) // width

    selection = {"start": position(1, units(before)), "end": position(1, units(before + selected))}
    open_file, closed_file = workspace / "open.txt", workspace / "closed.txt"
    closed_file.write_text(f"first\n{line}\n")
    capabilities = editor_capabilities()
    capabilities.general.position_encodings = [encoding]
    client = await start_tiller([reply(text("ok"))], capabilities=capabilities)
    assert client.initialize_result.capabilities.position_encoding == encoding
    client.open_document(open_file, f"first\n{line}\n")
    session = await client.new_session(tools=[])
    answer = await client.prompt(session, "look", context=[
        {"uri": open_file.as_uri(), "range": selection},  # from the synced buffer
        {"uri": closed_file.as_uri(), "range": selection},  # from the disk
    ]).result()

    blocks = [block["text"] for block in answer["newMessages"][0]["content"][1:]]
    assert [block.split("\n")[2] for block in blocks] == [selected, selected]
    assert all("(selection, lines 2-2)" in block for block in blocks)
