"""tiller.ai: talking to LLMs. `stream(model, context, options)` and `complete(...)`."""

from .abort import AbortSignal
from .options import StreamOptions
from .registry import StreamFn, complete, get_stream_fn, register_api, stream
from .types import *  # noqa: F403  (the vocabulary is the public surface)

__all__ = ["AbortSignal", "StreamFn", "StreamOptions", "complete", "get_stream_fn", "register_api", "stream"]
