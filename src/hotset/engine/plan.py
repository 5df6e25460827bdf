"""What one batch is: the decisions, and the bytes a driver must move for them.

A :class:`BatchPlan` is the engine's only output. The simulators count and read
from it; the loader ships it to a DataLoader worker, which moves bytes and
decides nothing. Everything a worker must do is spelled out: which samples and
which read units to fetch from storage, which prefetched units it is handed,
what each request is served from, and the net cache deletes and puts, in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.outcome import N_OUTCOMES, Outcome

FloatArray = npt.NDArray[np.float64]
_EMPTY_EVICTIONS: dict[int, tuple[int, ...]] = {}
_EMPTY_IDS: IntArray = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class BatchPlan:
    """One batch's decisions and byte moves (see the module docstring)."""

    epoch: int
    index: int  # batch number within the epoch
    seq: int  # global write order (1, 2, ...) across epochs
    generation: int  # bumped when unfinished plans are abandoned
    requested: IntArray
    served: IntArray
    outcomes: npt.NDArray[np.int8]
    #: per request, the read unit holding the served bytes (-1: the sample alone); for a
    #: hit or substitution, the unit cached whole (cache id ``n + unit``) it is cut from
    units: IntArray
    reads: IntArray  # sample ids read alone from storage, unique, in decision order
    unit_reads: IntArray  # read units fetched from storage for this batch's requests
    prefetch: IntArray  # read units fetched now for later batches (staged)
    admitted: IntArray  # ids admitted to the cache, in decision order
    evicted: IntArray  # ids evicted, in decision order
    deletes: IntArray  # net: cache ids to delete (applied first); ids >= n are whole units
    puts: IntArray  # net: cache ids to put (bytes from this batch's reads or staged units)
    wait_for: int  # seq of the last earlier batch that put one of our cached ids
    weights: FloatArray
    storage_requests: int  # requests to the store: a sample, a unit or a prefetch counts one
    storage_bytes: int  # bytes those requests move
    #: packages (units of the policy's :class:`~hotset.engine.packages.PackageSet`) the
    #: driver writes before this batch's reads: their members read from storage by
    #: the packer (``pack_requests`` requests, ``pack_bytes`` bytes, not in ``storage_*``)
    packs: IntArray = field(default_factory=lambda: _EMPTY_IDS)
    pack_requests: int = 0
    pack_bytes: int = 0
    #: bytes of some of ``reads``, read ahead by the loader's main process
    staged: dict[int, bytes] = field(default_factory=dict)
    #: bytes of the prefetched units this batch serves from (the loader attaches them)
    staged_units: dict[int, bytes] = field(default_factory=dict)
    #: partial unit reads: unit -> the ids of ``reads`` that ONE ranged request of that
    #: unit's file brings (only their bytes; :mod:`hotset.storage.ranges`); ids not in a
    #: group are read alone
    read_groups: dict[int, IntArray] = field(default_factory=dict)
    #: (iteration, base seed) the loader gives the plans of an epoch whose workers it kept
    #: from an earlier one: they reseed from it as fresh ones would (hotset.torch.workerseed)
    worker_seed: tuple[int, int] | None = None
    #: members of the packages this batch may read (its package reads and the packages it
    #: serves from the cache), attached by the loader: a package file that is gone or
    #: unreadable when read is replaced by reads of these (hotset.torch.reads)
    unit_members: dict[int, IntArray] = field(default_factory=dict)
    #: positions of the HIT outcomes that were the first use of bytes fetched ahead
    #: (:mod:`hotset.engine.ahead`): counted as fetched ahead, not as exact hits
    ahead_hits: IntArray = field(default_factory=lambda: _EMPTY_IDS)

    def __len__(self) -> int:
        return len(self.requested)

    @property
    def misses(self) -> IntArray:
        """Requested ids read from storage (in order, duplicates kept)."""
        return self.requested[self.outcomes == Outcome.MISS]

    @property
    def grouped(self) -> int:
        """How many of ``reads`` come in partial unit reads (not one request each)."""
        return sum(len(ids) for ids in self.read_groups.values())

    @property
    def served_from_units(self) -> IntArray:
        """Prefetched units this batch serves from and does not read itself."""
        mine = set(self.unit_reads.tolist())
        used = self.units[self.outcomes == Outcome.PREFETCHED].tolist()
        return np.asarray(sorted(set(used) - mine), dtype=np.int64)

    def outcome_counts(self) -> npt.NDArray[np.int64]:
        """Requests per :class:`Outcome` (index by the outcome's value): what moves bytes."""
        return np.bincount(self.outcomes, minlength=N_OUTCOMES).astype(np.int64)

    def served_counts(self) -> tuple[int, int, int, int, int]:
        """(requests, exact hits, substitutions, fetched ahead, storage reads): what each
        request was served from, in the counters' names (:mod:`hotset.engine.counters`).

        Fetched ahead = served from a prefetched unit (``PREFETCHED``) or a HIT on bytes
        read ahead and not used before (:mod:`hotset.engine.ahead`)."""
        c = np.bincount(self.outcomes, minlength=N_OUTCOMES).tolist()
        hit, sub, miss, pre = (c[int(o)] for o in Outcome)
        ahead = len(self.ahead_hits)
        return len(self.served), hit - ahead, sub, pre + ahead, miss

    def served_as(self) -> npt.NDArray[np.int8]:
        """Per request, what served it in the counters' four kinds: the outcomes, with the
        fetched-ahead HITs as ``PREFETCHED`` (for counting only: bytes move by ``outcomes``)."""
        if not len(self.ahead_hits):
            return self.outcomes
        out = self.outcomes.copy()
        out[self.ahead_hits] = Outcome.PREFETCHED
        return out


Row = tuple[int, int, int, bool, tuple[int, ...]]
_Batch = tuple[IntArray, npt.NDArray[np.int8], IntArray, list[bool], dict[int, tuple[int, ...]]]


@dataclass
class EpochLog:
    """Decisions of every planned access of the epoch, batch by batch (for tests and replay).

    A batch is kept as the arrays the planner built anyway, plus the admissions
    and the evictions by position: logging costs one append per batch.
    """

    batches: list[_Batch] = field(default_factory=list)

    def add(
        self,
        requested: IntArray,
        outcomes: npt.NDArray[np.int8],
        served: IntArray,
        admitted: list[bool] | None = None,
        evicted: dict[int, tuple[int, ...]] | None = None,
    ) -> None:
        flags = admitted if admitted is not None else [False] * len(requested)
        self.batches.append((requested, outcomes, served, flags, evicted or _EMPTY_EVICTIONS))

    @property
    def requested(self) -> list[int]:
        return [r for b in self.batches for r in b[0].tolist()]

    @property
    def outcomes(self) -> list[int]:
        return [o for b in self.batches for o in b[1].tolist()]

    @property
    def served(self) -> list[int]:
        return [s for b in self.batches for s in b[2].tolist()]

    @property
    def admitted(self) -> list[bool]:
        return [a for b in self.batches for a in b[3]]

    def rows(self) -> list[Row]:
        """One ``(requested, outcome, served, admitted, evicted)`` per access, in order."""
        out: list[Row] = []
        for requested, outcomes, served, admitted, evicted in self.batches:
            for j, (r, o, s) in enumerate(
                zip(requested.tolist(), outcomes.tolist(), served.tolist(), strict=True)
            ):
                out.append((r, o, s, admitted[j], evicted.get(j, ())))
        return out
