"""The cache-store tests' request counter.

The real Redis servers they talk to (one, and a three-master cluster flushed per test
as ``cluster``) are the root conftest's: the coordination tests use them too.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
from cachestore_support import SendCounter


@pytest.fixture
def send_counter(monkeypatch: pytest.MonkeyPatch) -> SendCounter:
    """Wrap redis-py's connection so every request written to a socket is counted."""
    counter = SendCounter()
    original = redis.connection.AbstractConnection.send_packed_command

    def counting(self: Any, command: Any, check_health: bool = True) -> None:
        port = int(getattr(self, "port", 0))
        counter.by_port[port] = counter.by_port.get(port, 0) + 1
        original(self, command, check_health)

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counting)
    return counter
