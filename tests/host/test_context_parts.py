"""The pure parts of context handling, each on its own: where a compaction cuts, which
provider errors mean "too long", the thresholds, cutting a tool result, the meter."""

from __future__ import annotations

import pytest

from tiller.ai.models import builtin_model
from tiller.ai.types import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from tiller.host.compaction import cut_point
from tiller.host.compaction_settings import CompactionPolicy, default_threshold
from tiller.host.context_meter import count_request
from tiller.host.overflow import is_context_overflow
from tiller.host.token_estimate import message_tokens
from tiller.host.tool_output_limit import limit_tool_result


def user(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)])


def assistant(*blocks, usage: Usage | None = None, stop_reason: str = "stop") -> AssistantMessage:
    return AssistantMessage(content=list(blocks), api="openai-completions", provider="openai", model="m",
                            usage=usage or Usage(), stop_reason=stop_reason)


def call(call_id: str, name: str = "read", **arguments) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def result(call_id: str, text: str, name: str = "read") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name=name, content=[TextContent(text=text)])


# --- cut_point ---------------------------------------------------------------------------------


def test_the_cut_never_falls_between_a_tool_call_and_its_results():
    messages = [user("start"), assistant(call("a"), call("b")), result("a", "x" * 400), result("b", "y" * 400),
                assistant(TextContent(text="done"))]
    # A budget that is reached inside the tool results moves the cut forward, past them.
    for budget in range(1, 400):
        index = cut_point(messages, 0, budget)
        assert index is not None and messages[index].role != "toolResult"
    # The budget is what is kept at most, except that the latest step is always kept.
    assert cut_point(messages, 0, 1) == 4
    assert cut_point(messages, 0, sum(message_tokens(m) for m in messages[2:])) == 4
    assert cut_point(messages, 0, sum(message_tokens(m) for m in messages[1:])) == 1


def test_the_latest_step_is_always_kept_and_an_empty_part_is_not_compacted():
    assert cut_point([], 0, 100) is None
    assert cut_point([user("only")], 0, 1) is None
    step = [user("go"), assistant(call("a")), result("a", "z" * 10_000)]
    # The last step (the call and its huge result) alone is over the budget: it is kept.
    assert cut_point(step, 0, 10) == 1
    assert cut_point(step, 1, 10) is None  # nothing before it left to summarise


# --- overflow --------------------------------------------------------------------------------


@pytest.mark.parametrize("message", [
    "400 Bad Request: This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
    "400 Bad Request: prompt is too long: 208310 tokens > 200000 maximum",
    "400 Bad Request: the request exceeds the available context size, try increasing it",
    "400 Bad Request: prompt too long; exceeded max context length by 12 tokens",
    "500 Internal Server Error: the input length exceeds the context length",
    "400 Bad Request: Trying to keep the first 9000 tokens when context the overflows. However, the model is loaded "
    "with context length of only 4096 tokens, which is not enough.",
    "400 Bad Request: Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
    "400 Bad Request: The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
    "Error: context_length_exceeded",
])
def test_providers_overflow_errors_are_recognised(message):
    assert is_context_overflow(message)


@pytest.mark.parametrize("message", [
    None, "", "429 Too Many Requests: Request too large for gpt-4o on tokens per min (TPM): Limit 30000",
    "401 Unauthorized: invalid x-api-key", "Connection error: connection refused", "Request was aborted",
])
def test_other_errors_are_not_overflows(message):
    assert not is_context_overflow(message)


# --- thresholds ---------------------------------------------------------------------------------


def test_thresholds_from_the_default_the_model_and_the_session():
    mini = builtin_model("openai/gpt-4o-mini")  # 128,000 window, 16,384 max output
    assert default_threshold(mini) == 128_000 - 16_384 - 6_400
    opus = builtin_model("anthropic/claude-opus-4-1")  # 200,000 window, 32,000 max output
    assert default_threshold(opus) == 200_000 - 32_000 - 10_000
    # A model whose max output is its whole window still compacts at half of it, not at once.
    odd = mini.model_copy(update={"context_window": 8192, "max_tokens": 8192})
    assert default_threshold(odd) == 4096

    settings = CompactionPolicy().resolve(mini)
    assert (settings.compact_at, settings.compact_at_source) == (default_threshold(mini), "default")
    assert settings.keep_recent_tokens == 20_000 and settings.tool_result_max_tokens == 12_000
    configured = mini.model_copy(update={"compact_at": "50%"})
    assert CompactionPolicy().resolve(configured).compact_at == 64_000
    session = CompactionPolicy().changed(auto=False, compact_at=10_000, keep_recent_tokens=None,
                                         tool_result_max_tokens=None)
    resolved = session.resolve(configured)
    assert (resolved.auto, resolved.compact_at, resolved.compact_at_source) == (False, 10_000, "session")
    # Small thresholds shrink the defaults that depend on them.
    assert (resolved.keep_recent_tokens, resolved.tool_result_max_tokens) == (2_500, 2_500)
    back = session.changed(auto=None, compact_at="default", keep_recent_tokens=None, tool_result_max_tokens=None)
    assert back.resolve(configured).compact_at_source == "model"
    assert CompactionPolicy.from_record(session.record()) == session
    assert CompactionPolicy.from_record({"compactAt": "lots", "auto": "yes", "keepRecentTokens": -1}) == CompactionPolicy()


# --- cutting a tool result ---------------------------------------------------------------------


def test_a_long_read_is_cut_at_a_line_with_the_offset_to_go_on_from():
    text = "".join(f"line {n}\n" for n in range(1, 5001))
    cut = limit_tool_result(result("c", text), 100, {"path": "f", "offset": 41})
    shown = cut.content[0].text
    assert shown.startswith("line 1\n") and len(shown) < 100 * 4 + 400
    lines = shown.split("\n\n[")[0].split("\n")
    assert lines[-1] == f"line {len(lines)}"
    assert f"read the file again with offset={41 + len(lines)}" in shown
    assert "The full output is kept in the session file" in shown
    small = result("c", "short")
    assert limit_tool_result(small, 100, None) is small


def test_long_command_output_keeps_its_start_and_its_end():
    text = "".join(f"out {n}\n" for n in range(1, 5001))
    shown = limit_tool_result(result("c", text, name="bash"), 100, {"command": "make"}).content[0].text
    assert shown.startswith("out 1\n") and shown.endswith("out 5000\n")
    assert "characters (" in shown and "narrowed (grep, head, tail" in shown


# --- the meter ---------------------------------------------------------------------------------


def test_the_meter_anchors_on_the_last_report_and_estimates_the_rest():
    reported = assistant(TextContent(text="ok"), usage=Usage(input=900, cache_read=100, output=20))
    added = [user("x" * 400)]
    view = [user("hi"), reported, *added]
    tokens, source = count_request(view, system_prompt="s" * 4000, tools=[], trusted_from=0)
    assert (tokens, source) == (1020 + message_tokens(added[0]), "provider")
    # Reports from before a compaction (outside the trusted part) count for nothing.
    tokens, source = count_request(view, system_prompt="s" * 4000, tools=[], trusted_from=2)
    assert source == "estimate" and tokens == 1000 + sum(message_tokens(m) for m in view)
    # A failed call's report is not trusted either.
    failed = assistant(TextContent(text=""), usage=Usage(input=5), stop_reason="error")
    assert count_request([user("a"), failed], system_prompt="", tools=[], trusted_from=0)[1] == "estimate"
