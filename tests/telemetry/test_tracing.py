"""OpenTelemetry spans of a real run (a real tool, a loopback OpenAI-compatible server),
captured by the SDK's own in-memory exporter: names, parents and GenAI attributes."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tests.server.harness import openai_text, openai_tool_call
from tests.support.sse_server import Reply, SSEServer
from tiller.agent import Agent
from tiller.ai.types import Model
from tiller.telemetry.run_log import RunLog
from tiller.telemetry.tracing import SessionSpans
from tiller.tools import create_coding_tools

KEY = "sk-test-tracing-key"


def traced_agent(server: SSEServer, workspace: Path, exporter: InMemorySpanExporter) -> Agent:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = Agent(get_api_key=lambda provider: KEY, tool_execution="sequential")
    agent.set_model(Model(id="test-model", name="Test", api="openai-completions", provider="openai",
                          base_url=server.url + "/v1"))
    agent.set_tools([create_coding_tools(workspace)["read"]])
    RunLog("sess1", spans=SessionSpans(provider.get_tracer("test"), "sess1")).attach(agent)
    return agent


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


async def test_a_run_is_a_tree_of_agent_turn_chat_and_tool_spans(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    exporter = InMemorySpanExporter()
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_tool_call("call_r1", "read", {"path": "a.txt"})),
                     Reply(chunks=openai_text("It says alpha.")))
        agent = traced_agent(server, tmp_path, exporter)
        await agent.prompt("What does a.txt say?")

    spans = by_name(exporter.get_finished_spans())
    assert sorted(spans) == ["chat test-model", "execute_tool read", "invoke_agent tiller", "turn"]
    (run,) = spans["invoke_agent tiller"]
    first_turn, second_turn = sorted(spans["turn"], key=lambda span: span.start_time or 0)
    first_chat, second_chat = sorted(spans["chat test-model"], key=lambda span: span.start_time or 0)
    (tool,) = spans["execute_tool read"]

    assert parent_of(run) is None
    assert parent_of(first_turn) == parent_of(second_turn) == span_id(run)
    assert parent_of(first_chat) == parent_of(tool) == span_id(first_turn)
    assert parent_of(second_chat) == span_id(second_turn)
    assert len({span.context.trace_id for span in exporter.get_finished_spans() if span.context}) == 1

    assert dict(run.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "tiller", "gen_ai.conversation.id": "sess1",
        "gen_ai.provider.name": "openai", "gen_ai.request.model": "test-model",
    }
    assert (first_turn.attributes or {})["tiller.turn"] == 1 and (second_turn.attributes or {})["tiller.turn"] == 2

    chat = first_chat.attributes or {}
    assert first_chat.kind == SpanKind.CLIENT
    assert {key: chat[key] for key in ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model",
                                       "gen_ai.conversation.id", "gen_ai.usage.input_tokens",
                                       "gen_ai.usage.output_tokens", "server.address", "server.port",
                                       "http.response.status_code")} == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "test-model",
        "gen_ai.conversation.id": "sess1", "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 3,
        "server.address": "127.0.0.1", "server.port": int(server.url.rpartition(":")[2]),
        "http.response.status_code": 200,
    }
    assert tuple(chat["gen_ai.response.finish_reasons"]) == ("tool_call",)  # type: ignore[arg-type]
    assert tuple((second_chat.attributes or {})["gen_ai.response.finish_reasons"]) == ("stop",)  # type: ignore[arg-type]

    assert dict(tool.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read", "gen_ai.tool.call.id": "call_r1",
        "gen_ai.tool.type": "function", "gen_ai.conversation.id": "sess1", "tiller.tool.outcome": "ok",
    }
    # Each call lies within its turn, each turn within the run.
    for child, parent in ((first_chat, first_turn), (tool, first_turn), (second_chat, second_turn),
                          (first_turn, run), (second_turn, run)):
        assert parent.start_time is not None and parent.end_time is not None
        assert child.start_time is not None and child.end_time is not None
        assert parent.start_time <= child.start_time <= child.end_time <= parent.end_time
    assert first_chat.end_time <= tool.start_time  # type: ignore[operator]


async def test_a_failed_call_is_an_error_span_with_its_status(tmp_path):
    exporter = InMemorySpanExporter()
    with SSEServer() as server:
        server.reply(Reply.json(400, {"error": {"message": "Unknown parameter: 'foo'"}}))
        agent = traced_agent(server, tmp_path, exporter)
        await agent.prompt("hi")

    (chat,) = by_name(exporter.get_finished_spans())["chat test-model"]
    assert chat.status.status_code == StatusCode.ERROR
    assert chat.status.description == "400 Bad Request: Unknown parameter: 'foo'"
    assert (chat.attributes or {})["error.type"] == "400"
    assert tuple((chat.attributes or {})["gen_ai.response.finish_reasons"]) == ("error",)  # type: ignore[arg-type]
    assert all(KEY not in str(span.to_json()) for span in exporter.get_finished_spans())
