"""The cache policies of SHADE's comparisons (FAST'23 §6.2 and §6.6).

§6.2 pairs coarse-grained importance sampling (every sample of a minibatch
scored with the batch's forward loss) with different caches; §6.6 emulates two
other systems' core caching ideas. The policies that were missing elsewhere:

* :class:`PriorityLFU` (``sh_pqlfu``): always admits; evicts the least
  (score, access frequency) -- "if the forward loss is the same, the eviction
  decision is made based on the access frequency";
* :class:`Priority` (``sh_pq``): always admits; evicts the least score, the
  longest-resident first among equal scores;
* :class:`RandomEvict` (``sh_rand``): always admits; evicts uniformly at random
  with ``np.random.default_rng([seed, epoch])``;
* :class:`FillKeep` (``emul_coor``, CoorDL): admits while there is room and
  never evicts;
* :class:`SubstituteFromCache` (``emul_quiv``, Quiver's substitutability): fills
  like ``emul_coor``; once a missed sample cannot be admitted, a resident sample
  not yet served this epoch is served in its place (:attr:`Outcome.SUBSTITUTION`,
  no storage read); when none is left the miss reads storage.

``sh_lru`` and ``sh_lfu`` use the plain ``lru``/``lfu`` policies and ``sh_app``
uses :class:`hotset.policies.app.APP`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import numpy as np

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.outcome import Decision, Outcome
from hotset.engine.policy import Policy
from hotset.errors import HotsetError
from hotset.policies.app import ScoredCache, check_sid


class PriorityLFU(ScoredCache):
    """Evict the least (score, access frequency); every miss that can fit is admitted."""

    name: ClassVar[str] = "sh_pqlfu"


class Priority(ScoredCache):
    """Evict the least score; among equal scores the one admitted first."""

    name: ClassVar[str] = "sh_pq"

    def __init__(self, budget: Budget, *, seed: int = 0) -> None:
        super().__init__(budget, seed=seed)
        self._seq: dict[int, int] = {}
        self._admissions = 0

    def _secondary(self, sid: int) -> int:
        return self._seq.get(sid, 0)

    def _admit(self, sid: int) -> None:
        self._admissions += 1
        self._seq[sid] = self._admissions
        super()._admit(sid)

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["seq"] = {sid: self._seq[sid] for sid in state["resident"]}
        state["admissions"] = self._admissions
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if "seq" not in state or "admissions" not in state:
            raise HotsetError(f"{self.name} state: missing 'seq' or 'admissions'")
        self._seq = {int(k): int(v) for k, v in dict(state["seq"]).items()}
        self._admissions = int(state["admissions"])
        super().load_state_dict(state)


class IndexedSet:
    """Ids in insertion order with O(1) add, remove and pick-by-position.

    Removal moves the last id into the hole, so positions (and with them a
    seeded random choice) depend only on the sequence of adds and removes.
    """

    def __init__(self, items: Iterable[int] = ()) -> None:
        self._items: list[int] = []
        self._pos: dict[int, int] = {}
        for sid in items:
            self.add(sid)

    def add(self, sid: int) -> None:
        if sid not in self._pos:
            self._pos[sid] = len(self._items)
            self._items.append(sid)

    def discard(self, sid: int) -> None:
        pos = self._pos.pop(sid, None)
        if pos is None:
            return
        last = self._items.pop()
        if pos < len(self._items):
            self._items[pos] = last
            self._pos[last] = pos

    def at(self, pos: int) -> int:
        return self._items[pos]

    def items(self) -> list[int]:
        return list(self._items)

    def __contains__(self, sid: object) -> bool:
        return sid in self._pos

    def __len__(self) -> int:
        return len(self._items)


class _SetCache(Policy):
    """Residents in an :class:`IndexedSet` and a per-epoch seeded generator."""

    def __init__(self, budget: Budget, *, seed: int = 0) -> None:
        super().__init__(budget, seed=seed)
        self._members = IndexedSet()
        self._rng = np.random.default_rng([self.seed, 0])

    def begin_epoch(self, epoch: int, planned: IntArray | None = None) -> None:
        super().begin_epoch(epoch, planned)
        self._rng = np.random.default_rng([self.seed, self.epoch])

    def _fits_with(self, sid: int) -> bool:
        return self.budget.fits(self.used_bytes + self.budget.size_of(sid), self.used_items + 1)

    def _admit(self, sid: int) -> None:
        self._members.add(sid)
        self.used_bytes += self.budget.size_of(sid)
        self.used_items += 1

    def _evict(self, sid: int) -> None:
        self._members.discard(sid)
        self.used_bytes -= self.budget.size_of(sid)
        self.used_items -= 1

    def __contains__(self, sid: object) -> bool:
        return sid in self._members

    def resident(self) -> frozenset[int]:
        return frozenset(self._members.items())

    def state_dict(self) -> dict[str, Any]:
        return {
            "members": self._members.items(),
            "rng": self._rng.bit_generator.state,
            "used_bytes": self.used_bytes,
            "used_items": self.used_items,
            "epoch": self.epoch,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        for key in ("members", "rng", "used_bytes", "used_items", "epoch"):
            if key not in state:
                raise HotsetError(f"{self.name} state: missing {key!r}")
        self._members = IndexedSet(check_sid(s) for s in state["members"])
        self._rng = np.random.default_rng()
        self._rng.bit_generator.state = dict(state["rng"])
        self.used_bytes = int(state["used_bytes"])
        self.used_items = int(state["used_items"])
        self.epoch = int(state["epoch"])


class RandomEvict(_SetCache):
    """Admit every miss that can fit, evicting uniformly random residents to make room."""

    name: ClassVar[str] = "sh_rand"

    def access(self, sid: int) -> Decision:
        sid = check_sid(sid)
        if sid in self._members:
            return Decision(sid, Outcome.HIT, sid)
        if not self.budget.can_ever_hold(sid):
            return Decision(sid, Outcome.MISS, sid)
        evicted = []
        while not self._fits_with(sid):
            victim = self._members.at(int(self._rng.integers(len(self._members))))
            self._evict(victim)
            evicted.append(victim)
        self._admit(sid)
        return Decision(sid, Outcome.MISS, sid, admitted=True, evicted=tuple(evicted))


class FillKeep(_SetCache):
    """CoorDL's idea as SHADE emulates it: cache while there is room, never evict."""

    name: ClassVar[str] = "emul_coor"

    def access(self, sid: int) -> Decision:
        sid = check_sid(sid)
        if sid in self._members:
            return Decision(sid, Outcome.HIT, sid)
        if self.budget.can_ever_hold(sid) and self._fits_with(sid):
            self._admit(sid)
            return Decision(sid, Outcome.MISS, sid, admitted=True)
        return Decision(sid, Outcome.MISS, sid)


class SubstituteFromCache(_SetCache):
    """Quiver's substitutability as SHADE emulates it: fill, then serve a cached
    sample in place of a miss that cannot be cached.

    The substitute is drawn uniformly (``default_rng([seed, epoch])``) among the
    residents not yet served this epoch -- by a hit or an earlier substitution.
    Once every resident has been served, a miss reads storage (and is not
    cached). So, as in Quiver, no cached sample stands in more than once per
    epoch and an epoch never collapses onto the cached subset: the share served
    from cache is bounded by the cache size (what SHADE §6.6 reports for
    Emul_Quiv, about the cache fraction). A sample admitted during the epoch
    counts as served (it was just read).
    """

    capabilities: ClassVar[Capabilities] = Capabilities(substitutes=True)

    name: ClassVar[str] = "emul_quiv"

    def __init__(self, budget: Budget, *, seed: int = 0) -> None:
        super().__init__(budget, seed=seed)
        self._unserved = IndexedSet()

    def begin_epoch(self, epoch: int, planned: IntArray | None = None) -> None:
        super().begin_epoch(epoch, planned)
        self._unserved = IndexedSet(self._members.items())

    def access(self, sid: int) -> Decision:
        sid = check_sid(sid)
        if sid in self._members:
            self._unserved.discard(sid)
            return Decision(sid, Outcome.HIT, sid)
        if self.budget.can_ever_hold(sid) and self._fits_with(sid):
            self._admit(sid)
            return Decision(sid, Outcome.MISS, sid, admitted=True)
        if not len(self._unserved):
            return Decision(sid, Outcome.MISS, sid)
        substitute = self._unserved.at(int(self._rng.integers(len(self._unserved))))
        self._unserved.discard(substitute)
        return Decision(sid, Outcome.SUBSTITUTION, substitute)

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["unserved"] = self._unserved.items()
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if "unserved" not in state:
            raise HotsetError(f"{self.name} state: missing 'unserved'")
        super().load_state_dict(state)
        self._unserved = IndexedSet(check_sid(s) for s in state["unserved"])
