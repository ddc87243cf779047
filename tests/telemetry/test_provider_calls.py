"""Every HTTP provider is observed alike: the same log record (timings, tokens, stop reason)
and the same payload dump (request as sent, raw stream as received, key redacted), whatever
the vendor's wire format and however it carries the key (Authorization, x-api-key,
x-goog-api-key). Each case streams the vendor's real bytes from a loopback server."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support import anthropic_wire, gemini_wire, responses_wire
from tests.support.provider_streams import hello_context
from tests.support.sse_server import Reply, SSEServer
from tiller.ai import registry
from tiller.ai.call_log import LlmCall
from tiller.ai.options import StreamOptions
from tiller.ai.types import Model
from tiller.telemetry.payload_dump import PayloadDump

KEY = "sk-observed-SECRET-0123456789"


@dataclass(frozen=True)
class Vendor:
    api: str
    provider: str
    base_path: str
    key_header: str
    stream: bytes
    # (input, output) tokens the stream reports, as pi counts them (cached ones apart)
    tokens: tuple[int, int]


def completions_stream() -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
        body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1730000000,
                                "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if usage is not None:
            body["choices"], body["usage"] = [], usage
        return f"data: {json.dumps(body)}\n\n".encode()

    return b"".join([chunk({"role": "assistant", "content": ""}), chunk({"content": "Hi"}), chunk({}, "stop"),
                     chunk({}, usage={"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}),
                     b"data: [DONE]\n\n"])


VENDORS = [
    Vendor("openai-completions", "openai", "/v1", "authorization", completions_stream(), (7, 2)),
    Vendor("openai-responses", "openai", "/v1", "authorization", responses_wire.text_reply("Hi"), (40, 12)),
    Vendor("google-generative-ai", "google", "/v1beta", "x-goog-api-key", gemini_wire.text_reply("Hi"), (9, 1)),
    Vendor("anthropic-messages", "anthropic", "", "x-api-key",
           b"".join([anthropic_wire.message_start(11), *anthropic_wire.text_block(0, "Hi"),
                     anthropic_wire.message_end("end_turn", 3)]), (11, 3)),
]


@pytest.mark.parametrize("vendor", VENDORS, ids=[vendor.api for vendor in VENDORS])
async def test_each_provider_logs_its_call_and_dumps_it_without_the_key(
    vendor: Vendor, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dumps = PayloadDump(tmp_path / "dumps")
    with SSEServer() as server:
        server.reply(Reply(chunks=[vendor.stream]))
        model = Model(id="m", name="M", api=vendor.api, provider=vendor.provider,
                      base_url=server.url + vendor.base_path, max_tokens=1000)
        call = LlmCall(model, session_id="s1", call=1, listeners=[dumps.call("s1", 1)])
        options = StreamOptions(api_key=KEY, observer=call)
        with caplog.at_level(logging.INFO, logger="tiller.llm"), anyio.fail_after(10):
            events = [event async for event in registry.stream(model, hello_context(), options)]
        sent = server.requests[0]

    assert events[-1].type == "done"
    assert sent.headers[vendor.key_header].endswith(KEY)  # the key did go to the vendor
    (logged,) = [record for record in caplog.records if record.name == "tiller.llm"]
    fields = logged.tiller  # type: ignore[attr-defined]
    assert (fields["provider"], fields["api"], fields["status"], fields["stop_reason"]) == (
        vendor.provider, vendor.api, 200, "stop")
    assert (fields["input_tokens"], fields["output_tokens"]) == vendor.tokens
    assert 0 < fields["time_to_headers_ms"] <= fields["time_to_first_token_ms"] <= fields["duration_ms"]
    assert fields["server"] == server.url.removeprefix("http://")

    request = json.loads((tmp_path / "dumps" / "s1-001.request.json").read_text())
    assert request["headers"][vendor.key_header] == "[redacted]"
    assert request["body"] == sent.json
    assert (tmp_path / "dumps" / "s1-001.response.sse").read_bytes() == vendor.stream
    for path in (tmp_path / "dumps").iterdir():
        assert KEY not in path.read_text()
