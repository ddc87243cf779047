"""Compaction: the older part of a conversation replaced by a summary the session's own
model writes, the recent turns kept verbatim.

- Where to cut (`cut_point`): walking back from the newest message until the kept part
  holds `keep_recent_tokens`, then forward to the next message that starts a step of the
  conversation (a user or assistant message). A tool result is never the first kept
  message, so a tool call and its result are never separated.
- The summary (`summarize`): the messages to replace are written out as plain text (tool
  results shortened) and sent with a prompt asking for goal, decisions, files touched and
  their state, and open tasks; the previous summary, if any, is updated rather than lost.
  A part too long for one request is summarised in chunks, each folding into the summary
  so far.
- In what the model sees, the summary takes the place of the replaced messages
  (`summary_message`), worded as pi-coding-agent words it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from ..agent.types import resolve
from ..ai.abort import AbortSignal
from ..ai.options import StreamOptions
from ..ai.registry import complete
from ..ai.types import AssistantMessage, Context, Model, TextContent, Usage, UserMessage, total_usage
from .compaction_settings import SUMMARY_MAX_TOKENS, default_threshold, output_reserve
from .overflow import is_context_overflow
from .token_estimate import CHARS_PER_TOKEN, message_tokens, text_tokens

SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:"

SUMMARY_SYSTEM_PROMPT = """\
You write the working notes that let a coding agent carry on a long session after the \
earlier part of its conversation is removed from its context. Write only the notes, in \
Markdown, under exactly these headings:

## Goal
What the user wants overall, and their latest request.
## Decisions
Choices made and constraints agreed, with the reasons given.
## Files
Every file read, created or changed, each with its current state: what was changed, what \
is still pending.
## Open tasks
What is left to do, in order, and what the agent was in the middle of.
## Facts to keep
Anything else needed to go on: commands that work, errors met and their causes, names, \
values, the user's preferences.

Be specific (paths, function names, numbers). Do not invent anything. Be brief: the notes \
must stay well under {words} words."""

# Text kept of one tool result / one other message when writing the conversation out.
TOOL_RESULT_CHARS = 2_000
MESSAGE_CHARS = 12_000
# Summary requests refused as too long are tried again with parts half the size, this often.
SUMMARY_ATTEMPTS = 3


class CompactionError(Exception):
    def __init__(self, message: str, *, aborted: bool = False) -> None:
        super().__init__(message)
        self.aborted = aborted
        # What the summary requests made before the failure cost: billed all the same.
        self.usage: Usage | None = None


class _TooLong(CompactionError):
    """The summary request itself passed the model's window."""


def cut_point(messages: list[Any], start: int, keep_recent_tokens: int) -> int | None:
    """The index of the first message to keep verbatim, after `start` (the part before
    it is summarised); None when nothing before the latest step could be replaced."""
    kept = 0
    index = len(messages)
    while index > start + 1 and kept < keep_recent_tokens:
        index -= 1
        kept += message_tokens(messages[index])
    # Forward to a message that starts a step: never separate a tool result from its call.
    while index < len(messages) and not _starts_step(messages[index]):
        index += 1
    if index >= len(messages):
        # The recent budget holds less than the latest step: keep that step alone.
        index = next((i for i in range(len(messages) - 1, start, -1) if _starts_step(messages[i])), start)
    return index if index > start else None


def _starts_step(message: Any) -> bool:
    return getattr(message, "role", None) in ("user", "assistant")


def summary_message(summary: str, timestamp: int) -> UserMessage:
    return UserMessage(content=[TextContent(text=f"{SUMMARY_PREFIX}\n\n<summary>\n{summary}\n</summary>")],
                       timestamp=timestamp)


async def summarize(
    model: Model,
    messages: list[Any],
    *,
    previous: str | None,
    instructions: str | None,
    api_key: Callable[[str], Any] | None,
    signal: AbortSignal,
    stream_options: Callable[[Model], StreamOptions] | None = None,
) -> tuple[str, Usage]:
    """The summary of `messages` (folded into `previous`), and what writing it cost, asked of
    `model` with the key `api_key` gives and the request settings `stream_options` gives.
    Raises `CompactionError` when the model fails or the signal aborts."""
    max_tokens = min(output_reserve(model), SUMMARY_MAX_TOKENS, max(model.context_window // 8, 256))
    system_prompt = SUMMARY_SYSTEM_PROMPT.format(words=max(int(max_tokens * 0.6), 100))
    key = await resolve(api_key(model.provider)) if api_key else None
    # The model's request settings (timeouts, retries) as for any of its calls.
    base = stream_options(model) if stream_options else StreamOptions()
    options = dataclasses.replace(base, api_key=key, signal=signal, max_tokens=max_tokens)
    replies: list[AssistantMessage] = []
    try:
        return await _summarize_in_parts(model, messages, system_prompt, max_tokens, previous, instructions,
                                         options, signal, replies)
    except CompactionError as error:
        error.usage = total_usage(replies) if replies else None
        raise


async def _summarize_in_parts(model: Model, messages: list[Any], system_prompt: str, max_tokens: int,
                              previous: str | None, instructions: str | None, options: StreamOptions,
                              signal: AbortSignal, replies: list[AssistantMessage]) -> tuple[str, Usage]:
    """`summarize`'s attempts, each reply appended to `replies` as it comes."""
    budget = _chunk_budget(model, system_prompt, max_tokens, previous, instructions)
    for _ in range(SUMMARY_ATTEMPTS):
        summary = previous
        try:
            for chunk in _chunks(messages, budget):
                request = Context(system_prompt=system_prompt,
                                  messages=[UserMessage(content=_request_text(summary, chunk, instructions))])
                reply = await _complete(model, request, options)
                replies.append(reply)
                summary = _summary_of(reply, signal)
        except _TooLong:
            budget //= 2  # the model counts more tokens than estimated: smaller parts
            continue
        if summary is None:  # no messages at all: cut_point never allows it, but stay correct
            raise CompactionError("Nothing to summarise")
        return summary, total_usage(replies)
    raise CompactionError("The model refused the conversation as too long, even in small parts")


async def _complete(model: Model, context: Context, options: StreamOptions) -> AssistantMessage:
    try:
        return await complete(model, context, options)
    except Exception as error:  # a provider that raised instead of reporting an error
        raise CompactionError(f"The model could not write the summary: {error}") from error


def _chunk_budget(model: Model, system_prompt: str, max_tokens: int, previous: str | None,
                  instructions: str | None) -> int:
    """Tokens of conversation text one summary request may carry: what the model's window
    leaves after the prompt, the summary so far (which grows to at most `max_tokens`) and
    the reply."""
    fixed = text_tokens(system_prompt) + text_tokens(instructions or "") + 200
    summary_room = max(text_tokens(previous or ""), max_tokens)
    # The written-out conversation is code and JSON as much as prose: the estimate can run a
    # quarter low there (token_estimate.py).
    room = int((default_threshold(model) - fixed - summary_room) * 0.75)
    return max(room, 1_000)


def _chunks(messages: list[Any], budget: int) -> list[str]:
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for message in messages:
        text = _written_out(message)
        if not text:
            continue
        cost = text_tokens(text)
        if cost > budget:  # one message alone over the budget: keep what fits
            text = text[: (budget - 10) * CHARS_PER_TOKEN] + "\n[… cut for the summary]"
            cost = text_tokens(text)
        if current and used + cost > budget:
            chunks.append("\n\n".join(current))
            current, used = [], 0
        current.append(text)
        used += cost
    if current:
        chunks.append("\n\n".join(current))
    return chunks


def _written_out(message: Any) -> str:
    role = getattr(message, "role", None)
    if role == "user":
        return "[User]: " + _clip(_text(message.content), MESSAGE_CHARS)
    if role == "assistant":
        if message.stop_reason in ("error", "aborted") and not message.content:
            return ""
        parts = []
        for block in message.content:
            if block.type == "text" and block.text.strip():
                parts.append("[Assistant]: " + _clip(block.text, MESSAGE_CHARS))
            elif block.type == "toolCall":
                arguments = _clip(json.dumps(block.arguments, ensure_ascii=False), MESSAGE_CHARS)
                parts.append(f"[Assistant called {block.name}]: {arguments}")
        if message.stop_reason == "error" and message.error_message:
            parts.append(f"[Error]: {message.error_message}")
        return "\n".join(parts)
    if role == "toolResult":
        status = " (error)" if message.is_error else ""
        return f"[{message.tool_name} result{status}]: " + _clip(_text(message.content), TOOL_RESULT_CHARS)
    return ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(block.text for block in content if getattr(block, "type", None) == "text")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" [… {len(text) - limit} more characters]"


def _request_text(previous: str | None, conversation: str, instructions: str | None) -> str:
    parts = []
    if previous:
        parts.append(f"<previous-notes>\n{previous}\n</previous-notes>")
    parts.append(f"<conversation>\n{conversation}\n</conversation>")
    if previous:
        parts.append("Update the previous notes with the conversation above, which continues from them.")
    else:
        parts.append("Write the notes for the conversation above.")
    if instructions:
        parts.append(f"The user asks for these notes: {instructions}")
    return "\n\n".join(parts)


def _summary_of(reply: AssistantMessage, signal: AbortSignal) -> str:
    if reply.stop_reason == "aborted" or signal.aborted:
        raise CompactionError("Compaction aborted", aborted=True)
    if reply.stop_reason == "error" and is_context_overflow(reply.error_message):
        raise _TooLong(reply.error_message or "")
    if reply.stop_reason == "error":
        raise CompactionError(f"The model could not write the summary: {reply.error_message or 'unknown error'}")
    text = "".join(block.text for block in reply.content if isinstance(block, TextContent)).strip()
    if not text:
        raise CompactionError("The model wrote an empty summary")
    return text
