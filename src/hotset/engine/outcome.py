"""What one access turned into: an :class:`Outcome` and the :class:`Decision` carrying it.

Hit accounting is explicit and never merged:

* ``HIT`` -- an exact hit: the requested id is served from cache;
* ``SUBSTITUTION`` -- another cached id is served in its place (Quiver, iCACHE's
  L-cache); no storage read;
* ``MISS`` -- the requested id is read from storage (cold misses included), alone
  or inside a read unit (a chunk or package: ids stored together, one request);
* ``PREFETCHED`` -- the requested id is served from bytes already on their way: a
  unit prefetched by an earlier batch, or one another request of the same batch
  read. No storage read is charged to it (the read was charged when it was made).

These are the engine's vocabulary (its plans and counters are made of them), so
they live here and the policies import them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Outcome(enum.IntEnum):
    """What one access turned into (values are stable: they are stored in arrays)."""

    HIT = 0
    SUBSTITUTION = 1
    MISS = 2
    PREFETCHED = 3


#: how many outcomes there are (``np.bincount(..., minlength=N_OUTCOMES)``)
N_OUTCOMES = len(Outcome)


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer to one access.

    ``served`` equals ``requested`` except for a substitution. ``admitted`` says
    whether the served id was placed in the cache; ``evicted`` lists the ids that
    left the cache to make room, in eviction order.

    ``unit`` names the read unit (a chunk of the dataset's layout) whose bytes
    hold the served id: for a MISS the unit read from storage in one request, for
    PREFETCHED the unit already read; -1 means the sample alone. A unit read may
    admit more of its ids than the one requested: they are ``also_admitted``.

    ``group`` asks for a *partial* unit read: a MISS of the sample alone
    (``unit == -1``) whose bytes, and those of its ``also_admitted`` ids, are
    read together in ONE ranged request of unit ``group``'s file (a vector of
    the members' byte ranges, :mod:`hotset.storage.ranges`), moving only their
    bytes. The ids are single reads to the cache (each put and hit as a
    sample); only the request that brings them is shared. -1: no grouping.
    """

    requested: int
    outcome: Outcome
    served: int
    admitted: bool = False
    evicted: tuple[int, ...] = ()
    unit: int = -1
    also_admitted: tuple[int, ...] = ()
    group: int = -1

    @property
    def storage_read(self) -> bool:
        return self.outcome is Outcome.MISS


__all__ = ["N_OUTCOMES", "Decision", "Outcome"]
