"""ImPACT's two selection rules: the percentile rule (default, iCACHE's) and
``sampler=loss`` (keep-probability proportional to the loss)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli_support import run_cli
from hotset.engine.budget import Budget
from hotset.errors import HotsetError
from hotset.importance.rank_variance import RankTracker
from hotset.samplers import EpochContext
from hotset.samplers.iis import IISSampler
from hotset.samplers.impact import ImpactSampler
from hotset.samplers.loss_keep import keep_probabilities, loss_keep_mask
from hotset.systems.registry import build_system

N = 5000


def _done_tracker(n: int) -> RankTracker:
    """A tracker whose warm-up is over, so that the sampler selects."""
    tracker = RankTracker(np.ones(n, dtype=np.int64), s_bytes=n // 10, max_epochs=2)
    losses = np.random.default_rng(9).exponential(1.0, n)
    for epoch in range(3):
        tracker.observe(epoch, losses + epoch, full_epoch=epoch + 1)
    assert tracker.done
    return tracker


def _sampler(rule: str, seed: int = 3) -> ImpactSampler:
    return ImpactSampler(N, tracker=_done_tracker(N), seed=seed, sampler=rule)


def _losses(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).exponential(1.0, N)


def test_probabilities_are_proportional_to_the_loss_capped_at_one_and_add_up() -> None:
    losses = np.array([0.0, 1.0, 2.0, 4.0, 100.0])
    p = keep_probabilities(losses, 3.0)
    assert p.sum() == pytest.approx(3.0)
    # 100 is capped, then 4 (8/7 of what is left): 0, 1 and 2 share the last 1
    assert p[3:].tolist() == [1.0, 1.0]
    assert p[:3] == pytest.approx([0.0, 1 / 3, 2 / 3])
    assert keep_probabilities(np.zeros(4), 2.0).tolist() == [0.5] * 4  # nothing to weigh by
    assert keep_probabilities(losses, 9.0).tolist() == [1.0] * 5


def test_the_loss_rule_keeps_its_share_favours_hard_ids_and_keeps_unknown_ones() -> None:
    values = _losses()
    values[:50] = np.nan
    coins = np.random.default_rng(1).random(N)
    keep = loss_keep_mask(values, coins, 0.75)
    assert keep[:50].all()  # never trained: always kept
    assert abs(keep[50:].mean() - 0.75) < 0.02
    hard = values[50:] > np.median(values[50:])
    assert keep[50:][hard].mean() > keep[50:][~hard].mean() + 0.2


def test_the_rule_is_an_option_and_the_order_is_pure() -> None:
    losses = _losses()
    ctx = EpochContext(epoch=7, losses=losses)
    loss = _sampler("loss").order(ctx)
    assert np.array_equal(loss, _sampler("loss").order(ctx))  # f(seed, epoch, snapshot)
    assert len(set(loss.tolist())) == len(loss)
    assert abs(len(loss) / N - 1 / 1.33) < 0.03  # 1 / (1 + beta) of the ids
    percentile = _sampler("percentile").order(ctx)
    assert not np.array_equal(loss, percentile)
    # the default is iCACHE's percentile rule, decision for decision
    iis = IISSampler(N, seed=3, warm_up=0, reuse_factor=10**9).order(ctx)
    assert np.array_equal(percentile, iis)
    kept = np.zeros(N, dtype=bool)
    kept[loss] = True
    hard = losses > np.quantile(losses, 0.9)
    easy = losses < np.quantile(losses, 0.1)
    assert kept[hard].mean() > 0.95 and kept[easy].mean() < 0.4


def test_the_impact_systems_take_sampler_and_name_a_bad_value() -> None:
    sizes = np.full(400, 10, dtype=np.int64)
    budget = Budget(capacity_bytes=800, sizes=sizes)
    for name in ("impact", "impact_history", "impact_realtime"):
        system = build_system(name, n=400, budget=budget, seed=0, sampler="loss")
        assert system.sampler.rule == "loss"  # type: ignore[attr-defined]
        assert build_system(name, n=400, budget=budget, seed=0).sampler.rule == "percentile"  # type: ignore[attr-defined]
    with pytest.raises(HotsetError, match=r"sampler.*'rhos'"):
        build_system("impact", n=400, budget=budget, seed=0, sampler="rhos")


def test_hotset_systems_lists_the_sampler_option_with_its_default() -> None:
    code, out = run_cli("systems", "--options", "impact", "--json")
    assert code == 0, out
    rows = {row["name"]: row for row in json.loads(out)}
    assert rows["sampler"]["default"] == "percentile"
    assert "loss" in rows["sampler"]["type"]
