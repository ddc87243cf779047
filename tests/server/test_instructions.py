"""Project instructions: AGENTS.md (else CLAUDE.md) from the user's config directory and from
the workspace root down to a nested cwd join the system prompt, nearest last; the session says
which it loaded, and picks up a change at the next prompt."""

from __future__ import annotations

import json

from tests.support.sse_server import Reply, SSEServer

from .harness import openai_env, openai_text


async def test_agents_md_from_the_workspace_root_down_to_a_nested_cwd(start_tiller, tmp_path, workspace):
    (tmp_path / "AGENTS.md").write_text("Outside the workspace: never read.")
    user_dir = tmp_path / "xdg-config" / "tiller"
    user_dir.mkdir(parents=True)
    (user_dir / "AGENTS.md").write_text("User rules: answer in English.")
    (workspace / "AGENTS.md").write_text("Root rules: run the tests.")
    pkg = workspace / "pkg"
    cwd = pkg / "sub"
    cwd.mkdir(parents=True)
    (pkg / "CLAUDE.md").write_text("Pkg rules: no new dependencies.")
    (cwd / "AGENTS.md").write_text("Sub rules: keep functions short.")
    (cwd / "CLAUDE.md").write_text("Sub CLAUDE.md: ignored while AGENTS.md is there.")
    expected = [(str(user_dir / "AGENTS.md"), "user"), (str(workspace / "AGENTS.md"), "project"),
                (str(pkg / "CLAUDE.md"), "project"), (str(cwd / "AGENTS.md"), "project")]

    with SSEServer() as server:
        server.reply(*(Reply(chunks=openai_text("Ok.")) for _ in range(3)))
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/test-model"})
        session = await client.new_session(cwd=str(cwd), tools=[], systemPrompt="Base prompt.")
        [loaded] = client.events_of(session, "instructions_loaded")
        assert [(f["path"], f["scope"]) for f in loaded["files"]] == expected
        state = await client.request("agent/getState", {"sessionId": session})
        assert state["instructions"] == loaded["files"]

        await client.prompt(session, "Hi").result()
        system = server.requests[0].json["messages"][0]["content"]
        assert system.startswith("Base prompt.\n\n# Project instructions")
        order = [system.index(text) for text in ("User rules", "Root rules", "Pkg rules", "Sub rules")]
        assert order == sorted(order)
        assert "Outside the workspace" not in system and "Sub CLAUDE.md" not in system

        # A change is picked up at the next prompt, and announced.
        (pkg / "CLAUDE.md").write_text("Pkg rules, revised: one dependency allowed.")
        (cwd / "AGENTS.md").unlink()
        await client.prompt(session, "Again").result()
        system = server.requests[1].json["messages"][0]["content"]
        assert "Pkg rules, revised" in system and "Sub CLAUDE.md: ignored" in system and "Sub rules" not in system
        reloaded = client.events_of(session, "instructions_loaded")[-1]
        assert [f["path"] for f in reloaded["files"]][-1] == str(cwd / "CLAUDE.md")

        # Nothing changed: no new event, the same prompt.
        await client.prompt(session, "Once more").result()
        assert len(client.events_of(session, "instructions_loaded")) == 2
        assert server.requests[2].json["messages"][0]["content"] == system

    # The session file records the base prompt: the instructions are read afresh on load.
    header = json.loads((tmp_path / "tiller-data" / "sessions" / f"{session}.jsonl").read_text().splitlines()[0])
    assert header["systemPrompt"] == "Base prompt."


async def test_no_instruction_files_no_event(start_tiller, workspace):
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("Ok.")))
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/test-model"})
        session = await client.new_session(tools=[], systemPrompt="Just this.")
        await client.prompt(session, "Hi").result()
    assert client.events_of(session, "instructions_loaded") == []
    assert server.requests[0].json["messages"][0]["content"] == "Just this."


async def test_instruction_files_stay_inside_the_workspace_and_are_read_only_in_part(start_tiller, tmp_path, workspace):
    secret = tmp_path / "outside-secret.txt"
    secret.write_text("OUTSIDE=do-not-send")
    (workspace / "AGENTS.md").symlink_to(secret)  # a cloned repository could ship this link
    (workspace / "CLAUDE.md").write_text("Root rules, in CLAUDE.md.")
    pkg = workspace / "pkg"
    pkg.mkdir()
    (pkg / "RULES.md").write_text("Pkg rules, kept under another name.")
    (pkg / "CLAUDE.md").symlink_to(pkg / "RULES.md")  # a link within the project is fine
    big = workspace / "big"
    big.mkdir()
    (big / "AGENTS.md").write_text("Big rules. " + "x" * 5_000_000)

    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("Ok.")), Reply(chunks=openai_text("Ok.")))
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/test-model"})
        session = await client.new_session(cwd=str(pkg), tools=[], systemPrompt="Base.")
        await client.prompt(session, "Hi").result()
        system = server.requests[0].json["messages"][0]["content"]
        [loaded] = client.events_of(session, "instructions_loaded")
        assert [f["path"] for f in loaded["files"]] == [str(workspace / "CLAUDE.md"), str(pkg / "CLAUDE.md")]
        assert "do-not-send" not in system
        assert "Root rules, in CLAUDE.md." in system and "Pkg rules, kept under another name." in system

        big_session = await client.new_session(cwd=str(big), tools=[], systemPrompt="Base.")
        await client.prompt(big_session, "Hi").result()
        system = server.requests[1].json["messages"][0]["content"]
        assert "Big rules." in system and len(system) < 40_000
        assert system.endswith("[… cut here: only the first 32000 characters of this 5000011-byte file are shown]")


async def test_the_default_prompt_follows_a_model_change_into_the_next_run(start_tiller, workspace):
    (workspace / "AGENTS.md").write_text("Root rules: run the tests.")
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("Ok.")))
        client = await start_tiller(env=openai_env(server))
        session = await client.new_session(model="local/smollm2-135m", tools=[])  # text-only: its own prompt
        await client.request("agent/setModel", {"sessionId": session, "model": "openai/test-model"})
        await client.prompt(session, "Hi").result()
    system = server.requests[0].json["messages"][0]["content"]
    assert system.startswith("You are tiller, a coding agent") and "Root rules: run the tests." in system
