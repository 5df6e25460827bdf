"""SHADE's default coverage floor: no frozen subset at any cache size, and the paper's
behaviour, order for order, with ``coverage_floor=0``."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coverage_support import PINNED, drive, longest_gap, orders_digest, skewed_losses
from hotset.policies.base import Budget
from hotset.samplers.base import EpochContext
from hotset.samplers.pads import PADSSampler
from hotset.systems.registry import build_system
from hotset.systems.shade import OPTIONS, SPECS

#: docs/systems/shade.md: by default every sample is trained at least once every 10 epochs
WINDOW = 10
PADS_SYSTEMS = [spec.name for spec in SPECS]

#: sha256 of :func:`coverage_support.orders_digest` for each :data:`PINNED` entry, computed
#: on commit 0a865d7 (before the default floor), where these systems' defaults were the
#: paper's behaviour: ``python tests/coverage_support.py`` on that tree
PAPER_ORDERS = {
    ("shade", ()): "9e777b67eba50308147df3b7b5b2384e0bdabcc7246364eec7812ef12c34a7bc",
    ("shade", (("adaptive", False),)): (
        "ec62d61f8a0e955336c9420f5d13b0f27da4af587c2adb77c075bfff4c312758"
    ),
    ("sh_app", ()): "3237affb4eb2c787b309b5c4034a76563ea990c4871c362c8a40f4e24e0255e2",
    ("emul_quiv", ()): "4cbbf66e61f6443bb4688543ae3e2652e529f989319fc8ac63001baf7012bac8",
}


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(PADS_SYSTEMS),
    cache_frac=st.floats(0.1, 0.6),
    n=st.integers(40, 240),
    seed=st.integers(0, 2**16),
)
def test_by_default_every_id_is_trained_in_every_window_of_k_epochs(
    name: str, cache_frac: float, n: int, seed: int
) -> None:
    _, trained = drive(name, n=n, cache_frac=cache_frac, epochs=2 * WINDOW + 1, seed=seed)
    assert longest_gap(trained, n) <= WINDOW - 1


def test_the_paper_behaviour_freezes_on_a_subset_where_the_default_does_not() -> None:
    """The issue's symptom, small: at 40% cache the paper's SHADE stops training most ids."""
    n = 300
    _, paper = drive("shade", n=n, cache_frac=0.4, epochs=12, seed=0, coverage_floor=0)
    _, default = drive("shade", n=n, cache_frac=0.4, epochs=12, seed=0)
    never = n - len(np.unique(np.concatenate(paper)))
    assert never > 0 and longest_gap(paper, n) == 12  # some id never trained at all
    assert len(np.unique(np.concatenate(default))) == n
    assert longest_gap(default, n) <= WINDOW - 1


@settings(max_examples=60, deadline=None)
@given(
    world=st.integers(1, 4),
    cache_frac=st.floats(0.1, 0.6),
    n=st.integers(20, 400),
    seed=st.integers(0, 2**16),
)
def test_the_default_floor_covers_every_window_across_ranks_over_a_frozen_cache(
    world: int, cache_frac: float, n: int, seed: int
) -> None:
    """The sampler alone, W ranks: the hardest ids cached and never evicted, the worst
    case for SHADE's repetition; the union of the ranks' orders covers every window."""
    sizes = np.full(n, 100, dtype=np.int64)
    budget = Budget(capacity_bytes=int(cache_frac * sizes.sum()), sizes=sizes)
    sampler = build_system("shade", n=n, budget=budget, seed=seed).sampler
    ids = np.arange(n, dtype=np.int64)
    scores = np.log(10 + skewed_losses(ids, n) * 10)
    resident = frozenset(np.argsort(-scores, kind="stable")[: int(cache_frac * n)].tolist())
    last = np.full(n, -1, dtype=np.int64)
    trained = []
    for epoch in range(2 * WINDOW + 1):
        ctx = EpochContext(
            epoch=epoch,
            world_size=world,
            scores=scores,
            resident=resident,
            train_loss=tuple(1.5 * 0.99**e for e in range(epoch)),
            last_epoch=last.copy(),
        )
        union = np.unique(
            np.concatenate([sampler.order(replace(ctx, rank=r)) for r in range(world)])
        )
        last[union] = epoch
        trained.append(union)
    assert longest_gap(trained, n) <= WINDOW - 1


@pytest.mark.parametrize(("name", "options"), PINNED)
def test_coverage_floor_0_gives_the_papers_orders_exactly(
    name: str, options: dict[str, object]
) -> None:
    paper = PAPER_ORDERS[(name, tuple(options.items()))]
    assert orders_digest(name, coverage_floor=0, **options) == paper
    assert orders_digest(name, **options) != paper  # the default is no longer the paper's


def test_the_default_is_shown_where_users_look() -> None:
    for spec in SPECS:
        assert "every sample trained at least every 10 epochs" in spec.summary
        assert "coverage_floor=0: the paper's" in spec.summary
        floor = {o.name: o for o in OPTIONS[spec.name]}["coverage_floor"]
        assert floor.default == 0.1  # what `hotset systems --options NAME` lists
    sizes = np.full(50, 10, dtype=np.int64)
    budget = Budget(capacity_bytes=200, sizes=sizes)
    on = build_system("shade", n=50, budget=budget, seed=0).sampler
    off = build_system("shade[coverage_floor=0]", n=50, budget=budget, seed=0).sampler
    assert isinstance(on, PADSSampler) and isinstance(off, PADSSampler)
    assert on.guard_note() == (
        "coverage_floor=0.1: every sample trained at least once every 10 epochs "
        "(coverage_floor=0 is the paper's behaviour)"
    )
    assert off.guard_note() is None and off.coverage_window() is None
