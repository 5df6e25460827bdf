"""What a policy may do beyond the core contract: roles a driver asks for by type.

Why: the base :class:`~hotset.engine.policy.Policy` used to carry every hook any
one policy needed, as no-op defaults, so every policy answered questions only
Quiver has an answer to (where is the shared chunk cycle, what does the probe
board say). A hook of one design belongs to the policies of that design: each
role here is a Protocol, a policy takes it on by defining its methods, and a
driver asks ``isinstance(policy, Role)`` (the protocols are runtime-checkable)
before it links the policy to what the role needs (a shared namespace's cycle,
its probe board, chunk references).

A capability flag says whether the role is on for this policy as built (an
option may turn it off: ``quiver[placement=false]`` still has the methods);
the contract test (tests/engine/test_engine_roles.py) checks that a flag is
never set on a policy without the role's methods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from hotset.engine.arrays import IntArray

__all__ = ["EvictionGroups", "GroupsEvictions", "JoinsCycle", "PlacesByBenefit"]


@dataclass(frozen=True)
class EvictionGroups:
    """Ids a cache shared by several jobs evicts together (Quiver's chunks, FAST'20 §5.1).

    ``groups[i]`` is id ``i``'s group (-1: none). In a shared namespace a group's
    entries are deleted once every job that put them has released them, or
    ``force_after_s`` seconds after the first release (:mod:`hotset.cachestore.chunk_refs`).
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
