"""Brand across ranks (§3.4): owners, remote requests, prefetch, and the guarantees kept."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.policies.base import Budget
from hotset.policies.brand import Brand
from hotset.policies.brand.ranks import BrandRanks
from hotset.sim.nodes import NodeSim
from hotset.systems.registry import build_system
from layout_support import make_layout


def _sizes(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(10, 60, n).astype(np.int64)


def _sim(n: int, world: int, chunk: int, frac: float, seed: int, **kw: Any) -> NodeSim:
    sizes = _sizes(n, seed)
    layout = make_layout(sizes, chunk, seed=seed)
    return NodeSim(
        "brand", nodes=world, scope="pooled", sizes=sizes, cache_frac=frac, seed=seed,
        batch_size=8, layout=layout, options=kw or None,
    )  # fmt: skip


def _checked(policy: BrandRanks) -> None:
    """Check this rank's node (owned slots + remote memory) and the remote limit per access."""
    access = policy.access
    cap = policy.budget.capacity_bytes
    assert cap is not None

    def access_and_check(sid: int) -> Any:
        decision = access(sid)
        assert 0 <= policy.used_bytes <= cap
        assert max(policy._remote_used) <= policy.remote_frac * cap
        return decision

    policy.access = access_and_check  # type: ignore[method-assign]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(64, 400),
    world=st.integers(2, 4),
    chunk=st.sampled_from([4, 8, 16]),
    frac=st.floats(0.05, 0.5),
)
def test_each_sample_once_per_epoch_across_ranks_and_one_state_everywhere(
    seed: int, n: int, world: int, chunk: int, frac: float
) -> None:
    sim = _sim(n, world, chunk, frac, seed)
    for system in sim.systems:
        assert isinstance(system.policy, BrandRanks)
        _checked(system.policy)
    for _ in range(3):
        row = sim.run_epoch()
        # padding to equal shards repeats a few ids: everything else exactly once
        padded = -(-n // world) * world - n
        assert row["requests"] == n + padded
        assert row["unique_ids_trained"] == n
        states = [s.policy.state_dict() for s in sim.systems]
        for other in states[1:]:  # every rank replayed the others: one state
            assert other["slots"] == states[0]["slots"]
            assert other["filled"] == states[0]["filled"]
            assert other["world"]["remote"] == states[0]["world"]["remote"]


def test_remote_requests_and_prefetch_happen_and_are_counted() -> None:
    sim = _sim(2048, 4, 16, 0.2, 3)
    for _ in range(2):
        sim.run_epoch()
    for system in sim.systems:
        counts = system.policy.counts  # type: ignore[attr-defined]
        assert counts["remote_requests"] > 0
        assert counts["prefetch_hits"] == counts["prefetched_files"] > 0
        assert system.policy.remote_memory_peak > 0  # type: ignore[attr-defined]


def test_no_prefetch_without_a_window_or_remote_memory() -> None:
    for options in ({"window": 0}, {"remote_frac": 0.0}):
        sim = _sim(1024, 2, 16, 0.2, 1, **options)
        row = sim.run_epoch()
        assert row["unique_ids_trained"] == 1024
        assert all(s.policy.counts["prefetched_files"] == 0 for s in sim.systems)  # type: ignore[attr-defined]


def test_one_rank_is_single_node_brand_decision_for_decision() -> None:
    sizes = _sizes(300, 5)
    layout = make_layout(sizes, 8, seed=5)
    rows = []
    for make in (Brand, BrandRanks):
        system = build_system("brand", n=300, budget=Budget(capacity_bytes=int(0.2 * sizes.sum()), sizes=sizes), seed=5, batch_size=8, layout=layout)  # fmt: skip
        system.policy = make(system.policy.budget, seed=5)
        system.policy.attach_layout(layout)
        planner = Planner(system, n=300, batch_size=8, lag=0)
        for epoch in range(3):
            planner.begin(epoch)
            for _ in planner.plans():
                pass
            planner.finish(val_accuracy=None)
        rows.append(planner.log.rows())
    assert rows[0] == rows[1]


def test_a_rank_resumes_from_its_epoch_start_state() -> None:
    from hotset.torch.loader import load_system_state, system_state

    straight = _sim(512, 2, 8, 0.2, 9)
    straight.run_epoch()
    saved = [system_state(s) for s in straight.systems]
    # which files were read ahead and not yet served: the counters' memory (decisions do
    # not depend on it), carried as the loader's checkpoint carries it
    ahead = [p.ahead.ids() for p in straight.planners]
    want = straight.run_epoch()
    resumed = _sim(512, 2, 8, 0.2, 9)
    for system, state in zip(resumed.systems, saved, strict=True):
        load_system_state(system, state)
    for planner, ids in zip(resumed.planners, ahead, strict=True):
        planner.ahead.load(ids)
    resumed.epoch = 1
    got = resumed.run_epoch()
    for key in ("exact_hits", "substitutions", "storage_requests", "storage_bytes"):
        assert got[key] == want[key], key


def test_bad_options_name_the_value() -> None:
    budget = Budget(capacity_bytes=100)
    with pytest.raises(HotsetError, match="window"):
        BrandRanks(budget, window=-1)
    with pytest.raises(HotsetError, match="remote_frac"):
        BrandRanks(budget, remote_frac=1.0)
    with pytest.raises(
        HotsetError, match="has no option 'chunky'; its options are window, remote_frac"
    ):
        build_system("brand", n=10, budget=budget, seed=0, chunky=True)


def _global_order(seed: int, n: int = 16, world: int = 2, batch: int = 4) -> tuple[list[int], int]:
    """The files two ranks deliver, in lockstep order (batch b of rank 0, then of rank 1)."""
    from hotset.samplers.base import EpochContext
    from hotset.samplers.random import RandomSampler

    sizes = np.full(n, 10, dtype=np.int64)
    layout = make_layout(sizes, 4, seed=7)
    sampler = RandomSampler(n, seed=seed)
    orders = [sampler.order(EpochContext(epoch=0, rank=r, world_size=world)) for r in range(world)]
    policies = []
    for rank in range(world):
        policy = BrandRanks(Budget(capacity_bytes=100, sizes=sizes), seed=seed, batch_size=batch)
        policy.attach_layout(layout)
        policy.begin_world(0, orders, rank)
        policies.append(policy)
    delivered: list[int] = []
    for b in range(n // world // batch):
        for rank, policy in enumerate(policies):
            part = orders[rank][b * batch : (b + 1) * batch].tolist()
            delivered += [policy.access(i).served for i in part]
    return delivered, sum(p.counts["prefetched_files"] for p in policies)


def test_orders_across_ranks_cannot_be_told_from_uniform_permutations() -> None:
    """First moments only; chunk locality across ranks: tests/policies/test_chunk_locality.py."""
    from randomness_support import randomness_p_values

    runs = [_global_order(seed) for seed in range(2000)]
    assert sum(prefetched for _, prefetched in runs) > 0  # remote requests prefetched too
    got = np.array([order for order, _ in runs])
    assert all(sorted(row) == list(range(16)) for row in got)  # exactly once, every run
    p_rho, p_chi = randomness_p_values(got)
    assert p_rho > 1e-3 and p_chi > 1e-3, (p_rho, p_chi)


def test_each_ranks_chunk_reads_are_split_by_owner_and_add_up_to_the_jobs() -> None:
    """Owners are bookkeeping: a rank reads chunks other ranks own itself; over the ranks,
    own and remote chunk reads are every chunk the job read (each rank replays them all).
    The first epoch is a cold fill (each chunk read once, the first rank in step first);
    the second is the steady state."""
    sim = _sim(2048, 2, 16, 0.2, 3)
    for _ in range(2):
        sim.run_epoch()
    policies = [s.policy for s in sim.systems]
    counts = [p.counts for p in policies]  # type: ignore[attr-defined]
    assert all(c["owned_chunk_reads"] > 0 and c["remote_chunk_reads"] > 0 for c in counts)
    read = sum(c["owned_chunk_reads"] + c["remote_chunk_reads"] for c in counts)
    assert read == policies[0].chunk_reads == policies[1].chunk_reads  # type: ignore[attr-defined]


def test_a_state_saved_before_the_chunk_read_counters_loads() -> None:
    """A checkpoint with the four counters of before still resumes; the new ones start at 0."""
    sim = _sim(512, 2, 8, 0.2, 9)
    sim.run_epoch()
    policy = sim.systems[0].policy
    assert isinstance(policy, BrandRanks)
    state = policy.state_dict()
    state["world"]["counts"] = state["world"]["counts"][:4]
    policy.load_state_dict(state)
    assert policy.counts["remote_chunk_reads"] == policy.counts["owned_chunk_reads"] == 0
