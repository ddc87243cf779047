"""Command rules end to end: the real server, a scripted model, real settings files, real bash."""

from __future__ import annotations

import json

import pytest
from pygls.exceptions import JsonRpcException

from .harness import editor_capabilities, one_call_per_turn, result_text, tool_call, tool_results

APPROVALS = editor_capabilities(approvals=True)


def user_settings(tmp_path):
    return tmp_path / "xdg-config" / "tiller" / "settings.json"  # XDG_CONFIG_HOME of server_env


def write_user_rules(tmp_path, **commands) -> None:
    path = user_settings(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"commands": commands}))


async def test_a_denied_command_is_refused_without_asking_even_in_yolo(start_tiller, workspace, tmp_path):
    write_user_rules(tmp_path, deny=["rm -rf *"])
    (workspace / "keep").mkdir()
    client = await start_tiller(one_call_per_turn(
        tool_call("bash", {"command": "echo start && bash -c 'rm -fr keep'"}, id="b1"),
    ), capabilities=APPROVALS)
    session = await client.new_session(approvalMode="yolo")
    answer = await client.prompt(session, "clean up").result()

    result = tool_results(answer)["b1"]
    assert result["isError"] is True
    assert result_text(result).startswith("Not run: the deny rule `rm -rf *` (your settings) denies it.")
    assert client.events_of(session, "approval_request") == []
    assert (workspace / "keep").is_dir()


async def test_an_allowed_command_runs_without_asking_and_the_rest_still_ask(start_tiller, workspace, tmp_path):
    write_user_rules(tmp_path, allow=["echo *", "touch *"])
    client = await start_tiller(one_call_per_turn(
        tool_call("bash", {"command": "timeout 5 touch made-by-rule && echo ok"}, id="b1"),
        tool_call("bash", {"command": "touch asked"}, id="b2"),
        tool_call("bash", {"command": "mkdir asked-dir"}, id="b3"),
    ), capabilities=APPROVALS)
    session = await client.new_session()
    prompt = client.prompt(session, "go")
    asked = await client.wait_approval(session)
    assert asked["toolCallId"] == "b3"  # b1 and b2 were allowed by the rules
    assert "reason" not in asked
    await client.respond(session, asked["approvalId"], "reject_once")
    results = tool_results(await prompt.result())
    assert not results["b1"]["isError"] and "ok" in result_text(results["b1"])
    assert (workspace / "made-by-rule").exists() and (workspace / "asked").exists()
    assert not (workspace / "asked-dir").exists()


async def test_always_allow_saves_exactly_the_shown_pattern_where_the_user_picks(start_tiller, workspace, tmp_path):
    client = await start_tiller([
        *one_call_per_turn(
            tool_call("bash", {"command": "git init -q . && git status --short"}, id="b1"),
            tool_call("bash", {"command": "git status"}, id="b2"),
        ),
        *one_call_per_turn(tool_call("bash", {"command": "git status -s && git init -q again"}, id="b3")),
    ], capabilities=APPROVALS)
    session = await client.new_session()
    prompt = client.prompt(session, "look")
    asked = await client.wait_approval(session)
    options = {o["optionId"]: o for o in asked["options"]}
    assert list(options) == ["allow_once", "allow_always", "allow_always_project", "allow_always_user",
                             "reject_once", "reject_always"]
    assert options["allow_always_user"] == {
        "optionId": "allow_always_user", "name": "Always allow `git init *`, `git status *` in every project",
        "kind": "allow_always",
        "rule": {"scope": "user", "patterns": ["git init *", "git status *"], "path": str(user_settings(tmp_path))},
    }
    assert options["allow_always"]["rule"] == {"scope": "session", "patterns": ["git init *", "git status *"]}
    await client.respond(session, asked["approvalId"], "allow_always_user")
    results = tool_results(await prompt.result())
    assert not results["b1"]["isError"] and not results["b2"]["isError"]
    assert [e["toolCallId"] for e in client.events_of(session, "approval_request")] == ["b1"]  # b2 was not asked

    saved = json.loads(user_settings(tmp_path).read_text())
    assert saved["commands"]["allow"] == ["git init *", "git status *"]
    rules = await client.request("agent/getRules", {"sessionId": session})
    assert rules["user"] == {"path": str(user_settings(tmp_path)), "rules": saved["commands"]}
    assert rules["session"] == {"allow": [], "ask": [], "deny": [], "readOnly": []}

    # Saved for the user: another session runs it without asking too.
    other = await client.new_session()
    results = tool_results(await client.prompt(other, "again").result())
    assert not results["b3"]["isError"] and client.events_of(other, "approval_request") == []


async def test_rules_can_be_read_changed_and_removed_over_the_protocol(start_tiller, workspace, tmp_path):
    client = await start_tiller([], capabilities=APPROVALS)
    session = await client.new_session()
    rules = await client.request("agent/getRules", {"sessionId": session})
    assert rules["project"] == {"path": str(workspace.resolve() / ".tiller" / "settings.json"),
                                "rules": {"allow": [], "ask": [], "deny": [], "readOnly": []}, "trusted": False}
    assert "git log *" in rules["builtInReadOnly"]

    changed = await client.request("agent/setRules", {
        "sessionId": session, "scope": "project", "rules": {"deny": ["git push *"], "allow": ["make *"]}, "trust": True,
    })
    assert changed["project"]["rules"]["deny"] == ["git push *"] and changed["project"]["trusted"] is True
    on_disk = json.loads((workspace / ".tiller" / "settings.json").read_text())
    assert on_disk == {"commands": {"allow": ["make *"], "ask": [], "deny": ["git push *"], "readOnly": []}}

    removed = await client.request("agent/setRules", {
        "sessionId": session, "scope": "project", "rules": {"deny": [], "allow": ["make *"]},
    })
    assert removed["project"]["rules"]["deny"] == [] and removed["project"]["trusted"] is False  # content changed

    with pytest.raises(JsonRpcException) as raised:
        await client.request("agent/setRules", {"sessionId": session, "scope": "session", "rules": {"deny": ["ls &&"]}})
    assert raised.value.code == -32602 and "joins commands" in str(raised.value)
    with pytest.raises(JsonRpcException) as raised:
        await client.request("agent/setRules", {"sessionId": session, "scope": "everywhere"})
    assert raised.value.code == -32602


async def test_a_redirection_into_a_protected_path_or_out_of_the_workspace_asks_even_when_allowed(
        start_tiller, workspace, tmp_path):
    write_user_rules(tmp_path, allow=["echo *"])
    (workspace / ".git" / "hooks").mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    client = await start_tiller(one_call_per_turn(
        tool_call("bash", {"command": "echo ok > notes.txt"}, id="plain"),
        tool_call("bash", {"command": "echo 'touch pwned' > .git/hooks/pre-commit"}, id="hook"),
        tool_call("bash", {"command": f"echo x >> {outside}"}, id="outside"),
    ), capabilities=APPROVALS)
    session = await client.new_session(approvalMode="acceptEdits")
    prompt = client.prompt(session, "write things")
    hook = await client.wait_approval(session, 1)
    assert hook["toolCallId"] == "hook"  # notes.txt, in the workspace, did not ask
    assert hook["reason"] == f"it writes to {workspace.resolve()}/.git/hooks/pre-commit: {PROTECTED_GIT}"
    assert [o["optionId"] for o in hook["options"]] == ["allow_once", "reject_once", "reject_always"]
    await client.respond(session, hook["approvalId"], "reject_once")
    out = await client.wait_approval(session, 2)
    assert out["toolCallId"] == "outside" and out["reason"].endswith("outside the workspace")
    await client.respond(session, out["approvalId"], "reject_once")
    results = tool_results(await prompt.result())
    assert results["plain"]["isError"] is False and (workspace / "notes.txt").read_text() == "ok\n"
    assert results["hook"]["isError"] and not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert results["outside"]["isError"] and not outside.exists()


PROTECTED_GIT = "a git directory (hooks and config can run commands)"
