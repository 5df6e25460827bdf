"""ImPACT's cache and order: warm-up with static caching, the static buffer for S,
re-evaluation before the draw, and what impact_history leaves out."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budget_support import check_budget
from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.policies.base import Budget, Outcome
from hotset.policies.impact import ImpactCache, ImpactHistoryCache, ImpactRealtimeCache
from hotset.systems.base import System
from hotset.systems.registry import build_system

N, SIZE, BATCH = 400, 10, 32


def _system(name: str = "impact", frac: float = 0.2, seed: int = 0, **options: object) -> System:
    sizes = np.full(N, SIZE, dtype=np.int64)
    budget = Budget(capacity_bytes=int(frac * N * SIZE), sizes=sizes)
    options = {"window": 64, **options}  # the default window (1024) keeps all of 400 ids
    return build_system(name, n=N, budget=budget, seed=seed, batch_size=BATCH, **options)


def _loss(ids: np.ndarray, epoch: int) -> np.ndarray:
    """Mostly stable difficulty; a tenth of the ids swing from epoch to epoch."""
    base = ((ids * 7919) % 101) / 100.0 + 0.05
    swing = (ids % 10 == 0) * ((ids * 31 + epoch * 17) % 7) / 3.0
    return base + swing


def _run(system: System, epochs: int, *, evaluate: bool = True) -> list[dict[str, object]]:
    planner = Planner(system, n=N, batch_size=BATCH, lag=0)
    evaluated: list[np.ndarray] = []

    def forward(ids: np.ndarray) -> np.ndarray:
        evaluated.append(ids.copy())
        return _loss(ids, 100)

    rows = []
    for epoch in range(epochs):
        evaluated.clear()
        resident_before = system.policy.resident()
        planner.begin(epoch, evaluate=forward if evaluate else None)
        counts = np.zeros(4, dtype=np.int64)
        for plan in planner.plans():
            check_budget(system.policy)
            counts += plan.outcome_counts()
            planner.give(plan.index, plan.served, _loss(plan.served, epoch))
        planner.finish(val_accuracy=None)
        rows.append(
            {
                "requests": len(planner.order),
                "counts": counts,
                "evaluated": np.concatenate(evaluated) if evaluated else np.zeros(0, np.int64),
                "resident_before": resident_before,
            }
        )
    return rows


def test_warm_up_is_full_epochs_with_static_caching_until_s_is_stable() -> None:
    system = _system()
    policy = system.policy
    assert isinstance(policy, ImpactCache)
    rows = _run(system, 10)
    k = policy.tracker.k
    assert k is not None and 3 <= k <= 10, "the warm-up must end on this workload"
    for row in rows[:k]:
        assert row["requests"] == N  # full epochs
    # static caching: the warm-up cache only grows (nothing is ever evicted)
    for before, after in itertools.pairwise(rows[1 : k + 1]):
        assert before["resident_before"] <= after["resident_before"]
    assert all(int(row["requests"]) < N for row in rows[k:])  # then a selection
    # S is 25% of the cache, in the static buffer region, and never leaves it
    s_ids = set(policy.tracker.s_ids.tolist())  # type: ignore[union-attr]
    assert len(s_ids) == int(0.25 * 0.2 * N)
    regions = policy.regions()
    assert regions["s"][1] == int(0.25 * 0.2 * N * SIZE)
    assert policy._s <= s_ids and policy._s
    assert not (set(policy._h) | set(policy._l.items())) & s_ids  # S never enters H or L


def test_buffered_s_is_re_evaluated_before_each_draw_and_history_skips_it() -> None:
    rows = _run(_system(), 10)
    later = [r for r in rows if int(r["requests"]) < N]
    assert later and any(len(r["evaluated"]) for r in later)  # type: ignore[arg-type]
    for r in rows:
        # only samples held by the static buffer are evaluated: no storage read for it
        assert set(r["evaluated"].tolist()) <= r["resident_before"]  # type: ignore[union-attr]
    history = _system("impact_history")
    assert isinstance(history.policy, ImpactHistoryCache)
    assert not history.capabilities.evaluates
    assert all(len(r["evaluated"]) == 0 for r in _run(history, 10))  # type: ignore[arg-type]


def test_realtime_re_evaluates_every_sample_after_the_warm_up_only() -> None:
    system = _system("impact_realtime")
    assert isinstance(system.policy, ImpactRealtimeCache)
    rows = _run(system, 10)
    k = system.policy.tracker.k
    assert k is not None and k < 10
    # the warm-up ends at epoch k's draw, after its (empty) re-evaluation
    assert all(len(r["evaluated"]) == 0 for r in rows[: k + 1])  # type: ignore[arg-type]
    for r in rows[k + 1 :]:
        assert r["evaluated"].tolist() == list(range(N))  # type: ignore[union-attr]


def test_the_evaluation_changes_the_draw() -> None:
    plain, fresh = _run(_system(), 10, evaluate=False), _run(_system(), 10)
    k = next(i for i, r in enumerate(fresh) if int(r["requests"]) < N)
    assert [r["requests"] for r in plain[: k + 1]] == [r["requests"] for r in fresh[: k + 1]]
    assert [r["requests"] for r in plain] != [r["requests"] for r in fresh]


def test_the_rest_of_s_is_loaded_into_the_buffer_and_then_all_of_s_is_evaluated() -> None:
    system = _system()
    policy = system.policy
    assert isinstance(policy, ImpactCache)
    planner = Planner(system, n=N, batch_size=BATCH, lag=0)
    loaded: list[int] = []
    evaluated: list[list[int]] = []

    def forward(ids: np.ndarray) -> np.ndarray:
        evaluated[-1] = ids.tolist()
        return _loss(ids, 100)

    for epoch in range(12):
        evaluated.append([])
        planner.begin(epoch, evaluate=forward)
        for plan in planner.plans():
            extra = set(plan.reads.tolist()) - set(plan.requested.tolist())
            assert extra <= set(plan.puts.tolist())  # read only to be put in the cache
            loaded += sorted(extra)
            planner.give(plan.index, plan.served, _loss(plan.served, epoch))
        planner.finish(val_accuracy=None)
    s_ids = policy.tracker.s_ids
    assert s_ids is not None and loaded
    assert set(loaded) <= set(s_ids.tolist())  # only samples of S, each once
    assert len(loaded) == len(set(loaded))
    assert policy._s == set(s_ids.tolist())  # S fits its buffer: all of it is held
    assert evaluated[-1] == sorted(s_ids.tolist())  # and all of it is re-evaluated


def test_s_hits_come_from_the_buffer_without_replacement() -> None:
    system = _system()
    policy = system.policy
    assert isinstance(policy, ImpactCache)
    _run(system, 10)
    sid = next(iter(policy._s))
    assert policy.access(sid).outcome == Outcome.HIT
    assert sid in policy.to_evaluate().tolist()


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 1000),
    frac=st.sampled_from([0.05, 0.2, 0.5]),
    name=st.sampled_from(["impact", "impact_history"]),
)
def test_the_budget_holds_across_the_three_regions(seed: int, frac: float, name: str) -> None:
    _run(_system(name, frac, seed), 8)  # check_budget after every batch


def test_bad_options_name_the_value() -> None:
    with pytest.raises(HotsetError, match="s_share"):
        _system(s_share=1.0)
    with pytest.raises(HotsetError, match="overlap"):
        _system(overlap=0)
    with pytest.raises(HotsetError, match="bogus"):
        _system(bogus=1)
