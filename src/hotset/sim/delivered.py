"""The order a system delivers, epoch by epoch, as the loader would deliver it.

A system that substitutes (Brand, Quiver) trains in an order of its own, not the
sampler's: what matters for randomness is the *served* id of every request. The
loader ships :class:`~hotset.engine.plan.BatchPlan` s made by the one planner
(:mod:`hotset.engine.planner`) and delivers each plan's ``served`` ids in order,
so driving the planner gives the loader's delivered order without moving a byte
(``tests/sim/test_sim_delivered.py`` checks it against the real loader). Systems
that learn get no losses here, so use it for systems whose order does not depend
on feedback (every system that reads whole chunks, the baselines).

Several ranks run in lockstep, as :mod:`hotset.sim.nodes` runs them: batch ``b``
of rank 0, then of rank 1, ...; the job's order is that interleaving.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.planner import Planner
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError

__all__ = ["delivered_orders"]


def delivered_orders(
    system: str,
    *,
    sizes: IntArray,
    cache_frac: float,
    epochs: int,
    layout: UnitLayout | None = None,
    seed: int = 0,
    batch_size: int = 64,
    world_size: int = 1,
    options: Mapping[str, Any] | None = None,
) -> list[IntArray]:
    """Each epoch's delivered ids of ``system`` (a name or spec) over ``len(sizes)`` ids.

    ``cache_frac`` of the data set's bytes is each rank's budget (as the loader and
    ``hotset simulate --nodes`` give a rank). ``layout`` is the data set's chunk
    layout (needed by systems that read whole chunks).
    """
    from hotset.systems.registry import build_system

    _check(cache_frac=cache_frac, epochs=epochs, batch_size=batch_size, world_size=world_size)
    sizes = np.asarray(sizes, dtype=np.int64)
    n = len(sizes)
    capacity = max(1, math.floor(cache_frac * int(sizes.sum())))
    planners = [
        Planner(
            build_system(
                system,
                n=n,
                budget=Budget(capacity_bytes=capacity, sizes=sizes),
                seed=seed,
                batch_size=batch_size,
                layout=layout,
                **dict(options or {}),
            ),
            n=n,
            batch_size=batch_size,
            lag=0,
            sizes=sizes,
        )
        for _ in range(world_size)
    ]
    return [_epoch(planners, epoch) for epoch in range(epochs)]


def _epoch(planners: list[Planner], epoch: int) -> IntArray:
    """One epoch of every rank in lockstep; the served ids in that order."""
    for rank, planner in enumerate(planners):
        planner.begin(epoch, rank=rank, world_size=len(planners))
    served: list[IntArray] = []
    for k in range(max(p.n_batches for p in planners)):
        for planner in planners:
            if k < planner.n_batches:
                served.append(planner.plan_next().served)
    for planner in planners:
        planner.finish(val_accuracy=None)
    return np.concatenate(served).astype(np.int64)


def _check(*, cache_frac: float, epochs: int, batch_size: int, world_size: int) -> None:
    """Named errors for values no run can have."""
    if not isinstance(cache_frac, int | float) or not 0.0 < cache_frac <= 1.0:
        raise HotsetError(f"cache_frac: must be in (0, 1], got {cache_frac!r}")
    for name, value in (("epochs", epochs), ("batch_size", batch_size), ("world_size", world_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise HotsetError(f"{name}: must be an integer >= 1, got {value!r}")
