"""A model that cannot call tools (the offline one) is offered none; a tool-calling model is."""

from __future__ import annotations

from tiller.agent import Agent
from tiller.ai.providers.faux import FauxProvider, faux_message
from tiller.ai.text_only import calls_tools

from ..agent.helpers import echo_tool


async def ask_with_tools(api: str) -> FauxProvider:
    faux = FauxProvider()
    faux.set_responses([faux_message("ok")])
    agent = Agent(stream_fn=faux.stream)
    agent.set_model(faux.model().model_copy(update={"api": api}))
    agent.set_tools([echo_tool()])
    await agent.prompt("hello")
    return faux


async def test_the_local_model_is_offered_no_tools():
    faux = await ask_with_tools("local")
    assert faux.contexts[0].tools is None


async def test_a_tool_calling_model_gets_the_agent_tools():
    faux = await ask_with_tools("faux")
    assert [tool.name for tool in faux.contexts[0].tools or []] == ["echo"]


def test_only_the_local_api_is_text_only():
    catalog_apis = ["openai-completions", "anthropic-messages", "faux"]
    faux = FauxProvider()
    assert all(calls_tools(faux.model().model_copy(update={"api": api})) for api in catalog_apis)
    assert not calls_tools(faux.model().model_copy(update={"api": "local"}))
