"""Belady's MIN: the offline bound, given the whole future with :meth:`set_future`.

On a miss that needs room, evict the resident id whose next use is farthest
away (ids never used again first). Two variants:

* ``bypass=True`` (default, the bound): a missed id is not admitted when every
  id that would have to leave is used again *sooner* than it, and an id never
  used again is never admitted. With unit sizes this is optimal among all
  policies, including ones that decline to admit (MinIO) -- which is why it is
  the bound every online policy is compared with. With byte sizes, optimal
  caching is NP-hard and "farthest next use first" is the usual heuristic, so
  with sizes it is a strong reference, not a proven bound.
* ``bypass=False`` (demand paging): every missed id that fits is admitted,
  evicting farthest-next-use ids until it fits. This is exactly libCacheSim's
  ``Belady`` (with sizes too: its eviction loop ignores size), and the tests
  compare hit counts with it. It can lose to a bypassing online policy (cache
  of one, trace ``a b a b a``: demand MIN hits once... MinIO twice).

Structure: next-use positions are computed once with numpy (stable argsort of
the ids, O(n log n), no Python loop). Residents map id -> next use; a max-heap of
next-use *positions* (ints, not tuples: the id at position ``p`` is
``future[p]``) finds the farthest, with lazy deletion: an entry is live iff
its id is resident with that next use. Ids never used again sit in a separate
ordered dict and leave first. The heap is compacted when it grows past four
times the residents, so memory stays O(cache) rather than O(trace).
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
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


def next_uses(trace: IntArray) -> npt.NDArray[np.int64]:
    """``out[i]`` = index of the next access to ``trace[i]``, or ``len(trace)`` if none."""
    arr = np.asarray(trace, dtype=np.int64)
    n = len(arr)
    out = np.full(n, n, dtype=np.int64)
    if n < 2:
        return out
    order = np.argsort(arr, kind="stable")  # positions grouped by id, ascending within
    same = arr[order[1:]] == arr[order[:-1]]
    out[order[:-1][same]] = order[1:][same]
    return out


class Belady(Policy):
    """Offline MIN (see the module doc for ``bypass``)."""

    name: ClassVar[str] = "belady"
    capabilities: ClassVar[Capabilities] = Capabilities(needs_future=True)

    def __init__(self, budget: Budget, *, seed: int = 0, bypass: bool = True) -> None:
        super().__init__(budget, seed=seed)
        self.bypass = bool(bypass)
        self._cap_b, self._cap_i = budget_limits(budget)
        self._sizes = size_list(budget)
        self._future: list[int] | None = None
        self._next: list[int] = []
        self._never = 0
        self._pos = 0
        self._res: dict[int, int] = {}  # resident id -> its next use (or _never)
        self._dead: OrderedDict[int, None] = OrderedDict()  # residents never used again
        self._heap: list[int] = []  # -next_use of live residents, lazily deleted

    # -- the future ----------------------------------------------------------------
    def set_future(self, trace: IntArray) -> None:
        """Give the whole access sequence; accesses then follow it from its start."""
        ids = check_trace(trace, self._sizes)
        self._future = ids
        self._next = next_uses(np.asarray(ids, dtype=np.int64)).tolist()
        self._never = len(ids)
        self._pos = 0
        self._res.clear()
        self._dead.clear()
        self._heap = []
        self.used_bytes = self.used_items = 0

    def _require_future(self) -> list[int]:
        if self._future is None:
            raise HotsetError("belady needs the future: call set_future(trace) first")
        return self._future

    # -- queries -----------------------------------------------------------------
    def __contains__(self, sid: object) -> bool:
        return sid in self._res

    def resident(self) -> frozenset[int]:
        return frozenset(self._res)

    def _size(self, sid: int) -> int:
        return 1 if self._sizes is None else self._sizes[sid]

    # -- one access --------------------------------------------------------------
    def access(self, sid: int) -> Decision:
        sid = check_id(sid, self._sizes)
        future = self._require_future()
        pos = self._pos
        if pos >= len(future) or future[pos] != sid:
            expected = future[pos] if pos < len(future) else "the end of the future"
            raise HotsetError(f"belady: access {pos} is id {sid}, but the future says {expected}")
        self._pos = pos + 1
        nxt = self._next[pos]
        if sid in self._res:
            self._set_next(sid, nxt)
            return Decision(sid, Outcome.HIT, sid)
        size = self._size(sid)
        if size > self._cap_b or self._cap_i < 1 or (self.bypass and nxt == self._never):
            return Decision(sid, Outcome.MISS, sid, admitted=False)
        victims = self._make_room(size, nxt)
        if victims is None:
            return Decision(sid, Outcome.MISS, sid, admitted=False)
        self._admit(sid, size, nxt)
        return Decision(sid, Outcome.MISS, sid, admitted=True, evicted=tuple(victims))

    def _set_next(self, sid: int, nxt: int) -> None:
        self._res[sid] = nxt
        if nxt == self._never:
            self._dead[sid] = None
        else:
            heapq.heappush(self._heap, -nxt)

    def _admit(self, sid: int, size: int, nxt: int) -> None:
        self._set_next(sid, nxt)
        self.used_bytes += size
        self.used_items = len(self._res)
        if len(self._heap) > 4 * len(self._res) + 64:
            self._compact()

    def _compact(self) -> None:
        self._heap = [-p for p in self._res.values() if p != self._never]
        heapq.heapify(self._heap)

    def _farthest(self) -> int:
        """The largest live next use in the heap (stale entries are dropped)."""
        heap, res, future = self._heap, self._res, self._future
        assert future is not None
        while heap:
            p = -heap[0]
            if res.get(future[p]) == p:
                return p
            heapq.heappop(heap)
        raise AssertionError("belady: no live resident to evict")

    def _make_room(self, size: int, nxt: int) -> list[int] | None:
        """Evict until ``size`` fits; ``None`` (nothing changed) when bypassing is better."""
        need_b = self.used_bytes + size - self._cap_b
        need_i = len(self._res) + 1 - self._cap_i
        if need_b <= 0 and need_i <= 0:
            return []
        victims: list[int] = []
        for sid in self._dead:  # never used again: always the first to go
            if need_b <= 0 and need_i <= 0:
                break
            victims.append(sid)
            need_b -= self._size(sid)
            need_i -= 1
        future = self._future
        assert future is not None
        popped: list[int] = []
        while need_b > 0 or need_i > 0:
            p = self._farthest()
            if self.bypass and p < nxt:  # everyone left is needed sooner than the newcomer
                for q in popped:
                    heapq.heappush(self._heap, -q)
                return None
            heapq.heappop(self._heap)
            popped.append(p)
            victims.append(future[p])
            need_b -= self._size(future[p])
            need_i -= 1
        for sid in victims:
            del self._res[sid]
            self._dead.pop(sid, None)
            self.used_bytes -= self._size(sid)
        self.used_items = len(self._res)
        return victims

    # -- a whole trace -----------------------------------------------------------
    def replay(self, trace: IntArray) -> npt.NDArray[np.int8]:
        """Decide ``trace``, which must be the next stretch of the future.

        Without a future yet, ``trace`` becomes the future. Unit sizes take a
        tight loop; byte sizes go through :meth:`access`'s own helpers.
        """
        if self._future is None:
            self.set_future(trace)
        ids = check_trace(trace, self._sizes)
        future = self._require_future()
        start, stop = self._pos, self._pos + len(ids)
        if stop > len(future) or future[start:stop] != ids:
            raise HotsetError(
                f"belady: the replayed trace is not accesses {start}..{stop - 1} of the future"
            )
        out = bytearray(len(ids))
        if self._sizes is None:
            self._replay_unit(start, stop, out)
        else:
            self._replay_sized(start, stop, out)
        self._pos = stop
        return outcomes(out)

    def _replay_sized(self, start: int, stop: int, out: bytearray) -> None:
        """:meth:`access` inlined (same order of evictions, same bypass rule)."""
        future, nexts, res, dead = self._require_future(), self._next, self._res, self._dead
        sizes = self._sizes
        assert sizes is not None
        cap_b, cap_i, never, bypass = self._cap_b, self._cap_i, self._never, self.bypass
        heap = self._heap
        push, pop = heapq.heappush, heapq.heappop
        used_b = self.used_bytes
        miss = _MISS
        for i in range(start, stop):
            sid = future[i]
            nxt = nexts[i]
            if sid in res:
                res[sid] = nxt
                if nxt == never:
                    dead[sid] = None
                else:
                    push(heap, -nxt)
                continue
            out[i - start] = miss
            size = sizes[sid]
            if size > cap_b or cap_i < 1 or (bypass and nxt == never):
                continue
            need_b = used_b + size - cap_b
            need_i = len(res) + 1 - cap_i
            if need_b > 0 or need_i > 0:
                gone_dead: list[int] = []
                for victim in dead:  # never used again: the first to go
                    if need_b <= 0 and need_i <= 0:
                        break
                    gone_dead.append(victim)
                    need_b -= sizes[victim]
                    need_i -= 1
                popped: list[int] = []
                declined = False
                while need_b > 0 or need_i > 0:
                    while True:  # the farthest live entry
                        p = -heap[0]
                        if res.get(future[p]) == p:
                            break
                        pop(heap)
                    if bypass and p < nxt:
                        declined = True
                        break
                    pop(heap)
                    popped.append(p)
                    need_b -= sizes[future[p]]
                    need_i -= 1
                if declined:
                    for p in popped:
                        push(heap, -p)
                    continue
                for victim in gone_dead:
                    del dead[victim]
                    del res[victim]
                    used_b -= sizes[victim]
                for p in popped:
                    victim = future[p]
                    del res[victim]
                    used_b -= sizes[victim]
            res[sid] = nxt
            used_b += size
            if nxt == never:
                dead[sid] = None
            else:
                push(heap, -nxt)
                if len(heap) > 4 * len(res) + 64:
                    heap[:] = [-q for q in res.values() if q != never]
                    heapq.heapify(heap)
        self.used_bytes = used_b
        self.used_items = len(res)

    def _replay_unit(self, start: int, stop: int, out: bytearray) -> None:
        future, nexts, res, dead = self._require_future(), self._next, self._res, self._dead
        cap = min(self._cap_b, self._cap_i)
        never, bypass = self._never, self.bypass
        heap = self._heap
        push, pop = heapq.heappush, heapq.heappop
        pop_dead = dead.popitem
        limit = 4 * cap + 64
        miss = _MISS
        for i in range(start, stop):
            sid = future[i]
            nxt = nexts[i]
            if sid in res:
                res[sid] = nxt
                if nxt == never:
                    dead[sid] = None
                else:
                    push(heap, -nxt)
                continue
            out[i - start] = miss
            if cap < 1 or (bypass and nxt == never):
                continue
            if len(res) >= cap:
                if dead:
                    del res[pop_dead(False)[0]]
                else:
                    while True:  # the farthest live entry
                        p = -heap[0]
                        if res.get(future[p]) == p:
                            break
                        pop(heap)
                    if bypass and p < nxt:
                        continue
                    pop(heap)
                    del res[future[p]]
            res[sid] = nxt
            if nxt == never:
                dead[sid] = None
            else:
                push(heap, -nxt)
                if len(heap) > limit:
                    heap[:] = [-q for q in res.values() if q != never]
                    heapq.heapify(heap)
        self.used_bytes = self.used_items = len(res)

    # -- resumption --------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "policy": self.name,
            "epoch": self.epoch,
            "bypass": self.bypass,
            "future": None if self._future is None else list(self._future),
            "pos": self._pos,
            "resident": list(self._res),
            "dead_order": list(self._dead),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        check_state_name(state, self.name)
        if bool(state["bypass"]) != self.bypass:
            raise HotsetError(f"belady state has bypass={state['bypass']}, policy {self.bypass}")
        if state["future"] is None:
            self._future, self._next, self._never, self._pos = None, [], 0, 0
            self._res, self._dead, self._heap = {}, OrderedDict(), []
            self.used_bytes = self.used_items = 0
            self.epoch = int(state["epoch"])
            return
        self.set_future(np.asarray(state["future"], dtype=np.int64))
        future = self._require_future()
        pos = int(state["pos"])
        if not 0 <= pos <= self._never:
            raise HotsetError(f"belady state: position {pos} outside the future")
        self._pos = pos
        last_next = {sid: self._next[i] for i, sid in enumerate(future[:pos])}
        for sid in state["resident"]:
            sid = check_id(sid, self._sizes)
            if sid not in last_next:
                raise HotsetError(f"belady state: id {sid} is resident but was never accessed")
            self._res[sid] = last_next[sid]
            self.used_bytes += self._size(sid)
        for sid in state["dead_order"]:
            if self._res.get(sid) != self._never:
                raise HotsetError(f"belady state: id {sid} is not a resident without a next use")
            self._dead[sid] = None
        if len(self._dead) != sum(1 for p in self._res.values() if p == self._never):
            raise HotsetError("belady state: dead_order does not list every finished resident")
        self.used_items = len(self._res)
        if not self.budget.fits(self.used_bytes, self.used_items):
            raise HotsetError("belady state holds more than the budget")
        self._compact()
        self.epoch = int(state["epoch"])
