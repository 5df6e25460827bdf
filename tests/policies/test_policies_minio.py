"""MinIO's subset: seeded, random, filling the budget, independent of arrival order."""

from __future__ import annotations

import numpy as np
import pytest

from hotset.errors import HotsetError
from hotset.policies import Budget, Outcome
from hotset.policies.minio import MinIO, priorities


def test_subset_fills_an_item_budget_exactly_and_depends_on_the_seed() -> None:
    a = MinIO(Budget(capacity_items=300), seed=1, n=1000).subset
    b = MinIO(Budget(capacity_items=300), seed=1, n=1000).subset
    c = MinIO(Budget(capacity_items=300), seed=2, n=1000).subset
    assert a is not None and c is not None
    assert a == b and len(a) == 300 and a <= set(range(1000))
    assert len(a & c) < 150  # two random 30% subsets overlap by about 90


def test_subset_is_spread_over_the_ids() -> None:
    chosen = MinIO(Budget(capacity_items=2000), seed=0, n=10_000).subset
    assert chosen is not None
    counts = np.histogram(sorted(chosen), bins=10, range=(0, 10_000))[0]
    assert counts.min() > 150 and counts.max() < 250  # ~200 per tenth, not a prefix


def test_subset_fills_a_byte_budget_greedily() -> None:
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 100, 500)
    policy = MinIO(Budget(capacity_bytes=5000, sizes=sizes), seed=4)
    chosen = policy.subset
    assert chosen is not None
    used = int(sizes[sorted(chosen)].sum())
    assert used <= 5000
    leftover = sorted(set(range(500)) - chosen)
    assert int(sizes[leftover].min()) > 5000 - used or used == 5000  # nothing else fits


def test_first_epoch_caches_exactly_the_subset_whatever_the_order() -> None:
    residents = []
    for order_seed in (1, 2):
        policy = MinIO(Budget(capacity_items=50), seed=9, n=200)
        order = np.random.default_rng(order_seed).permutation(200)
        out = policy.replay(order)
        assert not (out == Outcome.HIT).any()
        residents.append(policy.resident())
        assert policy.resident() == policy.subset
        # nothing is ever evicted: a second epoch hits exactly the residents
        again = np.random.default_rng(order_seed + 10).permutation(200)
        hits = again[policy.replay(again) == Outcome.HIT]
        assert set(hits.tolist()) == residents[-1]
    assert residents[0] == residents[1]


def test_planned_first_epoch_fixes_the_universe() -> None:
    policy = MinIO(Budget(capacity_items=10), seed=3)
    assert policy.subset is None
    planned = np.arange(100, 140)
    policy.begin_epoch(0, planned)
    assert policy.subset is not None and len(policy.subset) == 10
    assert policy.subset <= set(planned.tolist())


def test_priorities_are_a_function_of_seed_and_id_only() -> None:
    ids = np.array([5, 1, 9, 5])
    p = priorities(ids, 7)
    assert p[0] == p[3]
    assert priorities(np.array([9]), 7)[0] == p[2]
    assert (priorities(ids, 8) != p).all()


def test_bad_n_is_refused() -> None:
    with pytest.raises(HotsetError, match="n must be a positive integer"):
        MinIO(Budget(capacity_items=1), n=0)
    with pytest.raises(HotsetError, match="sizes cover only 3"):
        MinIO(Budget(capacity_items=1, sizes=np.array([1, 1, 1])), n=5)
