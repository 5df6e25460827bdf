"""Scout's rounds (``serve=rounds``, the default): the sampler's set arranged by chunk,
each chunk's selected members one ranged request, the rest of the cache static."""

from __future__ import annotations

import collections
import json

import numpy as np
import pytest

from budget_support import check_budget
from hotset.engine.budget import Budget
from hotset.engine.outcome import Outcome
from hotset.engine.planner import Planner
from hotset.policies.scout.rounds import RoundPlan, ScoutRounds, arrange, cuts_for
from hotset.systems.registry import build_system
from layout_support import make_layout

N, CHUNK, BATCH = 1024, 64, 32


def _losses(ids: np.ndarray, epoch: int) -> np.ndarray:
    return ((ids * 2654435761 + epoch * 40503) % 1000) / 1000.0 + 0.1


def _planner(spec: str, frac: float, *, chunk: int = CHUNK, seed: int = 0) -> Planner:
    sizes = np.random.default_rng(seed).integers(100, 300, N).astype(np.int64)
    system = build_system(
        spec,
        n=N,
        budget=Budget(capacity_bytes=int(frac * sizes.sum()), sizes=sizes),
        seed=seed,
        batch_size=BATCH,
        layout=make_layout(sizes, chunk, seed=3),
    )
    return Planner(system, n=N, batch_size=BATCH, lag=0, sizes=sizes)


def _epoch(planner: Planner, epoch: int) -> dict[str, object]:
    held = planner.system.policy.resident()
    planner.begin(epoch)
    policy = planner.system.policy
    assert isinstance(policy, ScoutRounds) and policy.layout is not None
    chunk_of = np.asarray(policy.layout.chunk_of)
    reads: collections.Counter[int] = collections.Counter()
    groups: collections.Counter[int] = collections.Counter()
    requests = nbytes = 0
    for plan in planner.plans():
        check_budget(policy)
        assert (plan.served == plan.requested).all()  # no substitution: the arranged order
        assert not (plan.outcomes == Outcome.SUBSTITUTION).any()
        assert plan.storage_bytes == int(planner.sizes[plan.reads].sum())  # members only
        for u, ids in plan.read_groups.items():
            assert (chunk_of[ids] == u).all()
            groups[u] += 1
        reads.update(plan.reads.tolist())
        requests += plan.storage_requests
        nbytes += plan.storage_bytes
        planner.give(plan.index, plan.served, _losses(plan.served, epoch))
    planner.finish(val_accuracy=None)
    assert policy.plan is not None
    return {
        "order": planner.order,
        "reads": reads,
        "groups": groups,
        "requests": requests,
        "bytes": nbytes,
        "static": policy.plan.static,
        "chunk_of": chunk_of,
        "held": held,
    }


def test_each_chunk_is_read_once_an_epoch_and_static_chunks_once_for_good() -> None:
    planner = _planner("scout", 0.4)
    first, second = _epoch(planner, 0), _epoch(planner, 1)
    static = first["static"]
    assert static, "a 40% cache keeps static chunks beside the stock"
    chunks = 16
    for got in (first, second):
        assert max(got["reads"].values()) == 1  # no id read twice in an epoch
        assert sorted(got["order"].tolist()) == list(range(N))  # epoch 0, 1: full epochs
        # a stream chunk: ONE ranged request an epoch for all its members
        assert all(got["groups"][c] == 1 for c in range(chunks) if c not in static)
    # static chunks: read in the first epoch only, then exact hits
    assert all(first["groups"][c] == 1 for c in static)
    assert not any(second["groups"][c] for c in static)
    assert second["requests"] == chunks - len(static)
    chunk_of = second["chunk_of"]
    assert not any(chunk_of[i] in static for i in second["reads"])


def test_a_selection_reads_only_the_selected_members_in_a_request_per_chunk() -> None:
    planner = _planner("scout[warm_up=1,reuse_factor=100,beta=4,window=64]", 0.2)
    _epoch(planner, 0)
    got = _epoch(planner, 1)
    order = got["order"]
    assert len(order) < N  # IIS selected a subset
    assert sorted(got["reads"]) == sorted(  # exactly the selected ids not held already
        i
        for i in order.tolist()
        if got["chunk_of"][i] not in got["static"] and i not in got["held"]
    )
    assert got["requests"] == len({got["chunk_of"][i] for i in got["reads"]})


@pytest.mark.parametrize("frac", [0.02, 0.05])
def test_a_cache_smaller_than_a_chunk_cuts_it_into_pieces_within_budget(frac: float) -> None:
    planner = _planner("scout", frac, chunk=256)
    policy = planner.system.policy
    assert isinstance(policy, ScoutRounds) and policy.plan is not None
    assert not policy.plan.static and policy.plan.stock <= frac * planner.sizes.sum()
    got = _epoch(planner, 0)
    assert max(got["reads"].values()) == 1
    pieces = max(got["groups"].values())
    assert pieces >= 2  # a chunk does not fit: several pieces, each one request
    assert got["requests"] <= 4 * pieces + 1


def test_arrange_keeps_the_ids_packs_rounds_within_the_stock_and_is_seeded() -> None:
    sizes = np.full(300, 10, dtype=np.int64)
    layout = make_layout(sizes, 20, seed=1)
    budget = Budget(capacity_bytes=1600, sizes=sizes)
    plan = RoundPlan.size(layout, budget, lanes=4, seed=0)
    assert plan.stock == 800  # 4 chunks of 20 ids x 10 bytes
    assert len(plan.static) == 4  # the other 800 bytes: 4 whole chunks
    ids = np.random.default_rng(2).permutation(300)[:250]
    chunk_of = np.asarray(layout.chunk_of)
    order, ends = arrange(ids, chunk_of=chunk_of, plan=plan, rng=np.random.default_rng(7))
    assert sorted(order.tolist()) == sorted(ids.tolist())
    again, _ = arrange(ids, chunk_of=chunk_of, plan=plan, rng=np.random.default_rng(7))
    assert np.array_equal(order, again)
    static = np.isin(chunk_of[order], list(plan.static))
    assert (ends[static] == -1).all() and (ends[~static] > 0).all()
    for end in np.unique(ends[~static]).tolist():  # each round: within the stock...
        members = order[(ends == end) & ~static]
        assert 10 * len(members) <= plan.stock
        pieces = np.unique(chunk_of[members]).tolist()
        assert len(pieces) <= plan.lanes  # ...at most one request per lane...
        for c in pieces:  # ...holding a chunk's whole piece...
            assert (ends[chunk_of[order] == c] == end).all()
        # ...and every piece's first member among the round's first places: its requests
        # come together
        assert set(chunk_of[members[: len(pieces)]].tolist()) == set(pieces)


@pytest.mark.parametrize(
    ("weight", "stock", "pieces"),
    [
        (200, 300, 2),  # whole: 1 a round (200); halves: 3 a round (300)
        (230, 450, 2),  # the grid's 10% / 256 cell: 230 a round whole, 345 in halves
        (256, 225, 5),  # over the stock: 2 pieces hold 128 a round, 5 hold 4 x 51
        (58, 225, 1),  # 3 whole pieces (174) beat 4 halves (116)
        (256, 1024, 1),  # lanes whole chunks fit: one request a chunk
        (10, 5, 2),  # over the stock by a little: the fewest that fit
    ],
)
def test_cuts_for_is_the_fewest_pieces_that_fill_a_round_the_most(
    weight: float, stock: float, pieces: int
) -> None:
    assert cuts_for(weight, stock=stock, lanes=4) == pieces


def test_a_stock_of_under_two_chunks_holds_several_pieces_a_round() -> None:
    """A cache of 1.5 chunks: whole chunks would be one request a round; halves put
    three in each round and read every member once."""
    sizes = np.full(200, 10, dtype=np.int64)
    layout = make_layout(sizes, 20, seed=1)  # chunks of 200 bytes
    plan = RoundPlan.size(layout, Budget(capacity_bytes=300, sizes=sizes), lanes=4, seed=0)
    assert plan.stock == 300 and not plan.static
    ids = np.arange(200)
    chunk_of = np.asarray(layout.chunk_of)
    order, ends = arrange(ids, chunk_of=chunk_of, plan=plan, rng=np.random.default_rng(3))
    assert sorted(order.tolist()) == list(range(200))
    rounds = [order[ends == end] for end in np.unique(ends).tolist()]
    assert all(10 * len(members) <= plan.stock for members in rounds)
    # 10 chunks: whole, 10 rounds of one; in 20 halves of 10 ids, 3 a round (the last 2)
    assert sorted(len(members) for members in rounds) == [20] + [30] * 6


def test_decisions_resume_exactly_from_an_epoch_boundary() -> None:
    from hotset.torch.loader import load_system_state, system_state

    def run(planner: Planner, epochs: range) -> list[tuple[int, ...]]:
        out = []
        for epoch in epochs:
            planner.begin(epoch)
            for plan in planner.plans():
                out.append((plan.storage_requests, *plan.served.tolist()))
                planner.give(plan.index, plan.served, _losses(plan.served, epoch))
            planner.finish(val_accuracy=None)
        return out

    def plain(value: object) -> object:
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, np.integer | np.floating | np.bool_):
            return value.item()
        raise TypeError(type(value).__name__)

    spec = "scout[warm_up=1]"
    again = _planner(spec, 0.3)
    run(again, range(2))
    state = json.loads(json.dumps(system_state(again.system), default=plain))
    fresh = _planner(spec, 0.3)
    load_system_state(fresh.system, state)
    assert run(fresh, range(2, 5)) == run(again, range(2, 5))
