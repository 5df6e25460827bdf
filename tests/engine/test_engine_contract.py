"""The contract every registered policy and system keeps, through the one engine.

Parametrised over the registries (plus the test-only chunked systems), so a
system is held to it the day it is registered: budget invariants after every
access, ``replay`` equal to ``access``, exact resumption from JSON state at
three cut points, and the loader making the engine's decisions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from engine_support import (
    build,
    check_budget,
    checked,
    json_round_trip,
    loss_of,
    make_layout,
    run_epochs,
)

from chunked_system import (
    TEST_SYSTEMS,
    ChunkLRU,
    ChunkLRUPrefetch,
    ChunkLRUWhole,
    SplitLRU,
    registered,
)
from hotset.engine.planner import Planner
from hotset.policies.base import Budget, Outcome, Policy
from hotset.policies.registry import make_policy, policy_names
from hotset.systems.registry import system_names

SYSTEMS = [*system_names(), *TEST_SYSTEMS]
N, BATCH = 64, 8


def _sizes(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(10, 60, N).astype(np.int64)


@pytest.mark.parametrize("name", SYSTEMS)
def test_budget_holds_after_every_access_and_the_cache_tracks_the_policy(name: str) -> None:
    sizes = _sizes(1)
    system = build(name, n=N, sizes=sizes, frac=0.3, seed=2, batch_size=BATCH)
    policy = system.policy
    if system.capabilities.needs_future:
        future = [system.sampler.order(_ctx(e)) for e in range(3)]
        policy.set_future(np.concatenate(future))
    checked(policy)
    planner = Planner(system, n=N, batch_size=BATCH, lag=1)
    cache: set[int] = set()
    outcomes: set[int] = set()
    for epoch in range(3):
        planner.begin(epoch)
        for plan in planner.plans():
            cache -= set(plan.deletes.tolist())
            cache |= set(plan.puts.tolist())
            outcomes |= set(plan.outcomes.tolist())
            # a partial unit read is one request for all the ids it brings
            assert plan.storage_requests == len(plan.reads) - plan.grouped + len(
                plan.read_groups
            ) + len(plan.unit_reads) + len(plan.prefetch)
            assert plan.storage_bytes >= int(sizes[plan.reads].sum())
            if system.capabilities.uses_budget:
                assert cache == set(policy.cache_ids())
                unit_sizes = make_layout(sizes, 8).chunk_sizes
                held = sum(int(sizes[c]) if c < N else int(unit_sizes[c - N]) for c in cache)
                assert held <= policy.budget.capacity_bytes
            else:
                assert not cache
            planner.give(plan.index, plan.served, loss_of(plan.served, epoch))
        planner.finish(val_accuracy=0.5)
        check_budget(policy)
    assert outcomes  # something was decided


def _ctx(epoch: int):  # type: ignore[no-untyped-def]
    from hotset.samplers.base import EpochContext

    return EpochContext(epoch=epoch)


_TEST_POLICIES: tuple[type[Policy], ...] = (ChunkLRU, ChunkLRUPrefetch, ChunkLRUWhole, SplitLRU)


def _policies() -> list[str]:
    return [*policy_names(), *(c.name for c in _TEST_POLICIES)]


def _make_policy(name: str, budget: Budget, layout: object) -> Policy:
    classes: dict[str, type[Policy]] = {c.name: c for c in _TEST_POLICIES}
    policy = classes[name](budget, seed=4) if name in classes else make_policy(name, budget, seed=4)
    assert policy.capabilities.regions == (len(policy.regions()) > 1)
    policy.attach_layout(layout)  # type: ignore[arg-type]
    return policy


@pytest.mark.parametrize("name", _policies())
def test_replay_equals_access(name: str) -> None:
    sizes = _sizes(3)
    rng = np.random.default_rng(5)
    trace = np.concatenate([rng.permutation(N) for _ in range(3)]).astype(np.int64)
    budget = Budget(capacity_bytes=int(0.3 * sizes.sum()), sizes=sizes)
    layout = make_layout(sizes, 8)
    fast, slow = _make_policy(name, budget, layout), _make_policy(name, budget, layout)
    if fast.capabilities.needs_future:
        fast.set_future(trace)
        slow.set_future(trace)
    got = fast.replay(trace)
    want = [int(slow.access(int(s)).outcome) for s in trace.tolist()]
    assert got.tolist() == want
    assert fast.resident() == slow.resident()


CUTS = ("epoch_start", "mid_epoch", "epoch_end")


def _resumable() -> list[str]:
    """Every system but the offline bounds, which are handed the whole future up front."""
    out = []
    for name in SYSTEMS:
        with registered():
            probe = build(name, n=N, sizes=_sizes(0), frac=0.3, seed=0, batch_size=BATCH)
        if not probe.capabilities.needs_future:
            out.append(name)
    return out


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("name", _resumable())
def test_resumes_exactly_from_json_state(name: str, cut: str) -> None:
    from hotset.torch.loader import load_system_state, system_state

    sizes = _sizes(6)
    lag = 1
    # the uninterrupted run
    a = build(name, n=N, sizes=sizes, frac=0.3, seed=7, batch_size=BATCH)
    pa = Planner(a, n=N, batch_size=BATCH, lag=lag)
    want = run_epochs(a, pa, range(3))

    # the interrupted one: epoch 0, then epoch 1 up to the cut, then a checkpoint
    b = build(name, n=N, sizes=sizes, frac=0.3, seed=7, batch_size=BATCH)
    pb = Planner(b, n=N, batch_size=BATCH, lag=lag)
    got = run_epochs(b, pb, range(1))
    start = json_round_trip(system_state(b))
    pb.begin(1)
    cut_at = {"epoch_start": 0, "mid_epoch": pb.n_batches // 2, "epoch_end": pb.n_batches}[cut]
    for _ in range(cut_at):
        plan = pb.plan_next()
        if b.capabilities.learns:
            pb.give(plan.index, plan.served, loss_of(plan.served, 1))
    got += pb.log.rows()
    fb = json_round_trip(pb.feedback_state())

    # restore into a fresh system: the epoch's start state, then its first batches re-planned
    c = build(name, n=N, sizes=sizes, frac=0.3, seed=7, batch_size=BATCH)
    load_system_state(c, start)
    pc = Planner(c, n=N, batch_size=BATCH, lag=lag)
    pc.begin(1)
    from hotset.engine.feedback import Feedback

    feedback = [
        Feedback(int(t), np.asarray(i, dtype=np.int64), np.asarray(v, dtype=np.float64))
        for t, i, v in zip(fb["tags"], fb["ids"], fb["losses"], strict=True)
    ]
    pc.replay(cut_at, feedback, [int(x) for x in fb["applied_at"]])
    assert pc.log.rows() == pb.log.rows()  # the replay re-made the same decisions
    done = len(pc.log.rows())
    for plan in pc.plans():
        if c.capabilities.learns:
            pc.give(plan.index, plan.served, loss_of(plan.served, 1))
    got += pc.log.rows()[done:]
    pc.finish(val_accuracy=None)
    got += run_epochs(c, pc, range(2, 3))
    assert got == want


def test_the_contract_can_fail() -> None:
    """A policy holding more than its budget is caught by the access after which it does."""
    sizes = _sizes(8)
    system = build("lru", n=N, sizes=sizes, frac=0.3, seed=0, batch_size=BATCH)
    checked(system.policy)
    system.begin_epoch(0)
    for sid in range(4):
        system.policy.access(sid)
    system.policy.budget = Budget(capacity_bytes=1, sizes=sizes)  # shrunk behind its back
    with pytest.raises(AssertionError, match="over"):
        system.policy.access(0)  # a hit: nothing is evicted, the cache stays over budget


@pytest.mark.parametrize("name", SYSTEMS)
def test_the_loader_makes_the_engines_decisions(packed_dir: Path, name: str) -> None:
    import hotset
    from hotset.systems.registry import build_system

    data = hotset.open_dataset(packed_dir, decode="bytes")
    manifest = data.manifest
    sizes = np.asarray(manifest.sizes, dtype=np.int64)
    capacity = int(0.3 * sizes.sum())
    twin = build_system(
        name,
        n=len(manifest),
        budget=Budget(capacity_bytes=capacity, sizes=sizes),
        seed=3,
        batch_size=16,
        layout=data.layout,
    )
    if not twin.capabilities.runs_in_loader:
        with pytest.raises(Exception, match="simulator"):
            hotset.loader(data, system=name, cache=capacity, batch_size=16, seed=3)
        return
    with hotset.loader(
        data, system=name, cache=capacity, batch_size=16, num_workers=2, prefetch_factor=1, seed=3
    ) as loader:
        planner = Planner(twin, n=len(manifest), batch_size=16, lag=loader.lag, sizes=sizes)
        for epoch in range(2):
            loader.set_epoch(epoch)
            served = []
            for _x, _y, ids, _w in loader:
                loader.update(ids, loss_of(ids.numpy(), epoch))
                served += ids.tolist()
            want = run_epochs(twin, planner, range(epoch, epoch + 1))
            assert loader.decisions().rows() == want, f"epoch {epoch}"
            assert served == [row[2] for row in want]
            assert {row[1] for row in want} <= {int(o) for o in Outcome}


@pytest.mark.parametrize("name", _policies())
def test_a_batch_decision_equals_access_by_access(name: str) -> None:
    """Where the planner may decide a whole batch at once, it decides as access does."""
    from hotset.engine.decide import batch_access

    sizes = _sizes(9)
    budget = Budget(capacity_bytes=int(0.3 * sizes.sum()), sizes=sizes)
    layout = make_layout(sizes, 8)
    batched, single = _make_policy(name, budget, layout), _make_policy(name, budget, layout)
    decide = batch_access(batched)
    if decide is None:
        assert name != "lru"  # the fast path exists, and this test exercises it
        return
    rng = np.random.default_rng(10)
    for _ in range(3):
        ids = rng.integers(0, N, 40).tolist()
        outcomes, admitted, evictions = decide(ids)
        want = [single.access(s) for s in ids]
        assert list(outcomes) == [int(d.outcome) for d in want]
        assert admitted == [d.admitted for d in want]
        assert evictions == {j: d.evicted for j, d in enumerate(want) if d.evicted}
        assert batched.resident() == single.resident()
        assert (batched.used_bytes, batched.used_items) == (single.used_bytes, single.used_items)
