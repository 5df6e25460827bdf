"""Planner invariants: net cache operations reproduce the policy's resident set."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.engine.planner import Planner
from hotset.policies.base import Budget, Outcome
from hotset.systems.registry import build_system


@settings(max_examples=40, deadline=None)
@given(
    system=st.sampled_from(["lru", "fifo", "shade", "emul_quiv", "sh_rand"]),
    n=st.integers(5, 60),
    batch_size=st.integers(1, 9),
    lag=st.integers(0, 3),
    cap_frac=st.floats(0.05, 0.9),
    seed=st.integers(0, 50),
)
def test_deletes_then_puts_track_the_resident_set(
    system: str, n: int, batch_size: int, lag: int, cap_frac: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 50, n).astype(np.int64)
    capacity = max(int(cap_frac * sizes.sum()), int(sizes.max()))
    sysobj = build_system(
        system,
        n=n,
        budget=Budget(capacity_bytes=capacity, sizes=sizes),
        seed=seed,
        batch_size=batch_size,
    )
    planner = Planner(sysobj, n=n, batch_size=batch_size, lag=lag)
    cache: set[int] = set()
    written_by: dict[int, int] = {}
    for epoch in range(3):
        planner.begin(epoch, rank=0, world_size=1)
        for plan in planner.plans():
            # reads: every cached id served was put by a batch we already wrote
            cached = plan.served[plan.outcomes != Outcome.MISS]
            admitted_here = set(plan.admitted.tolist())
            for sid in cached.tolist():
                assert sid in cache or sid in admitted_here  # never a hit on an absent id
            want_wait = max((written_by.get(s, 0) for s in cached.tolist()), default=0)
            assert plan.wait_for == want_wait
            assert set(plan.puts.tolist()) <= set(plan.requested[plan.outcomes == Outcome.MISS])
            cache -= set(plan.deletes.tolist())
            cache |= set(plan.puts.tolist())
            for sid in plan.puts.tolist():
                written_by[sid] = plan.seq
            assert cache == set(sysobj.policy.resident())
            assert int(sizes[list(cache)].sum()) <= capacity
            planner.give(plan.index, plan.served, rng.random(len(plan.served)) + 0.1)
        planner.finish(val_accuracy=None)
