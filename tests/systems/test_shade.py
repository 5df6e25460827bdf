"""SHADE and its comparison systems: composition, options, and a small live run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hotset.errors import HotsetError
from hotset.importance.scorers import BatchLossScorer, LogRankScorer, LossScorer
from hotset.policies.app import APP
from hotset.policies.base import Budget, Outcome
from hotset.policies.lfu import LFU
from hotset.policies.lru import LRU
from hotset.policies.shade_variants import (
    FillKeep,
    Priority,
    PriorityLFU,
    RandomEvict,
    SubstituteFromCache,
)
from hotset.samplers.pads import PADSSampler
from hotset.systems.base import System
from hotset.systems.shade import SPECS

EXPECTED = {
    "shade": (APP, LogRankScorer, True),
    "sh_pqlfu": (PriorityLFU, BatchLossScorer, False),
    "sh_pq": (Priority, BatchLossScorer, False),
    "sh_lru": (LRU, BatchLossScorer, False),
    "sh_lfu": (LFU, BatchLossScorer, False),
    "sh_rand": (RandomEvict, BatchLossScorer, False),
    "sh_app": (APP, BatchLossScorer, False),
    "emul_coor": (FillKeep, LossScorer, False),
    "emul_quiv": (SubstituteFromCache, LossScorer, False),
}
SPEC = {spec.name: spec for spec in SPECS}


def _build(name: str, n: int = 300, items: int = 30, **options: object) -> System:
    return SPEC[name].build(
        n=n, budget=Budget(capacity_items=items), seed=4, batch_size=16, **options
    )


def test_every_system_is_listed_once_with_a_source() -> None:
    assert [spec.name for spec in SPECS] == list(EXPECTED)
    for spec in SPECS:
        assert spec.source.startswith("SHADE FAST'23 §") and spec.summary


@pytest.mark.parametrize("name", list(EXPECTED))
def test_composition(name: str) -> None:
    policy_cls, scorer_cls, pads = EXPECTED[name]
    system = _build(name)
    assert system.name == name
    assert type(system.policy) is policy_cls
    assert type(system.scorer) is scorer_cls
    assert isinstance(system.sampler, PADSSampler) and system.sampler.pads is pads
    assert system.table.n == 300 and not system.weighted
    assert system.options["batch_size"] == 16


def test_shade_defaults_and_options() -> None:
    system = _build("shade")
    assert isinstance(system.sampler, PADSSampler)
    assert system.sampler.rep_factor == 3.0 and system.sampler.ls_init_frac == 0.01
    tuned = _build("shade", rep_factor=2.5, ls_init_frac=0.05)
    assert isinstance(tuned.sampler, PADSSampler)
    assert tuned.sampler.rep_factor == 2.5 and tuned.sampler.ls_init_frac == 0.05
    assert tuned.options["rep_factor"] == 2.5
    with pytest.raises(HotsetError, match="rep_factor"):
        _build("shade", rep_factor=0.3)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_unknown_options_are_named(name: str) -> None:
    with pytest.raises(HotsetError, match="warp_speed"):
        _build(name, warp_speed=9)
    if name != "shade":
        with pytest.raises(HotsetError, match="rep_factor"):
            _build(name, rep_factor=2)


def test_feedback_in_any_order_scores_each_id_by_its_own_loss() -> None:
    """The positional bug of SHADE's public code, caught end to end.

    One step's (id, loss) pairs are fed in the order the loader yielded them,
    which differs from the sampler's raw draw; each id must end with the rank
    score of its own loss, in the table and in APP's ghost table alike.
    """
    system = _build("shade", n=100)
    order = system.begin_epoch(0)
    batch = order[:16]
    ids = np.unique(batch)[:12]
    losses = np.linspace(0.1, 2.0, len(ids))[::-1].copy()  # highest loss on the lowest id
    perm = np.random.default_rng(0).permutation(len(ids))
    system.feedback(ids[perm], losses[perm], epoch=0)
    expected = np.log(np.argsort(np.argsort(losses)) + 10.0)
    scores = system.table.snapshot().scores
    assert np.allclose(scores[ids], expected)
    untouched = np.setdiff1d(np.arange(100), ids)
    assert (scores[untouched] == 1.0).all()
    assert isinstance(system.policy, APP)
    assert [system.policy.key(int(i))[0] for i in ids] == pytest.approx(expected.tolist())


def _live(
    name: str, epochs: int = 6, n: int = 400, items: int = 40, **options: object
) -> dict[str, float]:
    """A small live run with fixed per-sample difficulties and a falling loss."""
    system = _build(name, n=n, items=items, **options)
    difficulty = np.random.default_rng(7).gamma(0.5, 1.0, size=n)
    counts = dict.fromkeys(Outcome, 0)
    lengths = set()
    for epoch in range(epochs):
        order = system.begin_epoch(epoch)
        lengths.add(len(order))
        epoch_losses = []
        for start in range(0, len(order), 16):
            decisions = [system.access(int(sid)) for sid in order[start : start + 16]]
            budget = system.policy.budget
            assert budget.fits(system.policy.used_bytes, system.policy.used_items)
            for d in decisions:
                counts[d.outcome] += 1
            served = np.array([d.served for d in decisions], dtype=np.int64)
            losses = difficulty[served] * 0.8**epoch + 0.01
            epoch_losses.append(losses.mean())
            system.feedback(served, losses, epoch=epoch)
        system.end_epoch(train_loss=float(np.mean(epoch_losses)), val_accuracy=None)
    assert lengths == {n}
    total = sum(counts.values())
    return {o.name: counts[o] / total for o in Outcome}


def test_shade_beats_its_ablations_on_a_skewed_workload() -> None:
    # the paper's claim (§6.2), so the paper's behaviour: no coverage floor
    shade = _live("shade", coverage_floor=0)
    ablation = _live("sh_app", coverage_floor=0)
    quiver = _live("emul_quiv", coverage_floor=0)
    assert shade["SUBSTITUTION"] == 0.0
    assert shade["HIT"] > 2 * ablation["HIT"]
    assert quiver["SUBSTITUTION"] > 0
    assert math.isclose(sum(quiver.values()), 1.0)


def test_same_seed_same_run() -> None:
    assert _live("shade", epochs=3) == _live("shade", epochs=3)


def test_registry_builds_shade() -> None:
    from hotset.systems.registry import build_system, system_names

    assert set(EXPECTED) <= set(system_names())
    system = build_system("shade", n=50, budget=Budget(capacity_items=5), seed=1)
    assert isinstance(system.policy, APP)
