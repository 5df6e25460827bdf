"""iCACHE §III-D in the cache: ``icache[multijob=true]`` keys its heap by the AIV of the
jobs sharing it, given as an input at the epoch boundary; off by default."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hotset.engine.plan import BatchPlan
from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.importance.multijob import JobImportance, relative_importance
from hotset.policies.base import Budget, Outcome
from hotset.policies.icache import ICache
from hotset.systems.base import System
from hotset.systems.registry import build_system
from hotset.torch.checkpoint import load_system_state, system_state

N, SIZE, BATCH = 400, 100, 16


def _heap(cap: int, **kw: object) -> ICache:
    """The H-cache alone (one importance heap over the whole budget)."""
    return ICache(Budget(capacity_items=cap), h_start=1.0, h_share=1.0, **kw)  # type: ignore[arg-type]


def _fill_then_miss(p: ICache, fill: list[int], newcomer: int) -> tuple[int, ...]:
    p.begin_epoch(1)
    for sid in fill:
        assert p.access(sid).admitted
    d = p.access(newcomer)
    assert d.outcome is Outcome.MISS
    return d.evicted


def test_the_jobs_aiv_not_the_own_losses_decides_what_is_evicted() -> None:
    own = np.array([9.0, 1.0, 2.0, 3.0])  # alone, this job would evict id 1 for id 3
    a = JobImportance.from_scores("A", 3.0, [0.0, 5.0, 6.0, 7.0])  # A: id 0 least
    b = JobImportance.from_scores("B", 1.2, [9.0, 0.0, 0.0, 0.0])  # B: not eligible
    alone = _heap(3)
    alone.update_importance(own)
    assert _fill_then_miss(alone, [0, 1, 2], 3) == (1,)
    shared = _heap(3, multijob=True)
    shared.update_importance(own)
    shared.update_jobs([a, b])
    assert _fill_then_miss(shared, [0, 1, 2], 3) == (0,)  # A's least important goes
    assert shared.summary() == {
        "multijob_keys": "aiv",
        "multijob_jobs": 2,
        "multijob_eligible": ["A"],
    }


def test_an_eligible_job_with_more_benefit_outweighs_the_other() -> None:
    a = [0.0, 1.0, 2.0, 3.0]  # A ranks id 3 highest
    b = [3.0, 2.0, 1.0, 0.0]  # B ranks id 0 highest
    for benefit_a, benefit_b, kept in ((4.0, 2.0, 3), (2.0, 4.0, 0)):
        p = _heap(1, multijob=True)
        p.update_jobs(
            [
                JobImportance.from_scores("A", benefit_a, a),
                JobImportance.from_scores("B", benefit_b, b),
            ]
        )
        p.begin_epoch(1)
        p.access(1)
        p.access(0)
        p.access(3)
        assert p.resident() == {kept}  # the favoured job's most important id wins the slot


def test_with_no_eligible_job_the_cache_keys_by_its_own_importance() -> None:
    own = np.array([9.0, 1.0, 2.0, 3.0])
    p = _heap(3, multijob=True, eligible_above=4.0)
    p.update_importance(own)
    p.update_jobs([JobImportance.from_scores("A", 3.0, [0.0, 5.0, 6.0, 7.0])])  # 3 <= 4
    assert _fill_then_miss(p, [0, 1, 2], 3) == (1,)  # as alone
    assert p.summary()["multijob_keys"] == "own"


def test_the_jobs_snapshot_goes_to_the_shadow_heap_until_the_next_epoch() -> None:
    p = _heap(2, multijob=True)
    p.update_importance(np.array([1.0, 2.0, 1.5]))
    p.begin_epoch(1)
    p.access(0)
    p.access(1)
    p.update_jobs([JobImportance.from_scores("A", 2.0, [10.0, 2.0, 1.5])])
    assert p._heap[0] == (1.0, 0)  # the live heap keeps the old keys mid-epoch
    p.begin_epoch(2)
    riv = relative_importance([10.0, 2.0, 1.5])
    assert p._heap[0] == (2.0 * riv[1], 1)


def _build(extra: str = "") -> System:
    sizes = np.full(N, SIZE, dtype=np.int64)
    budget = Budget(capacity_bytes=int(0.2 * N * SIZE), sizes=sizes)
    spec = f"icache[window=64{extra}]"
    return build_system(spec, n=N, budget=budget, seed=1, batch_size=BATCH)


def _loss(ids: np.ndarray, epoch: int) -> np.ndarray:
    return 1.0 + (ids % 5 == 0) * 2.0 + ((ids * 7919 + epoch * 104729) % 97) / 97.0


def _peer(epoch: int) -> JobImportance:
    """Another job on the same data: it finds the ids this job finds easy hard."""
    ids = np.arange(N)
    return JobImportance.from_scores("peer", 2.0 + epoch / 10, -_loss(ids, epoch) + ids % 7)


def _run(
    system: System, epochs: range, *, peers: bool, planner: Planner | None = None
) -> list[list[BatchPlan]]:
    planner = planner or Planner(system, n=N, batch_size=BATCH, lag=0)
    out = []
    for epoch in epochs:
        if peers:  # the jobs' snapshot, read at the boundary as the importance is
            own = system.table.snapshot().scores
            me = JobImportance.from_scores("me", 3.0, own)
            system.policy.update_jobs([me, _peer(epoch)])  # type: ignore[attr-defined]
        planner.begin(epoch)
        plans = []
        for plan in planner.plans():
            planner.give(plan.index, plan.served, _loss(plan.served, epoch))
            plans.append(plan)
        planner.finish(val_accuracy=None)
        out.append(plans)
    return out


def _decisions(run: list[list[BatchPlan]]) -> list[list[list[int]]]:
    return [[p.served.tolist() + p.evicted.tolist() for p in epoch] for epoch in run]


def test_multijob_without_jobs_decides_as_the_default_icache() -> None:
    default = _run(_build(), range(8), peers=False)
    alone = _run(_build(",multijob=true,benefit_probe=0"), range(8), peers=False)
    assert _decisions(alone) == _decisions(default)
    assert "multijob" not in _build().policy.state_dict()  # the default state is unchanged


def test_the_peers_change_the_decisions_and_resume_exactly_from_json_state() -> None:
    alone = _run(_build(",multijob=true,benefit_probe=0"), range(8), peers=False)
    want = _run(_build(",multijob=true,benefit_probe=0"), range(8), peers=True)
    assert _decisions(want) != _decisions(alone)
    first = _build(",multijob=true,benefit_probe=0")
    got = _run(first, range(5), peers=True)
    state = json.loads(json.dumps(system_state(first), default=_plain))
    assert state["policy"]["multijob"]["jobs"][1]["job"] == "peer"
    resumed = _build(",multijob=true,benefit_probe=0")
    load_system_state(resumed, state)
    got += _run(resumed, range(5, 8), peers=True)
    assert _decisions(got) == _decisions(want)


def _plain(value: object) -> object:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.integer | np.floating | np.bool_):
        return value.item()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def test_bad_multijob_options_and_calls_name_the_value() -> None:
    with pytest.raises(HotsetError, match="multijob must be True or False, got 'yes'"):
        _heap(2, multijob="yes")
    with pytest.raises(HotsetError, match=r"threshold.*0\.5"):
        _build(",eligible_above=0.5")
    with pytest.raises(HotsetError, match=r"update_jobs\(\) needs icache\[multijob=true\]"):
        _heap(2).update_jobs([])
    with pytest.raises(HotsetError, match="multijob needs an importance heap"):
        sizes = np.full(N, SIZE, dtype=np.int64)
        build_system(
            "icache_iis_lru[multijob=true]",
            n=N,
            budget=Budget(capacity_bytes=N * SIZE, sizes=sizes),
            seed=0,
        )
    p = _heap(2, multijob=True)
    p.update_importance(np.ones(3))
    with pytest.raises(HotsetError, match="cover 4 items, this job's importance 3"):
        p.update_jobs([JobImportance.from_scores("A", 2.0, np.ones(4))])
    with pytest.raises(HotsetError, match="state: missing 'multijob'"):
        _heap(2, multijob=True).load_state_dict(_heap(2).state_dict())


def test_the_benefit_probe_plans_each_epochs_first_batches_without_the_cache() -> None:
    """``benefit_probe=2``: batches 0 and 1 of every epoch read everything from storage
    and change nothing cached (T_cacheless), the rest use the cache (T_cache)."""
    run = _run(_build(",multijob=true,benefit_probe=2"), range(7), peers=True)
    for epoch in run:
        for plan in epoch[:2]:
            assert (plan.outcomes == Outcome.MISS).all()
            assert len(plan.admitted) == 0 and len(plan.evicted) == 0
        assert len(epoch[0].unit_reads) == 0  # no package loaded after a probe batch
    later = [p for epoch in run[1:] for p in epoch[2:]]
    assert any((p.outcomes == Outcome.HIT).any() for p in later)
    # without multijob the probe is off: the same option changes nothing
    plain = _run(_build(",benefit_probe=2"), range(7), peers=False)
    assert _decisions(plain) == _decisions(_run(_build(), range(7), peers=False))


def test_a_resume_mid_probe_plans_the_rest_of_the_probe() -> None:
    def fresh() -> ICache:
        return _heap(3, multijob=True, probe_requests=4)

    p = fresh()
    p.update_importance(np.array([5.0, 1.0, 3.0, 0.5, 9.0, 2.0]))
    p.begin_epoch(1)
    assert [p.access(s).outcome for s in (0, 1)] == [Outcome.MISS, Outcome.MISS]
    q = fresh()
    q.load_state_dict(json.loads(json.dumps(p.state_dict(), default=_plain)))
    rest = (2, 3, 0, 4, 5, 0)  # two more probe requests, then the cache
    got_p = [p.access(s) for s in rest]
    got_q = [q.access(s) for s in rest]
    assert got_p == got_q
    assert [d.admitted for d in got_p[:2]] == [False, False]  # still probing
    assert got_p[2].admitted and got_p[5].outcome is Outcome.HIT
    with pytest.raises(HotsetError, match="benefit_probe must be a number of mini-batches"):
        _build(",multijob=true,benefit_probe=1")


def test_other_jobs_key_the_heap_but_the_h_list_stays_the_jobs_own() -> None:
    """Which requests are L -- and so may be served by a substitute, another id trained
    in their place -- follows this job's own importance; the jobs' AIV keys only what
    the H-cache keeps (its heap). Before, a forged entry re-drew the H-list."""
    own = np.linspace(0.0, 1.0, N)  # this job: the higher the id, the more important
    forged = JobImportance("forged", 999.0, np.linspace(1.0, 0.0, N))  # the reverse
    planned = np.random.default_rng(0).permutation(N)
    policies = []
    for jobs in ([], [forged]):
        p = ICache(Budget(capacity_items=N // 4), h_share=0.5, multijob=True)
        p.update_importance(own)
        p.update_jobs(jobs)
        p.begin_epoch(1, planned)
        policies.append(p)
    alone, attacked = policies
    assert alone._hot == attacked._hot == set(range(N // 2, N))
    assert attacked.keys.scores is not None and attacked.keys.scores[0] > attacked.keys.scores[-1]


def test_what_the_jobs_give_is_capped_and_the_state_does_not_grow_with_them() -> None:
    from hotset.importance.multijob import MAX_JOBS

    riv = np.linspace(0.0, 1.0, N)
    huge = [JobImportance(f"h{i}", 1e308, riv) for i in range(3)]  # their sum was inf
    p = _heap(4, multijob=True)
    p.update_jobs(huge)
    assert p.keys.next is not None and np.isfinite(p.keys.next).all()
    sizes = {}
    for count in (1, MAX_JOBS, 1000):
        q = _heap(4, multijob=True)
        q.update_importance(riv)
        q.update_jobs([JobImportance(f"j{i:04d}", 2.0, riv) for i in range(count)])
        sizes[count] = len(json.dumps(q.state_dict()["multijob"], default=_plain))
        assert q.summary()["multijob_jobs"] == min(count, MAX_JOBS)
    assert sizes[1000] == sizes[MAX_JOBS]  # at most MAX_JOBS kept
    assert sizes[MAX_JOBS] - sizes[1] < 40 * MAX_JOBS  # names and benefits: no RIV per job
