"""LRU: evict the least recently used id.

Under a fresh random permutation per epoch and a cache holding a fraction c of
the data, LRU hits about c²/2 of requests -- the failure that motivates every
system in this package. LRU is a :class:`~hotset.policies.fifo.QueueCache`
whose hits move the id to the back of the queue.
"""

from __future__ import annotations

from typing import ClassVar

from hotset.policies.fifo import QueueCache


class LRU(QueueCache):
    """Least recently used: a hit moves the id to the back of the eviction queue."""

    name: ClassVar[str] = "lru"
    touch_on_hit: ClassVar[bool] = True
