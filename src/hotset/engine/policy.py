"""The policy contract: pure, deterministic cache decisions, as the engine drives them.

A policy sees one access at a time and answers with a
:class:`~hotset.engine.outcome.Decision`. It does no I/O, reads no clock and
starts no thread, so the simulator (virtual clock) and the real loader (real
bytes) can drive the very same object and get the very same decisions.
Everything a policy may depend on is given to it explicitly: the budget, a seed,
the planned order of an epoch, the whole future (Belady), an importance snapshot.

The engine calls exactly these hooks, so they are defined here, beside the
engine, and the policies (:mod:`hotset.policies`) implement them; the engine
never imports a policy.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.outcome import Decision
from hotset.engine.units import UnitLayout


class Policy(ABC):
    """Base class for cache policies. Subclasses implement :meth:`access`.

    Subclasses keep ``used_bytes``/``used_items`` true at every step; the
    property tests check ``budget.fits(used_bytes, used_items)`` after each access.
    """

    name: ClassVar[str] = "policy"
    #: what the drivers must provide (the future, unit reads, prefetch staging, ...)
    capabilities: ClassVar[Capabilities] = Capabilities()

    def __init__(self, budget: Budget, *, seed: int = 0) -> None:
        self.budget = budget
        self.seed = int(seed)
        self.used_bytes = 0
        self.used_items = 0
        #: bytes of prefetched units read and not yet served (<= budget.staging_bytes)
        self.staged_bytes = 0
        self.epoch = 0
        self.layout: UnitLayout | None = None

    # -- hooks the drivers call -------------------------------------------------
    def begin_epoch(self, epoch: int, planned: IntArray | None = None) -> None:
        """Called before the first access of an epoch, with its planned order if known."""
        self.epoch = int(epoch)

    def end_epoch(self) -> None:
        """Called after the last access of an epoch."""

    def attach_layout(self, layout: UnitLayout | None) -> None:
        """The dataset's chunk layout (read units); policies that read units keep it."""
        self.layout = layout

    @abstractmethod
    def access(self, sid: int) -> Decision:
        """Decide one access."""

    def summary(self) -> dict[str, Any]:
        """What a report should say about this policy's own choices (JSON-ready; often empty)."""
        return {}

    def regions(self) -> dict[str, tuple[int, int]]:
        """``{region: (used_bytes, capacity_bytes)}``; one region unless the policy splits.

        Regions share the cache store's one total budget: their capacities add
        up to at most ``budget.capacity_bytes``.
        """
        cap = self.budget.capacity_bytes
        return {"main": (self.used_bytes, -1 if cap is None else int(cap))}

    @abstractmethod
    def __contains__(self, sid: object) -> bool:
        """Whether ``sid`` is resident."""

    @abstractmethod
    def resident(self) -> frozenset[int]:
        """The resident ids (a copy)."""

    def cache_ids(self) -> frozenset[int]:
        """What the cache store holds: sample ids, and ``n + unit`` for a unit cached whole.

        Equal to :meth:`resident` unless the policy caches read units whole.
        """
        return self.resident()

    def replay(self, trace: IntArray) -> npt.NDArray[np.int8]:
        """Outcome per access for a whole trace; fast policies override this loop.

        Overrides must return exactly what calling :meth:`access` in order would.
        """
        out = np.empty(len(trace), dtype=np.int8)
        access = self.access
        for i, sid in enumerate(trace.tolist()):
            out[i] = access(sid).outcome
        return out

    # -- resumption ---------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__} does not support state_dict yet")

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not support load_state_dict yet")


__all__ = ["Policy"]
