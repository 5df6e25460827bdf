"""iCACHE's H-cache heap (HPCA'23 §III-B) and the lookahead's held residents.

The H residents are keyed by importance; the least important evictable one is
the heap's minimum (entries go stale when a resident leaves or is re-keyed, and
are skipped when they surface). With the epoch's planned order known
(``lookahead``, beyond the paper) an H resident still due this epoch is *held*
out of the heap until it is requested, so a newcomer never evicts it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from hotset.errors import HotsetError


class ImportanceHeap:
    """H residents' keys, the min-heap of the evictable ones, and the held ones."""

    def __init__(self) -> None:
        self.keys: dict[int, float] = {}  # resident -> its heap key
        self.heap: list[tuple[float, int]] = []  # evictable residents (lazily deleted)
        self.held: set[int] = set()  # H residents still due this epoch (lookahead)
        self.pending: set[int] | None = None  # planned ids not yet requested (lookahead)

    def add(self, sid: int, key: float) -> None:
        self.keys[sid] = key
        heapq.heappush(self.heap, (key, sid))

    def remove(self, sid: int) -> None:
        del self.keys[sid]
        self.held.discard(sid)

    def min_key(self) -> float | None:
        """The least key among evictable H residents (stale heap entries dropped first)."""
        heap = self.heap
        while heap and (self.keys.get(heap[0][1]) != heap[0][0] or heap[0][1] in self.held):
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def least(self) -> int:
        """The resident to evict: the least important evictable one, or a held one only
        when none is (shrinking H while every resident is still due)."""
        if self.min_key() is not None:
            return heapq.heappop(self.heap)[1]
        if self.held:
            return min(self.held, key=lambda s: (self.keys[s], s))
        raise HotsetError("icache: H heap is empty while H holds residents")  # pragma: no cover

    def release(self, sid: int) -> None:
        """``sid`` was requested: no longer due, so a held H resident becomes evictable."""
        if self.pending is not None:
            self.pending.discard(sid)
        if sid in self.held:
            self.held.discard(sid)
            heapq.heappush(self.heap, (self.keys[sid], sid))

    def partition(self, pending: Iterable[int] | None) -> None:
        """Hold the residents still due (``pending``: the planned ids not yet requested,
        None: no lookahead); heap the rest (once per epoch)."""
        self.pending = None if pending is None else set(pending)
        due = self.pending if self.pending is not None else set()
        self.held = {s for s in self.keys if s in due}
        self.heap = [(key, s) for s, key in self.keys.items() if s not in self.held]
        heapq.heapify(self.heap)
