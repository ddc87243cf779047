// Runs the parity scenarios (../scenarios.json) through the real pi-agent-core 0.58.3 and
// prints one JSON object {scenario name: trace} on stdout. The twin of ../tiller_trace.py:
// same tools, same steps and triggers, and a stream function that replays the scripted
// responses exactly as tiller's faux provider streams them (server/tiller/ai/providers/faux.py).
//
//   node pi_trace.mjs [scenario name ...]

import { readFileSync } from "node:fs";
import { Agent, agentLoop, agentLoopContinue, runAgentLoop } from "@mariozechner/pi-agent-core";
import { parseStreamingJson } from "@mariozechner/pi-ai";

const ABORTED_TEXT = "Request was aborted";
const EMPTY_QUEUE_TEXT = "No more faux responses queued";
const SCENARIO_TIMEOUT_MS = 10_000;
// Not compared: wall-clock times, and token counts (the faux provider's estimate, not pi's logic).
const UNCOMPARED_KEYS = new Set(["timestamp", "usage"]);

const tick = () => new Promise((resolve) => setImmediate(resolve)); // tiller's faux: asyncio.sleep(0)

function normalise(value) {
  if (Array.isArray(value)) return value.map(normalise);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).filter(([key]) => !UNCOMPARED_KEYS.has(key)).map(([key, v]) => [key, normalise(v)]),
    );
  }
  return value;
}

const wire = (value) => normalise(JSON.parse(JSON.stringify(value)));
const userMessage = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });

// Python's json.dumps(value, ensure_ascii=False): the faux provider streams tool arguments
// as that text, so the chunks (and the partial arguments parsed from them) line up.
function pythonJson(value) {
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${pythonJson(v)}`).join(", ")}}`;
  }
  return JSON.stringify(value);
}

function chunks(text, size) {
  const parts = [];
  for (let i = 0; i < text.length; i += size) parts.push(text.slice(i, i + size));
  return parts.length ? parts : [""];
}

function scriptedResponse(data) {
  const content = data.content.map((block) => (block.type === "toolCall" ? { id: "", ...block } : block));
  const stopReason = data.stopReason ?? (content.some((b) => b.type === "toolCall") ? "toolUse" : "stop");
  return { content, stopReason, errorMessage: data.errorMessage };
}

function fauxModel() {
  return {
    id: "faux-1", name: "Faux (faux-1)", api: "faux", provider: "faux", baseUrl: "", reasoning: false,
    input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 128000, maxTokens: 16384,
  };
}

// A stream of events pulled one at a time, like tiller's providers (async generators): the
// loop handles each event before the next is made, as with a network stream whose chunks
// arrive apart. (pi-ai's push-based EventStream would let the script run ahead of the loop
// here, where nothing separates the chunks but a tick.) `result()` is the final message.
function pulledStream(generate) {
  let resolveResult;
  const result = new Promise((resolve) => { resolveResult = resolve; });
  return {
    async *[Symbol.asyncIterator]() {
      for await (const event of generate()) {
        if (event.type === "done") resolveResult(event.message);
        if (event.type === "error") resolveResult(event.error);
        yield event;
      }
    },
    result: () => result,
  };
}

// A stream function replaying `responses` the way tiller's FauxProvider.stream does.
function scriptedStreamFn(responses, chunkChars, record) {
  const queue = responses.map(scriptedResponse);
  let nextId = 0;
  return (model, context, options) => {
    record(context, options);
    const signal = options?.signal;
    const message = {
      role: "assistant", content: [], api: model.api, provider: model.provider, model: model.id,
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
      stopReason: "stop", timestamp: Date.now(),
    };
    const fail = (text, aborted) => {
      message.stopReason = aborted ? "aborted" : "error";
      message.errorMessage = text || (aborted ? ABORTED_TEXT : "An unknown error occurred");
      return { type: "error", reason: message.stopReason, error: message };
    };
    return pulledStream(async function* play() {
      if (queue.length === 0) {
        yield fail(EMPTY_QUEUE_TEXT, false);
        return;
      }
      const script = queue.shift();
      yield { type: "start", partial: message };
      for (const source of script.content) {
        const index = message.content.length;
        let kind, text, append;
        if (source.type === "text") {
          const block = { type: "text", text: "" };
          message.content.push(block);
          kind = "text";
          text = source.text;
          append = (delta) => { block.text += delta; };
        } else if (source.type === "thinking") {
          const block = { type: "thinking", thinking: "" };
          if (source.thinkingSignature !== undefined) block.thinkingSignature = source.thinkingSignature;
          message.content.push(block);
          kind = "thinking";
          text = source.thinking;
          append = (delta) => { block.thinking += delta; };
        } else {
          const block = { type: "toolCall", id: source.id || `faux_call_${++nextId}`, name: source.name, arguments: {} };
          message.content.push(block);
          kind = "toolcall";
          text = pythonJson(source.arguments);
          let json = "";
          append = (delta) => { json += delta; block.arguments = parseStreamingJson(json); };
        }
        yield { type: `${kind}_start`, contentIndex: index, partial: message };
        for (const chunk of chunks(text, chunkChars)) {
          await tick();
          if (signal?.aborted) {
            yield fail(ABORTED_TEXT, true);
            return;
          }
          append(chunk);
          yield { type: `${kind}_delta`, contentIndex: index, delta: chunk, partial: message };
        }
        const block = message.content[index];
        if (kind === "text") yield { type: "text_end", contentIndex: index, content: block.text, partial: message };
        else if (kind === "thinking") yield { type: "thinking_end", contentIndex: index, content: block.thinking, partial: message };
        else {
          block.arguments = parseStreamingJson(text);
          yield { type: "toolcall_end", contentIndex: index, toolCall: block, partial: message };
        }
      }
      if (script.stopReason === "error" || script.stopReason === "aborted") {
        yield fail(script.errorMessage ?? "", script.stopReason === "aborted");
        return;
      }
      message.stopReason = script.stopReason;
      yield { type: "done", reason: message.stopReason, message };
    });
  };
}

class PiRun {
  constructor(scenario, toolSpecs) {
    this.scenario = scenario;
    this.events = [];
    this.snapshotOnReceive = true;
    this.kept = [];
    this.llmCalls = [];
    this.executions = [];
    this.hooks = [];
    this.agent = null;
    this.triggers = (scenario.triggers ?? []).map((t) => ({ ...t, seen: 0, fired: false }));
    let openGate;
    this.gate = new Promise((resolve) => { openGate = resolve; });
    this.openGate = openGate;
    this.streamFn = scriptedStreamFn(scenario.responses, scenario.chunkChars ?? 16, (context, options) => {
      this.llmCalls.push(wire({
        systemPrompt: context.systemPrompt,
        messages: context.messages,
        tools: (context.tools ?? []).map((t) => t.name),
        ...(options?.reasoning ? { reasoning: options.reasoning } : {}),
        ...(options?.sessionId ? { sessionId: options.sessionId } : {}),
      }));
    });
    this.tools = (scenario.tools ?? []).map((name) => this.tool(name, toolSpecs[name]));
  }

  tool(name, spec) {
    return {
      name, label: name, description: spec.description, parameters: spec.parameters,
      execute: async (toolCallId, args, signal, onUpdate) => {
        this.executions.push([toolCallId, structuredClone(args)]);
        return this.behave(name, args, signal, onUpdate);
      },
    };
  }

  async behave(name, args, signal, onUpdate) {
    switch (name) {
      case "echo":
        return { content: [{ type: "text", text: `echoed: ${args.value}` }], details: { value: args.value } };
      case "add": {
        const total = args.a + args.b;
        return { content: [{ type: "text", text: String(total) }], details: { sum: total } };
      }
      case "fail":
        throw new Error(args.message);
      case "progress":
        for (let step = 1; step <= args.steps; step++) {
          onUpdate({ content: [{ type: "text", text: `step ${step}/${args.steps}` }], details: { step } });
        }
        await tick();
        return { content: [{ type: "text", text: `done after ${args.steps} steps` }] };
      case "wait":
        await this.gate;
        return { content: [{ type: "text", text: "waited" }] };
      case "open":
        this.openGate();
        return { content: [{ type: "text", text: "opened" }] };
      case "wait_abort":
        if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        throw new Error("Operation aborted");
      default:
        throw new Error(`no behaviour for tool ${name}`);
    }
  }

  beforeToolCall = async ({ toolCall, args }) => {
    this.hooks.push(["before", toolCall.id, structuredClone(args)]);
    const rule = this.scenario.before[toolCall.id];
    if (rule === undefined) return undefined;
    if (rule.throw !== undefined) throw new Error(rule.throw);
    return { block: rule.block ?? false, reason: rule.reason };
  };

  afterToolCall = async ({ toolCall, result, isError }) => {
    this.hooks.push(["after", toolCall.id, isError, wire(result)]);
    const rule = this.scenario.after[toolCall.id];
    if (rule === undefined) return undefined;
    return { content: rule.content, details: rule.details, isError: rule.isError };
  };

  listen = (event) => {
    if (this.snapshotOnReceive) this.events.push(wire(event));
    this.kept.push(event);
    for (const trigger of this.triggers) {
      if (trigger.fired || !matches(trigger, event)) continue;
      trigger.seen += 1;
      if (trigger.seen === (trigger.nth ?? 1)) {
        trigger.fired = true;
        for (const action of trigger.do) this.act(action);
      }
    }
  };

  act(action) {
    if ("steer" in action) this.agent.steer(userMessage(action.steer));
    else if ("followUp" in action) this.agent.followUp(userMessage(action.followUp));
    else if ("abort" in action) this.agent.abort();
  }

  async run() {
    const entry = this.scenario.entry ?? "agent";
    const result = {};
    if (entry === "agent") {
      result.steps = await this.runAgent();
      result.messages = this.agent.state.messages.map(wire);
    } else {
      Object.assign(result, await this.runLoop(entry));
    }
    if (this.snapshotOnReceive) result.events = this.events;
    result.kept = this.kept.map(wire);
    result.llmCalls = this.llmCalls;
    result.executions = this.executions;
    result.hooks = this.hooks;
    return result;
  }

  async runAgent() {
    const options = this.scenario.options ?? {};
    const settings = {};
    if (options.toolExecution !== undefined) settings.toolExecution = options.toolExecution;
    if (options.steeringMode !== undefined) settings.steeringMode = options.steeringMode;
    if (options.followUpMode !== undefined) settings.followUpMode = options.followUpMode;
    if (options.getApiKeyError !== undefined) {
      settings.getApiKey = () => { throw new Error(options.getApiKeyError); };
    }
    if (this.scenario.before !== undefined) settings.beforeToolCall = this.beforeToolCall;
    if (this.scenario.after !== undefined) settings.afterToolCall = this.afterToolCall;
    const agent = (this.agent = new Agent({
      initialState: {
        model: fauxModel(),
        systemPrompt: options.systemPrompt ?? "",
        thinkingLevel: options.thinkingLevel ?? "off",
        tools: this.tools,
        messages: structuredClone(this.scenario.initialMessages ?? []),
      },
      streamFn: this.streamFn,
      sessionId: options.sessionId,
      ...settings,
    }));
    agent.subscribe(this.listen);

    const steps = [];
    for (const step of this.scenario.steps ?? []) {
      const record = {};
      try {
        if ("prompt" in step) await agent.prompt(step.prompt);
        else if ("continue" in step) await agent.continue();
        else if ("steer" in step) agent.steer(userMessage(step.steer));
        else if ("followUp" in step) agent.followUp(userMessage(step.followUp));
        else if ("abort" in step) agent.abort();
      } catch (error) {
        record.thrown = error.message;
      }
      const state = agent.state;
      Object.assign(record, {
        roles: state.messages.map((m) => m.role),
        isStreaming: state.isStreaming,
        streamMessage: state.streamMessage === null ? null : wire(state.streamMessage),
        pendingToolCalls: [...state.pendingToolCalls].sort(),
        queued: agent.hasQueuedMessages(),
      });
      if (state.error !== undefined) record.error = state.error;
      steps.push(record);
    }
    return steps;
  }

  async runLoop(entry) {
    const options = this.scenario.options ?? {};
    const context = {
      systemPrompt: options.systemPrompt ?? "",
      messages: structuredClone(this.scenario.initialMessages ?? []),
      tools: this.tools,
    };
    // convertToLlm is required by pi's loop; tiller's defaults to this same filter.
    const config = {
      model: fauxModel(),
      convertToLlm: (messages) => messages.filter((m) => ["user", "assistant", "toolResult"].includes(m.role)),
    };
    const prompts = (this.scenario.prompts ?? []).map(userMessage);
    if (entry === "run_loop") {
      const emit = async (event) => this.listen(event);
      return { result: (await runAgentLoop(prompts, context, config, emit, undefined, this.streamFn)).map(wire) };
    }
    // The iterator forms: see tiller_trace.py for why only the events as kept are compared.
    this.snapshotOnReceive = false;
    let stream;
    try {
      stream = entry === "loop"
        ? agentLoop(prompts, context, config, undefined, this.streamFn)
        : agentLoopContinue(context, config, undefined, this.streamFn);
    } catch (error) {
      return { thrown: error.message };
    }
    for await (const event of stream) this.listen(event);
    return { result: (await stream.result()).map(wire) };
  }
}

function matches(trigger, event) {
  if (event.type !== trigger.on) return false;
  if (trigger.toolCallId !== undefined && event.toolCallId !== trigger.toolCallId) return false;
  return trigger.assistantEvent === undefined || event.assistantMessageEvent?.type === trigger.assistantEvent;
}

async function runScenario(scenario, toolSpecs) {
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ timedOut: `no end after ${SCENARIO_TIMEOUT_MS} ms` }), SCENARIO_TIMEOUT_MS);
  });
  try {
    return await Promise.race([new PiRun(scenario, toolSpecs).run(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const { tools, scenarios } = JSON.parse(readFileSync(new URL("../scenarios.json", import.meta.url), "utf8"));
const wanted = process.argv.slice(2);
const traces = {};
for (const scenario of scenarios) {
  if (wanted.length && !wanted.includes(scenario.name)) continue;
  traces[scenario.name] = await runScenario(scenario, tools);
}
// Exit once written: a timed-out scenario may leave a run pending forever.
process.stdout.write(JSON.stringify(traces), () => process.exit(0));
