"""OpenTelemetry spans for tiller's work, with the GenAI semantic conventions, so Langfuse,
Logfire, Jaeger or any OTLP collector can show a session's runs.

    invoke_agent tiller          one run (a prompt until the agent stops)
      turn                       one assistant response and the tools it called
        chat <model>             one LLM call (kind CLIENT; INTERNAL for in-process models)
        execute_tool <tool>      one tool call

This module imports the OpenTelemetry SDK and is only imported when tracing is on (the SDK is
the optional extra `tiller[otel]`). Spans of calls are made when the call ends, with its real
start and end times, from the same record the log gets.
"""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from .. import __version__
from ..ai.call_log import LlmCallRecord
from ..ai.types import Model
from .run_log import ToolCallRecord

AGENT_NAME = "tiller"
# tiller's provider names where the conventions have their own (gen_ai.provider.name).
PROVIDER_NAMES = {
    "google": "gcp.gemini",
    "google-vertex": "gcp.vertex_ai",
    "amazon-bedrock": "aws.bedrock",
    "azure": "azure.ai.openai",
    "xai": "x_ai",
    "mistral": "mistral_ai",
}
# pi's stop reasons as the conventions' finish reasons.
FINISH_REASONS = {"toolUse": "tool_call", "aborted": "cancelled"}
# Models that run inside tiller's process: their call spans are INTERNAL, not CLIENT.
IN_PROCESS_APIS = ("local", "faux")

_provider: TracerProvider | None = None


def start_tracing() -> Tracer:
    """A tracer whose spans go to the OTLP/HTTP endpoint the standard OTEL_EXPORTER_OTLP_*
    variables name (default http://localhost:4318), in batches."""
    global _provider
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    attributes: dict[str, AttributeValue] = {"service.version": __version__}
    if not os.environ.get("OTEL_SERVICE_NAME"):
        attributes["service.name"] = "tiller"
    _provider = TracerProvider(resource=Resource.create(attributes))
    _provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return _provider.get_tracer("tiller", __version__)


def stop_tracing(timeout_ms: int = 5000) -> None:
    """Send the spans still waiting in the batch (the process is about to end)."""
    global _provider
    if _provider is not None:
        _provider.force_flush(timeout_ms)
        _provider.shutdown()
        _provider = None


class SessionSpans:
    """The spans of one session's runs (a `RunSpans` for run_log.RunLog)."""

    def __init__(self, tracer: Tracer, session_id: str) -> None:
        self._tracer = tracer
        self._session_id = session_id
        self._run: Span | None = None
        self._turn: Span | None = None

    def run_started(self, model: Model) -> None:
        self.run_ended()  # a run that never said it ended
        self._run = self._tracer.start_span(f"invoke_agent {AGENT_NAME}", kind=SpanKind.INTERNAL, attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT_NAME,
            "gen_ai.conversation.id": self._session_id,
            "gen_ai.provider.name": provider_name(model.provider),
            "gen_ai.request.model": model.id,
        })

    def turn_started(self, turn: int) -> None:
        self.turn_ended()
        self._turn = self._tracer.start_span("turn", context=self._context(self._run), kind=SpanKind.INTERNAL,
                                             attributes={"gen_ai.conversation.id": self._session_id,
                                                         "tiller.turn": turn})

    def llm_call(self, record: LlmCallRecord) -> None:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider_name(record.provider),
            "gen_ai.request.model": record.model,
            "gen_ai.response.model": record.model,
            "gen_ai.conversation.id": self._session_id,
            "gen_ai.response.finish_reasons": [FINISH_REASONS.get(record.stop_reason, record.stop_reason)],
            # The conventions count cached input tokens in the input; pi counts them apart.
            "gen_ai.usage.input_tokens": record.input_tokens + record.cache_read_tokens + record.cache_write_tokens,
            "gen_ai.usage.output_tokens": record.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": record.cache_read_tokens,
            "gen_ai.usage.cache_creation.input_tokens": record.cache_write_tokens,
            "tiller.api": record.api,
            "tiller.cost_usd": record.cost_usd,
            "tiller.retries": len(record.retries),
        }
        if record.call is not None:
            attributes["tiller.call"] = record.call
        if record.server:
            host, _, port = record.server.rpartition(":")
            attributes["server.address"] = host if port.isdigit() else record.server
            if port.isdigit():
                attributes["server.port"] = int(port)
        if record.status is not None:
            attributes["http.response.status_code"] = record.status
        if record.time_to_first_token_ms is not None:
            attributes["tiller.time_to_first_token_ms"] = record.time_to_first_token_ms
        if record.retries:
            attributes["tiller.retry_reasons"] = [retry.reason for retry in record.retries]
        kind = SpanKind.INTERNAL if record.api in IN_PROCESS_APIS else SpanKind.CLIENT
        span = self._tracer.start_span(f"chat {record.model}", context=self._context(self._turn or self._run),
                                       kind=kind, start_time=record.started_ns, attributes=attributes)
        if record.stop_reason == "error":
            failed = str(record.status) if record.status is not None and record.status >= 400 else "_OTHER"
            span.set_attribute("error.type", failed)
            span.set_status(Status(StatusCode.ERROR, record.error))
        span.end(end_time=record.started_ns + int(record.duration_ms * 1_000_000))

    def tool_call(self, record: ToolCallRecord) -> None:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": record.tool,
            "gen_ai.tool.call.id": record.tool_call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": self._session_id,
            "tiller.tool.outcome": record.outcome,
        }
        if record.approval_wait_ms is not None:
            attributes["tiller.approval.wait_ms"] = record.approval_wait_ms
            attributes["tiller.approval.option"] = record.approval or "cancelled"
        span = self._tracer.start_span(f"execute_tool {record.tool}", context=self._context(self._turn or self._run),
                                       kind=SpanKind.INTERNAL, start_time=record.started_ns, attributes=attributes)
        if record.outcome != "ok":
            span.set_attribute("error.type", record.outcome)
            span.set_status(Status(StatusCode.ERROR, record.error))
        span.end(end_time=record.started_ns + int(record.duration_ms * 1_000_000))

    def turn_ended(self) -> None:
        if self._turn is not None:
            self._turn.end()
            self._turn = None

    def run_ended(self) -> None:
        self.turn_ended()
        if self._run is not None:
            self._run.end()
            self._run = None

    @staticmethod
    def _context(parent: Span | None) -> Context | None:
        return trace.set_span_in_context(parent) if parent is not None else None


def provider_name(provider: str) -> str:
    return PROVIDER_NAMES.get(provider, provider)
