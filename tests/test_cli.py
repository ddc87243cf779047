"""The `tiller` command, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_tiller(*args: str, env_extra: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.endswith("_BASE_URL")}
    env.pop("TILLER_MODEL", None)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "tiller", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def faux_script(tmp_path: Path, responses: list[dict]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"chunkChars": 3, "responses": responses}))
    return str(path)


def test_schema_file_is_current():
    result = run_tiller("schema")
    assert result.returncode == 0, result.stderr
    checked_in = (ROOT / "schema" / "tiller.schema.json").read_text()
    assert result.stdout == checked_in, "schema/tiller.schema.json is stale: run `tiller schema -o schema/tiller.schema.json`"
    schema = json.loads(result.stdout)
    for name in ("AssistantMessage", "ToolResultMessage", "MessageUpdateEvent", "Usage", "Model"):
        assert name in schema["$defs"]
    assert "stopReason" in schema["$defs"]["AssistantMessage"]["properties"]


def test_run_streams_text_from_a_scripted_model(tmp_path):
    script = faux_script(tmp_path, [{"content": [{"type": "text", "text": "Tilled and sown."}]}])
    result = run_tiller("run", "hello", "--model", "faux/faux-1", env_extra={"TILLER_FAUX_SCRIPT": script})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Tilled and sown."
    assert "faux/faux-1" in result.stderr


def test_run_json_prints_every_event(tmp_path):
    script = faux_script(tmp_path, [{"content": [{"type": "text", "text": "abcdef"}]}])
    result = run_tiller("run", "hi", "--json", env_extra={"TILLER_FAUX_SCRIPT": script, "TILLER_MODEL": "faux/faux-1"})
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0] == {"type": "agent_start"} and events[-1]["type"] == "agent_end"
    deltas = [e["assistantMessageEvent"]["delta"] for e in events if e["type"] == "message_update"
              and e["assistantMessageEvent"]["type"] == "text_delta"]
    assert deltas == ["abc", "def"]


def test_run_reports_provider_errors_with_exit_code(tmp_path):
    script = faux_script(tmp_path, [])
    result = run_tiller("run", "hi", "--model", "faux/faux-1", env_extra={"TILLER_FAUX_SCRIPT": script})
    assert result.returncode == 1
    assert "No more faux responses queued" in result.stderr


def test_unknown_model_is_a_clear_error():
    result = run_tiller("run", "hi", "--model", "nope/nothing")
    assert result.returncode == 2
    assert "Unknown model: nope/nothing" in result.stderr


def test_models_lists_ready_providers_and_searches(tmp_path):
    # Local presets moved to a dead port: servers on this machine must not change the output.
    config = tmp_path / "models.toml"
    config.write_text("".join(f'[providers.{name}]\nbaseUrl = "http://127.0.0.1:9/v1"\n'
                              for name in ("ollama", "lmstudio", "vllm", "llamacpp")))
    env = {"HOME": str(tmp_path), "TILLER_CONFIG": str(config), "OPENAI_API_KEY": "sk-test-cli-secret"}
    result = run_tiller("models", "gpt-5", env_extra=env)
    assert result.returncode == 0, result.stderr
    table, footer = result.stdout.split("\n\n")
    header, *rows = [line.split() for line in table.splitlines()]
    assert header == ["MODEL", "CONTEXT", "OUTPUT", "$/MTOK", "IN/OUT", "STATUS"]
    assert rows[0] == ["openai/gpt-5", "400k", "128k", "1.25", "/", "10", "ready"]
    assert {"openai/gpt-5.1-codex", "openai/gpt-5-mini"} <= {row[0] for row in rows}
    assert all(row[0].startswith("openai/gpt-5") and row[-1] == "ready" for row in rows)
    assert footer.strip().endswith("more from providers that are not ready: tiller models gpt-5 --all")
    assert "sk-test-cli-secret" not in result.stdout + result.stderr

    everything = run_tiller("models", "claude", "opus", "4.5", "--all", env_extra=env)
    assert everything.returncode == 0, everything.stderr
    rows = [line.split() for line in everything.stdout.splitlines()]
    assert ["anthropic/claude-opus-4-5", "200k", "64k", "5", "/", "25", "set", "ANTHROPIC_API_KEY"] in rows
def test_sessions_list_show_and_delete(tmp_path):
    from tiller.ai.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
    from tiller.persistence.session_files import SessionStore

    store = SessionStore(tmp_path)
    first = store.create("first", cwd="/work/a", model="openai/gpt-4.1")
    first.append_message(UserMessage(content=[TextContent(text="Fix the build\nit fails on CI")]))
    first.append_message(AssistantMessage(content=[TextContent(text="Looking."), ToolCall(id="c1", name="bash",
                                          arguments={"command": "make"})], api="x", provider="openai", model="m"))
    first.append_message(ToolResultMessage(tool_call_id="c1", tool_name="bash", content=[TextContent(text="ok\n")]))
    first.append({"type": "compaction", "id": "k1", "reason": "manual", "summary": "## Goal\nFix the build.",
                  "firstKeptIndex": 1, "messageCount": 3, "tokensBefore": 900, "tokensAfter": 100, "timestamp": 1})
    first.append_message(AssistantMessage(content=[TextContent(text="Fixed.")], api="x", provider="openai", model="m"))
    store.create("second", cwd="/work/b", model="faux/faux-1").append_message(UserMessage(content="Docs"))
    env = {"TILLER_DATA_DIR": str(tmp_path)}

    listed = run_tiller("sessions", "list", "--json", env_extra=env)
    assert listed.returncode == 0, listed.stderr
    rows = {row["sessionId"]: row for row in map(json.loads, listed.stdout.splitlines())}
    assert {k: (v["title"], v["messageCount"], v["cwd"]) for k, v in rows.items()} == {
        "first": ("Fix the build", 4, "/work/a"), "second": ("Docs", 1, "/work/b")}
    plain = run_tiller("sessions", "list", "--cwd", "/work/b", env_extra=env)
    assert plain.returncode == 0 and plain.stdout.startswith("second ") and "first" not in plain.stdout

    shown = run_tiller("sessions", "show", "first", env_extra=env)
    assert shown.returncode == 0, shown.stderr
    for expected in ("cwd     /work/a", "user: Fix the build\nit fails on CI", 'assistant: Looking.\n  → bash {"command": "make"}',
                     "✓ bash: ok", "[compaction (manual): 900 → 100 tokens", "## Goal\nFix the build.", "assistant: Fixed."):
        assert expected in shown.stdout
    assert shown.stdout.index("[compaction") < shown.stdout.index("Fixed.")
    raw = run_tiller("sessions", "show", "first", "--json", env_extra=env)
    assert raw.stdout == (tmp_path / "sessions" / "first.jsonl").read_text()

    deleted = run_tiller("sessions", "delete", "second", "nosuch", env_extra=env)
    assert deleted.returncode == 1 and deleted.stdout == "deleted second\n" and "no saved session nosuch" in deleted.stderr
    assert not (tmp_path / "sessions" / "second.jsonl").exists()
    missing = run_tiller("sessions", "show", "second", env_extra=env)
    assert missing.returncode == 1 and "no saved session second" in missing.stderr
    assert [json.loads(line)["sessionId"] for line in
            run_tiller("sessions", "list", "--json", env_extra=env).stdout.splitlines()] == ["first"]


def test_run_logs_each_llm_call_as_json_on_stderr(tmp_path):
    script = faux_script(tmp_path, [{"content": [{"type": "text", "text": "Logged."}]}])
    result = run_tiller("run", "hi", "--model", "faux/faux-1", "--log-format", "json",
                        env_extra={"TILLER_FAUX_SCRIPT": script, "OPENAI_API_KEY": "sk-test-cli-secret"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Logged."
    records = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    (call,) = [r for r in records if r.get("event") == "llm_call"]
    assert (call["level"], call["logger"], call["provider"], call["model"], call["api"]) == (
        "INFO", "tiller.llm", "faux", "faux-1", "faux")
    assert (call["run"], call["turn"], call["call"], call["stop_reason"], call["error"]) == (1, 1, 1, "stop", None)
    assert call["time_to_headers_ms"] is None  # no HTTP in a scripted model
    assert 0 <= call["time_to_first_token_ms"] <= call["duration_ms"] and call["output_tokens"] > 0
    assert "sk-test-cli-secret" not in result.stderr


def test_a_log_file_that_cannot_be_opened_is_a_clear_error(tmp_path):
    result = run_tiller("run", "hi", "--log-file", str(tmp_path / "missing" / "tiller.log"))
    assert result.returncode == 2
    assert "tiller: cannot open the log file:" in result.stderr and "missing" in result.stderr
