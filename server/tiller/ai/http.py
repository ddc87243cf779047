"""HTTP plumbing shared by the streaming providers (OpenAI chat completions and responses,
Anthropic, Gemini).

One call is: POST a JSON body, retry while no byte of the answer has been used, then read
the body as server-sent events (httpx + httpx-sse) and let a vendor-specific parser turn
them into builder events. `stream_sse` runs that whole call and owns the contract every
provider must keep: `start` only once the response arrived, exactly one final `done` or
`error`, never a raise, and no API key in any message. Keys arrive in `options.api_key`
(from the model catalogue); nothing here reads the environment.

Abort: every network wait (headers, a backoff sleep, each body read) runs in its own
cancel scope that `options.signal` cancels, so an abort ends the HTTP stream at once. The
scopes never span a `yield` (a scope left open across a yield would cancel the consumer's
code instead of ours). Like `AbortSignal.wait`, this expects `abort()` to be called from
the event loop's thread.
"""

from __future__ import annotations

import email.utils
import functools
import http
import json
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

import anyio
import httpx
from httpx_sse import EventSource, ServerSentEvent

from .abort import AbortSignal
from .call_log import TappedBody
from .connections import pooled_client
from .message_builder import ABORTED_TEXT, AssistantMessageBuilder
from .options import CONNECT_TIMEOUT_MS, StreamOptions
from .types import AssistantMessageEvent, Model

T = TypeVar("T")

# Status codes worth another try: timeouts, conflicts, rate limits and server trouble.
RETRYABLE_STATUS = frozenset({408, 409, 429})
# Sending the request body and waiting for a pooled connection.
WRITE_TIMEOUT = 60.0
# How long to wait for the end of a body after the vendor's end-of-stream marker.
DRAIN_SECONDS = 0.2
# Longest excerpt of an unexpected (non-JSON) body quoted in an error message.
BODY_EXCERPT = 300



class ProviderError(Exception):
    """A failure whose message is fit to show the user (status, vendor message)."""


class StreamAborted(ProviderError):
    def __init__(self) -> None:
        super().__init__(ABORTED_TEXT)


@dataclass
class SSERequest:
    """One streaming POST. `secrets` are scrubbed from every error message."""

    url: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()


class StreamParser(Protocol):
    """A vendor's SSE dialect. `feed` returns the builder events one SSE event yields and
    raises `ProviderError` for an in-stream vendor error. A vendor-side failure that still
    ends the stream cleanly (content filter, refusal) sets the message's `stop_reason` to
    "error" and its `error_message`. `finished` is set by the vendor's end marker.
    `end` runs once the body is over and raises `ProviderError` if the vendor's stream
    was cut short (for dialects whose end can be told apart from a cut)."""

    finished: bool

    def feed(self, event: ServerSentEvent) -> Iterable[AssistantMessageEvent]: ...

    def end(self) -> None: ...


# --- the provider driver ----------------------------------------------------------------


async def stream_sse(
    model: Model,
    options: StreamOptions,
    prepare: Callable[[], SSERequest],
    parser_for: Callable[[AssistantMessageBuilder], StreamParser],
) -> AsyncIterator[AssistantMessageEvent]:
    """Run one streaming call: `prepare` builds the request (inside the error handling, so
    a bad conversion or a missing key also ends in an `error` event) and the parser made by
    `parser_for` reads the answer into the message builder."""
    builder = AssistantMessageBuilder(model)
    parser = parser_for(builder)
    signal = options.signal
    secrets: tuple[str, ...] = ()
    try:
        request = prepare()
        secrets = request.secrets
        if options.on_payload is not None:
            options.on_payload(request.body)
        if options.observer is not None:
            options.observer.request(request.url, request.headers, request.body, request.secrets)
        async with open_event_stream(request, options) as events:
            yield builder.start()
            async for event in events:
                for out in parser.feed(event):
                    yield out
                if parser.finished:
                    break
        if signal is None or not signal.aborted:
            parser.end()
        for out in builder.close_all():
            yield out
        if signal is not None and signal.aborted:
            raise StreamAborted()
        message = builder.message
        if message.stop_reason in ("error", "aborted"):
            raise ProviderError(message.error_message or "An unknown error occurred")
        yield builder.done()
    except Exception as exc:
        aborted = signal is not None and signal.aborted
        yield builder.fail(redact(describe(exc), secrets), aborted=aborted)


def decode_json(event: ServerSentEvent) -> dict[str, Any]:
    """The JSON object in an SSE data field; a readable `ProviderError` if it is not one."""
    try:
        value = json.loads(event.data)
    except ValueError:
        raise ProviderError(f"Malformed JSON in stream event: {excerpt(event.data)}") from None
    if not isinstance(value, dict):
        raise ProviderError(f"Unexpected stream event (not a JSON object): {excerpt(event.data)}")
    return value


CUT_SHORT = "The stream ended before the response was complete"


def request_headers(model: Model, options: StreamOptions, base: dict[str, str]) -> dict[str, str]:
    """Vendor headers, overridden by the model's configured headers, then the call's."""
    return {**base, **(model.headers or {}), **(options.headers or {})}


def as_int(value: Any) -> int:
    """A token count from a vendor's JSON: absent, null or not a number counts as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def endpoint(base_url: str, default_base: str, path: str) -> str:
    return (base_url or default_base).rstrip("/") + path


# --- opening the stream, with retries ---------------------------------------------------


@asynccontextmanager
async def open_event_stream(
    request: SSERequest, options: StreamOptions
) -> AsyncIterator[AsyncIterator[ServerSentEvent]]:
    """POST `request` and yield its SSE events once a 2xx event stream has arrived.

    Connection errors and 408/409/429/5xx are retried with exponential backoff (or the
    server's Retry-After) until `options.max_retries`; once the body streams, nothing is
    retried: the caller has already shown part of the answer.
    """
    signal = options.signal
    timeout = httpx.Timeout(
        connect=min(options.timeout_ms, CONNECT_TIMEOUT_MS) / 1000,
        read=options.idle_timeout_ms / 1000,
        write=WRITE_TIMEOUT,
        pool=WRITE_TIMEOUT,
    )
    client = pooled_client(request.url)
    response = await _send_with_retries(client, request, options, timeout)
    try:
        content_type = response.headers.get("content-type", "")
        if "text/event-stream" not in content_type:
            body = await abortable(signal, response.aread)
            raise ProviderError(
                f"Expected an event stream but got {content_type or 'no content type'}: "
                f"{vendor_message(body) or excerpt(body.decode('utf-8', 'replace'))}"
            )
        observer, body_source = options.observer, response
        if observer is not None and observer.wants_body:
            body_source = cast(httpx.Response, TappedBody(response, observer.received))
        events = _events(EventSource(body_source), signal, options.idle_timeout_ms)
        try:
            yield events
            await _drain(events)
        finally:
            # Shielded: this also runs while our task is being cancelled.
            with anyio.CancelScope(shield=True):
                await events.aclose()
    finally:
        with anyio.CancelScope(shield=True):
            await response.aclose()


async def _drain(events: AsyncIterator[ServerSentEvent]) -> None:
    """After the vendor's end marker, read the rest of the body (its last bytes, normally
    already received) so that the connection goes back to the pool instead of being closed.
    A server that keeps talking after its end marker is not waited for long."""
    with anyio.move_on_after(DRAIN_SECONDS):
        try:
            async for _ in events:
                pass
        except ProviderError:
            pass


async def _events(
    source: EventSource, signal: AbortSignal | None, idle_timeout_ms: int
) -> AsyncGenerator[ServerSentEvent, None]:
    # aiter_text underneath decodes UTF-8 incrementally and the SSE decoder buffers lines,
    # so a character or a data line split across TCP chunks arrives whole.
    events = source.aiter_sse()
    try:
        while True:
            try:
                event = await abortable(signal, events.__anext__)
            except StopAsyncIteration:
                return
            except httpx.ReadTimeout as exc:
                raise ProviderError(
                    f"The server sent nothing for {_seconds(idle_timeout_ms / 1000)} s while streaming the response"
                ) from exc
            except httpx.TransportError as exc:
                raise ProviderError(f"Connection lost while streaming the response: {_exc_text(exc)}") from exc
            yield event
    finally:
        await events.aclose()


async def _send_with_retries(
    client: httpx.AsyncClient, request: SSERequest, options: StreamOptions, http_timeout: httpx.Timeout
) -> httpx.Response:
    signal = options.signal
    http_request = client.build_request(
        "POST",
        request.url,
        content=_encode_body(request.body),
        headers={
            "content-type": "application/json",
            "accept": "text/event-stream",
            **request.headers,
        },
        timeout=http_timeout,  # this call's: the pooled client serves calls with different ones
    )
    # One deadline for the whole sequence (attempts and the waits between them): a server
    # that never answers costs `timeout_ms` once, not once per retry.
    timeout = options.timeout_ms / 1000
    deadline = anyio.current_time() + timeout

    async def send() -> httpx.Response:
        with anyio.fail_after(max(deadline - anyio.current_time(), 0.0)):
            return await client.send(http_request, stream=True)

    attempt = 0
    while True:
        try:
            response = await abortable(signal, send)
            if options.observer is not None:
                options.observer.responded(response.status_code)
        except (httpx.UnsupportedProtocol, httpx.LocalProtocolError) as exc:
            raise ProviderError(f"Cannot send the request to {request.url}: {_exc_text(exc)}") from exc
        except (httpx.TransportError, TimeoutError) as exc:
            if isinstance(exc, (TimeoutError, httpx.ReadTimeout)):
                raise ProviderError(f"No response from {request.url} within {_seconds(timeout)} s") from exc
            failure = f"Connection error: {_exc_text(exc)}"
            if attempt >= options.max_retries:
                raise ProviderError(failure) from exc
            delay = _backoff(attempt, options)
        else:
            if response.is_success:
                return response
            try:
                body = await abortable(signal, response.aread)
            finally:
                await response.aclose()
            failure = status_message(response, body)
            if not _should_retry(response):
                raise ProviderError(failure)
            asked = retry_after_seconds(response.headers, body)
            if asked is not None and asked * 1000 > options.max_retry_delay_ms:
                raise ProviderError(
                    f"{failure} (the server asked to wait {_seconds(asked)} s before retrying, "
                    f"which exceeds the limit of {_seconds(options.max_retry_delay_ms / 1000)} s)"
                )
            if attempt >= options.max_retries:
                raise ProviderError(failure)
            delay = asked if asked is not None else _backoff(attempt, options)
        if anyio.current_time() + delay >= deadline:
            raise ProviderError(f"{failure} (no answer within {_seconds(timeout)} s, retries included)")
        attempt += 1
        if options.observer is not None:
            options.observer.retrying(failure, delay)
        await abortable(signal, functools.partial(anyio.sleep, delay))


def _should_retry(response: httpx.Response) -> bool:
    # Anthropic (and others) say explicitly whether a retry can help.
    hint = response.headers.get("x-should-retry", "").lower()
    if hint in ("true", "false"):
        return hint == "true"
    return response.status_code in RETRYABLE_STATUS or response.status_code >= 500


def _backoff(attempt: int, options: StreamOptions) -> float:
    delay_ms = options.retry_base_delay_ms * (2**attempt)
    return min(delay_ms, options.max_retry_delay_ms) / 1000


_RETRY_DELAY = re.compile(r'"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"')


def retry_after_seconds(headers: httpx.Headers, body: bytes = b"") -> float | None:
    """The delay the server asks for: `retry-after-ms`, `Retry-After` in seconds or as an
    HTTP date, or Google's `RetryInfo.retryDelay` ("30s") in the error body. None when
    absent or unreadable."""
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        found = _RETRY_DELAY.search(body.decode("utf-8", "replace")) if body else None
        return float(found.group(1)) if found else None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


# --- abort ------------------------------------------------------------------------------


async def abortable(signal: AbortSignal | None, start: Callable[[], Awaitable[T]]) -> T:
    """Await `start()`, raising `StreamAborted` as soon as `signal` aborts."""
    if signal is None:
        return await start()
    if signal.aborted:
        raise StreamAborted()
    with anyio.CancelScope() as scope:
        remove = signal.on_abort(scope.cancel)
        try:
            return await start()
        finally:
            remove()
    # Only reached when the scope swallowed its own cancellation: the abort.
    raise StreamAborted()


# --- error messages ---------------------------------------------------------------------


def status_message(response: httpx.Response, body: bytes) -> str:
    """`429 Too Many Requests: Rate limit reached` from a non-2xx answer."""
    reason = response.reason_phrase or _standard_reason(response.status_code)
    status = f"{response.status_code} {reason}".strip()
    detail = vendor_message(body)
    if detail is None:
        text = body.decode("utf-8", "replace").strip()
        detail = excerpt(text) if text else None
    return f"{status}: {detail}" if detail else status


def vendor_message(body: bytes) -> str | None:
    """The human part of a vendor's JSON error body (OpenAI, Anthropic, llama.cpp, FastAPI)."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return error_text(data)


def error_text(data: Any) -> str | None:
    """`error.message`, `error`, `message` or `detail` of a decoded error object."""
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    for value in (error, data.get("message"), data.get("detail")):
        if isinstance(value, str) and value:
            return value
    return None


def describe(exc: Exception) -> str:
    if isinstance(exc, ProviderError):
        return str(exc)
    if isinstance(exc, httpx.TransportError):
        return f"Connection error: {_exc_text(exc)}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def redact(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def _standard_reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _exc_text(exc: BaseException) -> str:
    """The first non-empty message down the cause chain: httpx's ReadError, for one, is
    empty while the OS error under it says `Connection reset by peer`."""
    seen: BaseException | None = exc
    while seen is not None:
        if text := str(seen):
            return text
        seen = seen.__cause__ or seen.__context__
    return type(exc).__name__


def excerpt(text: str) -> str:
    return text if len(text) <= BODY_EXCERPT else text[:BODY_EXCERPT] + "…"


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


# --- request body -----------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")


def _encode_body(body: dict[str, Any]) -> bytes:
    """UTF-8 JSON. Lone UTF-16 surrogates (from a broken tool output, say) cannot be encoded
    and vendors reject them escaped, so they are dropped, as pi does."""
    try:
        return json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(_strip_surrogates(body), ensure_ascii=False).encode("utf-8")


def _strip_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("", value)
    if isinstance(value, list):
        return [_strip_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_strip_surrogates(k): _strip_surrogates(v) for k, v in value.items()}
    return value
