"""The baseline systems driven through their hooks: order, hit accounting, bounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.errors import HotsetError
from hotset.policies.base import Budget, Outcome
from hotset.samplers.base import EpochContext
from hotset.systems.base import System
from hotset.systems.baselines import SPECS
from hotset.systems.registry import build_system

NAMES = [spec.name for spec in SPECS]


def _items(n: int, k: int) -> Budget:
    return Budget(capacity_items=k)


def _drive(system: System, epochs: int) -> list[np.ndarray]:
    """Outcome per access, one array per epoch (the live driver's loop without a model)."""
    if system.policy.capabilities.needs_future:
        plan = [system.sampler.order(EpochContext(epoch=e)) for e in range(epochs)]
        system.policy.set_future(np.concatenate(plan))
    out = []
    for epoch in range(epochs):
        order = system.begin_epoch(epoch)
        outcomes = np.array([system.access(int(s)).outcome for s in order], dtype=np.int8)
        system.feedback(order, np.ones(len(order)), epoch=epoch)
        system.end_epoch(train_loss=1.0, val_accuracy=None)
        out.append(outcomes)
    return out


def test_the_declared_baselines() -> None:
    assert NAMES == ["pytorch", "lru", "fifo", "lfu", "minio", "belady", "oracle"]
    assert "CoorDL" in {s.name: s for s in SPECS}["minio"].source


@pytest.mark.parametrize("name", NAMES)
def test_random_order_each_epoch_a_fresh_permutation(name: str) -> None:
    n = 64
    a = build_system(name, n=n, budget=_items(n, 8), seed=5)
    b = build_system(name, n=n, budget=_items(n, 8), seed=5)
    c = build_system(name, n=n, budget=_items(n, 8), seed=6)
    orders = [a.sampler.order(EpochContext(epoch=e)) for e in range(3)]
    for order in orders:
        assert sorted(order.tolist()) == list(range(n))
    assert not np.array_equal(orders[0], orders[1])
    assert np.array_equal(b.sampler.order(EpochContext(epoch=1)), orders[1])
    assert not np.array_equal(c.sampler.order(EpochContext(epoch=1)), orders[1])
    assert a.weighted is False
    assert np.array_equal(a.weights(orders[0][:5]), np.ones(5))


def test_pytorch_reads_everything_and_oracle_nothing() -> None:
    n = 50
    for outcomes in _drive(build_system("pytorch", n=n, budget=_items(n, n), seed=0), 3):
        assert (outcomes == Outcome.MISS).all()
    for outcomes in _drive(build_system("oracle", n=n, budget=_items(n, 0), seed=0), 3):
        assert (outcomes == Outcome.HIT).all()


@pytest.mark.parametrize("name", ["lru", "fifo", "lfu", "minio", "belady"])
def test_a_cache_holding_everything_hits_everything_after_epoch_one(name: str) -> None:
    n = 60
    first, *later = _drive(build_system(name, n=n, budget=_items(n, n), seed=1), 3)
    assert (first == Outcome.MISS).all()  # cold
    for outcomes in later:
        assert (outcomes == Outcome.HIT).all()


def test_minio_never_changes_its_resident_set_once_full() -> None:
    n, k = 100, 20
    system = build_system("minio", n=n, budget=_items(n, k), seed=2)
    residents = []
    for outcomes in _drive(system, 1):
        assert (outcomes == Outcome.MISS).all()
    residents.append(system.policy.resident())
    later = _drive_more(system, epochs=range(1, 4))
    for epoch_outcomes in later:
        assert int((epoch_outcomes == Outcome.HIT).sum()) == k  # hit ratio = cache fraction
        assert system.policy.resident() == residents[0]
    assert len(residents[0]) == k


def _drive_more(system: System, epochs: range) -> list[np.ndarray]:
    out = []
    for epoch in epochs:
        order = system.begin_epoch(epoch)
        out.append(np.array([system.access(int(s)).outcome for s in order], dtype=np.int8))
        system.end_epoch(train_loss=1.0, val_accuracy=None)
    return out


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(min_value=5, max_value=60),
    frac=st.floats(min_value=0.05, max_value=0.9),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_belady_bounds_every_online_baseline(n: int, frac: float, seed: int) -> None:
    """Unit sizes: Belady's MIN over the same random orders never misses more."""
    k = max(1, int(n * frac))
    hits = {
        name: sum(int((o == Outcome.HIT).sum()) for o in _drive(s, 3))
        for name in ("belady", "lru", "fifo", "lfu", "minio")
        for s in [build_system(name, n=n, budget=_items(n, k), seed=seed)]
    }
    assert all(hits["belady"] >= h for h in hits.values()), hits


@pytest.mark.parametrize("name", NAMES)
def test_options_are_rejected_by_name(name: str) -> None:
    with pytest.raises(HotsetError, match=f"system '{name}' takes no options, got rep_factor"):
        build_system(name, n=10, budget=_items(10, 2), seed=0, rep_factor=2)
