"""Secrets stay secret: a command the model runs cannot read provider keys from tiller's own
environment block, gets only an allowlisted environment, and whatever key it finds anyway
is redacted before it becomes an event, a context message or a line of the session file.

Sessions run in yolo mode so nothing asks; the harness also checks that SECRET never
crossed the wire."""

from __future__ import annotations

import json
from pathlib import Path

from .harness import SECRET, one_call_per_turn, result_text, tool_call, tool_results

OTHER_SECRETS = {
    "GH_PAT": "ghp_fake_personal_access_token_1",
    "GITHUB_PAT": "github_pat_fake_token_2",
    "PGPASSWORD": "postgres-password-3",
    "DATABASE_URL": "postgres://user:db-password-4@localhost/db",
    "NPM_CONFIG__AUTH": "npm-auth-token-5",
    "DOCKER_AUTH_CONFIG": '{"auths":{"x":{"auth":"docker-auth-6"}}}',
    "SENTRY_DSN": "https://sentry-key-7@sentry.example/1",
    "LAB_API_KEY": "lab-key-from-models-toml-8",
    # A key variable named in models.toml that looks like nothing in particular.
    "GPU_BOX_ACCESS": "gpu-box-access-from-models-toml-9",
}

MODELS_TOML = """
[providers.lab]
baseUrl = "http://127.0.0.1:9/v1"
apiKeyEnv = "LAB_API_KEY"

[providers.gpubox]
baseUrl = "http://127.0.0.1:9/v1"
apiKeyEnv = "GPU_BOX_ACCESS"
"""


def reversed_env(name: str) -> str:
    """A command printing a process's environment block backwards: redaction cannot hide what
    it leaks, so only keeping the keys out of the block itself passes the test."""
    return f"tr '\\0' '\\n' < /proc/{name}/environ | grep -v '^$' | rev"


def config_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    config = tmp_path / "xdg-config" / "tiller"
    config.mkdir(parents=True, exist_ok=True)
    (config / "models.toml").write_text(MODELS_TOML)
    return {**OTHER_SECRETS, **extra}


async def test_bash_cannot_read_keys_from_the_servers_environment_block(start_tiller, tmp_path):
    client = await start_tiller(one_call_per_turn(
        tool_call("bash", {"command": reversed_env("$PPID")}, id="parent"),
        tool_call("bash", {"command": "ps -o pid= -o comm= -p $PPID; " + reversed_env("$PPID") + " | wc -l"}, id="who"),
    ), env=config_env(tmp_path))
    session = await client.new_session(approvalMode="yolo")
    results = tool_results(await client.request("agent/prompt", {"sessionId": session, "text": "look"}))
    leaked = result_text(results["parent"])
    assert results["parent"]["isError"] is False and "=HTAP" in leaked  # PATH=, backwards: it did read
    for value in [SECRET, *OTHER_SECRETS.values()]:
        assert value[::-1] not in leaked, f"{value} is readable in /proc/$PPID/environ"
    assert "python" in result_text(results["who"])  # $PPID is the server itself


async def test_tools_get_an_allowlisted_environment_plus_what_the_user_names(start_tiller, tmp_path):
    env = config_env(tmp_path, PLAIN_SETTING="visible", MY_TOOL_HOME="/opt/x",
                     TILLER_TOOL_ENV="PLAIN_SETTING, MY_TOOL_* GH_PAT OPENAI_API_KEY LAB_API_KEY GPU_BOX_*")
    client = await start_tiller(one_call_per_turn(tool_call("bash", {"command": "env"}, id="env")), env=env)
    session = await client.new_session(approvalMode="yolo")
    results = tool_results(await client.request("agent/prompt", {"sessionId": session, "text": "env"}))
    seen = dict(line.split("=", 1) for line in result_text(results["env"]).splitlines() if "=" in line)
    assert "PATH" in seen and "HOME" in seen
    # Named by the user: passed, even a credential-looking one...
    assert seen["PLAIN_SETTING"] == "visible" and seen["MY_TOOL_HOME"] == "/opt/x"
    # (the process had GH_PAT's very value: the output shows it redacted, as any withheld credential)
    assert seen["GH_PAT"] == "[redacted GH_PAT]"
    # ...but provider keys never, named or not; everything else is not on the allowlist.
    for name in ("OPENAI_API_KEY", "LAB_API_KEY", "GPU_BOX_ACCESS", "GITHUB_PAT", "PGPASSWORD", "DATABASE_URL", "NPM_CONFIG__AUTH",
                 "DOCKER_AUTH_CONFIG", "SENTRY_DSN", "TILLER_TOOL_ENV", "TILLER_DATA_DIR", "XDG_CONFIG_HOME_NOT"):
        assert name not in seen, name


async def test_without_configuration_no_credential_reaches_bash(start_tiller, tmp_path):
    client = await start_tiller(one_call_per_turn(tool_call("bash", {"command": "env"}, id="env")),
                                env=config_env(tmp_path, PLAIN_SETTING="hidden"))
    session = await client.new_session(approvalMode="yolo")
    results = tool_results(await client.request("agent/prompt", {"sessionId": session, "text": "env"}))
    output = result_text(results["env"])
    for value in [SECRET, *OTHER_SECRETS.values(), "hidden"]:
        assert value not in output


async def test_a_key_in_tool_output_is_redacted_everywhere(start_tiller, workspace, tmp_path):
    (workspace / ".env").write_text(f"OPENAI_API_KEY={SECRET}\nLAB={OTHER_SECRETS['LAB_API_KEY']}\n"
                                    f"GPU={OTHER_SECRETS['GPU_BOX_ACCESS']}\nPAT={OTHER_SECRETS['GH_PAT']}\n"
                                    f"DB={OTHER_SECRETS['DATABASE_URL']}\n")
    client = await start_tiller(one_call_per_turn(
        tool_call("read", {"path": ".env"}, id="read"),
        tool_call("bash", {"command": "cat .env; sleep 0.3; cat .env"}, id="bash"),
        tool_call("bash", {"command": "cat .env; exit 3"}, id="fails"),
        tool_call("grep", {"pattern": "sk-", "path": "."}, id="grep"),
    ), env=config_env(tmp_path))
    session = await client.new_session(approvalMode="yolo")
    answer = await client.request("agent/prompt", {"sessionId": session, "text": "show me"})
    results = tool_results(answer)
    assert "OPENAI_API_KEY=[redacted OPENAI_API_KEY]" in result_text(results["read"])
    assert "LAB=[redacted LAB_API_KEY]" in result_text(results["read"])
    assert "GPU=[redacted GPU_BOX_ACCESS]" in result_text(results["read"])
    # Not provider keys, but credentials tiller withheld from its environment: redacted too.
    assert "PAT=[redacted GH_PAT]" in result_text(results["read"])
    assert "DB=[redacted DATABASE_URL]" in result_text(results["read"])
    assert result_text(results["bash"]).count("[redacted OPENAI_API_KEY]") == 2
    assert results["fails"]["isError"] and "[redacted OPENAI_API_KEY]" in result_text(results["fails"])
    assert "[redacted OPENAI_API_KEY]" in result_text(results["grep"])
    updates = client.events_of(session, "tool_execution_update")
    assert any("[redacted OPENAI_API_KEY]" in result_text(u["partialResult"]) for u in updates)

    saved = (tmp_path / "tiller-data" / "sessions" / f"{session}.jsonl").read_text()
    state = json.dumps(await client.request("agent/getState", {"sessionId": session}))
    for text in (saved, state, json.dumps(client.received)):
        for value in (SECRET, OTHER_SECRETS["LAB_API_KEY"], OTHER_SECRETS["GPU_BOX_ACCESS"], OTHER_SECRETS["GH_PAT"],
                      OTHER_SECRETS["DATABASE_URL"]):
            assert value not in text
