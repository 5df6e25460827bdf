"""iCACHE's rules hotset offers as options: full epochs fill without eviction
(``full_fill``) and an L-cache never below one package (``l_floor``).

Both are off by default (the committed figures keep their decisions); these tests
drive the ``icache`` system through the engine's planner, as every driver does.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from budget_support import check_budget
from hotset.engine.plan import BatchPlan
from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.policies.base import Budget, Outcome
from hotset.policies.icache import ICache
from hotset.systems.base import System
from hotset.systems.registry import build_system
from hotset.torch.checkpoint import load_system_state, system_state

N, SIZE, BATCH = 400, 100, 16
#: IIS's window is 64 here (the first window of ids is always kept), so selection
#: epochs (5, 7, 8) read fewer than all; epochs 0-4 and 6 are full
SPEC = "icache[window=64{extra}]"


def _build(extra: str = "", frac: float = 0.2) -> System:
    sizes = np.full(N, SIZE, dtype=np.int64)
    budget = Budget(capacity_bytes=int(frac * N * SIZE), sizes=sizes)
    return build_system(SPEC.format(extra=extra), n=N, budget=budget, seed=1, batch_size=BATCH)


def _loss(ids: np.ndarray, epoch: int) -> np.ndarray:
    """Hard samples stay hard, with some epoch-to-epoch noise: the H-list moves a little."""
    return 1.0 + (ids % 5 == 0) * 2.0 + ((ids * 7919 + epoch * 104729) % 97) / 97.0


def _run(system: System, epochs: range, planner: Planner | None = None) -> list[list[BatchPlan]]:
    planner = planner or Planner(system, n=N, batch_size=BATCH, lag=0)
    out = []
    for epoch in epochs:
        planner.begin(epoch)
        plans = []
        for plan in planner.plans():
            check_budget(system.policy)  # never over budget, regions within their caps
            planner.give(plan.index, plan.served, _loss(plan.served, epoch))
            plans.append(plan)
        planner.finish(val_accuracy=None)
        out.append(plans)
    return out


def _plain(value: object) -> object:
    """numpy values as a checkpoint's JSON would hold them."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.integer | np.floating | np.bool_):
        return value.item()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def _count(plans: list[BatchPlan], what: str) -> int:
    if what == "substitutions":
        return sum(int((p.outcomes == Outcome.SUBSTITUTION).sum()) for p in plans)
    return sum(len(getattr(p, what)) for p in plans)


def test_a_full_epoch_fills_without_eviction_or_substitution_under_full_fill() -> None:
    """Epoch 6 is full (6 % 3 == 0): the authors' rule evicts nothing, loads no package,
    substitutes nothing (every sample trained); the default heap and L-cache do all three."""
    default = _run(_build(), range(8))
    rule = _run(_build(",full_fill=true"), range(8))
    assert _count(default[6], "evicted") > 0 and _count(default[6], "substitutions") > 0
    assert _count(rule[6], "evicted") == 0
    assert _count(rule[6], "substitutions") == 0
    assert _count(rule[6], "unit_reads") == 0  # no package loaded
    served = np.sort(np.concatenate([p.served for p in rule[6]]))
    assert np.array_equal(served, np.arange(N))  # a full epoch trains every sample once
    # warm-up epochs 1-4 are full too: the caches keep what epoch 0 filled them with
    assert _count(rule[1], "evicted") == 0 < _count(default[1], "evicted")
    # selection epochs still use the heap and substitution
    assert _count(rule[7], "substitutions") > 0


def test_full_fill_resumes_exactly_from_json_state_across_a_full_epoch() -> None:
    """The state a checkpoint takes at a full epoch's start restores the rule with it."""
    want = _run(_build(",full_fill=true"), range(8))
    first = _build(",full_fill=true")
    got = _run(first, range(6))
    state = json.loads(json.dumps(system_state(first), default=_plain))
    resumed = _build(",full_fill=true")
    load_system_state(resumed, state)
    got += _run(resumed, range(6, 8))
    for a, b in zip(got, want, strict=True):
        assert [p.served.tolist() for p in a] == [p.served.tolist() for p in b]
        assert [p.evicted.tolist() for p in a] == [p.evicted.tolist() for p in b]


def test_the_l_cache_keeps_one_whole_package_under_l_floor() -> None:
    """A 3,000-byte package: by default the L-cache gets the 30% of 8,000 bytes its
    traffic earns (2,400) and packages shrink to half of it; with ``l_floor`` the L-cache
    holds a whole package and a package is the full 3,000 bytes."""
    default = _build(",package_bytes=3000")
    floor = _build(",package_bytes=3000,l_floor=true")
    _run(default, range(8))
    _run(floor, range(8))
    assert default.policy.cap_l < 3000  # type: ignore[attr-defined]
    assert default.policy.summary()["package_bytes"] < 3000
    assert floor.policy.cap_l >= 3000  # type: ignore[attr-defined]
    assert floor.policy.summary()["package_bytes"] == 3000
    assert floor.policy.summary()["loaded"] > 0


def test_the_l_floor_never_takes_more_than_half_the_budget() -> None:
    """A package larger than the budget: the L-cache stops at half of it."""
    system = _build(",package_bytes=1000000,l_floor=true")
    _run(system, range(6))
    policy = system.policy
    assert policy.cap_l == policy.total // 2  # type: ignore[attr-defined]


def test_full_fill_needs_the_samplers_full_epoch_rule() -> None:
    with pytest.raises(HotsetError, match="full_fill needs full_epoch"):
        ICache(Budget(capacity_items=4), full_fill=True)
    with pytest.raises(HotsetError, match="full_fill must be True or False"):
        ICache(Budget(capacity_items=4), full_fill=1, full_epoch=lambda e: True)  # type: ignore[arg-type]
