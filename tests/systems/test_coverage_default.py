"""The coverage defaults of the systems that draw by importance: SHADE's floor and
ImPACT's coverage window leave no sample untrained for 10 epochs at any cache size,
and ``coverage_floor=0`` / ``coverage_epochs=0`` give the papers' orders exactly.

iCACHE needs no default: its periodic full epochs (every ``reuse_factor`` = 3 after
the warm-up) already ask for every sample (tests/samplers/test_iis.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coverage_support import PINNED, drive, longest_gap, opt_out, orders_digest, skewed_losses
from hotset.policies.base import Budget
from hotset.samplers.base import EpochContext
from hotset.samplers.iis import IISSampler
from hotset.samplers.pads import PADSSampler
from hotset.systems.impact import OPTIONS as IMPACT_OPTIONS
from hotset.systems.registry import build_system, capabilities_of
from hotset.systems.shade import OPTIONS, SPECS

#: docs/systems/shade.md, impact.md: by default every sample is trained at least once
#: every 10 epochs
WINDOW = 10
#: the PADS systems whose cache serves what is asked for; emul_quiv substitutes, so a
#: floor id may be served by another sample and stay the stalest, taking a floor slot
#: again: the floor then bounds nothing (docs/systems/shade.md)
PADS_SYSTEMS = [spec.name for spec in SPECS if not capabilities_of(spec.name).substitutes]
IMPACT_SYSTEMS = ["impact", "impact_history"]

#: sha256 of :func:`coverage_support.orders_digest` for each :data:`PINNED` entry, computed
#: on commit 0a865d7 (before the default floor), where these systems' defaults were the
#: paper's behaviour: ``python tests/coverage_support.py`` on that tree
PAPER_ORDERS = {
    ("shade", ()): "db7f4a21ce2523683f5961d6f06448f85e0e41cd991af09d5680fd3d0d040391",
    ("shade", (("adaptive", False),)): (
        "a67623547caf54cc264f58139f177d8f7f5e1051141f3e7909ed469405b54dcd"
    ),
    ("sh_app", ()): "5745dbbbbba46008d201b2b92c1aedb65d447b87b54466a90bd1ffc549e2fedd",
    ("emul_quiv", ()): "6ef924dd5e660b09e36b00a2dcb3b55494cbd8258342fe1903f2440ab2f12681",
    ("impact", (("window", 16), ("beta", 3.0))): (
        "8651a6d921902b957c0aa765d2d803eb38956e9ecd6769f37c5f88bb6212e854"
    ),
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


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(IMPACT_SYSTEMS),
    cache_frac=st.floats(0.1, 0.6),
    n=st.integers(40, 240),
    seed=st.integers(0, 2**16),
)
def test_by_default_impact_asks_for_every_id_in_every_window_of_k_epochs(
    name: str, cache_frac: float, n: int, seed: int
) -> None:
    # window=16 < n: ImPACT's selection drops samples (with 1,024 it keeps all of these);
    # beta=3: the easiest are kept with probability ~(1/16)**3, which the paper's rule
    # then leaves unread for long stretches
    orders, _ = drive(
        name, n=n, cache_frac=cache_frac, epochs=2 * WINDOW + 1, seed=seed, window=16, beta=3.0
    )
    # asked for: iCACHE's L-cache, which ImPACT uses, may serve another sample in its place
    assert longest_gap(orders, n) <= WINDOW - 1


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
def test_opting_out_gives_the_papers_orders_exactly(name: str, options: dict[str, object]) -> None:
    paper = PAPER_ORDERS[(name, tuple(options.items()))]
    assert orders_digest(name, **opt_out(name), **options) == paper
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
    impact = {o.name: o for o in IMPACT_OPTIONS["impact"]}["coverage_epochs"]
    assert impact.default == WINDOW and "paper's behaviour" in impact.meaning
    sampler = build_system("impact", n=50, budget=budget, seed=0).sampler
    assert isinstance(sampler, IISSampler)
    assert sampler.guard_note() == (
        "coverage_epochs=10: every sample asked for at least once every 10 epochs "
        "(coverage_epochs=0 is the paper's behaviour)"
    )
