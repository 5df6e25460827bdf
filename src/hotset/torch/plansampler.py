"""The DataLoader's sampler: each item is the next BatchPlan of the current epoch.

The DataLoader runs with automatic batching off (``batch_size=None``), so the
"index" it hands a worker is a whole :class:`~hotset.engine.plan.BatchPlan`,
made lazily as the DataLoader asks for the next one: every policy call happens
here, in the main process, in a fixed order. On its way out a plan picks up
what the main process read for it ahead of time: its packages written
(:mod:`hotset.torch.packing`), samples staged by read-ahead
(:mod:`hotset.torch.readahead`) and whole units the prefetcher read
(:mod:`hotset.torch.prefetch`). A policy that joins a chunk cycle shared by
jobs tells the namespace where it loads now (:mod:`hotset.coordination.cycle_link`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from torch.utils.data import Sampler

from hotset.coordination.cycle_link import CycleLink
from hotset.engine.planner import Planner
from hotset.torch.packing import PackingThread
from hotset.torch.prefetch import UnitPrefetcher
from hotset.torch.readahead import ReadAhead


class PlanSampler(Sampler[Any]):
    """Plans, one per batch, with what the main process read ahead for them attached.

    It holds the planner, not the loader: a loader -> DataLoader -> sampler ->
    loader cycle would leave persistent workers to the cycle collector, which
    may finalize the workers' queues before the iterator that shuts them down.
    """

    def __init__(
        self,
        planner: Planner,
        readahead: ReadAhead,
        prefetcher: UnitPrefetcher,
        packages: PackingThread,
        *,
        cycle: CycleLink | None = None,
    ) -> None:
        self._planner = planner
        self._readahead = readahead
        self._prefetcher = prefetcher
        self._packages = packages
        self._cycle = cycle
        #: set by the loader before each iter(): the (iteration, base seed) kept workers
        #: reseed from (hotset.torch.workerseed); None where DataLoader seeds them itself
        self.worker_seed: tuple[int, int] | None = None

    def __iter__(self) -> Iterator[Any]:
        ra = self._readahead
        pf = self._prefetcher
        cycle = self._cycle
        seed = self.worker_seed
        for plan in self._planner.plans():
            if cycle is not None:  # where this job loads now, for jobs starting later
                cycle.publish()
            if seed is not None:
                plan = dataclasses.replace(plan, worker_seed=seed)
            plan = self._packages.write(plan)  # a package with no file: its members alone
            if len(plan.prefetch):
                pf.submit(plan.prefetch.tolist())
            if ra.active and len(plan.reads):
                end = plan.index * self._planner.batch_size + len(plan)
                alone = dict.fromkeys(plan.reads.tolist())
                for ids in plan.read_groups.values():  # one ranged request brings these
                    for s in ids.tolist():
                        alone.pop(s, None)
                staged = ra.take(alone, frontier=end)
                if staged:
                    plan = dataclasses.replace(plan, staged=staged)
            if int(plan.units.max(initial=-1)) >= 0:
                wanted = plan.served_from_units
                if len(wanted):
                    plan = dataclasses.replace(plan, staged_units=pf.take(wanted.tolist()))
            yield plan

    def __len__(self) -> int:
        return self._planner.n_batches - self._planner.planned
