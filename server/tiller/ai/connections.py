"""One pooled HTTP client per provider endpoint, for the life of the process.

A new `httpx.AsyncClient` per LLM call paid a TCP and TLS handshake every turn (100-300 ms
to a real provider). Keeping one client per origin (scheme, host, port) reuses the
connection across turns and sessions; HTTP/2 is used where the server offers it (ALPN over
TLS; plain-HTTP loopback servers keep HTTP/1.1). The server closes every client on shutdown
(`close_clients`).

Clients belong to the event loop that made them (their connections are that loop's
sockets): each running loop has its own set, so a second `asyncio.run` in one process
(tests, `tiller run` after another) never reuses a dead loop's connections.
"""

from __future__ import annotations

import asyncio
import ssl
import weakref

import httpx

# Defaults only: each call passes its own timeouts (ai/http.py).
TIMEOUT = httpx.Timeout(connect=30.0, read=600.0, write=60.0, pool=30.0)
# An idle connection is kept while the user reads and types (httpx's default is 5 s);
# a connection the provider closed meanwhile is noticed and replaced when next needed.
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=120.0)

Origin = tuple[str, str, int | None]

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Origin, httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)
_ssl_context: ssl.SSLContext | None = None


def pooled_client(url: str) -> httpx.AsyncClient:
    """The running loop's client for `url`'s origin, created on first use."""
    parsed = httpx.URL(url)
    origin: Origin = (parsed.scheme, parsed.host, parsed.port)
    clients = _clients.setdefault(asyncio.get_running_loop(), {})
    client = clients.get(origin)
    if client is None or client.is_closed:
        client = clients[origin] = httpx.AsyncClient(timeout=TIMEOUT, limits=LIMITS, http2=True,
                                                     verify=shared_ssl_context())
    return client


async def close_clients() -> None:
    """Close the running loop's clients and their connections (server shutdown)."""
    clients = _clients.pop(asyncio.get_running_loop(), {})
    for client in clients.values():
        await client.aclose()


def shared_ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle costs tens of milliseconds; one context serves every client.
    global _ssl_context
    if _ssl_context is None:
        _ssl_context = httpx.create_ssl_context()
    return _ssl_context
