"""What a policy may do beyond the core contract: roles a driver asks for by type.

Why: the base :class:`~hotset.engine.policy.Policy` used to carry every hook any
one policy needed, as no-op defaults, so every policy answered questions only one
design has an answer to (what is the whole future, which units to prefetch,
which samples to re-evaluate, where is the shared chunk cycle, what does the
probe board say). A hook of one design belongs to the policies of that design:
each role here is a Protocol, a policy takes it on by defining its methods, and a
driver asks ``isinstance(policy, Role)`` (the protocols are runtime-checkable)
before it calls them or links the policy to what the role needs (a shared
namespace's cycle, its probe board, chunk references).

A capability flag says whether the role is on for this policy as built (an
option may turn it off: ``quiver[placement=false]`` still has the methods, and
``impact_history`` inherits ``to_evaluate`` without ``evaluates``). A flag set
without its role is a :class:`~hotset.errors.HotsetError` naming the role where a
driver would call it (:func:`missing_role`), and the contract test
(tests/engine/test_engine_roles.py) fails on it for every registered system.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.packages import Background
from hotset.errors import HotsetError
from hotset.importance.multijob import JobImportance

__all__ = [
    "Backgrounds",
    "Evaluates",
    "EvictionGroups",
    "ExchangesJobs",
    "GroupsEvictions",
    "JoinsCycle",
    "NeedsFuture",
    "ObservesScores",
    "PlacesByBenefit",
    "PlansWorld",
    "Prefetches",
    "RoutesAroundLoss",
    "SplitsByRank",
    "TakesImportance",
    "missing_role",
]


def missing_role(policy: object, role: str, flag: str) -> HotsetError:
    """The error for a policy that sets ``capabilities.<flag>`` without ``role``'s methods
    (raised by the driver that would call them, instead of an AttributeError)."""
    name = getattr(policy, "name", type(policy).__name__)
    return HotsetError(
        f"policy {name!r} declares capabilities.{flag} but does not implement "
        f"hotset.engine.roles.{role}"
    )


@runtime_checkable
class NeedsFuture(Protocol):
    """An offline bound handed the whole access sequence (``capabilities.needs_future``;
    Belady's MIN)."""

    def set_future(self, trace: IntArray) -> None:
        """Give the whole access sequence, before the first access."""


@runtime_checkable
class PlansWorld(Protocol):
    """Plans with every rank's order of the epoch (``capabilities.plans_world``): each
    rank replays the others' accesses to hold the job's shared state (Brand §3.4)."""

    def begin_world(self, epoch: int, orders: Sequence[IntArray], rank: int) -> None:
        """Called instead of ``begin_epoch`` under data parallelism; ``orders[rank]`` is
        this rank's order."""


@runtime_checkable
class Prefetches(Protocol):
    """Asks for read units ahead of the batches that need them (``capabilities.prefetches``)."""

    def prefetch(self) -> tuple[int, ...]:
        """Read units to read now for later batches; called after each batch's accesses.

        A unit returned here is staged (``staged_bytes`` grows by its size) until the
        first batch that serves from it has ended.
        """


@runtime_checkable
class Backgrounds(Protocol):
    """Writes packages or loads units after a batch's accesses (``capabilities.packs`` or
    ``capabilities.loads``: iCACHE's dynamic packaging, Quiver's chunk loading)."""

    def background(self) -> Background:
        """Packages to write, ids to evict and units to load now; asked after each batch.

        A load's members are admitted in this batch's plan (after its evictions) and may
        be served from the cache by later batches, never by the batch that loads them.
        """


@runtime_checkable
class Evaluates(Protocol):
    """Asks, before each epoch's draw, for the losses of some samples from a forward pass
    (``capabilities.evaluates``; ImPACT's re-evaluation of the set S)."""

    def to_evaluate(self) -> IntArray:
        """Ids whose losses a driver re-computes before the epoch's draw; the losses go
        into the importance table as feedback, so the order sees them."""


@dataclass(frozen=True)
class EvictionGroups:
    """Ids a cache shared by several jobs evicts together (Quiver's chunks, FAST'20 §5.1).

    ``groups[i]`` is id ``i``'s group (-1: none). In a shared namespace a group's
    entries are deleted once every job that put them has released them, or
    ``force_after_s`` seconds after the first release (:mod:`hotset.coordination.chunk_refs`).
    """

    groups: IntArray
    force_after_s: float


@runtime_checkable
class GroupsEvictions(Protocol):
    """Evicts groups of ids in concert with the other jobs of a shared cache
    (``capabilities.evicts_in_concert``)."""

    def eviction_groups(self) -> EvictionGroups | None:
        """Groups of ids that jobs sharing one cache evict in concert; None: as planned."""


@runtime_checkable
class JoinsCycle(Protocol):
    """Starts its chunk cycle where the other jobs of a shared cache load now
    (``capabilities.joins_cycle``; Quiver's Algorithm 1, ``getCurrentChunk``)."""

    def awaits_join(self) -> bool:
        """Whether the chunk cycle still waits to be told where to start.

        A driver on a cache shared by jobs then reads the shared cycle's current
        step and calls :meth:`join_cycle` before the epoch begins (and before it
        records the epoch's start state, so a resume starts where this run did).
        """

    def join_cycle(self, step: int | None) -> None:
        """Start the chunk cycle at ``step`` (None: nothing is loaded yet, start at 0)."""

    def cycle_step(self) -> int | None:
        """The step of the chunk cycle the policy is loading now; None: not started."""


@runtime_checkable
class PlacesByBenefit(Protocol):
    """Places its cache by the benefit jobs on one namespace publish (Quiver §5.3)."""

    def wants_board(self) -> bool:
        """Whether the driver should publish this job's probes on its namespace's probe
        board and give the policy the board before each epoch (:meth:`apply_board`)."""

    def probe_window(self) -> tuple[str, int] | None:
        """Whether the current epoch's first batches are a probe window the driver times:
        (``"miss"``: planned without the cache, or ``"hit"``: with it, how many batches);
        None: not a window."""

    def probe_record(
        self, job: str, dataset: str, batch_seconds: Sequence[float]
    ) -> dict[str, str | int | float] | None:
        """The probe from the ``miss`` window's mini-batch times followed by the ``hit``
        window's, as plain values to publish; None when they are too few."""

    def apply_board(
        self,
        own: Mapping[str, object] | None,
        board: Sequence[Mapping[str, object]],
        *,
        budget_bytes: int,
        epoch: int,
    ) -> None:
        """Before ``epoch``'s start state is recorded: the job's own probe record (None:
        the one it applied last), the records other jobs published, and the namespace's
        budget; an input, saved with the state, so a resume decides as the interrupted
        run did."""


@runtime_checkable
class ExchangesJobs(Protocol):
    """Keys what it caches by the importance of every job on its namespace (iCACHE
    §III-D, ``icache[multijob=true]``): at each epoch's close the loader measures the
    job's benefit, publishes it with the job's importance, and hands the policy every
    job's latest (:mod:`hotset.coordination.jobs_link`)."""

    def job_probe_requests(self) -> int | None:
        """The requests of each epoch planned without the cache to measure the benefit
        (0: none, nothing measured); None: this policy, as built, keys by its own
        importance alone and takes no part."""

    def update_jobs(self, jobs: Sequence[JobImportance]) -> None:
        """Every job's published (benefit, RIV), at an epoch boundary."""


@runtime_checkable
class TakesImportance(Protocol):
    """Decides by an importance snapshot (a score per id) given at each epoch's end
    (iCACHE's importance heap, SHADE's APP, Scout's selection)."""

    def update_importance(self, scores: npt.NDArray[np.float64], version: int = 0) -> None:
        """Receive a whole importance snapshot (score per id)."""


@runtime_checkable
class ObservesScores(Protocol):
    """Takes fresh scores of the ids of each training step (SHADE's APP)."""

    def observe(self, ids: IntArray, scores: npt.NDArray[np.float64]) -> None:
        """Receive fresh scores for the ids of one training step."""


@runtime_checkable
class RoutesAroundLoss(Protocol):
    """Routes around cache entries the driver could not read (Quiver §4.8: substitution
    from what is left); the other policies' plans already read around a miss."""

    def cache_lost(self, ids: Sequence[int], *, unreachable: bool = False) -> None:
        """The cache failed to return ``ids`` the policy holds (gone, or the cache
        ``unreachable``): an input like feedback, so decisions stay a pure function of
        what the driver reported."""


@runtime_checkable
class SplitsByRank(Protocol):
    """Splits work between data-parallel ranks by itself (ImPACT's partitioned set S)."""

    def bind_rank(self, rank: int, world_size: int) -> None:
        """This policy plans rank ``rank`` of ``world_size``; told before each epoch and
        before a re-evaluation."""
