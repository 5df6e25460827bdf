"""iCACHE systems: composition, options, and a small run that shows IIS reading less."""

from __future__ import annotations

import numpy as np
import pytest

from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.importance.scorers import LossScorer
from hotset.policies.base import Budget, Outcome
from hotset.policies.icache import ICache
from hotset.policies.icache.packed import PackedICache
from hotset.policies.lru import LRU
from hotset.samplers.iis import IISSampler
from hotset.systems.base import System
from hotset.systems.icache import SPECS
from hotset.systems.registry import build_system, system_names

SPEC = {spec.name: spec for spec in SPECS}
NAMES = ("icache", "icache_iis_lru", "icache_h", "icache_st_hc", "icache_static_pack")


def _build(name: str, n: int = 3000, frac: float = 0.2, **options: object) -> System:
    return SPEC[name].build(n=n, budget=Budget(capacity_items=int(frac * n)), seed=1, **options)


def test_every_variant_is_registered_and_composed() -> None:
    assert set(NAMES) <= set(system_names())
    for name in NAMES:
        system = _build(name)
        assert isinstance(system.sampler, IISSampler)
        assert isinstance(system.scorer, LossScorer)
        want = {"icache_iis_lru": LRU, "icache_h": ICache}.get(name, PackedICache)
        assert type(system.policy) is want
    assert _build("icache_static_pack").policy.packer.static  # type: ignore[attr-defined]
    assert not _build("icache").policy.packer.static  # type: ignore[attr-defined]
    assert _build("icache_st_hc").policy.substitute_to == "h"  # type: ignore[attr-defined]
    h_only = _build("icache_h").policy
    assert h_only.regions()["l"][1] == 0 and h_only.h_share == 1.0  # type: ignore[attr-defined]


def test_options_are_validated_by_name() -> None:
    with pytest.raises(HotsetError, match="bogus"):
        _build("icache", bogus=1)
    with pytest.raises(HotsetError, match="beta"):
        _build("icache", beta=-1)
    assert _build("icache", beta=0.5).sampler.beta == 0.5  # type: ignore[attr-defined]


def run(system: System, n: int, epochs: int) -> list[dict[str, int]]:
    """Plan every batch (packages load between batches), with a fixed difficulty as loss."""
    difficulty = np.random.default_rng(0).exponential(1.0, n)
    planner = Planner(system, n=n, batch_size=64, lag=0)
    rows = []
    for epoch in range(epochs):
        planner.begin(epoch)
        counts = np.zeros(4, dtype=np.int64)
        packages = 0
        for plan in planner.plans():
            counts += plan.outcome_counts()
            packages += len(plan.unit_reads)
            planner.give(plan.index, plan.served, difficulty[plan.served])
        planner.finish(val_accuracy=None)
        rows.append(
            {
                "reads": int(counts[Outcome.MISS]),
                "hits": int(counts[Outcome.HIT]),
                "subs": int(counts[Outcome.SUBSTITUTION]),
                "trained": len(planner.order),
                "packages": packages,
            }
        )
    return rows


def test_iis_reads_fewer_samples_outside_full_epochs_and_l_substitutes() -> None:
    n = 3000
    rows = run(_build("icache", n), n, 9)
    assert all(r["trained"] == n for e, r in enumerate(rows) if e in (0, 1, 2, 3, 4, 6))
    for e in (5, 7, 8):
        assert rows[e]["trained"] < 0.85 * n
    assert sum(r["subs"] for r in rows) > 0
    assert sum(r["packages"] for r in rows) > 0  # the L-cache is filled by package reads
    lru = run(_build("icache_iis_lru", n), n, 9)
    assert [r["trained"] for r in lru] == [r["trained"] for r in rows]  # same sampler
    assert sum(r["subs"] for r in lru) == 0


@pytest.mark.parametrize(
    "name", ["icache", "icache_st_hc", "impact", "impact_history", "impact_realtime"]
)
def test_lookahead_is_on_by_default_and_the_papers_rule_is_an_option(name: str) -> None:
    budget = Budget(capacity_bytes=100, sizes=np.full(50, 10, dtype=np.int64))
    on = build_system(name, n=50, budget=budget, seed=0)
    off = build_system(name, n=50, budget=budget, seed=0, lookahead=False)
    assert isinstance(on.policy, ICache) and isinstance(off.policy, ICache)
    assert on.policy.lookahead and not off.policy.lookahead
