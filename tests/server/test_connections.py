"""The server keeps one connection to a provider for all its turns (counted server-side)."""

from __future__ import annotations

from tests.support.sse_server import Reply, SSEServer

from .harness import openai_env, openai_text


async def test_ten_turns_over_one_connection(start_tiller):
    with SSEServer() as provider:
        provider.reply(*[Reply(chunks=openai_text(f"turn {n}")) for n in range(10)])
        client = await start_tiller(env=openai_env(provider))
        session = await client.new_session(model="openai/test-model", tools=[])
        for n in range(10):
            answer = await client.request("agent/prompt", {"sessionId": session, "text": f"question {n}"})
            assert answer["stopReason"] == "stop"
            assert answer["newMessages"][-1]["content"] == [{"type": "text", "text": f"turn {n}"}]
        assert len(provider.requests) == 10
        assert provider.connections == 1
