"""MinIO (CoorDL): cache a random subset that fills the budget, and never evict.

Under random per-epoch permutations every cached id is hit exactly once per
epoch after the first, so the hit ratio is the cached fraction -- c instead of
LRU's c²/2 -- with no eviction traffic at all.

Which subset: each id gets a priority from a seeded hash of (seed, id); the
subset is the highest-priority ids taken greedily while they fit the budget
(bytes and items). It is a function of the seed and the universe only, not of
the order ids arrive in, so several DataLoader workers racing to fill the
cache still agree on it. The universe is the ids of the first planned order
(:meth:`begin_epoch`: a rank's shard under data parallelism), else
``range(n)`` when ``n`` is given, else the ids that have sizes. When none of these is known (a bare trace without
sizes), MinIO does what CoorDL does with no plan: it admits whatever misses
while there is room, which under a random first epoch is a random subset too.
"""

from __future__ import annotations

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
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finaliser: a well-mixed 64-bit hash, wrap-around arithmetic."""
    x = (x + _GOLDEN).astype(np.uint64)
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def priorities(ids: IntArray, seed: int) -> npt.NDArray[np.uint64]:
    """A seeded pseudo-random 64-bit priority per id (same id, same seed: same priority)."""
    salt = _splitmix(np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0]
    return _splitmix(np.asarray(ids, dtype=np.int64).astype(np.uint64) ^ salt)


def choose_subset(
    universe: IntArray, *, seed: int, cap_bytes: int, cap_items: int, sizes: list[int] | None
) -> set[int]:
    """The highest-priority ids of ``universe`` that fit together, taken greedily."""
    ids = np.unique(np.asarray(universe, dtype=np.int64))
    prio = priorities(ids, seed)
    ranked = ids[np.lexsort((ids, prio))[::-1]]  # highest priority first, ties by id
    if sizes is None:
        return set(ranked[: max(0, min(cap_bytes, cap_items))].tolist())
    chosen: set[int] = set()
    room = cap_bytes
    for sid in ranked.tolist():
        if len(chosen) >= cap_items or room <= 0:
            break
        size = sizes[sid]
        if size <= room:
            chosen.add(sid)
            room -= size
    return chosen


class MinIO(Policy):
    """A seeded random subset filling the budget, admitted on first access, never evicted."""

    name: ClassVar[str] = "minio"

    def __init__(self, budget: Budget, *, seed: int = 0, n: int | None = None) -> None:
        super().__init__(budget, seed=seed)
        self._cap_b, self._cap_i = budget_limits(budget)
        self._sizes = size_list(budget)
        self._res: set[int] = set()
        self._chosen: set[int] | None = None
        if n is not None:
            if isinstance(n, bool) or not isinstance(n, int | np.integer) or n <= 0:
                raise HotsetError(f"minio: n must be a positive integer, got {n!r}")
            if self._sizes is not None and n > len(self._sizes):
                raise HotsetError(f"minio: n={n} but sizes cover only {len(self._sizes)} ids")
            self._choose(np.arange(int(n), dtype=np.int64))
        elif self._sizes is not None:
            self._choose(np.arange(len(self._sizes), dtype=np.int64))

    def _choose(self, universe: IntArray) -> None:
        self._chosen = choose_subset(
            universe,
            seed=self.seed,
            cap_bytes=self._cap_b,
            cap_items=self._cap_i,
            sizes=self._sizes,
        )

    def begin_epoch(self, epoch: int, planned: IntArray | None = None) -> None:
        """While nothing is cached, the planned order is the universe (CoorDL: epoch 1's ids).

        One rank of several plans only its shard: a subset chosen from all ids
        would hold ids the rank sees once every ``world_size`` epochs, so a
        private cache would take that many epochs to fill. A whole epoch's order
        is every id, so a single rank chooses what ``range(n)`` gave.
        """
        super().begin_epoch(epoch, planned)
        if not self._res and planned is not None and len(planned):
            ids = np.unique(np.asarray(check_trace(planned, self._sizes), dtype=np.int64))
            self._choose(ids)

    def __contains__(self, sid: object) -> bool:
        return sid in self._res

    def resident(self) -> frozenset[int]:
        return frozenset(self._res)

    @property
    def subset(self) -> frozenset[int] | None:
        """The ids MinIO will cache, or None while it admits first come, first served."""
        return None if self._chosen is None else frozenset(self._chosen)

    def _size(self, sid: int) -> int:
        return 1 if self._sizes is None else self._sizes[sid]

    def access(self, sid: int) -> Decision:
        sid = check_id(sid, self._sizes)
        if sid in self._res:
            return Decision(sid, Outcome.HIT, sid)
        size = self._size(sid)
        wanted = self._chosen is None or sid in self._chosen
        fits = self.used_bytes + size <= self._cap_b and len(self._res) < self._cap_i
        if not (wanted and fits):
            return Decision(sid, Outcome.MISS, sid, admitted=False)
        self._res.add(sid)
        self.used_bytes += size
        self.used_items = len(self._res)
        return Decision(sid, Outcome.MISS, sid, admitted=True)

    def replay(self, trace: IntArray) -> npt.NDArray[np.int8]:
        ids = check_trace(trace, self._sizes)
        out = bytearray(len(ids))
        res, chosen, sizes = self._res, self._chosen, self._sizes
        cap_b, cap_i = self._cap_b, self._cap_i
        used_b = self.used_bytes
        add = res.add
        miss = _MISS
        for i, sid in enumerate(ids):
            if sid in res:
                continue
            out[i] = miss
            if chosen is not None and sid not in chosen:
                continue
            size = 1 if sizes is None else sizes[sid]
            if used_b + size <= cap_b and len(res) < cap_i:
                add(sid)
                used_b += size
        self.used_bytes = used_b
        self.used_items = len(res)
        return outcomes(out)

    def state_dict(self) -> dict[str, Any]:
        return {
            "policy": self.name,
            "epoch": self.epoch,
            "resident": sorted(self._res),
            "chosen": None if self._chosen is None else sorted(self._chosen),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        check_state_name(state, self.name)
        res = {check_id(sid, self._sizes) for sid in state["resident"]}
        chosen = state["chosen"]
        chosen_set = None if chosen is None else {check_id(s, self._sizes) for s in chosen}
        if chosen_set is not None and not res <= chosen_set:
            raise HotsetError("minio state: resident ids outside the chosen subset")
        used_b = sum(self._size(sid) for sid in res)
        if not self.budget.fits(used_b, len(res)):
            raise HotsetError(f"minio state holds {len(res)} ids / {used_b} bytes, over the budget")
        self._res, self._chosen = res, chosen_set
        self.used_bytes, self.used_items = used_b, len(res)
        self.epoch = int(state["epoch"])
