"""iCACHE's importance-informed cache (HPCA'23 §III-B/C): an H-cache and an L-cache.

Two regions share one budget:

* **H-cache** (important samples): a min-heap keyed by importance. On a miss
  when full, the minimum is evicted only if the newcomer's importance is larger;
  otherwise the newcomer is not cached. Keys come from the *previous* importance
  snapshot: updates received at the end of an epoch go to a **shadow heap**
  (the residents re-keyed by the new snapshot) that is swapped in at the next
  epoch's start, so the heap is never rebuilt in place mid-epoch.
* **L-cache** (the rest): admits L-sample misses while it has room; once full, a
  requested L-sample that misses is **substituted** by an L-resident not yet
  served this epoch (``Outcome.SUBSTITUTION``, never a hit). "Not yet served"
  means: not returned this epoch by a hit, a substitution or its own admission.
  The missed ids are recorded (:attr:`ICache.missed`, the input of the packer).
  When every L-resident has been served, the next L miss is read and replaces a
  served resident: this class fills its L-cache one sample at a time. The
  ``icache`` system's L-cache is
  :class:`~hotset.policies.icache.packed.PackedICache`, which loads it from
  dynamic packages of 1 MB (:mod:`hotset.policies.icache.packing`) instead;
  this class alone backs the ablations that have no L traffic to pack
  (``icache_h``). ``substitute_to="h"`` (the ``st_hc`` ablation) substitutes
  from the H-cache instead.

**Lookahead** (``lookahead=True``, beyond the paper): when the epoch's planned
order is known, an H resident still due this epoch is *held* out of the heap until
it is served, so a newcomer never evicts it. The paper's heap trades a sure hit
now (the resident is in this epoch's plan) for a hoped-for hit next epoch (the
newcomer's); held residents never lose that trade. Eviction still takes the
least important resident, among those the epoch no longer needs; with no
planned order, or ``lookahead=False``, every resident is in the heap (the paper's rule).

**Full epochs fill without eviction** (``full_fill=True``, the authors' rule;
off by default, which keeps the committed figures): given ``full_epoch(epoch)``
(the IIS sampler's), an epoch that asks for every sample admits a miss into its
region while the region has room and evicts nothing -- no heap eviction, no
lazy shrinking, no package load (a load drops the served residents) -- and an L
miss is read from storage rather than substituted, so a full epoch trains every
sample, which is what it is for: fresh losses of everyone. Selective epochs use
the heap and substitution as above.

Which samples are H: the top ``h_share`` (70%) of the epoch's planned ids by
importance (ties by id); the rest are L. Without a planned order, all ids are
ranked. Before any importance is known every id is H.

Sizing: H starts at ``h_start`` (90%) of the budget, L gets the rest; at every
epoch boundary H is re-sized to ``total * F_H / (F_H + F_L)`` from the epoch's
observed accesses to H- and L-samples (kept when either count is 0). With
lookahead (beyond the paper) the frequencies are the new epoch's *planned*
requests to H- and L-samples: the same formula with the frequencies the epoch
will have rather than those the last one had, so the first epoch with an L-list
is not served by a 10% L-cache sized for no L traffic at all. A region
left over its new capacity shrinks lazily: the next admission into the other
region evicts from it first, so every eviction is part of a :class:`Decision`
and the used bytes of both regions never exceed the total budget. Meanwhile
:meth:`regions` reports the over-full region's capacity as what it holds and
gives the other the rest, so each region stays within its reported capacity.

The H-cache's heap and held residents are :class:`~hotset.policies.icache.heap.ImportanceHeap`;
the snapshot it is keyed by, the shadow heap and the multi-job keys are
:class:`~hotset.policies.icache.keys.ImportanceKeys`. This class keeps the regions'
books and sizing and decides each request.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.outcome import Decision, Outcome
from hotset.engine.policy import Policy
from hotset.errors import HotsetError
from hotset.importance.multijob import ELIGIBLE_ABOVE, JobImportance, check_threshold
from hotset.policies.app import check_sid
from hotset.policies.icache.heap import ImportanceHeap
from hotset.policies.icache.keys import ImportanceKeys
from hotset.policies.icache.multijob import JobKeys
from hotset.policies.shade_variants import IndexedSet

#: the authors' constants (DESIGN.md "Faithful details")
H_SHARE = 0.7
H_START = 0.9
SUBSTITUTE_TO = ("l", "h")


def _share(name: str, value: object, *, low_open: bool = False) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not (0 < value <= 1 if low_open else 0 <= value <= 1):  # type: ignore[operator]
        raise HotsetError(f"icache: {name} must be a share in [0, 1], got {value!r}")
    return float(value)  # type: ignore[arg-type]


def _check_options(
    substitute_to: object,
    flags: Mapping[str, object],
    full_epoch: object,
    multijob: object,
    eligible_above: float,
    probe_requests: object,
) -> float:
    """Refuse a bad option, naming it and its value; the multi-job threshold (checked
    even when ``multijob`` is off)."""
    if substitute_to not in SUBSTITUTE_TO:
        raise HotsetError(f"icache: substitute_to must be 'l' or 'h', got {substitute_to!r}")
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise HotsetError(f"icache: {name} must be True or False, got {value!r}")
    if flags["full_fill"] and full_epoch is None:
        raise HotsetError("icache: full_fill needs full_epoch, the sampler's full-epoch rule")
    if not isinstance(multijob, bool):
        raise HotsetError(f"icache: multijob must be True or False, got {multijob!r}")
    threshold = check_threshold(eligible_above)
    bad = isinstance(probe_requests, bool) or not isinstance(probe_requests, int)
    if bad or probe_requests < 0:  # type: ignore[operator]
        raise HotsetError(f"icache: probe_requests must be an int >= 0, got {probe_requests!r}")
    return threshold


class ICache(Policy):
    """iCACHE's H/L cache; see the module docstring."""

    name: ClassVar[str] = "icache"
    capabilities: ClassVar[Capabilities] = Capabilities(substitutes=True, regions=True)

    def __init__(
        self,
        budget: Budget,
        *,
        seed: int = 0,
        h_share: float = H_SHARE,
        h_start: float = H_START,
        substitute_to: str = "l",
        resize: bool = True,
        lookahead: bool = True,
        full_fill: bool = False,
        full_epoch: Callable[[int], bool] | None = None,
        multijob: bool = False,
        eligible_above: float = ELIGIBLE_ABOVE,
        probe_requests: int = 0,
    ) -> None:
        super().__init__(budget, seed=seed)
        self.h_share = _share("h_share", h_share)
        self.h_start = _share("h_start", h_start)
        flags = {"resize": resize, "lookahead": lookahead, "full_fill": full_fill}
        threshold = _check_options(
            substitute_to, flags, full_epoch, multijob, eligible_above, probe_requests
        )
        self.full_fill = full_fill
        self.full_epoch = full_epoch
        #: §III-D: keyed by the adjusted importance of the jobs sharing the cache; the
        #: importance snapshot in use and the shadow heap (icache.keys)
        self.keys = ImportanceKeys(JobKeys(threshold=threshold) if multijob else None)
        #: §III-D's benefit probe: the first requests of each epoch are planned as reads
        #: from storage (nothing looked up, nothing admitted), so a driver can time them
        self.probe_requests = probe_requests
        self._requests = 0  # requests planned this epoch (for the probe)
        #: this epoch fills without eviction (``full_fill`` and a full epoch)
        self.filling = False
        self.substitute_to = substitute_to
        self.resize = resize
        self.lookahead = lookahead
        by_bytes = budget.capacity_bytes is not None
        self.total = int(budget.capacity_bytes if by_bytes else budget.capacity_items)  # type: ignore[arg-type]
        self.cap_h = math.floor(self.total * self.h_start)
        #: the H-cache: residents' keys, the min-heap, the held residents (icache.heap)
        self.heap = ImportanceHeap()
        self._l = IndexedSet()
        self._unserved_l = IndexedSet()
        self._unserved_h = IndexedSet()
        self._hot: set[int] | None = None  # the H-list; None: every id is H
        self.f_h = 0
        self.f_l = 0
        #: L-sample ids that missed this epoch (what the packer re-packs)
        self.missed: list[int] = []
        self.used_h = 0
        self.used_l = 0
        self._rng = np.random.default_rng([self.seed, 0])

    # -- the collaborators' parts subclasses and tests read ----------------------------
    @property
    def multijob(self) -> JobKeys | None:
        """§III-D's job keys (None: keyed by the job's own importance)."""
        return self.keys.multijob

    @property
    def _h(self) -> dict[int, float]:
        """H resident -> its heap key."""
        return self.heap.keys

    @property
    def _heap(self) -> list[tuple[float, int]]:
        return self.heap.heap

    @property
    def _held(self) -> set[int]:
        return self.heap.held

    @property
    def _shadow(self) -> list[tuple[float, int]] | None:
        return self.keys.shadow

    # -- accounting ---------------------------------------------------------------
    @property
    def cap_l(self) -> int:
        return self.total - self.cap_h

    def _w(self, sid: int) -> int:
        return self.budget.size_of(sid) if self.budget.capacity_bytes is not None else 1

    def _add(self, sid: int, region: str) -> None:
        self.used_bytes += self.budget.size_of(sid)
        self.used_items += 1
        if region == "h":
            self.heap.add(sid, self.keys.key(sid))
            self.used_h += self._w(sid)
        else:
            self._l.add(sid)
            self.used_l += self._w(sid)

    def _drop(self, sid: int) -> None:
        self.used_bytes -= self.budget.size_of(sid)
        self.used_items -= 1
        if sid in self._h:
            self.heap.remove(sid)
            self.used_h -= self._w(sid)
            self._unserved_h.discard(sid)
        else:
            self._l.discard(sid)
            self.used_l -= self._w(sid)
            self._unserved_l.discard(sid)

    def _pop_min_h(self) -> int:
        """Evict the least important evictable H resident; a held one only when none is."""
        sid = self.heap.least()
        self._drop(sid)
        return sid

    def _evict_l(self) -> int:
        """A random L resident, preferring one already served this epoch."""
        pool = [s for s in self._l.items() if s not in self._unserved_l] or self._l.items()
        victim = pool[int(self._rng.integers(len(pool)))]
        self._drop(victim)
        return victim

    def _fits(self, sid: int, region: str) -> bool:
        used, cap = (self.used_h, self.cap_h) if region == "h" else (self.used_l, self.cap_l)
        total_ok = self.budget.fits(self.used_bytes + self.budget.size_of(sid), self.used_items + 1)
        return used + self._w(sid) <= cap and total_ok

    def _shrink_other(self, region: str, evicted: list[int]) -> None:
        """Evict from the other region while it holds more than its capacity."""
        if region == "h":
            while self.used_l > self.cap_l and len(self._l):
                evicted.append(self._evict_l())
        else:
            while self.used_h > self.cap_h and self._h:
                evicted.append(self._pop_min_h())

    # -- hooks ----------------------------------------------------------------------
    def begin_epoch(self, epoch: int, planned: IntArray | None = None) -> None:
        super().begin_epoch(epoch, planned)
        self._rng = np.random.default_rng([self.seed, self.epoch])
        keys = self.keys.swap_in()
        if keys is not None:  # swap the shadow heap in
            self.heap.keys = keys
        self.filling = self.full_fill and bool(self.full_epoch and self.full_epoch(self.epoch))
        lookahead = self.lookahead and planned is not None
        self.heap.partition(np.asarray(planned).tolist() if lookahead else None)
        self.missed = []
        self._hot = self._h_list(planned)
        self._resize(planned if lookahead else None)
        if floor := self._l_floor():  # l_floor (PackedICache): never below one package
            self.cap_h = min(self.cap_h, self.total - floor)
        self.f_h = self.f_l = 0
        self._requests = 0
        self._unserved_l = IndexedSet(self._l.items())
        self._unserved_h = IndexedSet(sorted(self._h))

    def _resize(self, planned: IntArray | None) -> None:
        """Size H by ``F_H / (F_H + F_L)``: this epoch's planned requests when known,
        else the last epoch's observed ones (kept when either count is 0)."""
        if not self.resize:
            return
        f_h, f_l = self.f_h, self.f_l
        if planned is not None and self._hot is not None:
            hot = self._hot
            f_h = sum(1 for s in np.asarray(planned).tolist() if s in hot)
            f_l = len(planned) - f_h
        if f_h > 0 and f_l > 0:
            self.cap_h = min(self.total, math.floor(self.total * f_h / (f_h + f_l)))

    def _l_floor(self) -> int:
        """The least the L-cache may hold after a re-size (none here: it has no packages)."""
        return 0

    def _h_list(self, planned: IntArray | None) -> set[int] | None:
        return self.keys.h_list(planned, self.h_share)

    def update_importance(self, scores: npt.NDArray[np.float64], version: int = 0) -> None:
        """Build the shadow heap: the H residents keyed by the new snapshot (under
        ``multijob``, by the jobs' adjusted importance when one job is eligible)."""
        self.keys.update_importance(scores, self._h)

    def job_probe_requests(self) -> int | None:
        """§III-D's benefit probe in requests, under ``multijob`` (None without it:
        :class:`~hotset.engine.roles.ExchangesJobs`)."""
        return None if self.multijob is None else self.probe_requests

    def update_jobs(self, jobs: Sequence[JobImportance]) -> None:
        """The published (benefit, RIV) of every job sharing the cache (§III-D), an
        input at an epoch boundary as the importance snapshot is: the shadow heap is
        re-keyed by their AIV and swapped in at the next epoch's start."""
        self.keys.update_jobs(jobs, self._h)

    def is_h(self, sid: int) -> bool:
        return self._hot is None or sid in self._hot

    def probing(self) -> bool:
        """Whether the next request is one of the epoch's probe requests (no cache)."""
        return self._requests < self.probe_requests

    def access(self, sid: int) -> Decision:
        sid = check_sid(sid)
        self.heap.release(sid)
        if self.probing():  # the benefit probe: read from storage, the cache untouched
            self._requests += 1
            return Decision(sid, Outcome.MISS, sid)
        self._requests += 1
        hot = self.is_h(sid)
        if hot:
            self.f_h += 1
        else:
            self.f_l += 1
        if sid in self._h or sid in self._l:
            self._unserved_h.discard(sid)
            self._unserved_l.discard(sid)
            return Decision(sid, Outcome.HIT, sid)
        if not self.budget.can_ever_hold(sid):
            return Decision(sid, Outcome.MISS, sid)
        return self._miss_h(sid) if hot else self._miss_l(sid)

    def _miss_h(self, sid: int) -> Decision:
        if self.filling:
            return self._fill(sid, "h")
        evicted: list[int] = []
        self._shrink_other("h", evicted)
        key = self.keys.key(sid)
        while not self._fits(sid, "h") and (low := self.heap.min_key()) is not None and low < key:
            evicted.append(self._pop_min_h())
        if self._fits(sid, "h"):
            self._add(sid, "h")
            return Decision(sid, Outcome.MISS, sid, admitted=True, evicted=tuple(evicted))
        return Decision(sid, Outcome.MISS, sid, evicted=tuple(evicted))

    def _fill(self, sid: int, region: str) -> Decision:
        """A full epoch's miss (``full_fill``): admitted while its region has room, read
        either way; nothing is evicted and nothing is substituted."""
        if self._fits(sid, region):
            self._add(sid, region)
            return Decision(sid, Outcome.MISS, sid, admitted=True)
        return Decision(sid, Outcome.MISS, sid)

    def _miss_l(self, sid: int) -> Decision:
        if self.filling:
            return self._fill(sid, "l")
        evicted: list[int] = []
        self._shrink_other("l", evicted)
        if self._fits(sid, "l"):
            self._add(sid, "l")
            return Decision(sid, Outcome.MISS, sid, admitted=True, evicted=tuple(evicted))
        pool = self._unserved_l if self.substitute_to == "l" else self._unserved_h
        if len(pool) and not evicted:
            sub = pool.at(int(self._rng.integers(len(pool))))
            pool.discard(sub)
            return Decision(sid, Outcome.SUBSTITUTION, sub)
        self.missed.append(sid)
        while len(self._l) and not self._fits(sid, "l"):
            evicted.append(self._evict_l())
        if self._fits(sid, "l"):
            self._add(sid, "l")
            return Decision(sid, Outcome.MISS, sid, admitted=True, evicted=tuple(evicted))
        return Decision(sid, Outcome.MISS, sid, evicted=tuple(evicted))

    # -- views ------------------------------------------------------------------------
    def regions(self) -> dict[str, tuple[int, int]]:
        """Current capacities: a region still over its re-sized target keeps what it
        holds (it shrinks lazily) and the other region gets the rest of the budget."""
        cap_h = self.cap_h
        if self.used_h > self.cap_h:
            cap_h = self.used_h
        elif self.used_l > self.cap_l:
            cap_h = self.total - self.used_l
        return {"h": (self.used_h, cap_h), "l": (self.used_l, self.total - cap_h)}

    def __contains__(self, sid: object) -> bool:
        return sid in self._h or sid in self._l

    def resident(self) -> frozenset[int]:
        return frozenset(self._h) | frozenset(self._l.items())

    # -- resumption -------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Plain lists; the H-cache and the shadow heap as columns (ids, keys), which a
        checkpoint packs into two arrays where pairs would cost a list each."""

        def arr(a: npt.NDArray[np.float64] | None) -> list[float] | None:
            return None if a is None else [float(x) for x in a]

        shadow, pending = self.keys.shadow, self.heap.pending
        return (
            {
                "h_ids": list(self._h),
                "h_keys": list(self._h.values()),
                "l": self._l.items(),
                "unserved_l": self._unserved_l.items(),
                "unserved_h": self._unserved_h.items(),
                "pending": None if pending is None else sorted(pending),
                "scores": arr(self.keys.scores),
                "next": arr(self.keys.next),
                "shadow_keys": None if shadow is None else [k for k, _ in shadow],
                "shadow_ids": None if shadow is None else [s for _, s in shadow],
                "hot": None if self._hot is None else sorted(self._hot),
                "cap_h": self.cap_h,
                "f": [self.f_h, self.f_l],
                "missed": list(self.missed),
                "used": [self.used_bytes, self.used_items, self.used_h, self.used_l],
                "rng": self._rng.bit_generator.state,
                "epoch": self.epoch,
                "filling": self.filling,
            }
            | ({} if self.multijob is None else {"multijob": self.multijob.state()})
            | ({"requests": self._requests} if self.probe_requests else {})
        )

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`, or the pairs (``h``, ``shadow``) states held before."""
        state = _columns(state)
        for key in ("h", "l", "unserved_l", "unserved_h", "scores", "next", "shadow", "hot"):
            if key not in state:
                raise HotsetError(f"icache state: missing {key!r}")

        def arr(a: list[float] | None) -> npt.NDArray[np.float64] | None:
            return None if a is None else np.asarray(a, dtype=np.float64)

        self.heap.keys = {int(sid): float(key) for sid, key in state["h"]}
        pending = state.get("pending")
        self.heap.partition(None if pending is None else (int(s) for s in pending))
        self._l = IndexedSet(int(s) for s in state["l"])
        self._unserved_l = IndexedSet(int(s) for s in state["unserved_l"])
        self._unserved_h = IndexedSet(int(s) for s in state["unserved_h"])
        self.keys.load(arr(state["scores"]), arr(state["next"]), state["shadow"])
        self._hot = None if state["hot"] is None else {int(s) for s in state["hot"]}
        self.cap_h = int(state["cap_h"])
        self.f_h, self.f_l = (int(x) for x in state["f"])
        self.missed = [int(s) for s in state["missed"]]
        self.used_bytes, self.used_items, self.used_h, self.used_l = (int(x) for x in state["used"])
        self._rng = np.random.default_rng()
        self._rng.bit_generator.state = dict(state["rng"])
        self.epoch = int(state["epoch"])
        self.filling = bool(state.get("filling", False))
        self._requests = int(state.get("requests", 0))
        if self.multijob is not None:
            if "multijob" not in state:
                raise HotsetError("icache state: missing 'multijob' (saved without multijob)")
            self.multijob.load_state(state["multijob"])

    def summary(self) -> dict[str, Any]:
        return self.keys.summary()


def _columns(state: Mapping[str, Any]) -> Mapping[str, Any]:
    """A state's ``h`` and ``shadow`` as (id, key) and (key, id) pairs, from either form."""
    if "h_ids" not in state:
        return state  # the pairs themselves
    for key in ("h_keys", "shadow_keys", "shadow_ids"):
        if key not in state:
            raise HotsetError(f"icache state: missing {key!r}")
    shadow = None
    if state["shadow_keys"] is not None or state["shadow_ids"] is not None:
        shadow = list(zip(state["shadow_keys"], state["shadow_ids"], strict=True))
    return {**state, "h": list(zip(state["h_ids"], state["h_keys"], strict=True)), "shadow": shadow}
