"""PADS's guards against training a subset: coverage floor, anneal tail, unbiased weights."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.policies.base import Budget
from hotset.samplers.base import EpochContext
from hotset.samplers.pads import PADSSampler, SubsetGuards
from hotset.systems.registry import build_system


def _train(n: int, epochs: int, **options: object) -> list[set[int]]:
    """Drive shade at 40% cache the way a driver does; the ids trained in each epoch."""
    sizes = np.full(n, 100, dtype=np.int64)
    system = build_system(
        "shade",
        n=n,
        budget=Budget(capacity_bytes=int(0.4 * sizes.sum()), sizes=sizes),
        seed=3,
        batch_size=32,
        **options,
    )
    trained = []
    for epoch in range(epochs):
        order = system.begin_epoch(epoch)
        for sid in order.tolist():
            system.access(sid)
        for start in range(0, len(order), 32):
            ids = order[start : start + 32]
            # hard samples stay hard: a loss that favours low ids, as a real model's would
            losses = 1.0 + (ids < n // 5) * 2.0 + ((ids * 7919) % 97) / 97.0
            system.feedback(ids, losses, epoch=epoch)
        system.end_epoch(train_loss=1.5, val_accuracy=None)
        trained.append(set(order.tolist()))
    return trained


def _longest_gap(trained: list[set[int]], n: int) -> int:
    """The most consecutive epochs any id went untrained (from the start on)."""
    worst = 0
    for sid in range(n):
        gap = 0
        for ids in trained:
            gap = 0 if sid in ids else gap + 1
            worst = max(worst, gap)
    return worst


def test_without_the_floor_shade_leaves_samples_untrained() -> None:
    trained = _train(400, 12, coverage_floor=0)  # the paper's behaviour
    assert _longest_gap(trained, 400) >= 6  # the problem the floor fixes


def test_the_coverage_floor_trains_every_sample_every_k_epochs() -> None:
    n, f = 400, 0.25
    trained = _train(n, 12, coverage_floor=f)
    k = math.ceil(n / math.ceil(f * n))  # one rank: F = ceil(f * L), L = n
    assert _longest_gap(trained, n) <= k - 1  # trained at least once in every k epochs


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 300),
    world=st.integers(1, 4),
    floor=st.floats(0.01, 0.99),
    seed=st.integers(0, 2**16),
    trained_upto=st.integers(-1, 5),
)
def test_floor_ids_are_the_stalest_and_disjoint_across_ranks(
    n: int, world: int, floor: float, seed: int, trained_upto: int
) -> None:
    sampler = PADSSampler(n, seed=seed, guards=SubsetGuards(coverage_floor=floor))
    last = np.random.default_rng(seed).integers(-1, trained_upto + 1, size=n)
    shares = [
        sampler.floor_ids(EpochContext(epoch=6, rank=r, world_size=world, last_epoch=last))
        for r in range(world)
    ]
    picked = np.concatenate(shares)
    per_rank = math.ceil(floor * -(-n // world))
    assert len(picked) == len(set(picked.tolist())) == min(n, per_rank * world)
    left_out = np.setdiff1d(np.arange(n), picked)
    if len(left_out):  # nothing left out is staler than anything picked
        assert last[left_out].min() >= last[picked].max()


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 500), world=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_an_anneal_epoch_is_a_full_permutation_across_ranks(n: int, world: int, seed: int) -> None:
    sampler = PADSSampler(n, seed=seed, rep_factor=3.0, guards=SubsetGuards(anneal_from=4))
    scores = np.random.default_rng(seed).random(n) + 0.1
    orders = [
        sampler.order(
            EpochContext(
                epoch=5, rank=r, world_size=world, scores=scores, resident=frozenset(range(n // 2))
            )
        )
        for r in range(world)
    ]
    assert all(len(o) == -(-n // world) for o in orders)
    assert set(np.concatenate(orders).tolist()) == set(range(n))
    assert np.allclose(sampler.loss_weights(np.arange(n)), 1.0)


def test_unbiased_weights_undo_the_draw() -> None:
    n = 50
    scores = np.linspace(0.5, 5.0, n)
    sampler = PADSSampler(n, seed=1)
    sampler.order(EpochContext(epoch=2, scores=scores, train_loss=(2.0, 1.5)))
    w = sampler.loss_weights(np.arange(n))
    p = sampler.weights(EpochContext(epoch=2, scores=scores, train_loss=(2.0, 1.5)))
    p = p / p.sum()
    assert math.isclose(float((p * w).sum()), 1.0)  # E_p[w] = 1: the loss stays unbiased
    assert w[0] > 1 > w[-1]  # rare samples weigh more


def test_shade_passes_unbiased_weights_to_training() -> None:
    sizes = np.full(100, 10, dtype=np.int64)
    system = build_system(
        "shade", n=100, budget=Budget(capacity_bytes=400, sizes=sizes), seed=0, unbiased=True
    )
    order = system.begin_epoch(0)
    assert np.allclose(system.weights(order), 1.0)  # epoch 0: a uniform draw
    system.feedback(order, 1.0 + (order % 7).astype(float), epoch=0)
    system.end_epoch(train_loss=2.0, val_accuracy=None)
    order = system.begin_epoch(1)
    assert not np.allclose(system.weights(order), 1.0)


def _guard_ctx(
    n: int, sentinel_loss: float, train_loss: float, sampler: PADSSampler
) -> EpochContext:
    losses = np.full(n, 1.0)
    losses[sampler.sentinel_ids(4, 0, 1)] = sentinel_loss
    return EpochContext(
        epoch=5,
        scores=np.linspace(1, 5, n),
        losses=losses,
        train_loss=(2.0, train_loss),
        resident=frozenset(range(n // 3)),
    )


def test_the_sentinel_leads_each_order_and_is_uniform_and_disjoint() -> None:
    n, world = 1000, 2
    sampler = PADSSampler(n, seed=4, rep_factor=3.0, guards=SubsetGuards(guardrail=0.1))
    shares = [sampler.sentinel_ids(7, r, world) for r in range(world)]
    assert [len(s) for s in shares] == [50, 50]
    assert not set(shares[0].tolist()) & set(shares[1].tolist())
    ctx = EpochContext(epoch=7, rank=1, world_size=world, scores=np.linspace(1, 9, n))
    assert sampler.order(ctx)[:50].tolist() == shares[1].tolist()
    # uniform: over many epochs every id is a sentinel about equally often
    counts = np.bincount(
        np.concatenate([sampler.sentinel_ids(e, 0, 1) for e in range(400)]), minlength=n
    )
    assert counts.min() > 0.4 * counts.mean() and counts.max() < 1.8 * counts.mean()


def test_the_guardrail_falls_back_to_uniform_when_importance_batches_turn_easy() -> None:
    n = 400
    sampler = PADSSampler(
        n, seed=4, rep_factor=3.0, guards=SubsetGuards(guardrail=0.1, guard_threshold=0.1)
    )
    order = sampler.order(_guard_ctx(n, sentinel_loss=2.0, train_loss=1.0, sampler=sampler))
    assert sampler.last_mode == "guardrail" and sampler.last_guard_ratio == 0.5
    assert sorted(order.tolist()) == list(range(n))  # a uniform permutation: all once
    order = sampler.order(_guard_ctx(n, sentinel_loss=1.0, train_loss=1.2, sampler=sampler))
    assert sampler.last_mode != "guardrail" and sampler.last_guard_ratio == 1.2
    assert len(set(order.tolist())) < n  # importance order again, with repetitions


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(1, 300),
    world=st.integers(1, 4),
    floor=st.floats(0.01, 0.99),
    seed=st.integers(0, 2**16),
)
def test_the_coverage_window_bounds_the_gap_of_a_floor_alone(
    n: int, world: int, floor: float, seed: int
) -> None:
    """With the body training nothing, the floor alone brings every id back within
    ``coverage_window`` epochs, a window never longer than ``ceil(1 / floor)``."""
    sampler = PADSSampler(n, seed=seed, guards=SubsetGuards(coverage_floor=floor))
    window = sampler.coverage_window(world)
    assert window is not None and window <= math.ceil(round(1 / floor, 9))
    last = np.full(n, -1, dtype=np.int64)
    gap = np.zeros(n, dtype=np.int64)
    for epoch in range(2 * window + 1):
        ctx = EpochContext(epoch=epoch, world_size=world, last_epoch=last.copy())
        picked = np.concatenate([sampler.floor_ids(replace(ctx, rank=r)) for r in range(world)])
        last[picked] = epoch
        gap = np.where(last == epoch, 0, gap + 1)
        assert gap.max() <= window - 1
    assert PADSSampler(n, seed=seed).coverage_window(world) is None  # no floor, no bound
