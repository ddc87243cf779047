"""Runs one parity scenario (scenarios.json) through tiller's agent core and returns its trace.

The twin of node/pi_trace.mjs, which runs the same scenario through the real pi-agent-core:
the same tools, the same scripted responses streamed by tiller's faux provider, the same
steps and triggers. test_pi_parity.py compares the two traces.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import anyio
from pydantic import TypeAdapter

from tiller.agent import (
    AfterToolCallResult,
    Agent,
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    BeforeToolCallResult,
    agent_loop,
    agent_loop_continue,
    run_agent_loop,
)
from tiller.ai.abort import AbortSignal
from tiller.ai.providers.faux import FauxProvider, faux_message_from_json
from tiller.ai.types import Context, TextContent, ToolResultBlock, UserMessage

_MESSAGE = TypeAdapter(AgentMessage)
_CONTENT = TypeAdapter(list[ToolResultBlock])
# Not compared: wall-clock times, and token counts (the faux provider's estimate, not pi's logic).
UNCOMPARED_KEYS = frozenset({"timestamp", "usage"})


def normalise(value: Any) -> Any:
    """A wire value (already camelCase JSON) without the keys that are not compared."""
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items() if k not in UNCOMPARED_KEYS}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


def wire(value: Any) -> Any:
    return normalise(value.dump())


def user_message(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)])


class TillerRun:
    def __init__(self, scenario: dict[str, Any], tool_specs: dict[str, Any]) -> None:
        self.scenario = scenario
        self.events: list[Any] = []  # as each event was received
        self.kept: list[Any] = []  # the event objects, read again once the run is over
        self.llm_calls: list[Any] = []
        self.executions: list[Any] = []
        self.hooks: list[Any] = []
        self.snapshot_on_receive = True
        self.gate = anyio.Event()
        self.agent: Agent | None = None
        self.triggers = [{**t, "seen": 0, "fired": False} for t in scenario.get("triggers", [])]
        self.faux = FauxProvider(chunk_chars=scenario.get("chunkChars", 16))
        self.faux.set_responses([faux_message_from_json(copy.deepcopy(r)) for r in scenario["responses"]])
        self.tools = [self._tool(name, tool_specs[name]) for name in scenario.get("tools", [])]

    # --- what the LLM received -------------------------------------------------------------

    def stream_fn(self, model: Any, context: Context, options: Any) -> Any:
        self.llm_calls.append(normalise({
            "systemPrompt": context.system_prompt,
            "messages": [m.dump() for m in context.messages],
            "tools": [t.name for t in context.tools or []],
            **({"reasoning": options.reasoning} if options.reasoning else {}),
            **({"sessionId": options.session_id} if options.session_id else {}),
        }))
        return self.faux.stream(model, context, options)

    # --- tools and hooks -------------------------------------------------------------------

    def _tool(self, name: str, spec: dict[str, Any]) -> AgentTool:
        async def execute(tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: Any) -> Any:
            self.executions.append([tool_call_id, copy.deepcopy(args)])
            return await self._behave(name, args, signal, on_update)

        return AgentTool.from_function(name, spec["description"], spec["parameters"], execute)

    async def _behave(self, name: str, args: dict[str, Any], signal: AbortSignal, on_update: Any) -> Any:
        if name == "echo":
            return {"content": [{"type": "text", "text": f"echoed: {args['value']}"}], "details": {"value": args["value"]}}
        if name == "add":
            total = args["a"] + args["b"]
            return {"content": [{"type": "text", "text": str(total)}], "details": {"sum": total}}
        if name == "fail":
            raise RuntimeError(args["message"])
        if name == "progress":
            # All updates before the first await, so they come at the same point in both runtimes
            # (how many loop turns a wake-up takes differs between asyncio and Node).
            for step in range(1, args["steps"] + 1):
                on_update({"content": [{"type": "text", "text": f"step {step}/{args['steps']}"}], "details": {"step": step}})
            await asyncio.sleep(0)  # as the faux provider yields between chunks
            return {"content": [{"type": "text", "text": f"done after {args['steps']} steps"}]}
        if name == "wait":
            await self.gate.wait()
            return {"content": [{"type": "text", "text": "waited"}]}
        if name == "open":
            self.gate.set()
            return {"content": [{"type": "text", "text": "opened"}]}
        if name == "wait_abort":
            await signal.wait()
            raise RuntimeError("Operation aborted")
        raise AssertionError(f"no behaviour for tool {name}")

    def before_tool_call(self, ctx: Any, signal: Any) -> BeforeToolCallResult | None:
        self.hooks.append(["before", ctx.tool_call.id, copy.deepcopy(ctx.args)])
        rule = self.scenario["before"].get(ctx.tool_call.id)
        if rule is None:
            return None
        if "throw" in rule:
            raise RuntimeError(rule["throw"])
        return BeforeToolCallResult(block=rule.get("block", False), reason=rule.get("reason"))

    async def after_tool_call(self, ctx: Any, signal: Any) -> AfterToolCallResult | None:
        self.hooks.append(["after", ctx.tool_call.id, ctx.is_error, wire(ctx.result)])
        rule = self.scenario["after"].get(ctx.tool_call.id)
        if rule is None:
            return None
        content = _CONTENT.validate_python(rule["content"]) if "content" in rule else None
        return AfterToolCallResult(content=content, details=rule.get("details"), is_error=rule.get("isError"))

    # --- listening ---------------------------------------------------------------------------

    def listen(self, event: Any) -> None:
        if self.snapshot_on_receive:
            self.events.append(wire(event))
        self.kept.append(event)
        for trigger in self.triggers:
            if trigger["fired"] or not _matches(trigger, event):
                continue
            trigger["seen"] += 1
            if trigger["seen"] == trigger.get("nth", 1):
                trigger["fired"] = True
                for action in trigger["do"]:
                    self._act(action)

    def _act(self, action: dict[str, Any]) -> None:
        assert self.agent is not None
        if "steer" in action:
            self.agent.steer(user_message(action["steer"]))
        elif "followUp" in action:
            self.agent.follow_up(user_message(action["followUp"]))
        elif "abort" in action:
            self.agent.abort()

    # --- running -----------------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        entry = self.scenario.get("entry", "agent")
        result: dict[str, Any] = {}
        if entry == "agent":
            result["steps"] = await self._run_agent()
            assert self.agent is not None
            result["messages"] = [wire(m) for m in self.agent.state.messages]
        else:
            result.update(await self._run_loop(entry))
        if self.snapshot_on_receive:
            result["events"] = self.events
        result["kept"] = [wire(e) for e in self.kept]
        result["llmCalls"] = self.llm_calls
        result["executions"] = self.executions
        result["hooks"] = self.hooks
        return result

    async def _run_agent(self) -> list[Any]:
        options = self.scenario.get("options", {})
        settings: dict[str, Any] = {}
        if "toolExecution" in options:
            settings["tool_execution"] = options["toolExecution"]
        for key, name in (("steeringMode", "steering_mode"), ("followUpMode", "follow_up_mode")):
            if key in options:
                settings[name] = options[key].replace("-", "_")
        if "getApiKeyError" in options:
            def get_api_key(provider: str) -> str:
                raise RuntimeError(options["getApiKeyError"])
            settings["get_api_key"] = get_api_key
        if "before" in self.scenario:
            settings["before_tool_call"] = self.before_tool_call
        if "after" in self.scenario:
            settings["after_tool_call"] = self.after_tool_call
        agent = self.agent = Agent(stream_fn=self.stream_fn, session_id=options.get("sessionId"), **settings)
        agent.set_model(self.faux.model())
        agent.set_system_prompt(options.get("systemPrompt", ""))
        agent.set_thinking_level(options.get("thinkingLevel", "off"))
        agent.set_tools(self.tools)
        agent.replace_messages([_MESSAGE.validate_python(m) for m in self.scenario.get("initialMessages", [])])
        agent.subscribe(self.listen)

        steps = []
        for step in self.scenario.get("steps", []):
            record: dict[str, Any] = {}
            try:
                if "prompt" in step:
                    await agent.prompt(step["prompt"])
                elif "continue" in step:
                    await agent.continue_()
                elif "steer" in step:
                    agent.steer(user_message(step["steer"]))
                elif "followUp" in step:
                    agent.follow_up(user_message(step["followUp"]))
                elif "abort" in step:
                    agent.abort()
            except Exception as exc:
                record["thrown"] = str(exc)
            state = agent.state
            record.update({
                "roles": [m.role for m in state.messages],
                "isStreaming": state.is_streaming,
                "streamMessage": None if state.stream_message is None else wire(state.stream_message),
                "pendingToolCalls": sorted(state.pending_tool_calls),
                "queued": agent.has_queued_messages(),
            })
            if state.error is not None:
                record["error"] = state.error
            steps.append(record)
        return steps

    async def _run_loop(self, entry: str) -> dict[str, Any]:
        options = self.scenario.get("options", {})
        context = AgentContext(
            system_prompt=options.get("systemPrompt", ""),
            messages=[_MESSAGE.validate_python(m) for m in self.scenario.get("initialMessages", [])],
            tools=self.tools,
        )
        config = AgentLoopConfig(model=self.faux.model(), stream_fn=self.stream_fn)
        prompts = [user_message(p) for p in self.scenario.get("prompts", [])]
        if entry == "run_loop":
            return {"result": [wire(m) for m in await run_agent_loop(prompts, context, config, self.listen)]}
        # The iterator forms: the consumer reads events some time after they were emitted, and
        # how long after is the scheduler's business (asyncio tasks vs JavaScript microtasks),
        # so only the events as kept are compared, not what was streamed by then.
        self.snapshot_on_receive = False
        try:
            stream = agent_loop(prompts, context, config) if entry == "loop" else agent_loop_continue(context, config)
        except Exception as exc:
            return {"thrown": str(exc)}
        async for event in stream:
            self.listen(event)
        return {"result": [wire(m) for m in await stream.result()]}


def _matches(trigger: dict[str, Any], event: Any) -> bool:
    if event.type != trigger["on"]:
        return False
    if "toolCallId" in trigger and getattr(event, "tool_call_id", None) != trigger["toolCallId"]:
        return False
    return "assistantEvent" not in trigger or event.assistant_message_event.type == trigger["assistantEvent"]


async def run_scenario(scenario: dict[str, Any], tool_specs: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(10):
        return await TillerRun(scenario, tool_specs).run()

