"""iCACHE's L-cache loaded from packages: what is packed, when it is read, what it serves."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budget_support import check_budget
from hotset.engine.packages import PACKAGE_BYTES
from hotset.engine.plan import BatchPlan
from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.importance.table import ImportanceTable
from hotset.policies.base import Budget, Outcome
from hotset.policies.icache.packed import ICacheRules, PackedICache
from hotset.policies.icache.packing import Packer
from hotset.samplers.random import RandomSampler
from hotset.systems.base import System

N, SIZE, BATCH = 400, 10, 32


def _system(frac: float = 0.2, *, packaging: str = "dynamic", seed: int = 0) -> System:
    sizes = np.full(N, SIZE, dtype=np.int64)
    budget = Budget(capacity_bytes=int(frac * N * SIZE), sizes=sizes)
    policy = PackedICache(budget, n=N, seed=seed, packaging=packaging)
    return System(
        name="t", sampler=RandomSampler(N, seed=seed), policy=policy, table=ImportanceTable(N)
    )


def _epochs(system: System, epochs: int) -> list[list[BatchPlan]]:
    """Plan ``epochs`` with a fixed difficulty (id-hashed) as every sample's loss."""
    loss = ((np.arange(N) * 7919) % 101) / 100.0 + 0.01
    planner = Planner(system, n=N, batch_size=BATCH, lag=0)
    out = []
    for epoch in range(epochs):
        planner.begin(epoch)
        plans = []
        for plan in planner.plans():
            check_budget(system.policy)
            planner.give(plan.index, plan.served, loss[plan.served])
            plans.append(plan)
        planner.finish(val_accuracy=None)
        out.append(plans)
    return out


def test_the_package_size_is_one_megabyte_or_half_a_small_l_cache() -> None:
    packer = Packer(np.ones(4, np.int64), seed=0, packaging="dynamic", package_bytes=PACKAGE_BYTES)
    assert packer.target(10 * PACKAGE_BYTES) == PACKAGE_BYTES
    assert packer.target(1000) == 500
    assert packer.target(0) == 1


def test_no_packages_before_importance_then_l_is_served_from_packages_only() -> None:
    system = _system()
    policy = system.policy
    assert isinstance(policy, PackedICache)
    epochs = _epochs(system, 3)
    assert all(len(p.unit_reads) == len(p.packs) == 0 for p in epochs[0])  # no H-list yet
    written: set[int] = set()
    subs = 0
    for plans in epochs[1:]:
        for plan in plans:
            written.update(plan.packs.tolist())
            # a package is written no later than the batch that reads it
            assert set(plan.unit_reads.tolist()) <= written
            # no request is served from a package its own batch loads
            served_from_cache = plan.served[plan.outcomes <= Outcome.SUBSTITUTION]
            assert not set(served_from_cache.tolist()) & set(plan.puts.tolist())
            is_sub = plan.outcomes == Outcome.SUBSTITUTION
            assert (plan.served[is_sub] != plan.requested[is_sub]).all()
            subs += int(is_sub.sum())
            # the batch's storage requests: single samples plus one per package read
            assert plan.storage_requests == len(plan.reads) + len(plan.unit_reads)
    assert subs > 0 and written


def test_every_package_of_an_epoch_but_its_last_reaches_the_package_size() -> None:
    system = _system(0.3)
    policy = system.policy
    assert isinstance(policy, PackedICache)
    planner = Planner(system, n=N, batch_size=BATCH, lag=0)
    short = full = 0
    for epoch in range(4):
        planner.begin(epoch)
        target = policy._target
        packed = []
        for plan in planner.plans():
            planner.give(plan.index, plan.served, np.full(len(plan), 1.0) + plan.served % 7)
            packed += plan.packs.tolist()
        planner.finish(val_accuracy=None)
        payload = [int(policy.packer.sizes[policy.layout.members(u)].sum()) for u in packed]  # type: ignore[union-attr]
        full += sum(p >= target for p in payload)
        short += sum(p < target for p in payload[:-1])
    assert full > 0 and short == 0


def test_missed_l_samples_are_packed_first_in_the_next_epoch() -> None:
    system = _system()
    policy = system.policy
    assert isinstance(policy, PackedICache)
    planner = Planner(system, n=N, batch_size=BATCH, lag=0)
    loss = ((np.arange(N) * 7919) % 101) / 100.0 + 0.01
    missed: list[int] = []
    for epoch in range(3):
        planner.begin(epoch)
        before = policy.layout.n_chunks  # type: ignore[union-attr]
        held = policy.resident()  # resident ids are not packed again
        trained: set[int] = set()  # nor ids trained before the package is defined
        defined = False  # a plan's package is defined after its own accesses
        for plan in planner.plans():
            if not defined:
                trained.update(plan.served.tolist())
                defined = policy.layout.n_chunks > before  # type: ignore[union-attr]
            planner.give(plan.index, plan.served, loss[plan.served])
        if epoch == 2:
            first = policy.layout.members(before).tolist()  # type: ignore[union-attr]
            l_missed = [
                s
                for s in dict.fromkeys(missed)
                if policy._is_l(s) and s not in held and s not in trained
            ]
            assert l_missed, "epoch 1 missed no L-sample: the test shows nothing"
            assert first == l_missed[: len(first)]
        missed = list(policy.missed)
        planner.finish(val_accuracy=None)


def test_static_packages_are_made_once_and_reloaded() -> None:
    system = _system(packaging="static")
    policy = system.policy
    assert isinstance(policy, PackedICache)
    epochs = _epochs(system, 4)
    n_packages = policy.layout.n_chunks  # type: ignore[union-attr]
    members = np.concatenate([policy.layout.members(u) for u in range(n_packages)])  # type: ignore[union-attr]
    assert sorted(members.tolist()) == list(range(N))  # every id, once
    packed = [u for plans in epochs for p in plans for u in p.packs.tolist()]
    assert len(packed) == len(set(packed))  # each written once over the run
    read = [u for plans in epochs[2:] for p in plans for u in p.unit_reads.tolist()]
    assert set(read) & {u for plans in epochs[:2] for p in plans for u in p.packs.tolist()}


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    frac=st.sampled_from([0.05, 0.1, 0.3, 0.6]),
    packaging=st.sampled_from(["dynamic", "static"]),
)
def test_the_budget_holds_across_regions_with_packages(
    seed: int, frac: float, packaging: str
) -> None:
    _epochs(_system(frac, packaging=packaging, seed=seed), 3)  # checks after every batch


def test_bad_packaging_options_name_the_value() -> None:
    sizes = np.full(4, 1, dtype=np.int64)
    budget = Budget(capacity_bytes=2, sizes=sizes)
    with pytest.raises(HotsetError, match="'zip'"):
        PackedICache(budget, packaging="zip")
    with pytest.raises(HotsetError, match="package_bytes"):
        PackedICache(budget, package_bytes=0)
    with pytest.raises(HotsetError, match="sizes or n"):
        PackedICache(Budget(capacity_items=2))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"full_fill": 1, "full_epoch": lambda e: True}, "full_fill must be True or False, got 1"),
        ({"full_fill": True}, "full_fill needs full_epoch"),
        ({"l_floor": "yes"}, "l_floor must be True or False, got 'yes'"),
        ({"multijob": None}, "multijob must be True or False, got None"),
        ({"full_epoch": 3}, "full_epoch must be a callable"),
        ({"eligible_above": 0.5}, "eligibility threshold.*got 0.5"),
        ({"probe_requests": -1}, "probe_requests must be an int >= 0, got -1"),
    ],
)
def test_bad_rules_name_the_value(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        ICacheRules(**kwargs)  # type: ignore[arg-type]


def test_rules_reach_the_cache() -> None:
    sizes = np.full(N, SIZE, dtype=np.int64)
    budget = Budget(capacity_bytes=N * SIZE // 5, sizes=sizes)
    rules = ICacheRules(l_floor=True, multijob=True, probe_requests=64)
    policy = PackedICache(budget, n=N, rules=rules)
    assert policy.l_floor and policy.probe_requests == 64 and not policy.full_fill
    assert not PackedICache(budget, n=N).l_floor  # the paper's rules are opt-in
    with pytest.raises(HotsetError, match="rules must be an ICacheRules"):
        PackedICache(budget, n=N, rules={"l_floor": True})  # type: ignore[arg-type]


def _l_requests_read_alone(system: System, plans: list[BatchPlan]) -> tuple[int, int]:
    """(L requests read alone from storage, L requests) in ``plans``."""
    policy = system.policy
    assert isinstance(policy, PackedICache)
    alone = total = 0
    for plan in plans:
        for sid, outcome in zip(plan.requested.tolist(), plan.outcomes.tolist(), strict=True):
            if policy._is_l(sid):
                total += 1
                alone += outcome == Outcome.MISS
    return alone, total


def test_a_package_loads_once_dropping_served_residents_makes_room() -> None:
    """An L-cache still holding a few unserved samples loads the next package when its
    served residents leave room, so the next batch does not run dry and read alone."""
    system = _system(frac=0.2)
    epochs = _epochs(system, 5)
    alone, total = _l_requests_read_alone(system, [p for e in epochs[2:] for p in e])
    assert total > 200
    assert alone <= 0.02 * total, (alone, total)


def test_package_loads_are_counted_as_prefetches_and_their_unused_members_named() -> None:
    system = _system(frac=0.2)
    policy = system.policy
    assert isinstance(policy, PackedICache)
    epochs = _epochs(system, 4)
    admitted = sum(len(p.puts) for e in epochs for p in e if len(p.unit_reads))
    summary = policy.summary()
    assert summary["loaded"] > 0
    assert summary["loaded_bytes"] == SIZE * summary["loaded"]
    assert summary["loaded"] <= admitted  # a package's admissions, nothing else
    waiting = [s for s in policy._waiting if s in policy]
    assert summary["loaded_waiting"] == len(waiting) == len(policy._waiting)
    # a loaded member that leaves the cache before it is served was read for nothing
    before = summary["loaded_unused"]
    victim = next(iter(policy._waiting))
    policy._drop(victim)
    assert policy.summary()["loaded_unused"] == before + 1
    assert policy.summary()["loaded_waiting"] == len(waiting) - 1
