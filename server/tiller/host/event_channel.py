"""One session's outgoing events: numbered, in order, with bursts of deltas joined.

Every event gets the session's next `seq` (+1 per event), so a client that sees a gap
knows it missed something and re-syncs with `agent/getState`.

A `*_delta` update is held until the event loop's next pass; deltas of the same block
that arrive meanwhile are appended to it. A real provider's deltas arrive one per pass and
go out unchanged; a burst (a fast local model, a replayed stream) becomes one event per
pass instead of thousands. Nothing is dropped or reordered: a held delta always goes out
before anything that follows it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..agent.types import MessageUpdateEvent
from ..ai.types import TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent
from ..protocol.events import AnyWireEvent
from ..protocol.wire_events import DeltaType, delta_update, wire_event

SendEvent = Callable[[str, int, AnyWireEvent], None]


class _HeldDelta:
    def __init__(self, kind: DeltaType, content_index: int, text: str) -> None:
        self.kind = kind
        self.content_index = content_index
        self.pieces = [text]


class EventChannel:
    def __init__(self, session_id: str, send: SendEvent) -> None:
        self.session_id = session_id
        self.seq = 0
        self._send = send
        self._held: _HeldDelta | None = None

    def emit(self, event: AnyWireEvent) -> None:
        self.flush()
        self._deliver(event)

    def emit_agent_event(self, event: Any) -> None:
        """An event of the agent core, in its wire shape; streamed deltas are coalesced."""
        update = event.assistant_message_event if isinstance(event, MessageUpdateEvent) else None
        if isinstance(update, (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)):
            self._hold(update.type, update.content_index, update.delta)
        else:
            self.emit(wire_event(event))

    def flush(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            self._deliver(delta_update(held.kind, held.content_index, "".join(held.pieces)))

    def _hold(self, kind: DeltaType, content_index: int, text: str) -> None:
        held = self._held
        if held is not None:
            if held.kind == kind and held.content_index == content_index:
                held.pieces.append(text)
                return
            self.flush()
        self._held = _HeldDelta(kind, content_index, text)
        asyncio.get_running_loop().call_soon(self.flush)

    def _deliver(self, event: AnyWireEvent) -> None:
        self.seq += 1
        self._send(self.session_id, self.seq, event)
