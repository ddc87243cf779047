"""Running `tiller acp` on stdio until the client goes away."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import NoReturn

from acp.core import AgentSideConnection

from ..environment import catalog_withholding_secrets
from ..process_exit import cancel_leftover_tasks
from ..stdio import take_over_stdio
from ..telemetry import settings as telemetry
from .agent import TillerAgent
from .transport import LineTransport

logger = logging.getLogger("tiller.acp")


def serve_acp() -> int:
    protocol_in, protocol_out = take_over_stdio()
    agent = TillerAgent(catalog_withholding_secrets())

    async def main() -> None:
        # Stable in the spec, still "unstable" routes in SDK 0.12.1: session/resume and
        # session/close. The other unstable methods have no handler and answer -32601.
        connection = AgentSideConnection(agent, LineTransport(protocol_in, protocol_out), listening=False,
                                         use_unstable_protocol=True)
        try:
            await connection.listen()
        finally:
            await agent.host.close_all(timeout=0.5)
            await connection.close()
            if await cancel_leftover_tasks():
                _finish(0)

    code = 0
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        code = 130
    _finish(code)


def _finish(code: int) -> NoReturn:
    telemetry.shutdown()  # spans still in the batch (os._exit skips atexit)
    sys.stderr.flush()
    # Worker threads (the stdin reader, a local model) must not hold the process open.
    os._exit(code)
