"""A chat model with a small context window, played over OpenAI's wire by a loopback server.

It behaves as such a server does where tiller's context handling is concerned:
- it counts each request's tokens its own way (the JSON of the messages at 3 characters a
  token, the tools at 4: a third more than tiller's estimate, as a real tokenizer on code
  and JSON would), reports that count as `prompt_tokens`, and refuses a request whose count
  plus the `max_tokens` asked for does not fit the window, with OpenAI's
  `context_length_exceeded` error;
- it answers a summary request (tiller's compaction prompt) with notes naming the turns it
  was shown, and any other request with `answer(messages)`: by default a long reply naming
  the turn, or a `read` call when the prompt asks to read a file.
Every request and its count are recorded, so a test can check what the model was sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support.sse_server import Reply, Request

from .harness import openai_chunk

SUMMARY_MARK = "You write the working notes"
FILLER = " ".join(f"detail{i}" for i in range(120))


@dataclass
class Call:
    body: dict[str, Any]
    tokens: int
    refused: bool
    summary: bool


def overflow_error(window: int, tokens: int) -> Reply:
    return Reply.json(400, {"error": {
        "message": f"This model's maximum context length is {window} tokens. However, you requested {tokens} "
                   "tokens. Please reduce the length of the messages or completion.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
    }})


def default_answer(messages: list[dict[str, Any]]) -> dict[str, Any]:
    last = messages[-1]
    if last["role"] == "tool":
        return {"content": f"I read it. {FILLER}"}
    prompt = _text(last)
    if match := re.search(r"read (\S+)", prompt):
        return {"tool_calls": [{"index": 0, "id": f"call_{len(messages)}", "type": "function",
                                "function": {"name": "read", "arguments": json.dumps({"path": match[1]})}}]}
    turn = re.search(r"Turn (\d+)", prompt)
    return {"content": f"Answer to turn {turn[1] if turn else '?'}. {FILLER}"}


class WindowedModel:
    def __init__(self, window: int = 8192,
                 answer: Callable[[list[dict[str, Any]]], dict[str, Any]] = default_answer) -> None:
        self.window = window
        self.answer = answer
        self.calls: list[Call] = []

    @staticmethod
    def count(body: dict[str, Any]) -> int:
        return len(json.dumps(body["messages"], ensure_ascii=False)) // 3 + len(json.dumps(body.get("tools", []))) // 4

    def __call__(self, request: Request) -> Reply:
        body = request.json
        tokens = self.count(body)
        wanted = body.get("max_completion_tokens") or body.get("max_tokens") or 0
        summary = SUMMARY_MARK in _text(body["messages"][0])
        refused = tokens + wanted > self.window
        self.calls.append(Call(body, tokens, refused, summary))
        if refused:
            return overflow_error(self.window, tokens + wanted)
        if summary:
            turns = sorted({int(n) for n in re.findall(r"Turn (\d+)", _text(body["messages"][-1]))})
            shown = f"turns {turns[0]}-{turns[-1]}" if turns else "no numbered turns"
            delta = {"content": f"## Goal\nWork through the plan.\n## Facts to keep\nSummarised {shown}."}
        else:
            delta = self.answer(body["messages"])
        finish = "tool_calls" if "tool_calls" in delta else "stop"
        output = len(json.dumps(delta)) // 3
        return Reply(chunks=[
            openai_chunk({"role": "assistant", **delta}), openai_chunk({}, finish),
            openai_chunk({}, usage={"prompt_tokens": tokens, "completion_tokens": output,
                                    "total_tokens": tokens + output}),
            b"data: [DONE]\n\n",
        ])

    @property
    def conversation_calls(self) -> list[Call]:
        return [call for call in self.calls if not call.summary]

    @property
    def summary_calls(self) -> list[Call]:
        return [call for call in self.calls if call.summary]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def windowed_config(config_home: Any, url: str, *, window: int = 8192, max_tokens: int = 1024,
                    extra: str = "") -> str:
    """Write a models.toml (under XDG_CONFIG_HOME `config_home`) with `small/model`: a model of
    that window served at `url`; returns its reference."""
    directory = config_home / "tiller"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "models.toml").write_text(
        f'[providers.small]\nbaseUrl = "{url}/v1"\napi = "openai-completions"\n\n'
        f'[[providers.small.models]]\nid = "model"\ncontextWindow = {window}\nmaxTokens = {max_tokens}\n{extra}'
    )
    return "small/model"
