"""Read units in one batch: prefetch staging, and what a batch's bytes can pay for.

The planner asks a prefetching policy for units after each batch and keeps
them *staged* within ``budget.staging_bytes`` until the end of the first batch
that serves from them (``Outcome.PREFETCHED``); a prefetch lives within its
epoch. It checks what a policy cannot be trusted to get right -- a put whose
bytes no read of the batch brings, a prefetched unit that was never staged,
a unit the layout does not have, staging over budget -- and raises instead of
planning a batch no worker could execute.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.outcome import Outcome
from hotset.engine.policy import Policy
from hotset.engine.roles import Prefetches, missing_role
from hotset.errors import HotsetError

_PRE = int(Outcome.PREFETCHED)
_EMPTY = np.zeros(0, dtype=np.int64)


class UnitStaging:
    """Staged prefetched units (unit -> bytes), checked against the policy's layout and budget."""

    def __init__(self, policy: Policy, *, n: int, prefetching: bool) -> None:
        #: the policy as what it is asked after each batch (None: it does not prefetch)
        self.prefetcher: Prefetches | None = None
        if prefetching:
            if not isinstance(policy, Prefetches):
                raise missing_role(policy, "Prefetches", "prefetches")
            self.prefetcher = policy
        self.policy = policy
        self.n = n
        self.prefetching = prefetching
        self.budget = int(policy.budget.staging_bytes)
        #: prefetched units read and not yet served from: unit -> bytes
        self.staged: dict[int, int] = {}

    def reset(self) -> None:
        self.staged = {}

    def unit_sizes(self) -> IntArray:
        layout = self.policy.layout
        if layout is None:
            raise HotsetError(
                f"policy {self.policy.name!r} named a read unit, but the dataset has no chunk layout"
            )
        return np.asarray(layout.chunk_sizes, dtype=np.int64)

    def stage(
        self, units: IntArray, unit_reads: dict[int, None], outcomes: npt.NDArray[np.int8]
    ) -> IntArray:
        """Check prefetched serves, release the units they consumed, stage new prefetches."""
        name = self.policy.name
        unit_sizes = self.unit_sizes()
        n_units = len(unit_sizes)
        used = units[units >= 0]
        if len(used) and int(used.max()) >= n_units:
            raise HotsetError(
                f"policy {name!r} named unit {int(used.max())}; the layout has {n_units} units"
            )
        consumed = set(units[(outcomes == _PRE)].tolist())
        missing = consumed - set(unit_reads) - set(self.staged)
        if missing:
            raise HotsetError(
                f"policy {name!r} served from unit(s) {sorted(missing)} "
                "that were neither read by this batch nor prefetched"
            )
        for u in consumed:
            self.staged.pop(u, None)
        if self.prefetcher is None:
            return _EMPTY
        # exactly what the policy asked for: its own staging account must match ours
        fresh = [int(u) for u in self.prefetcher.prefetch()]
        for u in fresh:
            if u in self.staged:
                raise HotsetError(f"policy {name!r} prefetched unit {u}, already staged")
            if not 0 <= u < n_units:
                raise HotsetError(
                    f"policy {name!r} prefetched unit {u}; the layout has {n_units} units"
                )
            self.staged[u] = int(unit_sizes[u])
        staged = sum(self.staged.values())
        if staged > self.budget:
            raise HotsetError(
                f"policy {name!r} staged {staged} bytes of prefetched units; "
                f"the staging budget is {self.budget} bytes"
            )
        return np.asarray(fresh, dtype=np.int64)

    def check_puts(
        self,
        puts: IntArray,
        reads: dict[int, None],
        units: IntArray,
        unit_reads: dict[int, None],
    ) -> None:
        """Every put must be bytes this batch holds: a sample read, a unit used, or a member."""
        if not len(puts):
            return
        outside = set(puts.tolist()) - reads.keys()
        if not outside:
            return
        layout = self.policy.layout
        if layout is not None:
            for u in set(units[units >= 0].tolist()) | unit_reads.keys():
                outside -= set(layout.members(u).tolist())
                outside.discard(self.n + u)  # the unit itself, cached whole
        if outside:
            raise HotsetError(
                f"policy {self.policy.name!r} admitted id(s) {sorted(outside)[:5]} "
                "whose bytes no read of the batch brings"
            )

    def check_groups(self, groups: dict[int, IntArray]) -> None:
        """A partial unit read must name a unit of the layout, holding every id it brings."""
        layout = self.policy.layout
        name = self.policy.name
        if layout is None:
            raise HotsetError(
                f"policy {name!r} named a partial unit read, but the dataset has no chunk layout"
            )
        for u, ids in groups.items():
            if not 0 <= u < layout.n_chunks:
                raise HotsetError(
                    f"policy {name!r} read part of unit {u}; the layout has {layout.n_chunks} units"
                )
            outside = ids[layout.chunk_of[ids] != u]
            if len(outside):
                raise HotsetError(
                    f"policy {name!r} read id(s) {outside[:5].tolist()} as part of unit {u}, "
                    "which does not hold them"
                )

    def cost(
        self, sizes: IntArray, reads: IntArray, unit_reads: IntArray, prefetch: IntArray
    ) -> tuple[int, int]:
        """(requests, bytes) a batch asks of the store: one request per sample or unit."""
        nbytes = int(sizes[reads].sum()) if len(reads) else 0
        if len(unit_reads) or len(prefetch):
            unit_sizes = self.unit_sizes()
            nbytes += int(unit_sizes[unit_reads].sum()) + int(unit_sizes[prefetch].sum())
        return len(reads) + len(unit_reads) + len(prefetch), nbytes
