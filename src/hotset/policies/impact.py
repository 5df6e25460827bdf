"""ImPACT's cache (IEEE TC'25 §III-B–D): iCACHE's H/L caches plus a static buffer for S.

* **Warm-up** (while the shared :class:`~hotset.importance.rank_variance.RankTracker`
  is not done): CoorDL-style static caching of the whole budget -- a miss is
  admitted while it fits, nothing is ever evicted -- and no packages.
* **Then** the budget splits three ways: the **static buffer** (region ``s``,
  ``s_share`` = 25% of the cache) holds the samples of S as they are first read
  and never replaces them; H and L (iCACHE's, :class:`PackedICache`) share the
  rest, starting 90/10. An S sample is served from the buffer or read, and never
  enters H or L ("excluded from the cache server"). Residents of the warm-up
  cache that belong to S move to the buffer (no bytes move: same cache id).
* **Filling the buffer**: the rest of S is loaded into the buffer in the
  background, :data:`S_LOAD_PER_BATCH` samples after each batch (single reads,
  counted as storage requests), so that every sample of S is re-evaluated from
  then on -- not only those IIS happened to select -- and S requests hit.
* **Re-evaluation**: :meth:`to_evaluate` names the buffered S samples; a driver
  runs a forward pass over them before the epoch's draw (their bytes are in the
  buffer: no storage read). ``impact_history`` (:class:`ImpactHistoryCache`)
  has the same caches and skips the re-evaluation: S keeps its historical losses.
* **Data-parallel ranks** (§III-E: "each node statically caches non-overlapping
  samples with high variability"): S is the same on every rank (the tracker
  follows the shared table), and rank ``r`` of ``W`` buffers and re-evaluates
  only its **part**, every ``W``-th id of S in id order from the ``r``-th
  (``sorted(S)[r::W]``, :meth:`bind_rank`): parts of equal size (within one id)
  whatever structure the ids have, computed alike on every rank. S is sized per
  node as the paper sizes it: ``s_share`` of *each* rank's cache, so S fills ``W``
  buffers (:meth:`RankTracker.set_world`) and a rank's part is about ``s_share`` of
  its own cache. Its static buffer is sized to that part, plus the samples of S
  (other ranks' parts) its warm-up cache already held, which move there as before.
  S stays out of H and L on every rank: a sample of another rank's part is read
  (or found in a cache the ranks share, where its owner put it) and never
  admitted, so no rank evicts, and deletes from a shared cache, what another
  buffers. The re-scored losses reach every rank's table through the driver
  (:func:`hotset.torch.ranks.gather_evaluated`). One rank: the part is all of S.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.outcome import Decision, Outcome
from hotset.engine.packages import PACKAGE_BYTES, Background, Load
from hotset.errors import HotsetError
from hotset.importance.rank_variance import MAX_WARM_UP, OVERLAP, S_SHARE, RankTracker
from hotset.policies.app import check_sid
from hotset.policies.icache.packed import PackedICache
from hotset.policies.icache.policy import H_SHARE, H_START

#: samples of S loaded into the static buffer after one batch, at most
S_LOAD_PER_BATCH = 64


class ImpactCache(PackedICache):
    """ImPACT's static buffer + iCACHE's H/L caches; see the module docstring."""

    name: ClassVar[str] = "impact"
    capabilities: ClassVar[Capabilities] = Capabilities(
        substitutes=True, regions=True, packs=True, evaluates=True
    )

    def __init__(
        self,
        budget: Budget,
        *,
        n: int | None = None,
        seed: int = 0,
        h_share: float = H_SHARE,
        h_start: float = H_START,
        lookahead: bool = True,
        packaging: str = "dynamic",
        package_bytes: int = PACKAGE_BYTES,
        s_share: float = S_SHARE,
        overlap: float = OVERLAP,
        max_warm_up: int = MAX_WARM_UP,
    ) -> None:
        super().__init__(
            budget,
            n=n,
            seed=seed,
            h_share=h_share,
            h_start=h_start,
            lookahead=lookahead,
            packaging=packaging,
            package_bytes=package_bytes,
        )
        ok = isinstance(s_share, int | float) and not isinstance(s_share, bool)
        if not ok or not 0 <= s_share < 1:
            raise HotsetError(f"impact: s_share must be a share in [0, 1), got {s_share!r}")
        self.full_total = self.total
        self.s_cap = math.floor(self.full_total * s_share)
        by_bytes = budget.capacity_bytes is not None
        weights = self.packer.sizes if by_bytes else np.ones_like(self.packer.sizes)
        #: the warm-up's rank tracker, shared with ImPACT's sampler (hotset.systems.impact)
        self.tracker = RankTracker(
            weights, s_bytes=self.s_cap, overlap=overlap, max_epochs=max_warm_up
        )
        self._s_ids: frozenset[int] | None = None  # S, once the warm-up ended
        self._s: set[int] = set()  # S samples held by the static buffer
        self.used_s = 0
        self.cap_h = self.total  # warm-up: one static cache over the whole budget
        self.rank, self.world_size = 0, 1
        self._part: frozenset[int] | None = None  # this rank's part of S (cached)

    def bind_rank(self, rank: int, world_size: int) -> None:
        """Buffer and re-evaluate ``sorted(S)[rank::world_size]`` (module docstring)."""
        for name, value in (("rank", rank), ("world_size", world_size)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise HotsetError(f"impact: {name} must be an int, got {value!r}")
        if not 0 <= rank < world_size:
            raise HotsetError(
                f"impact: rank {rank} of world_size {world_size}: need 0 <= rank < world_size"
            )
        if (rank, world_size) != (self.rank, self.world_size):
            self.rank, self.world_size = rank, world_size
            self._part = None

    @property
    def part(self) -> frozenset[int]:
        """This rank's part of S (empty during the warm-up)."""
        if self._part is None:
            if self._s_ids is None:
                return frozenset()
            ids = sorted(self._s_ids)
            self._part = frozenset(ids[self.rank :: self.world_size])
        return self._part

    def _buffer_room(self) -> int:
        """The static buffer: ``s_share`` of the cache with one rank; with several, this
        rank's part of S (about ``s_share`` of its cache: S fills every rank's) plus the
        samples of other ranks' parts its warm-up cache holds (they move to the buffer),
        at most the whole cache.

        One rank buffers all of S in all of ``s_cap`` (the paper's single node).
        """
        assert self._s_ids is not None
        if len(self.part) == len(self._s_ids):
            return self.s_cap
        held = self.part | {s for s in self._h if s in self._s_ids}
        return min(self.full_total, sum(self._w(s) for s in held))

    @property
    def warm(self) -> bool:
        """Whether the warm-up is still on (static caching, full epochs)."""
        return self._s_ids is None

    # -- hooks ----------------------------------------------------------------------
    def begin_epoch(self, epoch: int, planned: IntArray | None = None) -> None:
        ending = self._s_ids is None and self.tracker.done
        if ending:  # S is known: split the budget (before the H/L lists are drawn)
            assert self.tracker.s_ids is not None
            self._s_ids = frozenset(self.tracker.s_ids.tolist())
            self._part = None
            self.total = self.full_total - self._buffer_room()
            self.cap_h = math.floor(self.total * self.h_start)
        super().begin_epoch(epoch, planned)  # swaps the shadow heap in
        if ending:
            self._move_to_buffer()
        if self.warm:
            self._hot = None  # every sample H: no L traffic, no packages

    def _resize(self, planned: IntArray | None) -> None:
        """No re-sizing during the warm-up: one static cache over the whole budget."""
        if not self.warm:
            super()._resize(planned)

    def _move_to_buffer(self) -> None:
        """Residents of the warm-up cache that belong to S move to the static buffer.

        Those of another rank's part too: they stay, never evicted, so that no rank
        deletes what another buffers from a cache they share. No bytes move (same
        cache id); the buffer was sized to hold them and the part, so they fit.
        """
        assert self._s_ids is not None
        for sid in [s for s in self._h if s in self._s_ids]:
            del self._h[sid]  # its heap entry goes stale (skipped when popped)
            self._held.discard(sid)
            self.used_h -= self._w(sid)
            self._unserved_h.discard(sid)
            self._s.add(sid)
            self.used_s += self._w(sid)

    def background(self) -> Background:
        """iCACHE's loading step, then the next samples of S into the static buffer."""
        bg = super().background()
        fill = self._fill_buffer()
        if not fill:
            return bg
        return Background(packs=bg.packs, loads=(*bg.loads, Load(-1, fill)), evicted=bg.evicted)

    def _fill_buffer(self) -> tuple[int, ...]:
        """Admit up to :data:`S_LOAD_PER_BATCH` unbuffered samples of this rank's part, by id."""
        part = self.part
        if self._s_ids is None or len(self._s) >= len(part):
            return ()
        out: list[int] = []
        for sid in sorted(part - self._s):
            if not self._buffer_fits(sid):
                continue
            self._buffer(sid)
            out.append(sid)
            if len(out) == S_LOAD_PER_BATCH:
                break
        return tuple(out)

    def _buffer_fits(self, sid: int) -> bool:
        size = self.budget.size_of(sid)
        room = self.full_total - self.total  # the buffer, sized when S became known
        return self.used_s + self._w(sid) <= room and self.budget.fits(
            self.used_bytes + size, self.used_items + 1
        )

    def _buffer(self, sid: int) -> None:
        self._s.add(sid)
        self.used_s += self._w(sid)
        self.used_bytes += self.budget.size_of(sid)
        self.used_items += 1

    def to_evaluate(self) -> IntArray:
        """The buffered samples of this rank's part of S, whose losses a forward pass
        refreshes before the draw (every rank's reach every table: the driver shares them)."""
        return np.asarray(sorted(self._s & self.part), dtype=np.int64)

    def _is_l(self, sid: int) -> bool:
        return super()._is_l(sid) and (self._s_ids is None or sid not in self._s_ids)

    def access(self, sid: int) -> Decision:
        if self._s_ids is not None and sid in self._s_ids:
            sid = check_sid(sid)
            self._trained.add(sid)
            if sid in self._s:
                return Decision(sid, Outcome.HIT, sid)
            if sid in self.part and self._buffer_fits(sid):
                self._buffer(sid)
                return Decision(sid, Outcome.MISS, sid, admitted=True)
            return Decision(sid, Outcome.MISS, sid)
        return super().access(sid)

    def _miss_h(self, sid: int) -> Decision:
        if not self.warm:
            return super()._miss_h(sid)
        if self._fits(sid, "h"):  # static caching: admit while it fits, never evict
            self._add(sid, "h")
            return Decision(sid, Outcome.MISS, sid, admitted=True)
        return Decision(sid, Outcome.MISS, sid)

    # -- views ------------------------------------------------------------------------
    def regions(self) -> dict[str, tuple[int, int]]:
        return {**super().regions(), "s": (self.used_s, self.full_total - self.total)}

    def __contains__(self, sid: object) -> bool:
        return sid in self._s or super().__contains__(sid)

    def resident(self) -> frozenset[int]:
        return super().resident() | frozenset(self._s)

    def summary(self) -> dict[str, Any]:
        tracker = self.tracker
        return {
            **super().summary(),
            "warm_up_epochs": tracker.k,
            "s_samples": None if tracker.s_ids is None else len(tracker.s_ids),
            "s_overlaps": [round(o, 4) for o in tracker.overlaps],
        }

    # -- resumption -------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            **super().state_dict(),
            "tracker": self.tracker.state(),
            "s_ids": None if self._s_ids is None else sorted(self._s_ids),
            "s": sorted(self._s),
            "used_s": self.used_s,
            "total": self.total,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        for key in ("tracker", "s_ids", "s", "used_s", "total"):
            if key not in state:
                raise HotsetError(f"impact state: missing {key!r}")
        super().load_state_dict(state)
        self.tracker.load_state(dict(state["tracker"]))
        s_ids = state["s_ids"]
        self._s_ids = None if s_ids is None else frozenset(int(s) for s in s_ids)
        self._part = None
        self._s = {int(s) for s in state["s"]}
        self.used_s = int(state["used_s"])
        self.total = int(state["total"])
        self._target = self.packer.target(self.cap_l)


class ImpactHistoryCache(ImpactCache):
    """``impact_history``: the same caches, S never re-evaluated (historical losses only)."""

    name: ClassVar[str] = "impact_history"
    capabilities: ClassVar[Capabilities] = Capabilities(substitutes=True, regions=True, packs=True)

    def to_evaluate(self) -> IntArray:
        return np.zeros(0, dtype=np.int64)


class ImpactRealtimeCache(ImpactCache):
    """``impact_realtime``: every sample re-evaluated before each post-warm-up draw.

    ImPACT §V-E's *realtime* comparator: exact estimates for everyone, at the price
    of a forward pass over the whole data set each epoch and a storage read of
    every sample the cache does not hold. It bounds what any evaluator can gain
    from better estimates; the caches are ImPACT's, so only the evaluator differs.
    Data-parallel ranks split the data set as they split S: ids ``rank::world_size``.
    """

    name: ClassVar[str] = "impact_realtime"

    def to_evaluate(self) -> IntArray:
        if self.warm:
            return np.zeros(0, dtype=np.int64)
        return np.arange(self.rank, self.tracker.n, self.world_size, dtype=np.int64)
