"""LRU: evict the least recently used id.

Under a fresh random permutation per epoch and a cache holding a fraction c of
the data, LRU hits about c²/2 of requests -- the failure that motivates every
system in this package. LRU is a :class:`~hotset.policies.fifo.QueueCache`
whose hits move the id to the back of the queue.

The planner decides a batch with :meth:`LRU.access_batch` (its batch
protocol, :mod:`hotset.engine.planner`): the same decisions as :meth:`LRU.access`
on each id in order, without a :class:`~hotset.policies.base.Decision` per request.
"""

from __future__ import annotations

from typing import ClassVar

from hotset.engine.outcome import Decision, Outcome
from hotset.policies._common import check_id
from hotset.policies.fifo import QueueCache

_HIT, _MISS = Outcome.HIT, Outcome.MISS
_MISS_BYTE = int(Outcome.MISS)


class LRU(QueueCache):
    """Least recently used: a hit moves the id to the back of the eviction queue."""

    name: ClassVar[str] = "lru"
    touch_on_hit: ClassVar[bool] = True

    def access(self, sid: int) -> Decision:
        # QueueCache.access with the hit's move fixed, and a plain in-range int id
        # (what the planner passes) accepted without the general check.
        sizes = self._sizes
        if type(sid) is not int or sid < 0 or (sizes is not None and sid >= len(sizes)):
            sid = check_id(sid, sizes)
        queue = self._queue
        if sid in queue:
            queue.move_to_end(sid)
            return Decision(sid, _HIT, sid)
        size = 1 if sizes is None else sizes[sid]
        cap_b, cap_i = self._cap_b, self._cap_i
        if size > cap_b or cap_i < 1:
            return Decision(sid, _MISS, sid)
        evicted: list[int] = []
        used_b = self.used_bytes + size
        pop = queue.popitem
        while used_b > cap_b or len(queue) >= cap_i:
            victim, victim_size = pop(last=False)
            used_b -= victim_size
            evicted.append(victim)
        queue[sid] = size
        self.used_bytes = used_b
        self.used_items = len(queue)
        return Decision(sid, _MISS, sid, True, tuple(evicted))

    def access_batch(
        self, ids: list[int]
    ) -> tuple[bytearray, list[bool], dict[int, tuple[int, ...]]]:
        """:meth:`access` on each id in order, answered as the planner's batch protocol.

        ``(outcomes, admitted, evictions)``: see :mod:`hotset.engine.planner`.
        """
        sizes = self._sizes
        if ids and (min(ids) < 0 or (sizes is not None and max(ids) >= len(sizes))):
            for sid in ids:
                check_id(sid, sizes)  # raises on the first bad id, as access would
        m = len(ids)
        out = bytearray(m)  # zero is Outcome.HIT
        admitted = [False] * m
        evictions: dict[int, tuple[int, ...]] = {}
        queue = self._queue
        move, pop = queue.move_to_end, queue.popitem
        cap_b, cap_i = self._cap_b, self._cap_i
        used_b = self.used_bytes
        for j, sid in enumerate(ids):
            if sid in queue:
                move(sid)
                continue
            out[j] = _MISS_BYTE
            size = 1 if sizes is None else sizes[sid]
            if size > cap_b or cap_i < 1:
                continue
            used_b += size
            if used_b > cap_b or len(queue) >= cap_i:
                evicted: list[int] = []
                while used_b > cap_b or len(queue) >= cap_i:
                    victim, victim_size = pop(False)
                    used_b -= victim_size
                    evicted.append(victim)
                evictions[j] = tuple(evicted)
            queue[sid] = size
            admitted[j] = True
        self.used_bytes = used_b
        self.used_items = len(queue)
        return out, admitted, evictions
