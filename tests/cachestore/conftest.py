"""Real Redis servers for the cache-store tests: one server and a three-master cluster.

Both run on free loopback ports with persistence off and die at teardown. A
missing ``redis-server`` fails the tests (it does not skip them): CI installs
it (``make test`` runs ``make redis-check``), and a skipped backend would pass
silently.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
from cachestore_support import SendCounter

from redis_support import RedisCluster


@pytest.fixture
def cluster(redis_cluster: RedisCluster) -> RedisCluster:
    """The session cluster, flushed before the test."""
    redis_cluster.flushall()
    return redis_cluster


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
