"""Brand's single-node protocol: the mapping, fill-rate refills, waste, exactly-once, randomness."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.data.chunks import ChunkLayout
from hotset.errors import HotsetError
from hotset.policies.base import Budget, Outcome
from hotset.policies.brand import Brand
from hotset.samplers.base import EpochContext
from hotset.samplers.random import RandomSampler
from hotset.systems.registry import build_system
from layout_support import make_layout
from randomness_support import randomness_p_values


def shuffled_layout(sizes: np.ndarray, chunk_size: int, seed: int) -> ChunkLayout:
    """Brand's chunk generation (§3.2): a seeded shuffle of the ids cut into chunks."""
    return make_layout(sizes, chunk_size, seed=seed)


def make(n: int, chunk: int, frac: float, seed: int, *, varied: bool = True) -> Brand:
    rng = np.random.default_rng(seed + 1)
    sizes = rng.integers(10, 60, n) if varied else np.full(n, 10)
    sizes = sizes.astype(np.int64)
    budget = Budget(capacity_bytes=max(int(frac * sizes.sum()), int(sizes.max())), sizes=sizes)
    policy = Brand(budget, seed=seed)
    policy.attach_layout(shuffled_layout(sizes, chunk, seed=7))
    return policy


def run_epoch(policy: Brand, order: np.ndarray) -> list[int]:
    """Serve one epoch; check the byte budget after every access."""
    served = []
    for sid in order.tolist():
        served.append(policy.access(sid).served)
        assert policy.budget.fits(policy.used_bytes, policy.used_items)
        assert policy.used_bytes == sum(policy.budget.size_of(f) for f in policy.resident())
    return served


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 300),
    chunk=st.integers(1, 32),
    frac=st.floats(0.01, 1.0),
)
def test_every_sample_is_delivered_exactly_once_per_epoch(
    seed: int, n: int, chunk: int, frac: float
) -> None:
    policy = make(n, chunk, frac, seed)
    sampler = RandomSampler(n, seed=seed)
    for epoch in range(2):
        policy.begin_epoch(epoch)
        served = run_epoch(policy, sampler.order(EpochContext(epoch=epoch)))
        assert sorted(served) == list(range(n)), f"epoch {epoch}"
        assert policy.resident() == frozenset()  # nothing left behind, nothing lost
    assert policy.overdrawn == 0


def test_a_miss_reads_a_chunk_of_the_group_and_fills_without_evicting() -> None:
    policy = make(64, 8, 0.25, seed=3, varied=False)
    assert policy.chunk_size == 8 and policy.group_size == 4  # 16 slots: 2 abstract chunks
    policy.begin_epoch(0)
    first = policy.access(0)
    assert first.outcome is Outcome.MISS and first.unit >= 0
    layout = policy.layout
    assert layout is not None
    assert policy._group_of[first.unit] == policy._group_of[int(layout.chunk_of[0])]
    assert len(first.also_admitted) == 7 and first.served not in first.also_admitted
    assert policy.resident() == frozenset(first.also_admitted)
    # a request mapped to a valid slot returns that file and self-invalidates it
    victim = first.also_admitted[0]
    peer = next(
        i
        for i in range(64)
        if policy._group_of[int(layout.chunk_of[i])] == policy._group_of[first.unit]
        and policy._slot_of[i] == policy._slot_of[victim]
        and i != victim
    )
    got = policy.access(peer)
    assert got.outcome is Outcome.SUBSTITUTION and got.served == victim
    assert got.evicted == (victim,) and victim not in policy.resident()


def test_refill_prefers_the_higher_fill_rate_and_counts_waste() -> None:
    policy = make(64, 8, 0.25, seed=3, varied=False)
    policy.begin_epoch(0)
    first = policy.access(0)
    layout = policy.layout
    assert layout is not None
    g = policy._group_of[first.unit]
    # the slot just served is empty: a refill for it fills only that slot in the
    # read chunk (all others are valid), so 7 of its 8 files are wasted
    s = policy._slot_of[first.served]
    other = next(
        i
        for i in range(64)
        if policy._group_of[int(layout.chunk_of[i])] == g
        and policy._slot_of[i] == s
        and i != first.served
    )
    before = policy.wasted_bytes
    second = policy.access(other)
    assert second.outcome is Outcome.MISS and second.unit != first.unit
    assert second.also_admitted == ()
    assert policy.wasted_bytes - before == 7 * 10
    assert policy.fill_rate(first.unit, s) == 0.0  # its file at s is consumed
    assert policy.chunk_reads == 2


def test_a_repeated_request_past_its_slots_files_is_read_alone_and_counted() -> None:
    policy = make(8, 8, 1.0, seed=0, varied=False)  # one chunk, one group
    policy.begin_epoch(0)
    a = policy.access(0)
    assert a.outcome is Outcome.MISS
    assert policy.access(0).outcome is Outcome.MISS  # slot of 0: its only file consumed
    assert policy.overdrawn == 1


def test_files_left_by_a_partial_epoch_are_served_in_the_next() -> None:
    n = 48
    policy = make(n, 8, 0.5, seed=5)
    sampler = RandomSampler(n, seed=5)
    policy.begin_epoch(0)
    run_epoch(policy, sampler.order(EpochContext(epoch=0))[:20])
    left = policy.resident()
    assert left
    policy.begin_epoch(1)
    served = run_epoch(policy, sampler.order(EpochContext(epoch=1)))
    assert sorted(served) == list(range(n)) and policy.overdrawn == 0
    assert left <= set(served)


def test_needs_a_layout_and_rejects_unknown_options() -> None:
    sizes = np.full(10, 5, dtype=np.int64)
    policy = Brand(Budget(capacity_bytes=20, sizes=sizes))
    with pytest.raises(HotsetError, match="chunk layout"):
        policy.access(0)
    with pytest.raises(HotsetError, match="chunk layout"):
        build_system("brand", n=10, budget=Budget(capacity_bytes=20, sizes=sizes), seed=0)
    with pytest.raises(HotsetError, match="chunk_size"):
        build_system(
            "brand", n=10, budget=Budget(capacity_bytes=20, sizes=sizes), seed=0, chunk_size=8
        )


# -- randomness (§4.1): Brand's orders vs uniformly random permutations ------------------
# First moments only (each id equally likely at each position), on many runs of 16 ids:
# blind to chunk locality. Brand's chunk locality, at a size with power, is tested in
# tests/policies/test_chunk_locality.py (issue #30).
N_IDS, RUNS = 16, 3000


def orders(make_order: object, runs: int = RUNS) -> np.ndarray:
    return np.array([make_order(seed) for seed in range(runs)])  # type: ignore[operator]


def brand_order(seed: int) -> list[int]:
    policy = make(N_IDS, 4, 0.25, seed=seed, varied=False)  # one fixed layout (seed 7)
    policy.begin_epoch(0)
    return run_epoch(policy, RandomSampler(N_IDS, seed=seed).order(EpochContext(epoch=0)))


def chunk_sequential_order(seed: int) -> list[int]:
    """Not random: chunks in random order, each read through in stored order (DIESEL-like)."""
    layout = shuffled_layout(np.full(N_IDS, 10), 4, seed=7)
    chunks = np.random.default_rng(seed).permutation(layout.n_chunks)
    return [int(i) for c in chunks for i in layout.members(int(c))]


def test_brand_orders_cannot_be_told_from_uniform_permutations() -> None:
    got = orders(brand_order)
    assert all(sorted(row) == list(range(N_IDS)) for row in got)
    p_rho, p_chi = randomness_p_values(got)
    assert p_rho > 1e-3 and p_chi > 1e-3, (p_rho, p_chi)


def test_the_randomness_test_detects_a_non_random_order() -> None:
    p_rho, p_chi = randomness_p_values(orders(chunk_sequential_order))
    assert min(p_rho, p_chi) < 1e-6, (p_rho, p_chi)


def test_the_randomness_test_passes_true_permutations() -> None:
    rng = np.random.default_rng(11)
    p_rho, p_chi = randomness_p_values(np.array([rng.permutation(N_IDS) for _ in range(RUNS)]))
    assert p_rho > 1e-3 and p_chi > 1e-3, (p_rho, p_chi)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 200), keep=st.floats(0.2, 0.9))
def test_exactly_once_on_a_split_where_chunks_hold_unseen_ids(
    seed: int, n: int, keep: float
) -> None:
    """The live simulator trains on a split: chunks hold ids the policy never sees."""
    from hotset.engine.units import SubsetLayout

    sizes = np.random.default_rng(seed).integers(10, 60, n).astype(np.int64)
    rows = np.sort(np.random.default_rng(seed + 1).permutation(n)[: max(1, int(keep * n))])
    m = len(rows)
    budget = Budget(capacity_bytes=int(0.2 * sizes[rows].sum()) + 60, sizes=sizes[rows])
    policy = Brand(budget, seed=seed)
    policy.attach_layout(SubsetLayout(shuffled_layout(sizes, 8, seed=seed), rows))
    policy.begin_epoch(0)
    served = run_epoch(policy, RandomSampler(m, seed=seed).order(EpochContext(epoch=0)))
    assert sorted(served) == list(range(m)) and policy.overdrawn == 0
