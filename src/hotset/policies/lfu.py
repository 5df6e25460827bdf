"""LFU: evict the least frequently used id; among those, the least recently used.

Frequencies count accesses since the id was last admitted: an evicted id
forgets its count (no ghost history), as in libCacheSim's LFU.

Tie-break: among the ids sharing the lowest count, the one whose last access is
oldest leaves first. An id's last access is exactly when it reached its current
count, so "least recently used within the lowest-count bucket" is the same as
"first to enter that bucket" -- the order libCacheSim's LFU keeps in its
per-frequency lists, which is why our hit counts equal its counts (tested).

Structure: one ``OrderedDict`` per count (a bucket, oldest first) plus the
lowest non-empty count, so a hit and an eviction are O(1) (the classic O(1)
LFU); the lowest count is only searched for again when an eviction empties its
bucket, which with byte sizes can happen several times per miss.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.outcome import Decision, Outcome
from hotset.engine.policy import Policy
from hotset.errors import HotsetError
from hotset.policies._common import (
    budget_limits,
    check_id,
    check_state_name,
    check_trace,
    outcomes,
    size_list,
)

_MISS = int(Outcome.MISS)


class LFU(Policy):
    """Least frequently used, ties to the least recently used (see the module doc)."""

    name: ClassVar[str] = "lfu"

    def __init__(self, budget: Budget, *, seed: int = 0) -> None:
        super().__init__(budget, seed=seed)
        self._cap_b, self._cap_i = budget_limits(budget)
        self._sizes = size_list(budget)
        self._count: dict[int, int] = {}  # resident id -> access count since admission
        self._buckets: dict[int, OrderedDict[int, None]] = {}  # count -> ids, oldest first
        self._min = 0  # lowest non-empty count (0 while empty)

    def __contains__(self, sid: object) -> bool:
        return sid in self._count

    def resident(self) -> frozenset[int]:
        return frozenset(self._count)

    def _size(self, sid: int) -> int:
        return 1 if self._sizes is None else self._sizes[sid]

    def access(self, sid: int) -> Decision:
        sid = check_id(sid, self._sizes)
        if sid in self._count:
            self._touch(sid)
            return Decision(sid, Outcome.HIT, sid)
        size = self._size(sid)
        if size > self._cap_b or self._cap_i < 1:
            return Decision(sid, Outcome.MISS, sid, admitted=False)
        evicted: list[int] = []
        while self.used_bytes + size > self._cap_b or len(self._count) >= self._cap_i:
            evicted.append(self._evict_one())
        self._count[sid] = 1
        self._buckets.setdefault(1, OrderedDict())[sid] = None
        self._min = 1
        self.used_bytes += size
        self.used_items = len(self._count)
        return Decision(sid, Outcome.MISS, sid, admitted=True, evicted=tuple(evicted))

    def _touch(self, sid: int) -> None:
        buckets = self._buckets
        count = self._count[sid]
        bucket = buckets[count]
        del bucket[sid]
        if not bucket:
            del buckets[count]
            if self._min == count:
                self._min = count + 1
        self._count[sid] = count + 1
        nxt = buckets.get(count + 1)
        if nxt is None:
            nxt = buckets[count + 1] = OrderedDict()
        nxt[sid] = None

    def _evict_one(self) -> int:
        bucket = self._buckets[self._min]
        victim, _ = bucket.popitem(last=False)
        if not bucket:
            del self._buckets[self._min]
            self._min = min(self._buckets) if self._buckets else 0
        del self._count[victim]
        self.used_bytes -= self._size(victim)
        self.used_items = len(self._count)
        return victim

    def replay(self, trace: IntArray) -> npt.NDArray[np.int8]:
        """The access loop with attribute lookups hoisted into locals."""
        ids = check_trace(trace, self._sizes)
        out = bytearray(len(ids))
        count = self._count
        buckets = self._buckets
        sizes = self._sizes
        cap_b, cap_i = self._cap_b, self._cap_i
        used_b = self.used_bytes
        low = self._min
        miss = _MISS
        for i, sid in enumerate(ids):
            c = count.get(sid)
            if c is not None:
                bucket = buckets[c]
                del bucket[sid]
                if not bucket:
                    del buckets[c]
                    if low == c:
                        low = c + 1
                count[sid] = c + 1
                nxt = buckets.get(c + 1)
                if nxt is None:
                    nxt = buckets[c + 1] = OrderedDict()
                nxt[sid] = None
                continue
            out[i] = miss
            size = 1 if sizes is None else sizes[sid]
            if size > cap_b or cap_i < 1:
                continue
            used_b += size
            while used_b > cap_b or len(count) >= cap_i:
                bucket = buckets[low]
                victim, _ = bucket.popitem(last=False)
                if not bucket:
                    del buckets[low]
                    low = min(buckets) if buckets else 0
                del count[victim]
                used_b -= 1 if sizes is None else sizes[victim]
            count[sid] = 1
            first = buckets.get(1)
            if first is None:
                first = buckets[1] = OrderedDict()
            first[sid] = None
            low = 1
        self.used_bytes = used_b
        self.used_items = len(count)
        self._min = low
        return outcomes(out)

    def state_dict(self) -> dict[str, Any]:
        return {
            "policy": self.name,
            "epoch": self.epoch,
            "buckets": [[c, list(ids)] for c, ids in sorted(self._buckets.items())],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        check_state_name(state, self.name)
        count: dict[int, int] = {}
        buckets: dict[int, OrderedDict[int, None]] = {}
        for c, ids in state["buckets"]:
            c = int(c)
            if c < 1 or not ids:
                raise HotsetError(f"lfu state: bad bucket for count {c}")
            bucket = buckets[c] = OrderedDict()
            for sid in ids:
                sid = check_id(sid, self._sizes)
                if sid in count:
                    raise HotsetError(f"lfu state: id {sid} appears twice")
                count[sid] = c
                bucket[sid] = None
        used_b = sum(self._size(sid) for sid in count)
        if not self.budget.fits(used_b, len(count)):
            raise HotsetError(f"lfu state holds {len(count)} ids / {used_b} bytes, over the budget")
        self._count, self._buckets = count, buckets
        self._min = min(buckets) if buckets else 0
        self.used_bytes, self.used_items = used_b, len(count)
        self.epoch = int(state["epoch"])
