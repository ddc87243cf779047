"""History clean-up every provider applies before converting messages to its wire format.

- Assistant messages that ended in `error` or `aborted` stay in the agent's history and
  session files but are never sent back to the model.
- A tool call left without a result (the run was aborted, or a steering message cut the
  batch short in a way that lost it) gets a synthetic error result `No result provided`,
  because every vendor rejects a tool call with no matching result.
- Thinking from a different model becomes plain text (its signature means nothing there);
  empty or redacted foreign thinking is dropped, and so are the opaque signatures a model
  left on text and tool calls (Responses item ids, Gemini thought signatures).
"""

from __future__ import annotations

from typing import Any

from .types import (
    AssistantMessage,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

NO_RESULT_TEXT = "No result provided"
IMAGE_ONLY_TEXT = "(see attached image)"


def transform_messages(messages: list[Any], model: Model) -> list[Any]:
    out: list[Any] = []
    awaiting: dict[str, str] = {}  # tool call id -> tool name, for the last assistant

    def flush_orphans() -> None:
        for call_id, name in awaiting.items():
            out.append(
                ToolResultMessage(
                    tool_call_id=call_id,
                    tool_name=name,
                    content=[TextContent(text=NO_RESULT_TEXT)],
                    is_error=True,
                )
            )
        awaiting.clear()

    for message in messages:
        if isinstance(message, AssistantMessage):
            flush_orphans()
            if message.stop_reason in ("error", "aborted"):
                continue
            message = _adapt_thinking(message, model)
            awaiting.update({call.id: call.name for call in message.tool_calls()})
            out.append(message)
        elif isinstance(message, ToolResultMessage):
            awaiting.pop(message.tool_call_id, None)
            out.append(message)
        elif isinstance(message, UserMessage):
            flush_orphans()
            out.append(message)
        else:
            out.append(message)
    flush_orphans()
    return out


def _adapt_thinking(message: AssistantMessage, model: Model) -> AssistantMessage:
    same_model = message.provider == model.provider and message.model == model.id
    if same_model or not any(_carries_signature(b) for b in message.content):
        return message
    content: list[TextContent | ToolCall] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if block.redacted or not block.thinking.strip():
                continue
            content.append(TextContent(text=block.thinking))
        elif isinstance(block, TextContent) and block.text_signature:
            content.append(block.model_copy(update={"text_signature": None}))
        elif isinstance(block, ToolCall) and block.thought_signature:
            content.append(block.model_copy(update={"thought_signature": None}))
        else:
            content.append(block)
    return message.model_copy(update={"content": content})


def _carries_signature(block: Any) -> bool:
    return (
        isinstance(block, ThinkingContent)
        or (isinstance(block, TextContent) and bool(block.text_signature))
        or (isinstance(block, ToolCall) and bool(block.thought_signature))
    )


def tool_result_text(message: ToolResultMessage, *, images_sent: bool) -> str:
    """A tool result's text for APIs that take results as text, the images travelling
    apart: a result that is only images says so when they are sent."""
    texts = [block.text for block in message.content if isinstance(block, TextContent)]
    if texts:
        return "\n".join(texts)
    return IMAGE_ONLY_TEXT if images_sent else ""
