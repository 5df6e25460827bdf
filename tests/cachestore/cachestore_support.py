"""Helpers the cache-store tests share (Redis servers come from tests/redis_support.py).

No pytest in here: spawned child processes import this module to find their
target functions, and it should stay cheap to import.
"""

from __future__ import annotations

import os
import random
import signal
import time
from dataclasses import dataclass, field
from typing import Any

from hotset.cachestore import CacheKey, content_hash
from hotset.cachestore.shm import SharedMemoryCache


def payload(seed: int, size: int) -> bytes:
    """Reproducible random bytes (random bytes catch offset mistakes; zeros would not)."""
    return random.Random(seed).randbytes(size)


def item(sample_id: int, data: bytes) -> tuple[CacheKey, bytes]:
    return CacheKey(sample_id, content_hash(data)), data


def command_calls(client: Any, command: str) -> int:
    """How often a Redis server ran ``command`` since its last CONFIG RESETSTAT."""
    stats: Any = client.info("commandstats")
    entry = stats.get(f"cmdstat_{command.lower()}")
    return int(entry["calls"]) if entry else 0


@dataclass
class SendCounter:
    """Counts packed sends per server: one send is one round trip of a pipeline."""

    by_port: dict[int, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.by_port.values())

    def reset(self) -> None:
        self.by_port.clear()


# -- child process targets -----------------------------------------------------------


def read_and_write(
    cache: SharedMemoryCache,
    keys: list[CacheKey],
    new_items: list[tuple[CacheKey, bytes]],
    queue: Any,
) -> None:
    """A DataLoader worker's share: read what the parent cached, then cache new bytes."""
    got = cache.get_many(keys)
    cache.put_many(new_items)
    queue.put((os.getpid(), cache.is_owner, got))


def read_then_hang(cache: SharedMemoryCache, keys: list[CacheKey], queue: Any) -> None:
    """Read, report, and wait to be killed."""
    queue.put(cache.get_many(keys))
    time.sleep(60)


def crash_mid_write(cache: SharedMemoryCache, sample_id: int, queue: Any) -> None:
    """Die by SIGKILL halfway through rewriting a slot, holding the write lock."""
    with cache._writing() as seg:
        seq = int(seg.slots[sample_id, 0])
        seg.slots[sample_id, 0] = seq + 1
        off = int(seg.slots[sample_id, 1])
        seg.arena[off : off + 8] ^= 0xFF
        queue.put("crashing")
        queue.close()
        queue.join_thread()  # flush before dying
        os.kill(os.getpid(), signal.SIGKILL)


def alternate_writes(
    cache: SharedMemoryCache,
    first: tuple[CacheKey, bytes],
    second: tuple[CacheKey, bytes],
    seconds: float,
    queue: Any,
) -> None:
    """Keep replacing one slot's content with one of two payloads until time is up."""
    deadline = time.monotonic() + seconds
    rounds = 0
    queue.put("started")
    while time.monotonic() < deadline:
        cache.put_many([first])
        cache.put_many([second])
        rounds += 1
    queue.put(rounds)
