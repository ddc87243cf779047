"""Long sessions: listing saved sessions, loading a big one, per-turn overhead as history
grows, and compaction of a 150k-token history. Every figure comes with a baseline measured
in the same run.

    python bench/session_bench.py [--sessions 1000,10000] [--turns 200] [--quick]

(with the project's interpreter: `.venv/bin/python bench/session_bench.py`)

1. Listing N saved sessions (1,000 of 400 KB, as the issue measured, and 10,000 of 40 KB):
   baseline = reading every file in full (what agent/listSessions did before the index);
   tiller = the SQLite index: built from nothing, then a listing with nothing changed, then
   one after 10 sessions grew. Also `Host.summaries` (the whole agent/listSessions work).
2. Loading a 10 MB session: `Host.load` (file read in a worker thread) against the old
   read on the event loop; a ticker on the loop reports the longest stall each one caused
   (how long another session's stream would have frozen).
3. A 200-turn conversation through a `Host` session against a loopback OpenAI-compatible
   server: per turn, the time from `prompt` to the request arriving at the server, against
   a bare `Agent` (no host: no context window, no events, no session file) talking to the
   same server. Both grow with history (every request carries it); the ratio is the host's
   own cost.
4. `agent/compact` of a ~150k-token history against the loopback server (which answers at
   once): tiller's work around the summary call, against one ordinary request carrying the
   same history.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

try:
    from tiller.agent import Agent
    from tiller.ai.models import ModelCatalog
    from tiller.ai.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
    from tiller.host import EditorCapabilities, Host, HostSettings
    from tiller.persistence.session_files import SessionStore
    from tiller.persistence.session_index import SessionIndex
    from tiller.protocol.methods import NewSessionParams
except ImportError:  # pragma: no cover
    sys.exit("run with the project's interpreter: .venv/bin/python bench/session_bench.py")


# --- a loopback OpenAI-compatible server, in its own thread ------------------------------------


class Endpoint:
    """Answers every POST with a short reply at once; records when each request arrived and
    reports `prompt_tokens` as the request's characters / 4."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.loop = asyncio.new_event_loop()
        self.port = 0
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait()
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            body = await reader.readexactly(length)
            self.arrivals.append(time.perf_counter())
            is_summary = b"You write the working notes" in body[:2000]
            text = "## Goal\\nBench.\\n## Open tasks\\nNone." if is_summary else "Noted, on to the next step."
            chunk = json.dumps({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
            sse = (f"data: {chunk}\n\n"
                   f'data: {{"choices":[{{"index":0,"delta":{{"content":"{text}"}}}}]}}\n\n'
                   f'data: {{"choices":[{{"index":0,"delta":{{}},"finish_reason":"stop"}}],'
                   f'"usage":{{"prompt_tokens":{length // 4},"completion_tokens":8}}}}\n\n'
                   "data: [DONE]\n\n").encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(sse), sse))
            await writer.drain()


class QuietEditor:
    """The host's Editor port with no editor behind it: events are counted, not sent."""

    capabilities = EditorCapabilities()

    def __init__(self) -> None:
        self.events = 0

    async def read_document(self, session_id: str, path: Path) -> None:
        return None

    async def document_at(self, uri: str) -> None:
        return None

    async def write_document(self, session_id: str, path: Path, text: str) -> None:
        raise RuntimeError("no editor")

    def send_event(self, session_id: str, seq: int, event: Any) -> None:
        self.events += 1


def catalog_for(endpoint: Endpoint, workdir: Path) -> ModelCatalog:
    config = workdir / "models.toml"
    config.write_text(f'[providers.bench]\nbaseUrl = "{endpoint.url}"\napi = "openai-completions"\n\n'
                      '[[providers.bench.models]]\nid = "big"\ncontextWindow = 1000000\nmaxTokens = 8192\n')
    return ModelCatalog.load(env={}, config_path=config)


# --- 1. listing ----------------------------------------------------------------------------------


def write_sessions(store: SessionStore, count: int, size: int) -> None:
    """`count` sessions of about `size` bytes each: prompts, replies, tool calls and results,
    in the lines SessionFile writes (written in one go: the setup, not the subject)."""
    def line(message: Any) -> str:
        return json.dumps({"type": "message", "message": message.dump()}, ensure_ascii=False, separators=(",", ":"))

    call = AssistantMessage(content=[TextContent(text="Looking."), ToolCall(id="c", name="read", arguments={"path": "a.py"})],
                            api="openai-completions", provider="openai", model="gpt-4.1")
    result = ToolResultMessage(tool_call_id="c", tool_name="read", content=[TextContent(text="x" * 1500)])
    pair = line(call) + "\n" + line(result) + "\n"
    for n in range(count):
        file_ = store.create(f"s{n:05d}", cwd=f"/work/project{n % 7}", model="openai/gpt-4.1")
        body = line(UserMessage(content=f"Task {n}: fix it")) + "\n" + pair * max(size // len(pair), 1)
        with file_.path.open("a", encoding="utf-8") as handle:
            handle.write(body)


def bench_listing(count: int, size: int, workdir: Path) -> None:
    store = SessionStore(workdir / f"list-{count}")
    write_sessions(store, count, size)
    start = time.perf_counter()
    old = store.list()
    full_read = time.perf_counter() - start
    index = SessionIndex(store.dir)
    start = time.perf_counter()
    index.list()
    build = time.perf_counter() - start
    warm = _best(lambda: index.list(), 5)
    for n in range(10):
        store.open(f"s{n:05d}").append_message(UserMessage(content="one more"))
    start = time.perf_counter()
    listed = index.list()
    after_growth = time.perf_counter() - start
    host = Host(ModelCatalog.load(env={}), QuietEditor(), HostSettings(data_dir=str(store.dir.parent)))
    summaries = _best(lambda: asyncio.run(host.summaries()), 3)
    assert len(listed) == len(old) == count
    print(f"  {count:>6,} sessions of {size // 1000} KB ({count * size / 1e6:,.0f} MB on disk)")
    print(f"    baseline, every file read in full:   {full_read * 1000:10.1f} ms")
    print(f"    index built from nothing:            {build * 1000:10.1f} ms")
    print(f"    index, nothing changed:              {warm * 1000:10.1f} ms   ({full_read / warm:,.0f}x faster than the baseline)")
    print(f"    index, after 10 sessions grew:       {after_growth * 1000:10.1f} ms")
    print(f"    Host.summaries (agent/listSessions): {summaries * 1000:10.1f} ms")


def _best(action: Any, times: int) -> float:
    results = []
    for _ in range(times):
        start = time.perf_counter()
        action()
        results.append(time.perf_counter() - start)
    return min(results)


# --- 2. loading a big session -------------------------------------------------------------------


async def _longest_stall(work: Any) -> tuple[float, float]:
    """(seconds `work()` took, the longest the event loop went without running a 1 ms ticker)."""
    stalls: list[float] = []
    done = False

    async def ticker() -> None:
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            stalls.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    start = time.perf_counter()
    await work()
    took = time.perf_counter() - start
    done = True
    await task
    return took, max(stalls) - 0.001


def bench_loading(megabytes: int, workdir: Path) -> None:
    store = SessionStore(workdir / "load")
    write_sessions(store, 1, megabytes * 1_000_000)
    path = store.dir / "s00000.jsonl"
    # Host.load refuses a session whose cwd is gone: point the bench session at a real one.
    header, rest = path.read_text(encoding="utf-8").split("\n", 1)
    path.write_text(json.dumps({**json.loads(header), "cwd": str(store.dir)}) + "\n" + rest, encoding="utf-8")

    async def old_way() -> None:
        store.load("s00000")

    catalog = ModelCatalog.load(env={})

    async def tiller_way() -> None:
        host = Host(catalog, QuietEditor(), HostSettings(data_dir=str(store.dir.parent)))
        await host.load("s00000")

    old_took, old_stall = asyncio.run(_longest_stall(old_way))
    asyncio.run(_longest_stall(tiller_way))  # once to import what a first session imports
    took, stall = asyncio.run(_longest_stall(tiller_way))
    print(f"  a {path.stat().st_size / 1e6:.1f} MB session")
    print(f"    baseline, read on the event loop:     {old_took * 1000:8.0f} ms, other sessions frozen {old_stall * 1000:6.0f} ms")
    print(f"    Host.load, read in a worker thread:   {took * 1000:8.0f} ms, longest stall {stall * 1000:6.1f} ms"
          f"   ({old_stall / max(stall, 1e-4):,.0f}x shorter)")


# --- 3. per-turn overhead ---------------------------------------------------------------------


async def _time_turns(endpoint: Endpoint, prompt: Callable[[str], Awaitable[Any]], turns: int) -> list[float]:
    """Per turn: from `prompt` being called to its request arriving at the endpoint."""
    overheads = []
    for turn in range(turns):
        count = len(endpoint.arrivals)
        start = time.perf_counter()
        await prompt(f"Turn {turn}: " + "please look at the next part of the plan " * 20)
        overheads.append(endpoint.arrivals[count] - start)
    return overheads


async def _turns_host(endpoint: Endpoint, catalog: ModelCatalog, workdir: Path, turns: int) -> list[float]:
    host = Host(catalog, QuietEditor(), HostSettings(data_dir=str(workdir / "turns-data"), default_model="bench/big"))
    session = host.create(NewSessionParams(cwd=str(workdir), tools=["read", "ls"]), default_cwd=str(workdir))
    return await _time_turns(endpoint, session.prompt, turns)


async def _turns_bare(endpoint: Endpoint, catalog: ModelCatalog, turns: int) -> list[float]:
    agent = Agent(get_api_key=catalog.api_key, tool_execution="sequential")
    agent.set_model(catalog.resolve("bench/big"))
    return await _time_turns(endpoint, agent.prompt, turns)


def bench_turns(endpoint: Endpoint, catalog: ModelCatalog, workdir: Path, turns: int) -> None:
    bare = asyncio.run(_turns_bare(endpoint, catalog, turns))
    hosted = asyncio.run(_turns_host(endpoint, catalog, workdir, turns))
    print(f"  prompt -> request at the provider, {turns} turns (history grows ~1.2 KB a turn)")
    for first, last in ((0, 10), (turns // 2 - 10, turns // 2), (turns - 10, turns)):
        b, h = statistics.median(bare[first:last]), statistics.median(hosted[first:last])
        print(f"    turns {first + 1:>3}-{last:<3}  bare Agent {b * 1000:6.2f} ms   Host session {h * 1000:6.2f} ms"
              f"   ({h / b:.1f}x)")


# --- 4. compaction ---------------------------------------------------------------------------


async def _compaction(endpoint: Endpoint, catalog: ModelCatalog, workdir: Path) -> tuple[float, float, int]:
    host = Host(catalog, QuietEditor(), HostSettings(data_dir=str(workdir / "compact-data"), default_model="bench/big"))
    session = host.create(NewSessionParams(cwd=str(workdir), tools=["read"]), default_cwd=str(workdir))
    history: list[Any] = []
    for n in range(300):  # ~500 tokens a turn
        history.append(UserMessage(content=f"Step {n}: " + "refactor the parser and keep the tests green " * 40))
        history.append(AssistantMessage(content=[TextContent(text="Done: " + "changed the tokenizer " * 10)],
                                        api="openai-completions", provider="bench", model="big"))
    session.agent.replace_messages(history)
    session.context.configure(keep_recent_tokens=2_000)
    tokens = session.context.usage().tokens
    start = time.perf_counter()
    await session.prompt("One more step")  # the baseline: one request carrying the whole history
    plain = time.perf_counter() - start
    start = time.perf_counter()
    await session.context.compact()
    compacting = time.perf_counter() - start
    return plain, compacting, tokens


def bench_compaction(endpoint: Endpoint, catalog: ModelCatalog, workdir: Path) -> None:
    plain, compacting, tokens = asyncio.run(_compaction(endpoint, catalog, workdir))
    print(f"  agent/compact of a {tokens:,}-token history (loopback model answering at once)")
    print(f"    baseline, one request carrying it:   {plain * 1000:8.0f} ms")
    print(f"    compaction (summary request(s)):     {compacting * 1000:8.0f} ms   ({compacting / plain:.1f}x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", default="1000,10000", help="session counts to list (comma-separated)")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--load-mb", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check the bench runs")
    args = parser.parse_args()
    counts = [int(n) for n in args.sessions.split(",")]
    if args.quick:
        counts, args.turns, args.load_mb = [50], 30, 1
    with tempfile.TemporaryDirectory(prefix="tiller-session-bench-") as temp:
        workdir = Path(temp)
        print("1. listing saved sessions")
        for count in counts:
            bench_listing(count, 400_000 if count <= 1000 else 40_000, workdir)
        print("2. loading a big session")
        bench_loading(args.load_mb, workdir)
        endpoint = Endpoint()
        catalog = catalog_for(endpoint, workdir)
        print("3. per-turn overhead")
        bench_turns(endpoint, catalog, workdir, args.turns)
        print("4. compaction")
        bench_compaction(endpoint, catalog, workdir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
