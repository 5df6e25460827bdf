"""Test-only systems: what the engine must carry for Brand, Quiver and iCACHE.

``chunk_lru``: a miss reads the requested id's whole chunk in one request and
admits every id of it; chunks are evicted least-recently-used, whole.
``chunk_lru_prefetch``: the same, and after each batch it prefetches the chunks
of the next ``lookahead`` planned ids that are neither resident nor staged,
within the staging budget; a request whose chunk was prefetched is served
``PREFETCHED`` and admits the chunk.

``chunk_lru_whole``: chunk_lru that caches each chunk whole, under the unit's
cache id ``n + chunk``, and serves a hit by cutting it from the cached chunk.
``split_lru``: two cache regions with budgets of their own (even ids in "H",
odd ids in "L", each an LRU over half the budget), as iCACHE's H- and L-cache.

Registered only by the tests that use them (``register_module("chunked_system")``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from hotset.engine.capabilities import Capabilities
from hotset.errors import HotsetError
from hotset.importance.table import ImportanceTable
from hotset.policies.base import Budget, Decision, IntArray, Outcome, Policy
from hotset.samplers.random import RandomSampler
from hotset.systems.base import System, SystemSpec

MODULE = "chunked_system"


@contextmanager
def registered() -> Iterator[None]:
    """These systems exist inside the block, and only there (the registry is global)."""
    from hotset.systems import registry

    before = registry.MODULES.snapshot()
    registry.register_module(MODULE)
    try:
        yield
    finally:
        registry.MODULES.restore(before)


class ChunkLRU(Policy):
    """LRU over whole chunks; see the module docstring."""

    name: ClassVar[str] = "chunk_lru"
    capabilities: ClassVar[Capabilities] = Capabilities(reads_units=True)
    #: cache a chunk as one entry (cache id n + chunk) instead of its samples
    whole: ClassVar[bool] = False

    def __init__(self, budget: Budget, *, seed: int = 0, lookahead: int = 0) -> None:
        super().__init__(budget, seed=seed)
        self.lookahead = lookahead
        self._chunks: OrderedDict[int, None] = OrderedDict()
        self._resident: set[int] = set()
        self._staged: dict[int, int] = {}  # unit -> bytes
        self._consumed: list[int] = []
        self._planned: IntArray = np.zeros(0, dtype=np.int64)
        self._pos = 0

    # -- helpers -------------------------------------------------------------------
    def _members(self, c: int) -> list[int]:
        assert self.layout is not None
        return [int(i) for i in self.layout.members(c).tolist()]

    def _chunk_bytes(self, c: int) -> int:
        if self.whole:
            assert self.layout is not None
            return int(self.layout.chunk_sizes[c])
        return sum(self.budget.size_of(i) for i in self._members(c))

    def _entries(self, c: int) -> list[int]:
        """The cache ids chunk ``c`` occupies."""
        return [self._n + c] if self.whole else self._members(c)

    @property
    def _n(self) -> int:
        assert self.budget.sizes is not None
        return len(self.budget.sizes)

    def _admit(self, c: int) -> tuple[bool, tuple[int, ...]]:
        need = self._chunk_bytes(c)
        cap = self.budget.capacity_bytes
        if cap is None or need > cap:
            return False, ()
        evicted: list[int] = []
        while self.used_bytes + need > cap:
            victim, _ = self._chunks.popitem(last=False)
            for i in self._members(victim):
                self._resident.discard(i)
            evicted += self._entries(victim)
            self.used_bytes -= self._chunk_bytes(victim)
            self.used_items -= len(self._entries(victim))
        self._chunks[c] = None
        self._resident.update(self._members(c))
        self.used_bytes += need
        self.used_items += len(self._entries(c))
        return True, tuple(evicted)

    # -- the policy ----------------------------------------------------------------
    def begin_epoch(self, epoch: int, planned: IntArray | None = None) -> None:
        super().begin_epoch(epoch, planned)
        self._planned = np.zeros(0, dtype=np.int64) if planned is None else planned
        self._pos = 0
        self._staged.clear()  # a prefetch lives within its epoch, as the engine's does
        self._consumed.clear()
        self.staged_bytes = 0

    def access(self, sid: int) -> Decision:
        if self.layout is None:
            raise HotsetError("chunk_lru needs the dataset's chunk layout")
        sid = int(sid)
        self._pos += 1
        c = int(self.layout.chunk_of[sid])
        if c in self._chunks:
            self._chunks.move_to_end(c)
            return Decision(sid, Outcome.HIT, sid, unit=c if self.whole else -1)
        outcome = Outcome.MISS
        if c in self._staged and c not in self._consumed:
            outcome = Outcome.PREFETCHED
            self._consumed.append(c)
        elif c in self._consumed:
            outcome = Outcome.PREFETCHED  # a second request of the batch that consumed it
        ok, evicted = self._admit(c)
        if self.whole:
            return Decision(
                sid,
                outcome,
                sid,
                evicted=evicted,
                unit=c,
                also_admitted=(self._n + c,) if ok else (),
            )
        others = tuple(i for i in self._members(c) if i != sid) if ok else ()
        return Decision(
            sid, outcome, sid, admitted=ok, evicted=evicted, unit=c, also_admitted=others
        )

    def prefetch(self) -> tuple[int, ...]:
        for c in self._consumed:
            self.staged_bytes -= self._staged.pop(c)
        self._consumed.clear()
        if not self.lookahead or self.layout is None:
            return ()
        fresh: list[int] = []
        for sid in self._planned[self._pos : self._pos + self.lookahead].tolist():
            c = int(self.layout.chunk_of[sid])
            if c in self._chunks or c in self._staged:
                continue
            size = int(self.layout.chunk_sizes[c])
            if self.staged_bytes + size > self.budget.staging_bytes:
                break
            self._staged[c] = size
            self.staged_bytes += size
            fresh.append(c)
        return tuple(fresh)

    def __contains__(self, sid: object) -> bool:
        return sid in self._resident

    def resident(self) -> frozenset[int]:
        return frozenset(self._resident)

    def cache_ids(self) -> frozenset[int]:
        return frozenset(e for c in self._chunks for e in self._entries(c))

    def state_dict(self) -> dict[str, Any]:
        return {
            "policy": self.name,
            "epoch": self.epoch,
            "chunks": list(self._chunks),
            "staged": sorted(self._staged.items()),
            "consumed": list(self._consumed),
            "planned": self._planned.tolist(),
            "pos": self._pos,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("policy") != self.name:
            raise HotsetError(f"state is for {state.get('policy')!r}, not {self.name!r}")
        self.epoch = int(state["epoch"])
        self._chunks = OrderedDict()
        self._resident = set()
        self.used_bytes = self.used_items = 0
        for c in state["chunks"]:
            self._admit(int(c))
        self._staged = {int(c): int(b) for c, b in state["staged"]}
        self.staged_bytes = sum(self._staged.values())
        self._consumed = [int(c) for c in state["consumed"]]
        self._planned = np.asarray(state["planned"], dtype=np.int64)
        self._pos = int(state["pos"])


class ChunkLRUPrefetch(ChunkLRU):
    name: ClassVar[str] = "chunk_lru_prefetch"
    capabilities: ClassVar[Capabilities] = Capabilities(reads_units=True, prefetches=True)


class ChunkLRUWhole(ChunkLRU):
    name: ClassVar[str] = "chunk_lru_whole"
    whole: ClassVar[bool] = True


class SplitLRU(Policy):
    """Two LRU regions under one total budget; see the module docstring."""

    name: ClassVar[str] = "split_lru"
    capabilities: ClassVar[Capabilities] = Capabilities(regions=True)

    def __init__(self, budget: Budget, *, seed: int = 0) -> None:
        super().__init__(budget, seed=seed)
        from hotset.policies.lru import LRU

        total = budget.capacity_bytes or 0
        self._parts = {
            "H": LRU(replace(budget, capacity_bytes=total - total // 2), seed=seed),
            "L": LRU(replace(budget, capacity_bytes=total // 2), seed=seed),
        }

    def _part(self, sid: int) -> Policy:
        return self._parts["H" if int(sid) % 2 == 0 else "L"]

    def access(self, sid: int) -> Decision:
        decision = self._part(sid).access(sid)
        self.used_bytes = sum(p.used_bytes for p in self._parts.values())
        self.used_items = sum(p.used_items for p in self._parts.values())
        return decision

    def regions(self) -> dict[str, tuple[int, int]]:
        return {
            name: (p.used_bytes, int(p.budget.capacity_bytes or 0))
            for name, p in self._parts.items()
        }

    def __contains__(self, sid: object) -> bool:
        return any(sid in p for p in self._parts.values())

    def resident(self) -> frozenset[int]:
        return frozenset().union(*(p.resident() for p in self._parts.values()))

    def state_dict(self) -> dict[str, Any]:
        return {
            "policy": self.name,
            "epoch": self.epoch,
            "parts": {name: p.state_dict() for name, p in self._parts.items()},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("policy") != self.name:
            raise HotsetError(f"state is for {state.get('policy')!r}, not {self.name!r}")
        self.epoch = int(state["epoch"])
        for name, part in self._parts.items():
            part.load_state_dict(state["parts"][name])
        self.used_bytes = sum(p.used_bytes for p in self._parts.values())
        self.used_items = sum(p.used_items for p in self._parts.values())


def _build(cls: type[Policy], lookahead: int) -> Any:
    def build(
        *,
        n: int,
        budget: Budget,
        seed: int,
        batch_size: int = 128,
        staging_bytes: int = 64 * 1024,
        lookahead: int = lookahead,
    ) -> System:
        staged = replace(budget, staging_bytes=staging_bytes if cls.capabilities.prefetches else 0)
        extra = {"lookahead": lookahead} if issubclass(cls, ChunkLRU) else {}
        return System(
            name=cls.name,
            sampler=RandomSampler(n, seed=seed),
            policy=cls(staged, seed=seed, **extra),
            table=ImportanceTable(n),
            options={"batch_size": batch_size},
        )

    return build


SPECS = [
    SystemSpec(
        "chunk_lru", "test only: whole-chunk reads, LRU over chunks", "tests", _build(ChunkLRU, 0)
    ),
    SystemSpec(
        "chunk_lru_prefetch",
        "test only: chunk_lru that prefetches the next batch's chunks",
        "tests",
        _build(ChunkLRUPrefetch, 16),
    ),
    SystemSpec(
        "chunk_lru_whole",
        "test only: chunk_lru caching each chunk whole under its unit key",
        "tests",
        _build(ChunkLRUWhole, 0),
    ),
    SystemSpec("split_lru", "test only: two LRU regions, H and L", "tests", _build(SplitLRU, 0)),
]
TEST_SYSTEMS = [spec.name for spec in SPECS]
