"""How fast does `tiller serve` stream, compared with a bare Python JSON-RPC writer?

    python bench/stream_bench.py [--deltas 20000] [--repeat 3] [--starts 5] [--profile]

(with the project's interpreter: `uv run python bench/stream_bench.py` or
`.venv/bin/python bench/stream_bench.py`)

1. Streaming: a faux model replies with `deltas` x 4 characters (chunkChars 4, delayMs 0);
   `tiller serve` streams it over stdio to a client that reads and parses every frame
   (tiller.chat.client, the same code `tiller chat` uses). Reported: deltas/s from sending
   `agent/prompt` to its answer, bytes on the wire, prompt -> first `message_update`, and
   the server's peak RSS (VmHWM).
2. Baseline: bench/bare_writer.py writes the same number of `agent/event` notifications of
   the same shape, read by the same client code, flushing each message as pygls does.
   Besides wall-clock rates, the server's and the client's CPU time per delta are
   reported: on a shared 2-core machine CPU time is the steadier measure.
3. Cold start: spawn -> `initialize` answer, `tiller serve` vs bench/bare_pygls_server.py.

`--profile` also runs the tiller stream once under cProfile (bench/profiled_serve.py) and
prints where the server's time goes (automatic when tiller is >3x slower than the bare
writer).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

try:
    from tiller.chat.client import AgentClient
except ImportError:  # pragma: no cover
    sys.exit("run with the project's interpreter: uv run python bench/stream_bench.py")

HERE = Path(__file__).resolve().parent
CHUNK = 4


def _env(workdir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.endswith("_BASE_URL")}
    env["TILLER_DATA_DIR"] = str(workdir / "data")  # saved sessions stay in the temp dir
    env.update(extra)
    return env


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process (clock ticks, usually 10 ms)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Counter:
    def __init__(self) -> None:
        self.chars = 0  # characters of text received: the server may coalesce deltas
        self.frames = 0  # text_delta events that carried them
        self.first_update: float | None = None

    def reset(self) -> None:
        self.chars, self.frames, self.first_update = 0, 0, None

    def __call__(self, params: dict[str, Any]) -> None:
        event = params["event"]
        if event["type"] == "message_update":
            if self.first_update is None:
                self.first_update = time.perf_counter()
            if event["assistantMessageEvent"]["type"] == "text_delta":
                self.chars += len(event["assistantMessageEvent"]["delta"])
                self.frames += 1


async def stream_tiller(deltas: int, repeat: int, workdir: Path, profile: Path | None = None,
                        sse_port: int | None = None) -> dict[str, Any]:
    """Stream through `tiller serve`: from the faux model (one delta per event-loop pass), or
    with `sse_port` from a loopback OpenAI-compatible server (many deltas per network read,
    which the server coalesces)."""
    text = "abcd" * deltas
    if sse_port is not None:
        env = _env(workdir, TILLER_MODEL="openai/bench", OPENAI_BASE_URL=f"http://127.0.0.1:{sse_port}/v1")
    else:
        responses = [{"content": [{"type": "text", "text": "warm up"}]}]
        responses += [{"content": [{"type": "text", "text": text}]} for _ in range(repeat)]
        script = workdir / "script.json"
        script.write_text(json.dumps({"chunkChars": CHUNK, "delayMs": 0, "responses": responses}))
        env = _env(workdir, TILLER_MODEL="faux/faux-1", TILLER_FAUX_SCRIPT=str(script))
    command = [sys.executable, "-m", "tiller", "serve"]
    if profile is not None:
        command = [sys.executable, str(HERE / "profiled_serve.py")]
        env["TILLER_BENCH_PROFILE"] = str(profile)
    counter = _Counter()
    with open(workdir / "server.log", "wb") as log:
        client = await AgentClient.spawn(command, env=env, stderr=log, on_event=counter)
        await client.initialize(workdir)
        session = (await client.new_session())["sessionId"]

        start = time.perf_counter()
        await client.prompt(session, "warm up")  # the first prompt of the process
        cold_first = (counter.first_update or start) - start

        runs = []
        for _ in range(repeat):
            counter.reset()
            received = client.connection.bytes_received
            server_cpu, client_cpu = _cpu_seconds(client.process.pid), time.process_time()
            start = time.perf_counter()
            result = await client.prompt(session, "stream")
            elapsed = time.perf_counter() - start
            assert result["stopReason"] == "stop", result
            assert counter.chars == len(text), (counter.chars, len(text))  # no character lost
            runs.append({"frames": counter.frames, "seconds": elapsed, "bytes": client.connection.bytes_received - received,
                         "first": (counter.first_update or start) - start,
                         "server_cpu": _cpu_seconds(client.process.pid) - server_cpu,
                         "client_cpu": time.process_time() - client_cpu})
        rss = _peak_rss_kib(client.process.pid)
        await client.shutdown()
    return {**_summary(deltas, runs), "first_warm": statistics.median(r["first"] for r in runs),
            "first_cold": cold_first, "rss_kib": rss}


def _summary(deltas: int, runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"deltas": deltas, "runs": runs, "bytes": runs[0]["bytes"],
            **{key: statistics.median(r[key] for r in runs) for key in ("seconds", "server_cpu", "client_cpu")}}


async def stream_baseline(deltas: int, repeat: int, flush_each: bool = True) -> dict[str, Any]:
    runs = []
    for _ in range(repeat):
        counter = _Counter()
        command = [sys.executable, str(HERE / "bare_writer.py"), str(deltas)] + (["--flush-each"] if flush_each else [])
        client = await AgentClient.spawn(command, on_event=counter)
        await asyncio.sleep(0.3)  # let the interpreter start: measure the stream, not the spawn
        server_cpu, client_cpu = _cpu_seconds(client.process.pid), time.process_time()
        start = time.perf_counter()
        await client.request("bench/go", {})
        elapsed = time.perf_counter() - start
        runs.append({"seconds": elapsed, "bytes": client.connection.bytes_received,
                     "server_cpu": _cpu_seconds(client.process.pid) - server_cpu,
                     "client_cpu": time.process_time() - client_cpu})
        assert counter.frames == deltas, (counter.frames, deltas)
        await client.close()
    return _summary(deltas, runs)


async def cold_start(command: list[str], workdir: Path) -> tuple[float, float]:
    """Wall seconds from spawn to the `initialize` answer, and the CPU seconds the server
    used until then."""
    start = time.perf_counter()
    client = await AgentClient.spawn(command, env=_env(workdir), stderr=asyncio.subprocess.DEVNULL)
    await client.request("initialize", {"processId": os.getpid(), "rootUri": workdir.as_uri(),
                                        "capabilities": {"experimental": {"tiller": {}}}})
    elapsed = time.perf_counter() - start
    cpu = _cpu_seconds(client.process.pid)
    await client.shutdown()
    return elapsed, cpu


def print_profile(path: Path, limit: int = 30) -> None:
    stats = pstats.Stats(str(path))
    stats.strip_dirs()
    print(f"\n--- server profile (cProfile, one stream), top {limit} by internal time ---")
    stats.sort_stats("tottime").print_stats(limit)
    print(f"--- top {limit} by cumulative time ---")
    stats.sort_stats("cumulative").print_stats(limit)


def _rate(result: dict[str, Any]) -> float:
    return result["deltas"] / result["seconds"]


HEADER = (f"{'streaming':30} {'deltas/s':>10} {'seconds':>8} {'wire bytes':>11} {'B/delta':>8} "
          f"{'server CPU':>10} {'client CPU':>10}")


def _row(name: str, result: dict[str, Any]) -> str:
    per = 1e6 / result["deltas"]
    return (f"{name:30} {_rate(result):>10,.0f} {result['seconds']:>8.3f} {result['bytes']:>11,} "
            f"{result['bytes'] / result['deltas']:>8.1f} {result['server_cpu'] * per:>10.1f} "
            f"{result['client_cpu'] * per:>10.1f}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5, help="streams per measurement (median)")
    parser.add_argument("--starts", type=int, default=5, help="cold starts per server (median)")
    parser.add_argument("--profile", action="store_true", help="also profile one tiller stream")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="tiller-bench-") as tmp:
        workdir = Path(tmp).resolve()
        tiller = await stream_tiller(args.deltas, args.repeat, workdir)
        source = await asyncio.create_subprocess_exec(sys.executable, str(HERE / "sse_source.py"), str(args.deltas),
                                                      stdout=asyncio.subprocess.PIPE)
        try:
            port = int((await source.stdout.readline()).decode())
            tiller_sse = await stream_tiller(args.deltas, args.repeat, workdir, sse_port=port)
        finally:
            source.kill()
            await source.wait()
        flushed = await stream_baseline(args.deltas, args.repeat, flush_each=True)

        tiller_starts, bare_starts = [], []
        for _ in range(args.starts):  # interleaved: machine load hits both alike
            tiller_starts.append(await cold_start([sys.executable, "-m", "tiller", "serve"], workdir))
            bare_starts.append(await cold_start([sys.executable, str(HERE / "bare_pygls_server.py")], workdir))

        cores = os.cpu_count()
        print(f"\nstream_bench: {args.deltas} deltas of {CHUNK} chars, median of {args.repeat}; "
              f"{cores} cores; Python {sys.version.split()[0]}\n")
        rows = [
            ("tiller serve (faux, stdio)", tiller),
            ("tiller serve (loopback SSE)", tiller_sse),
            ("bare writer (flush each)", flushed),
        ]
        print(HEADER)
        for name, result in rows:
            print(_row(name, result))
        for name, result in (("faux", tiller), ("loopback SSE", tiller_sse)):
            print(f"{'tiller (' + name + ') / bare':30} {_rate(result) / _rate(flushed):>10.3f}x"
                  f"{'':9}{'':13}{result['server_cpu'] / max(flushed['server_cpu'], 1e-9):>10.1f}x")
        frames = statistics.median(r["frames"] for r in tiller_sse["runs"])
        print(f"(loopback SSE: {args.deltas} deltas arrived in {frames:,.0f} text_delta events after coalescing; "
              "no character lost)")
        print("(deltas/s and seconds: wall clock, prompt sent -> answer read; CPU: the writer process "
              "and this client, µs per delta)")
        print()
        print(f"prompt -> first message_update: {tiller['first_warm'] * 1000:.1f} ms "
              f"(first prompt of the process: {tiller['first_cold'] * 1000:.1f} ms)")
        print(f"tiller serve peak RSS (VmHWM): {tiller['rss_kib'] / 1024:.1f} MiB")
        print()
        print(f"{'cold start (spawn -> initialize)':34} {'median ms':>10} {'min':>8} {'max':>8} {'CPU ms':>8}")
        for name, values in (("tiller serve", tiller_starts), ("bare pygls server", bare_starts)):
            walls = [wall for wall, _ in values]
            print(f"{name:34} {statistics.median(walls) * 1000:>10.0f} {min(walls) * 1000:>8.0f} "
                  f"{max(walls) * 1000:>8.0f} {statistics.median(cpu for _, cpu in values) * 1000:>8.0f}")
        ratio = statistics.median(w for w, _ in tiller_starts) / statistics.median(w for w, _ in bare_starts)
        cpu_ratio = statistics.median(c for _, c in tiller_starts) / statistics.median(c for _, c in bare_starts)
        print(f"{'tiller / bare':34} {ratio:>10.2f}x{'':18}{cpu_ratio:>8.2f}x")

        slow = _rate(flushed) / _rate(tiller)
        if args.profile or slow > 3:
            if not args.profile:
                print(f"\ntiller streams {slow:.1f}x slower than the bare writer: profiling one stream")
            profile = workdir / "server.prof"
            await stream_tiller(args.deltas, 1, workdir, profile=profile)
            print_profile(profile)


if __name__ == "__main__":
    asyncio.run(main())
