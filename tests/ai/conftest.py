from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.sse_server import SSEServer


@pytest.fixture
def server() -> Iterator[SSEServer]:
    """A loopback HTTP server the test scripts with vendor SSE replies."""
    with SSEServer() as running:
        yield running
