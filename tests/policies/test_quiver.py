"""Quiver's policy: exactly once per epoch, two striped chunks at a time, honest counting."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budget_support import check_budget
from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.policies.base import Budget, Outcome
from hotset.policies.quiver import Quiver
from hotset.policies.quiver.chunks import StripedChunks, stripe_of
from hotset.systems.base import System
from hotset.systems.registry import build_system
from layout_support import make_layout


def make(
    n: int, frac: float, seed: int, *, batch: int, chunk: int | None, rank_sizes: int = 0
) -> tuple[System, np.ndarray]:
    sizes = np.random.default_rng(seed + 1).integers(10, 60, n).astype(np.int64)
    layout = None if chunk is None else make_layout(sizes, chunk, seed=seed + 2)
    floor = int(sizes.max()) * (2 * (chunk or 1) + 1)
    budget = Budget(capacity_bytes=max(int(frac * sizes.sum()), floor), sizes=sizes)
    system = build_system("quiver", n=n, budget=budget, seed=seed, batch_size=batch, layout=layout)
    return system, sizes


def chunks_resident(policy: Quiver) -> set[int]:
    """The cycling chunks with a member in the cache (the static set is not one)."""
    chunks = policy.chunks
    assert chunks is not None
    return {chunks.chunk_of_id[s] for s in policy.resident()} - {chunks.static}


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 400),
    frac=st.floats(0.02, 1.0),
    batch=st.integers(1, 40),
    chunk=st.one_of(st.none(), st.integers(1, 16)),
    world=st.integers(1, 3),
)
def test_each_sample_once_per_epoch_and_the_budget_holds(
    seed: int, n: int, frac: float, batch: int, chunk: int | None, world: int
) -> None:
    """Over seeds x cache sizes x batch sizes x layouts x rank shards: 0 violations."""
    system, sizes = make(n, frac, seed, batch=batch, chunk=chunk)
    policy = system.policy
    assert isinstance(policy, Quiver)
    rank = seed % world
    planner = Planner(system, n=n, batch_size=batch, lag=0, sizes=sizes)
    for epoch in range(3):
        planner.begin(epoch, rank=rank, world_size=world)
        want = sorted(planner.order.tolist())
        served: list[int] = []
        for plan in planner.plans():
            served += plan.served.tolist()
            check_budget(policy)
            assert policy.used_bytes == int(sizes[list(policy.resident())].sum())
            assert len(chunks_resident(policy)) <= 2
            cached = plan.outcomes <= Outcome.SUBSTITUTION
            # a hit or a substitution is served from what the cache held
            assert set(plan.served[cached].tolist()) <= set(plan.served.tolist())
            hits = plan.outcomes == Outcome.HIT
            assert (plan.served[hits] == plan.requested[hits]).all()
            subs = plan.outcomes == Outcome.SUBSTITUTION
            assert (plan.served[subs] != plan.requested[subs]).all()
        assert sorted(served) == want, f"epoch {epoch}: not every planned id exactly once"
        planner.finish(val_accuracy=None)


def test_served_ids_were_resident_when_served() -> None:
    system, _ = make(500, 0.2, 3, batch=16, chunk=8)
    policy = system.policy
    system.begin_epoch(0)
    order = system.sampler.order(_ctx(0))
    policy.begin_epoch(0, order)
    for sid in order.tolist():
        before = policy.resident()
        d = policy.access(sid)
        if d.outcome in (Outcome.HIT, Outcome.SUBSTITUTION):
            assert d.served in before
        else:
            assert d.outcome is Outcome.MISS


def _ctx(epoch: int):  # type: ignore[no-untyped-def]
    from hotset.samplers.base import EpochContext

    return EpochContext(epoch=epoch)


def test_most_requests_are_served_from_cache_and_each_unit_is_read_about_once() -> None:
    """The paper's claim at 10%: cache-hit service, reads only to load the chunks."""
    n, batch = 4000, 32
    system, sizes = make(n, 0.1, 0, batch=batch, chunk=32)
    planner = Planner(system, n=n, batch_size=batch, lag=0, sizes=sizes)
    layout = system.policy.layout
    assert layout is not None
    for epoch in range(3):
        planner.begin(epoch)
        counts = np.zeros(4, dtype=np.int64)
        requests = 0
        for plan in planner.plans():
            counts += plan.outcome_counts()
            requests += plan.storage_requests
        planner.finish(val_accuracy=None)
    served_from_cache = (counts[Outcome.HIT] + counts[Outcome.SUBSTITUTION]) / n
    assert served_from_cache > 0.95
    assert counts[Outcome.SUBSTITUTION] > counts[Outcome.HIT]  # counted apart, never merged
    assert requests <= 1.2 * layout.n_chunks  # about one read per unit per epoch


def test_without_a_layout_it_loads_sample_by_sample() -> None:
    n, batch = 1000, 16
    system, sizes = make(n, 0.2, 1, batch=batch, chunk=None)
    planner = Planner(system, n=n, batch_size=batch, lag=0, sizes=sizes)
    for epoch in range(3):
        planner.begin(epoch)
        plans = list(planner.plans())
        planner.finish(val_accuracy=None)
    assert all((p.units == -1).all() and not len(p.unit_reads) for p in plans)
    read = sum(len(p.reads) for p in plans)
    # every sample loaded about once an epoch, alone (the cycle runs on across epochs)
    assert n * 0.9 <= read <= n * 1.1
    served = sum(int(p.outcome_counts()[: Outcome.MISS].sum()) for p in plans)
    assert served > 0.9 * n


def test_chunks_are_stripes_of_partitions() -> None:
    # 10 partitions of 10 units, a unit per stripe unit, rotated by partition
    assert stripe_of(100, 10).tolist() == [(u % 10 + u // 10) % 10 for u in range(100)]
    got = stripe_of(1000, 10)
    # every chunk holds one contiguous stripe unit of every partition of 100 units
    for part in range(10):
        stripe = got[part * 100 : (part + 1) * 100]
        assert np.bincount(stripe, minlength=10).tolist() == [10] * 10
        assert (np.diff(stripe) != 0).sum() == 9  # 10 contiguous runs
    # stripe units of 2 and 3 units rotate across partitions: chunks even out
    assert set(np.bincount(stripe_of(1000, 20)).tolist()) == {50}
    assert stripe_of(7, 3).tolist() == [0, 1, 2, 1, 2, 0, 2]
    assert stripe_of(5, 3).tolist() == [0, 1, 2, 0, 1]  # partitions shorter than k


def test_two_chunks_and_the_static_set_fit_the_budget() -> None:
    sizes = np.full(1000, 10, dtype=np.int64)
    # (cache share, chunks that cycle, share of the data set kept static)
    for frac, want_k, static in ((0.2, 10, 0.0), (0.1, 20, 0.0), (1.0, 1, 0.0), (0.8, 4, 0.6)):
        chunks = StripedChunks(
            Budget(capacity_bytes=int(frac * sizes.sum()), sizes=sizes), None, 1000
        )
        assert chunks.k == want_k
        assert chunks.static_bytes == static * sizes.sum()
        if chunks.k > 1:  # one chunk is the whole data set, in the cache for good
            assert 2 * max(chunks.chunk_bytes) + chunks.static_bytes <= frac * sizes.sum()
            assert max(chunks.chunk_bytes) <= 0.1 * sizes.sum()


def test_jobs_follow_one_chunk_cycle_but_load_in_their_own_order() -> None:
    """Co-operative loading: the same chunks at the same time, units in other orders."""
    cycles, orders = [], []
    for seed in (0, 1):
        system, sizes = make(2000, 0.1, 0, batch=32, chunk=16)
        system.policy.seed = seed
        assert isinstance(system.policy, Quiver)
        system.policy.join_cycle(None)  # jobs of one namespace: alone, chunks are dealt afresh
        planner = Planner(system, n=2000, batch_size=32, lag=0, sizes=sizes)
        planner.begin(0)
        loads: list[int] = []
        for plan in planner.plans():
            loads += plan.unit_reads.tolist()
        policy = system.policy
        assert isinstance(policy, Quiver)
        assert policy.chunks is not None
        cycles.append([int(policy.chunks.chunk_of_unit[u]) for u in loads])
        orders.append(loads)
    first = [list(dict.fromkeys(c)) for c in cycles]
    assert first[0][:5] == first[1][:5]  # same chunks, same turn
    assert orders[0] != orders[1]  # each job its own seeded order within a chunk


def test_displacement_is_reported() -> None:
    system, sizes = make(600, 0.2, 4, batch=16, chunk=8)
    planner = Planner(system, n=600, batch_size=16, lag=0, sizes=sizes)
    planner.begin(0)
    positions = {}
    served = []
    for plan in planner.plans():
        served += plan.served.tolist()
    for i, sid in enumerate(planner.order.tolist()):
        positions[sid] = i
    moved = [abs(positions[s] - i) for i, s in enumerate(served)]
    summary = system.policy.summary()
    assert summary["displacement_mean"] == pytest.approx(np.mean(moved))
    assert summary["displacement_max"] == max(moved)


def test_unknown_options_and_bad_batch_sizes_are_named() -> None:
    sizes = np.full(10, 5, dtype=np.int64)
    with pytest.raises(HotsetError, match="window"):  # lookahead is one of its options now
        build_system(
            "quiver", n=10, budget=Budget(capacity_bytes=20, sizes=sizes), seed=0, window=3
        )
    with pytest.raises(HotsetError, match="batch_size"):
        Quiver(Budget(capacity_bytes=20, sizes=sizes), batch_size=0)


def test_a_larger_cache_keeps_a_static_set_and_reads_less_per_epoch() -> None:
    """Beyond two chunks of 10% the cache keeps stripes for good: read once, served
    by substitution every epoch, so reads per epoch fall with the cache's size."""
    n, batch = 3000, 32
    reads = {}
    for frac in (0.2, 0.8):
        system, sizes = make(n, frac, 0, batch=batch, chunk=None)
        planner = Planner(system, n=n, batch_size=batch, lag=0, sizes=sizes)
        for epoch in range(3):
            planner.begin(epoch)
            plans = list(planner.plans())
            planner.finish(val_accuracy=None)
        reads[frac] = sum(len(p.reads) for p in plans)
        served = sum(int(p.outcome_counts()[: Outcome.MISS].sum()) for p in plans)
        assert served == n  # all from the cache
    assert reads[0.2] >= 0.95 * n
    assert reads[0.8] <= 0.6 * n
