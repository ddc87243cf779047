"""One-time work done before the user's first prompt, in a background thread.

Without it the first prompt of a fresh server paid for importing the HTTP stack (httpx,
which also imports its command line's click and pygments when they are installed; httpcore,
h2, anyio's sockets: 0.3-1 s on a busy 2-core machine), loading the CA bundle, creating the
sessions directory and, on the offline default, importing llama.cpp and loading the model,
all on the event loop before its first `message_update`. `warm_up` starts when a front end is initialized (LSP `initialize`,
ACP `initialize`): an editor spends that time opening its chat view and the user typing.
Nothing here is required: a failure is logged and the first prompt does the work as before.
"""

from __future__ import annotations

import importlib
import logging
import threading

from .host import Host

logger = logging.getLogger("tiller.host")

# What the first LLM call imports besides its provider's module, most needed first.
NETWORK_MODULES = (
    "httpx",
    "httpx_sse",
    "anyio._backends._asyncio",
    "anyio._core._sockets",
    "anyio.streams.memory",
    "anyio.streams.tls",
    "httpcore._backends.anyio",
    "httpcore._async.http11",
    "httpcore._async.http2",
    "h2.connection",
    "tiller.ai.http",
    "tiller.ai.connections",
)
# What the first tool call imports (it comes after the first reply has streamed).
TOOL_MODULES = ("jsonschema.validators",)


def warm_up(host: Host) -> threading.Thread:
    """Start the warm-up thread (a daemon: it never holds the process open)."""
    thread = threading.Thread(target=_warm, args=(host,), name="tiller-warm-up", daemon=True)
    thread.start()
    return thread


def _warm(host: Host) -> None:
    try:
        from ..ai.registry import get_stream_fn

        model = host.resolve_model(None)  # the default: the likely first call
        get_stream_fn(model.api)  # imports its provider
        if model.api == "local":
            from ..ai.providers.local import preload

            preload()
        for name in NETWORK_MODULES:
            importlib.import_module(name)
        from ..ai.connections import shared_ssl_context

        shared_ssl_context()
        # The first message of a session creates its file, under this directory.
        host.store.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        for name in TOOL_MODULES:
            importlib.import_module(name)
    except Exception:
        logger.warning("Warm-up failed; the first prompt will do this work", exc_info=True)
