"""Is a local model server running? One cheap `GET {baseUrl}/models`, remembered briefly.

A server that answers at all (even 401 or 404) is running; a 200 with OpenAI's model list
(`{"data": [{"id": ...}]}`, as Ollama, LM Studio, vLLM and llama.cpp serve it) also says
which models it serves. Nothing answering within the timeout means not running.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:  # httpx costs ~0.1 s to import; only probing needs it
    import httpx

PROBE_TIMEOUT = 1.0  # seconds; a loopback server answers in milliseconds
PROBE_TTL = 10.0  # seconds a result is reused: long enough for a picker, short enough to notice a start


@dataclass(frozen=True)
class ProbeResult:
    running: bool
    model_ids: tuple[str, ...] = ()


class ServerProbe:
    def __init__(self, timeout: float = PROBE_TIMEOUT, ttl: float = PROBE_TTL) -> None:
        self.timeout = timeout
        self.ttl = ttl
        self._cache: dict[str, tuple[float, ProbeResult]] = {}

    async def check_all(self, servers: dict[str, tuple[str, str | None]]) -> dict[str, ProbeResult]:
        """Probe `{name: (base_url, key or None)}` concurrently."""
        import httpx

        results: dict[str, ProbeResult] = {}

        async def one(name: str, base_url: str, key: str | None, client: httpx.AsyncClient) -> None:
            results[name] = await self.check(base_url, key, client)

        async with httpx.AsyncClient(timeout=self.timeout) as client, anyio.create_task_group() as group:
            for name, (base_url, key) in servers.items():
                group.start_soon(one, name, base_url, key, client)
        return results

    async def check(self, base_url: str, key: str | None, client: httpx.AsyncClient) -> ProbeResult:
        now = time.monotonic()
        cached = self._cache.get(base_url)
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        result = await self._probe(base_url, key, client)
        self._cache[base_url] = (time.monotonic(), result)
        return result

    async def _probe(self, base_url: str, key: str | None, client: httpx.AsyncClient) -> ProbeResult:
        import httpx

        headers = {"authorization": f"Bearer {key}"} if key else {}
        try:
            response = await client.get(base_url.rstrip("/") + "/models", headers=headers)
        except (httpx.HTTPError, OSError):
            return ProbeResult(running=False)
        if response.status_code != 200:
            return ProbeResult(running=True)
        try:
            data = response.json().get("data")
        except (ValueError, AttributeError):
            return ProbeResult(running=True)
        ids = [item["id"] for item in data or [] if isinstance(item, dict) and isinstance(item.get("id"), str)]
        return ProbeResult(running=True, model_ids=tuple(ids))
