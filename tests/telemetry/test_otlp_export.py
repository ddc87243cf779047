"""`tiller run` with OTEL_EXPORTER_OTLP_ENDPOINT set: its spans reach an OTLP/HTTP collector
(a loopback server that records what the real exporter posts) before the process ends, and
without it nothing of OpenTelemetry is loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.server.harness import openai_text
from tests.support.sse_server import Reply, SSEServer

KEY = "sk-test-otlp-key"


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """No real keys, endpoints, user config or OpenTelemetry settings but the test's."""
    environment = {k: v for k, v in os.environ.items()
                   if not k.endswith(("_API_KEY", "_BASE_URL")) and not k.startswith(("TILLER_", "OTEL_"))}
    environment.update(XDG_CONFIG_HOME=str(tmp_path / "config"), OPENAI_API_KEY=KEY, **extra)
    return environment


def run_tiller(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tiller", "run", *args], capture_output=True, text=True,
                          env=clean_env(tmp_path, **env), timeout=60)


def test_tiller_run_exports_its_spans_to_the_otlp_endpoint(tmp_path):
    with SSEServer() as model_server, SSEServer() as collector:
        model_server.reply(Reply(chunks=openai_text("Hello", " there")))
        collector.reply(Reply(status=200, headers={"content-type": "application/x-protobuf"}))
        result = run_tiller(tmp_path, "hi", "--model", "openai/test-model",
                            OPENAI_BASE_URL=model_server.url + "/v1", OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
                            OTEL_SERVICE_NAME="tiller-under-test")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Hello there"

    (export,) = collector.requests
    assert (export.method, export.path, export.headers["content-type"]) == ("POST", "/v1/traces",
                                                                           "application/x-protobuf")
    request = ExportTraceServiceRequest.FromString(export.body)
    (resource,) = request.resource_spans
    resource_attributes = {a.key: a.value.string_value for a in resource.resource.attributes}
    assert resource_attributes["service.name"] == "tiller-under-test"
    spans = {span.name: span for scope in resource.scope_spans for span in scope.spans}
    assert sorted(spans) == ["chat test-model", "invoke_agent tiller", "turn"]
    assert spans["chat test-model"].parent_span_id == spans["turn"].span_id
    assert spans["turn"].parent_span_id == spans["invoke_agent tiller"].span_id
    chat = {a.key: a.value for a in spans["chat test-model"].attributes}
    assert chat["gen_ai.usage.output_tokens"].int_value == 3
    assert chat["gen_ai.conversation.id"].string_value == {
        a.key: a.value for a in spans["turn"].attributes}["gen_ai.conversation.id"].string_value
    assert KEY not in export.body.decode("utf-8", "replace") + result.stderr


def test_without_an_endpoint_nothing_is_exported_and_opentelemetry_is_not_loaded(tmp_path):
    with SSEServer() as model_server:
        model_server.reply(Reply(chunks=openai_text("Hi")))
        script = ("import sys, runpy; sys.argv = ['tiller', 'run', 'hi', '--model', 'openai/test-model'];\n"
                  "try:\n    runpy.run_module('tiller', run_name='__main__')\nexcept SystemExit:\n    pass\n"
                  "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')), file=sys.stderr)")
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                                env=clean_env(tmp_path, OPENAI_BASE_URL=model_server.url + "/v1"))
    assert result.stdout.strip() == "Hi", result.stderr
    assert result.stderr.strip().splitlines()[-1] == "[]"
