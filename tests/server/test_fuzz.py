"""The protocol under fuzz, bounded and seeded: thousands of malformed frames, and wrong-typed
params for every method, against one real `tiller serve`.

After every batch the server must answer a real request correctly, and it must never exit.
Every answer must be a well-formed JSON-RPC response whose error is one of the documented
codes, never -32603 (a bug), with a message of bounded size; every well-formed request hidden
among the garbage must be answered exactly once.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections import Counter
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.raw_lsp import RawServer, frame
from tiller.protocol.methods import METHODS

from .harness import server_env

SEED = 20_250_610
FRAMES = 5_000
BATCH = 250
MAX_FRAME = 16 * 1024  # small, so oversize frames are cheap to send
EXAMPLES_PER_METHOD = 120
DOCUMENTED = {-32700, -32600, -32601, -32602, -32800, -32001, -32002, -32003, -32004, -32005, -32006, -32007, -32008}

T = TypeVar("T")


class LoopThread:
    """An event loop in a thread, so hypothesis's synchronous tests can drive RawServer."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


@pytest.fixture
def fuzzed(tmp_path: Path, workspace: Path) -> Iterator[tuple[LoopThread, RawServer]]:
    loop = LoopThread()
    server = loop.run(RawServer.start(server_env(tmp_path), workspace, "--max-frame-bytes", str(MAX_FRAME)))
    loop.run(server.initialize(workspace))
    try:
        yield loop, server
    finally:
        loop.run(server.close())
        loop.stop()


def check_answers(server: RawServer) -> Counter[int]:
    """Every answer is well-formed; the error codes seen, counted."""
    codes: Counter[int] = Counter()
    for answer in server.answers():
        assert answer.get("jsonrpc") == "2.0" and "id" in answer, answer
        assert ("result" in answer) != ("error" in answer), answer
        if "error" in answer:
            code = answer["error"]["code"]
            assert code in DOCUMENTED, answer
            assert len(answer["error"]["message"]) <= 2_100
            codes[code] += 1
    return codes


# --- malformed frames --------------------------------------------------------------------------


def _json_junk(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 2**31, 2**63, 10**200, rng.randrange(-10**6, 10**6)])
    if kind == 3:
        return rng.choice([1.5, -0.0, 1e308, 3.14])
    if kind == 4:
        return rng.choice(["", "x" * rng.randrange(1, 300), "\x00nul", "\ud800lone", "é", "../../etc/passwd"])
    if kind == 5:
        return rng.choice(["agent/prompt", "initialize", "shutdown", "$/cancelRequest", "textDocument/hover"])
    if kind == 6:
        return [_json_junk(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["jsonrpc", "id", "method", "params", "sessionId", "text", "cwd", "model", "result", "error", "x"]
    return {rng.choice(keys): _json_junk(rng, depth + 1) for _ in range(rng.randrange(5))}


def malformed_frame(rng: random.Random, n: int) -> bytes:
    """One of many ways to send something that is not a valid request."""
    kind = n % 16
    message: Any
    if kind == 0:  # raw bytes, no header
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
    if kind == 1:  # a header whose length is no number
        return b"Content-Length: " + rng.choice([b"abc", b"-5", b"", b"1e3", b"0x10", b"99999999999999999999999"]) \
            + b"\r\n\r\n{}"
    if kind == 2:  # a length that lies short
        body = json.dumps({"jsonrpc": "2.0", "id": f"short{n}", "method": "agent/listModels"}).encode()
        return b"Content-Length: %d\r\n\r\n" % rng.randrange(1, len(body)) + body
    if kind == 3:  # a length that lies long
        body = json.dumps({"jsonrpc": "2.0", "method": "agent/listModels"}).encode()
        return b"Content-Length: %d\r\n\r\n" % (len(body) + rng.randrange(1, 5000)) + body
    if kind == 4:  # over the size limit, honestly
        return frame({"jsonrpc": "2.0", "id": f"big{n}", "method": "agent/newSession",
                      "params": {"systemPrompt": "z" * (MAX_FRAME + rng.randrange(1, 3000))}})
    if kind == 5:  # an absurd length
        return b"Content-Length: %d\r\n\r\n" % rng.choice([10**12, 2**63, 10**19])
    if kind == 6:  # random bytes as a body
        return frame(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 60))))
    if kind == 7:  # JSON that is no request
        message = _json_junk(rng)
    elif kind == 8:  # an envelope with wrong types
        message = {"jsonrpc": rng.choice(["2.0", "1.0", 2, None]), "id": _json_junk(rng),
                   "method": rng.choice([_json_junk(rng), "agent/getState"]), "params": _json_junk(rng)}
    elif kind == 9:  # a batch
        message = [{"jsonrpc": "2.0", "id": i, "method": "agent/listModels"} for i in range(rng.randrange(0, 3))]
    elif kind == 10:  # deep nesting
        depth = rng.choice([70, 500, 5000])
        return frame(b'{"jsonrpc":"2.0","id":"deep%d","method":"agent/listModels","params":' % n
                     + b"[" * depth + b"]" * depth + b"}")
    elif kind == 11:  # a giant number
        return frame(b'{"jsonrpc":"2.0","id":1,"method":"agent/listModels","params":{"n":%s}}'
                     % (b"9" * rng.choice([100, 5000, 10000])))
    elif kind == 12:  # a request for a method nobody serves
        message = {"jsonrpc": "2.0", "id": n, "method": rng.choice(
            ["textDocument/hover", "textDocument/completion", "workspace/executeCommand", "$/x", "agent/nope",
             "\ud800", "x" * 500])}
        return frame(json.dumps(message).encode())
    elif kind == 13:  # unterminated JSON
        return frame(json.dumps({"jsonrpc": "2.0", "id": n, "method": "agent/getState"}).encode()[:-rng.randrange(1, 10)])
    elif kind == 14:  # a header block that never ends, or other headers
        return rng.choice([b"Content-Length: 10\r\nX-Junk: " + b"j" * 9000 + b"\r\n\r\n",
                           b"Content-Length: 2\r\nnot a header\r\n\r\n{}",
                           b"Content-Type: text/plain\r\n\r\n"])
    else:  # notifications with junk params
        message = {"jsonrpc": "2.0", "method": rng.choice(["textDocument/didOpen", "textDocument/didChange",
                                                            "$/cancelRequest", "initialized", "agent/prompt"]),
                   "params": _json_junk(rng)}
    return frame(json.dumps(message).encode())


@pytest.mark.timeout(900)
def test_thousands_of_malformed_frames_never_stop_the_server(fuzzed, workspace):
    loop, server = fuzzed
    rng = random.Random(SEED)
    session = loop.run(server.request("agent/newSession", {"tools": []}))["result"]["sessionId"]
    decoys: list[str] = []
    sent = 0
    for batch in range(FRAMES // BATCH):
        chunks = []
        for _ in range(BATCH):
            chunks.append(malformed_frame(rng, sent))
            sent += 1
            if rng.random() < 0.1:  # a valid request hidden among the garbage
                decoys.append(f"decoy{len(decoys)}")
                chunks.append(frame({"jsonrpc": "2.0", "id": decoys[-1], "method": "agent/listModels"}))
        loop.run(server.write(b"".join(chunks)))
        answer = loop.run(server.request("agent/getState", {"sessionId": session}))
        assert answer.get("result", {}).get("sessionId") == session, (batch, answer)
        assert server.process.returncode is None
    for decoy in decoys:
        loop.run(server.answer(decoy))
    answered = Counter(a["id"] for a in server.answers() if isinstance(a["id"], str))
    assert all(answered[decoy] == 1 for decoy in decoys)
    codes = check_answers(server)
    print(f"\nfuzz: {sent} malformed frames and {len(decoys)} hidden requests sent; "
          f"{len(server.answers())} answers ({dict(sorted(codes.items()))}); server alive")
    assert sent >= 5_000 and codes[-32700] > 0 and codes[-32600] > 0 and codes[-32601] > 0


# --- wrong-typed params for every method --------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40) | st.sampled_from(["\x00", "\ud800", "x" * 20_000, "/", "."]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def params_for(method: str, session: str) -> st.SearchStrategy[Any]:
    spec = METHODS[method].params
    fields = [info.alias or name for name, info in spec.model_fields.items()] if spec else []
    values = JSON | st.just(session) | st.sampled_from(["faux/faux-1", "ask", "steer", "/", "allow_once"])
    shaped = st.fixed_dictionaries({}, optional={name: values for name in fields})
    return st.one_of(shaped, JSON)


@pytest.mark.timeout(900)
def test_wrong_typed_params_for_every_method_get_documented_errors(fuzzed):
    loop, server = fuzzed
    session = loop.run(server.request("agent/newSession", {"tools": []}))["result"]["sessionId"]
    tried: Counter[str] = Counter()

    def fuzz(method: str) -> None:
        @settings(max_examples=EXAMPLES_PER_METHOD, derandomize=True, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(params=params_for(method, session))
        def one_request(params: Any) -> None:
            answer = loop.run(server.request(method, params))
            tried[method] += 1
            if "error" in answer:
                assert answer["error"]["code"] in DOCUMENTED - {-32700, -32601}, (method, params, answer)
                assert len(answer["error"]["message"]) <= 2_100

        one_request()

    for method in sorted(METHODS):
        fuzz(method)
        answer = loop.run(server.request("agent/listSessions"))
        assert "sessions" in answer["result"], method
        assert server.process.returncode is None
    codes = check_answers(server)
    print(f"\nfuzz: {sum(tried.values())} requests with generated params over {len(tried)} methods; "
          f"errors {dict(sorted(codes.items()))}; server alive")
    assert set(tried) == set(METHODS)
