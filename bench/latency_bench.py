"""Latency from a provider to the client: tiller serve next to pi's RPC mode, in one run.

    python bench/latency_bench.py [--servers 3] [--later 5] [--chunks 200] [--pace-ms 5] [--no-pi]

(with the project's interpreter: `uv run python bench/latency_bench.py`). Both agents talk to
the same loopback OpenAI-compatible SSE server (bench/loopback_provider.py, in this process)
and are driven over their own protocol by this script: tiller over LSP-framed JSON-RPC (the
client `tiller chat` uses), pi (`@mariozechner/pi-coding-agent`, installed from npm into
bench/.pi on first use) over its JSONL RPC mode with the server configured in models.json.

Measured, per agent:
1. time to first update: `prompt` sent -> first `message_update` received, for the first
   prompt of a fresh process and session (after a 2 s pause, as a user takes to type it)
   and for later prompts, against a provider that answers at once;
2. connections the provider saw for ten turns (counted server-side by peer address);
3. added latency per delta: a paced stream (`--chunks` chunks `--pace-ms` apart), from the
   provider writing a chunk to the client receiving the notification that carries it,
   p50 and p99 (both ends in this process: one clock).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:
    from tiller.chat.client import AgentClient
except ImportError:  # pragma: no cover
    sys.exit("run with the project's interpreter: uv run python bench/latency_bench.py")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loopback_provider import LoopbackProvider

HERE = Path(__file__).resolve().parent
PI_VERSION = "0.73.1"
PI_DIR = HERE / ".pi"
USER_PAUSE = 2.0
TURNS = 10


class Deltas:
    """Turns the text of received deltas back into chunk numbers and their arrival times."""

    def __init__(self, provider: LoopbackProvider) -> None:
        self.provider = provider
        self.pending = ""
        self.latencies: list[float] = []
        self.first_update: float | None = None

    def reset(self) -> None:
        self.pending, self.latencies, self.first_update = "", [], None

    def update(self, kind: str, delta: str) -> None:
        now = time.perf_counter()
        if self.first_update is None:
            self.first_update = now
        if kind != "text_delta":
            return
        self.pending += delta
        *complete, self.pending = self.pending.split(" ")
        for token in complete:
            if token.isdigit():
                sent = self.provider.sent_at(int(token))
                if sent is not None:
                    self.latencies.append(now - sent)


# --- the two agents, behind one small interface ------------------------------------------


class TillerAgent:
    name = "tiller serve"

    def __init__(self, provider: LoopbackProvider, workdir: Path) -> None:
        self.provider, self.workdir = provider, workdir
        self.deltas = Deltas(provider)
        self.client: AgentClient | None = None
        self.session = ""

    async def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env.update(TILLER_MODEL="openai/bench", OPENAI_BASE_URL=self.provider.url + "/v1", OPENAI_API_KEY="bench",
                   TILLER_DATA_DIR=str(self.workdir / "tiller-data"), XDG_CONFIG_HOME=str(self.workdir / "config"))
        self.log = open(self.workdir / "tiller.log", "wb")
        self.client = await AgentClient.spawn(env=env, stderr=self.log, on_event=self._on_event)
        await self.client.initialize(self.workdir)
        self.session = (await self.client.new_session(cwd=str(self.workdir)))["sessionId"]

    def _on_event(self, params: dict[str, Any]) -> None:
        event = params["event"]
        if event["type"] == "message_update":
            inner = event["assistantMessageEvent"]
            self.deltas.update(inner["type"], inner.get("delta", ""))

    async def prompt(self, text: str) -> None:
        assert self.client is not None
        await self.client.prompt(self.session, text)

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.shutdown()
        self.log.close()


class PiAgent:
    name = "pi --mode rpc"

    def __init__(self, provider: LoopbackProvider, workdir: Path) -> None:
        self.provider, self.workdir = provider, workdir
        self.deltas = Deltas(provider)
        self.process: asyncio.subprocess.Process | None = None
        self._ended: asyncio.Event = asyncio.Event()
        self._responses: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        agent_dir = self.workdir / "pi-agent"
        agent_dir.mkdir(exist_ok=True)
        (agent_dir / "models.json").write_text(json.dumps({"providers": {"bench": {
            "baseUrl": self.provider.url + "/v1", "api": "openai-completions", "apiKey": "bench",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "bench", "reasoning": False}],
        }}}))
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env.update(PI_CODING_AGENT_DIR=str(agent_dir), PI_OFFLINE="1")
        self.log = open(self.workdir / "pi.log", "wb")
        self.process = await asyncio.create_subprocess_exec(
            "node", str(pi_cli()), "--mode", "rpc", "--provider", "bench", "--model", "bench", "--offline",
            "--session-dir", str(self.workdir / "pi-sessions"), "--no-extensions", "--no-skills",
            "--no-prompt-templates", cwd=self.workdir, env=env, limit=1 << 24,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=self.log,
        )
        self._reader = asyncio.create_task(self._read())
        await self._command({"type": "get_state"})  # answered once pi is up

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        while line := await self.process.stdout.readline():
            record = json.loads(line)
            kind = record.get("type")
            if kind == "message_update":
                inner = record["assistantMessageEvent"]
                self.deltas.update(inner["type"], inner.get("delta", ""))
            elif kind == "agent_end":
                self._ended.set()
            elif kind == "response":
                await self._responses.put(record)

    async def _command(self, command: dict[str, Any]) -> dict[str, Any]:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write((json.dumps(command) + "\n").encode())
        await self.process.stdin.drain()
        response = await asyncio.wait_for(self._responses.get(), 60)
        if not response.get("success"):
            raise RuntimeError(f"pi: {response}")
        return response

    async def prompt(self, text: str) -> None:
        self._ended.clear()
        await self._command({"type": "prompt", "message": text})
        await asyncio.wait_for(self._ended.wait(), 60)

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                await asyncio.wait_for(self.process.wait(), 5)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        if self._reader is not None:
            self._reader.cancel()
        self.log.close()


def pi_cli() -> Path:
    """pi's CLI, installed from npm into bench/.pi on first use."""
    cli = PI_DIR / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist" / "cli.js"
    if not cli.exists():
        print(f"installing @mariozechner/pi-coding-agent@{PI_VERSION} into {PI_DIR} ...", file=sys.stderr)
        PI_DIR.mkdir(exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(PI_DIR),
                        f"@mariozechner/pi-coding-agent@{PI_VERSION}"], check=True, stdout=subprocess.DEVNULL)
    return cli


# --- the measurements --------------------------------------------------------------------


async def measure(make: Callable[[], Any], provider: LoopbackProvider, servers: int, later: int,
                  chunks: int, pace_ms: float) -> dict[str, Any]:
    firsts: list[float] = []
    laters: list[float] = []
    connections = 0
    latencies: list[float] = []
    for index in range(servers):
        agent = make()
        await agent.start()
        try:
            await asyncio.sleep(USER_PAUSE)
            for turn in range(later + 1):
                agent.deltas.reset()
                provider.script_instant()
                sent = time.perf_counter()
                await agent.prompt(f"question {turn}")
                assert agent.deltas.first_update is not None, "no message_update"
                (firsts if turn == 0 else laters).append(agent.deltas.first_update - sent)
            if index == 0:
                provider.reset_peers()
                for _ in range(TURNS):
                    provider.script_instant()
                    await agent.prompt("one more")
                connections = provider.peer_count()
                agent.deltas.reset()
                provider.script_paced(chunks, pace_ms / 1000)
                await agent.prompt("stream")
                latencies = sorted(agent.deltas.latencies)
                assert len(latencies) == chunks, f"{len(latencies)} of {chunks} chunks arrived"
        finally:
            await agent.stop()
    return {
        "first": statistics.median(firsts),
        "later": statistics.median(laters),
        "connections": connections,
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
    }


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def table(results: dict[str, dict[str, Any]], chunks: int, pace_ms: float) -> str:
    names = list(results)
    rows = [
        ("first prompt -> first `message_update` (fresh process)", "first", _ms),
        ("later prompts -> first `message_update`", "later", _ms),
        ("first minus later", None, _ms),
        (f"provider connections for {TURNS} turns", "connections", str),
        (f"added latency per delta, p50 ({chunks} chunks, {pace_ms:g} ms apart)", "p50", _ms),
        ("added latency per delta, p99", "p99", _ms),
    ]
    lines = ["| | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for label, key, fmt in rows:
        cells = [fmt(r["first"] - r["later"]) if key is None else fmt(r[key]) for r in results.values()]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=3, help="fresh processes (first prompts) per agent")
    parser.add_argument("--later", type=int, default=5, help="later prompts per process")
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--pace-ms", type=float, default=5.0)
    parser.add_argument("--no-pi", action="store_true", help="measure tiller only")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="tiller-latency-"))
    provider = LoopbackProvider()
    try:
        agents: dict[str, Callable[[], Any]] = {"tiller serve": lambda: TillerAgent(provider, workdir)}
        if not args.no_pi:
            if shutil.which("node") is None:
                sys.exit("pi needs Node.js (or pass --no-pi)")
            pi_cli()
            agents["pi --mode rpc"] = lambda: PiAgent(provider, workdir)
        results = {}
        for name, make in agents.items():
            results[name] = await measure(make, provider, args.servers, args.later, args.chunks, args.pace_ms)
            print(f"{name}: {results[name]}", file=sys.stderr)
        print(table(results, args.chunks, args.pace_ms))
        if "pi --mode rpc" in results:
            tiller, pi = results["tiller serve"], results["pi --mode rpc"]
            print(f"\nratios tiller/pi: first {tiller['first'] / pi['first']:.2f}x, later "
                  f"{tiller['later'] / pi['later']:.2f}x, delta p50 {tiller['p50'] / pi['p50']:.2f}x, "
                  f"p99 {tiller['p99'] / pi['p99']:.2f}x")
    finally:
        provider.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
