"""One pooled connection per provider endpoint, counted on the server side of real sockets."""

from __future__ import annotations

from tests.server.harness import openai_text
from tests.support.provider_streams import collect, final, hello_context
from tests.support.sse_server import Reply, SSEServer
from tiller.ai.abort import AbortSignal
from tiller.ai.connections import close_clients
from tiller.ai.options import StreamOptions
from tiller.ai.providers.openai_completions import stream
from tiller.ai.types import Model


def model_at(server: SSEServer) -> Model:
    return Model(id="m", name="m", api="openai-completions", provider="lab", base_url=server.url + "/v1")


async def ask(server: SSEServer, options: StreamOptions | None = None) -> str:
    events = await collect(stream, model_at(server), hello_context(), options or StreamOptions(api_key="k"))
    return final(events).text()


async def test_ten_calls_share_one_connection_until_the_clients_close():
    with SSEServer() as server:
        server.reply(*[Reply(chunks=openai_text(f"answer {n}")) for n in range(11)])
        answers = [await ask(server) for _ in range(10)]
        assert answers == [f"answer {n}" for n in range(10)]
        assert len(server.requests) == 10
        assert server.connections == 1
        await close_clients()  # what the server does on shutdown
        assert await ask(server) == "answer 10"
        assert server.connections == 2  # the closed pool could not be reused
        await close_clients()


async def test_each_endpoint_has_its_own_connection():
    with SSEServer() as first, SSEServer() as second:
        for server in (first, second):
            server.reply(*[Reply(chunks=openai_text("ok")) for _ in range(3)])
        for _ in range(3):
            assert await ask(first) == "ok"
            assert await ask(second) == "ok"
        assert (first.connections, second.connections) == (1, 1)
        await close_clients()


async def test_an_aborted_stream_does_not_poison_the_pool():
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("partial"), stall=True), Reply(chunks=openai_text("whole")))
        signal = AbortSignal()
        options = StreamOptions(api_key="k", signal=signal)
        events = []
        async for event in stream(model_at(server), hello_context(), options):
            events.append(event)
            if event.type == "text_delta":
                signal.abort()
        assert events[-1].type == "error" and events[-1].reason == "aborted"
        # The half-read connection is dropped; the next call gets a fresh one and a whole answer.
        assert await ask(server) == "whole"
        assert server.connections == 2
        await close_clients()
