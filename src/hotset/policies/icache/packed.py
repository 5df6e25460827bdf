"""iCACHE's L-cache filled from packages (HPCA'23 §III-C): the cache ``icache`` runs.

:class:`~hotset.policies.icache.ICache` holds the H-cache (importance min-heap,
shadow heap) and the region sizing; this subclass changes how the L-cache is
filled and served:

* **Served by substitution only.** A requested L-sample that is resident is an
  exact hit; one that is not is substituted by an L-resident not yet served this
  epoch (``Outcome.SUBSTITUTION``, never a hit) and recorded as missed. With no
  such resident left the request is read alone from storage (a miss, not cached).
* **Filled from packages, never from single reads.** After each batch
  (:meth:`background`, the loading step) the L-cache drops the residents it has
  served and loads the next package -- one storage request for all its members
  -- when it has room for one, or when it has nothing left to serve. A member is
  admitted if it is an L-sample, not resident and not yet trained this epoch;
  the rest of the package's bytes were read for nothing (counted by the bytes).
* **Packed ahead.** The packing step (:class:`~hotset.policies.icache.packing.Packer`)
  defines the next package when one is loaded, so the driver writes it at least
  one batch before the batch that reads it (only the first package of an epoch
  is written and read in the same batch). Missed L-samples are packed first in
  the next epoch.

**The L-cache's floor** (``l_floor=True``, the paper's §III-A rule; off by
default, which keeps the committed figures): the paper's L-cache is never smaller
than one package of at least 1 MB. By default hotset keeps the H/L split the
access frequencies give and shrinks the package to half the L-cache instead
(:meth:`Packer.target`); with ``l_floor`` the L-cache keeps at least
``min(package_bytes, budget / 2)`` (H gives way, up to half the budget) and a
package is ``min(package_bytes, L-cache)``: one whole package fits the L-cache.

In a full epoch under ``full_fill`` (:mod:`hotset.policies.icache.policy`) no package
is loaded: a load drops the served residents, and a full epoch evicts nothing.

Loads happen after a batch's accesses, so no request is ever served from a
package its own batch reads; at most :data:`MAX_LOADS` packages per batch.

A package load is a prefetch: its members are read before anyone asks for
them, in the hope of serving a substitution. :meth:`summary` says how that hope
fared: ``loaded`` members admitted (and their bytes), of which ``loaded_unused``
left the cache without being served once since their load (read for nothing)
and ``loaded_waiting`` are still cached and unserved.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.outcome import Decision, Outcome
from hotset.engine.packages import PACKAGE_BYTES, Background, Load
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.importance.multijob import ELIGIBLE_ABOVE, check_threshold
from hotset.policies.icache.packing import Packer
from hotset.policies.icache.policy import H_SHARE, H_START, ICache

#: packages loaded after one batch, at most
MAX_LOADS = 4


@dataclass(frozen=True)
class ICacheRules:
    """iCACHE's rules that hotset leaves off by default (docs/systems/icache.md).

    ``full_fill`` (the authors' code: a full epoch fills without eviction, told which
    epochs are full by ``full_epoch``, the sampler's rule), ``l_floor`` (§III-A: the
    L-cache holds at least one package) and ``multijob`` (§III-D: keyed by the
    adjusted importance of the jobs whose benefit is above ``eligible_above``, with
    each epoch's first ``probe_requests`` requests planned without the cache). Kept
    together so the cache's constructor names the policy's shape (budget, regions,
    packages) and this one object the opt-in behaviour.
    """

    full_fill: bool = False
    full_epoch: Callable[[int], bool] | None = None
    l_floor: bool = False
    multijob: bool = False
    eligible_above: float = ELIGIBLE_ABOVE
    probe_requests: int = 0

    def __post_init__(self) -> None:
        for name in ("full_fill", "l_floor", "multijob"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise HotsetError(f"icache: {name} must be True or False, got {value!r}")
        if self.full_epoch is not None and not callable(self.full_epoch):
            raise HotsetError(
                f"icache: full_epoch must be a callable(epoch) -> bool or None, "
                f"got {self.full_epoch!r}"
            )
        if self.full_fill and self.full_epoch is None:
            raise HotsetError("icache: full_fill needs full_epoch, the sampler's full-epoch rule")
        check_threshold(self.eligible_above)
        probe = self.probe_requests
        if isinstance(probe, bool) or not isinstance(probe, int) or probe < 0:
            raise HotsetError(f"icache: probe_requests must be an int >= 0, got {probe!r}")

    def icache_options(self) -> dict[str, Any]:
        """The rules :class:`ICache` takes as keywords (``l_floor`` is the L-cache's own)."""
        return {
            "full_fill": self.full_fill,
            "full_epoch": self.full_epoch,
            "multijob": self.multijob,
            "eligible_above": self.eligible_above,
            "probe_requests": self.probe_requests,
        }


class PackedICache(ICache):
    """iCACHE's H-cache + an L-cache loaded from packages; see the module docstring."""

    name: ClassVar[str] = "icache"
    capabilities: ClassVar[Capabilities] = Capabilities(substitutes=True, regions=True, packs=True)

    def __init__(
        self,
        budget: Budget,
        *,
        n: int | None = None,
        seed: int = 0,
        h_share: float = H_SHARE,
        h_start: float = H_START,
        substitute_to: str = "l",
        resize: bool = True,
        lookahead: bool = True,
        packaging: str = "dynamic",
        package_bytes: int = PACKAGE_BYTES,
        rules: ICacheRules = ICacheRules(),
    ) -> None:
        if not isinstance(rules, ICacheRules):
            raise HotsetError(f"icache: rules must be an ICacheRules, got {rules!r:.80}")
        super().__init__(
            budget,
            seed=seed,
            h_share=h_share,
            h_start=h_start,
            substitute_to=substitute_to,
            resize=resize,
            lookahead=lookahead,
            **rules.icache_options(),
        )
        self.l_floor = rules.l_floor
        if budget.sizes is not None:
            sizes = np.asarray(budget.sizes, dtype=np.int64)
        elif n is not None:
            sizes = np.ones(n, dtype=np.int64)
        else:
            raise HotsetError("icache: packages need the sample sizes or n")
        self.packer = Packer(sizes, seed=seed, packaging=packaging, package_bytes=package_bytes)
        self.layout = self.packer.packages
        if floor := self._l_floor():  # l_floor (PackedICache): never below one package
            self.cap_h = min(self.cap_h, self.total - floor)
        self._ready: deque[int] = deque()  # packages written and not yet loaded
        self._trained: set[int] = set()  # ids served this epoch (not worth loading again)
        self._target = self._package_target()
        self._waiting: set[int] = set()  # admitted from a package, not served since
        #: members admitted from packages, their bytes, those evicted before being served
        self.loaded = self.loaded_bytes = self.loaded_unused = 0

    def _l_floor(self) -> int:
        """``l_floor``: one package, at most half the budget (see the module docstring)."""
        return min(self.packer.package_bytes, self.total // 2) if self.l_floor else 0

    def _package_target(self) -> int:
        """This epoch's package size: one whole L-cache at most under ``l_floor``, else
        the packer's (half the L-cache when that is smaller than two packages)."""
        if self.l_floor:
            return max(1, min(self.packer.package_bytes, self.cap_l))
        return self.packer.target(self.cap_l)

    def attach_layout(self, layout: UnitLayout | None) -> None:
        """The dataset's chunks are not iCACHE's read units: its packages are."""

    # -- hooks ----------------------------------------------------------------------
    def begin_epoch(self, epoch: int, planned: IntArray | None = None) -> None:
        missed = list(self.missed)
        super().begin_epoch(epoch, planned)
        self._trained = set()
        self._ready = deque()  # a package packed for last epoch's L-list is not loaded
        self._target = self._package_target()
        if self._hot is None:
            return
        ids = np.arange(len(self.packer.sizes)) if planned is None else np.unique(planned)
        l_ids = np.asarray([s for s in ids.tolist() if s not in self._hot], dtype=np.int64)
        self.packer.begin_epoch(self.epoch, l_ids, missed, self._target)

    def _drop(self, sid: int) -> None:
        super()._drop(sid)
        if sid in self._waiting:
            self._waiting.discard(sid)
            self.loaded_unused += 1

    def access(self, sid: int) -> Decision:
        decision = super().access(sid)
        self._waiting.discard(decision.served)
        self._trained.add(decision.served)
        return decision

    def _miss_l(self, sid: int) -> Decision:
        if self.filling:  # a full epoch under full_fill: read it, substitute nothing
            return Decision(sid, Outcome.MISS, sid)
        pool = self._unserved_l if self.substitute_to == "l" else self._unserved_h
        if len(pool):
            sub = pool.at(int(self._rng.integers(len(pool))))
            pool.discard(sub)
            self.missed.append(sid)
            return Decision(sid, Outcome.SUBSTITUTION, sub)
        return Decision(sid, Outcome.MISS, sid)

    def background(self) -> Background:
        """The loading step after a batch (and the packing step ahead of it)."""
        # the benefit probe loads nothing either, not even after its last batch: that
        # batch's plan would read the package, and its time is T_cacheless
        in_probe = self.probe_requests and self._requests <= self.probe_requests
        if self._hot is None or self.filling or in_probe:
            return Background()
        packs: list[int] = []
        loads: list[Load] = []
        for _ in range(MAX_LOADS):
            if len(self._unserved_l) and self.cap_l - self._unserved_bytes() < self._target:
                break
            unit = self._next_package(packs)
            if unit is None:
                break
            loads.append(self._load(unit))
        if loads and not self._ready and not self.packer.static:
            ahead = self.packer.next(self._skip)
            if ahead is not None:
                packs.append(ahead[0])
                self._ready.append(ahead[0])
        return Background(packs=tuple(packs), loads=tuple(loads))

    def _unserved_bytes(self) -> int:
        """What the L-cache must keep: a load first drops the residents already served."""
        return sum(self._w(s) for s in self._unserved_l.items())

    def _skip(self, sid: int) -> bool:
        """Not worth packing now: trained this epoch, or held by H or L."""
        return sid in self._trained or sid in self._h or sid in self._l

    def _next_package(self, packs: list[int]) -> int | None:
        if self._ready:
            return self._ready.popleft()
        got = self.packer.next(self._skip)
        if got is None:
            return None
        unit, fresh = got
        if fresh:
            packs.append(unit)
        return unit

    def _load(self, unit: int) -> Load:
        """Drop the served L residents, then admit what of ``unit`` is worth holding."""
        evicted = [s for s in self._l.items() if s not in self._unserved_l]
        for s in evicted:
            self._drop(s)
        self._shrink_other("l", evicted)
        admitted: list[int] = []
        for m in self.layout.members(unit).tolist():  # type: ignore[union-attr]
            if m in self or m in self._trained or not self._is_l(m) or not self._fits(m, "l"):
                continue
            self._add(m, "l")
            self._unserved_l.add(m)
            self._waiting.add(m)
            self.loaded += 1
            self.loaded_bytes += self.budget.size_of(m)
            admitted.append(m)
        return Load(unit, tuple(admitted), tuple(evicted))

    def _is_l(self, sid: int) -> bool:
        return self._hot is not None and sid not in self._hot

    def summary(self) -> dict[str, Any]:
        return {
            **super().summary(),
            "packaging": "static" if self.packer.static else "dynamic",
            "packages": self.packer.packages.n_chunks,
            "package_bytes": self._target,
            "loaded": self.loaded,
            "loaded_bytes": self.loaded_bytes,
            "loaded_unused": self.loaded_unused,
            "loaded_waiting": len(self._waiting),
        }

    # -- resumption -------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            **super().state_dict(),
            "packer": self.packer.state(),
            "ready": list(self._ready),
            "trained": sorted(self._trained),
            "waiting": sorted(self._waiting),
            "loaded_totals": [self.loaded, self.loaded_bytes, self.loaded_unused],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        for key in ("packer", "ready", "trained"):
            if key not in state:
                raise HotsetError(f"icache state: missing {key!r}")
        super().load_state_dict(state)
        self.packer.load_state(dict(state["packer"]))
        self._ready = deque(int(u) for u in state["ready"])
        self._trained = {int(s) for s in state["trained"]}
        self._waiting = {int(s) for s in state.get("waiting", [])}
        totals = state.get("loaded_totals", [0, 0, 0])
        self.loaded, self.loaded_bytes, self.loaded_unused = (int(x) for x in totals)
        self._target = self._package_target()
