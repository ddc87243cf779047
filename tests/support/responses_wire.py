"""OpenAI Responses API streams, byte for byte as the API sends them: every event named
twice (the `event:` line and `type` in the JSON), numbered by `sequence_number`, output
items addressed by `output_index`, and a final `response.completed` carrying the usage."""

from __future__ import annotations

import itertools
import json
from typing import Any

RESPONSE_ID = "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b"


class ResponseStream:
    """Builds one stream; `sequence_number` counts up across the events it makes."""

    def __init__(self, model: str = "gpt-5-2025-08-07") -> None:
        self.model = model
        self._sequence = itertools.count()

    def event(self, kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": next(self._sequence), **fields}
        return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()

    def response(self, status: str, **fields: Any) -> dict[str, Any]:
        return {
            "id": RESPONSE_ID, "object": "response", "created_at": 1741290958, "status": status,
            "error": None, "incomplete_details": None, "model": self.model, "output": [],
            "parallel_tool_calls": True, "store": False, "temperature": 1.0, "tool_choice": "auto",
            "usage": None, **fields,
        }

    def created(self) -> list[bytes]:
        return [self.event("response.created", response=self.response("in_progress")),
                self.event("response.in_progress", response=self.response("in_progress"))]

    def reasoning(self, index: int, item_id: str, summaries: list[str], encrypted: str) -> list[bytes]:
        out = [self.event("response.output_item.added", output_index=index,
                          item={"id": item_id, "type": "reasoning", "summary": []})]
        for number, summary in enumerate(summaries):
            part = {"item_id": item_id, "output_index": index, "summary_index": number}
            out.append(self.event("response.reasoning_summary_part.added", **part,
                                  part={"type": "summary_text", "text": ""}))
            half = len(summary) // 2
            out += [self.event("response.reasoning_summary_text.delta", **part, delta=piece)
                    for piece in (summary[:half], summary[half:])]
            out.append(self.event("response.reasoning_summary_text.done", **part, text=summary))
            out.append(self.event("response.reasoning_summary_part.done", **part,
                                  part={"type": "summary_text", "text": summary}))
        item = {"id": item_id, "type": "reasoning", "encrypted_content": encrypted,
                "summary": [{"type": "summary_text", "text": s} for s in summaries]}
        out.append(self.event("response.output_item.done", output_index=index, item=item))
        return out

    def message(self, index: int, item_id: str, pieces: list[str]) -> list[bytes]:
        text = "".join(pieces)
        where = {"item_id": item_id, "output_index": index, "content_index": 0}
        out = [
            self.event("response.output_item.added", output_index=index,
                       item={"id": item_id, "type": "message", "status": "in_progress", "role": "assistant",
                             "content": []}),
            self.event("response.content_part.added", **where,
                       part={"type": "output_text", "text": "", "annotations": []}),
        ]
        out += [self.event("response.output_text.delta", **where, delta=piece, logprobs=[]) for piece in pieces]
        part = {"type": "output_text", "text": text, "annotations": []}
        out += [
            self.event("response.output_text.done", **where, text=text, logprobs=[]),
            self.event("response.content_part.done", **where, part=part),
            self.event("response.output_item.done", output_index=index,
                       item={"id": item_id, "type": "message", "status": "completed", "role": "assistant",
                             "content": [part]}),
        ]
        return out

    def function_call(self, index: int, item_id: str, call_id: str, name: str, arguments: str) -> list[bytes]:
        item = {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": call_id, "name": name}
        out = [self.event("response.output_item.added", output_index=index, item=item)]
        cut = len(arguments) // 2
        out += [self.event("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=piece)
                for piece in (arguments[:cut], arguments[cut:])]
        out += [
            self.event("response.function_call_arguments.done", item_id=item_id, output_index=index,
                       arguments=arguments),
            self.event("response.output_item.done", output_index=index,
                       item={**item, "status": "completed", "arguments": arguments}),
        ]
        return out

    def completed(self, input_tokens: int = 40, cached: int = 0, output_tokens: int = 12,
                  reasoning_tokens: int = 0, status: str = "completed", **fields: Any) -> bytes:
        usage = {
            "input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": input_tokens + output_tokens,
        }
        kind = {"completed": "response.completed", "incomplete": "response.incomplete",
                "failed": "response.failed"}[status]
        return self.event(kind, response=self.response(status, usage=usage, **fields))


def text_reply(*pieces: str, model: str = "gpt-5-2025-08-07") -> bytes:
    """A whole plain-text answer."""
    stream = ResponseStream(model)
    return b"".join([*stream.created(), *stream.message(0, "msg_text_1", list(pieces)), stream.completed()])
