"""The classic policies: hand-worked traces, budget invariants, replay == access, resumption."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.errors import HotsetError
from hotset.policies import Budget, Outcome, Policy, make_policy
from hotset.policies.belady import Belady, next_uses

CLASSIC = ("nocache", "fifo", "lru", "lfu", "minio", "belady", "oracle")
ONLINE = ("nocache", "fifo", "lru", "lfu", "minio")
H, M = int(Outcome.HIT), int(Outcome.MISS)


def _policy(name: str, budget: Budget, trace: np.ndarray | None = None) -> Policy:
    policy = make_policy(name, budget, seed=3)
    if policy.capabilities.needs_future:
        assert trace is not None
        policy.set_future(trace)
    return policy


def _outcomes(name: str, trace: list[int], budget: Budget) -> list[int]:
    arr = np.array(trace, dtype=np.int64)
    policy = _policy(name, budget, arr)
    return [int(policy.access(sid).outcome) for sid in trace]


# -- hand-worked traces (expected values derived on paper) ---------------------------
def test_fifo_ignores_hits_but_lru_refreshes_them() -> None:
    trace = [1, 2, 1, 3, 1]  # capacity 2
    # FIFO: 1,2 in; 1 hits (no reorder); 3 evicts 1 (oldest); 1 misses.
    assert _outcomes("fifo", trace, Budget(capacity_items=2)) == [M, M, H, M, M]
    # LRU: 1 hit moves 1 back; 3 evicts 2; 1 hits.
    assert _outcomes("lru", trace, Budget(capacity_items=2)) == [M, M, H, M, H]


def test_lfu_evicts_least_frequent_then_least_recent() -> None:
    # capacity 2: 1 (count 2), 2 (count 1); 3 evicts 2; then 4 meets 1 (count 2) and
    # 3 (count 1): 3 goes. Finally 1 and 3: 1 hits, 3 misses.
    trace = [1, 1, 2, 3, 4, 1, 3]
    assert _outcomes("lfu", trace, Budget(capacity_items=2)) == [M, H, M, M, M, H, M]
    # tie on count 1 between 2 (older access) and 3: 2 leaves first
    assert _outcomes("lfu", [2, 3, 4, 3, 2], Budget(capacity_items=2)) == [M, M, M, H, M]


def test_belady_evicts_farthest_and_bypasses_when_newcomer_is_farthest() -> None:
    trace = [1, 2, 3, 1, 2, 3, 1, 2, 3]  # capacity 2
    # bypass: 3 is needed later than 1 and 2, so it is not admitted: 1,2 hit each round.
    assert _outcomes("belady", trace, Budget(capacity_items=2)) == [M, M, M, H, H, M, H, H, M]
    # demand paging (libCacheSim): 3 must come in, evicting 2 (next use 4, farther than 1's 3)
    policy = Belady(Budget(capacity_items=2), bypass=False)
    policy.set_future(np.array(trace))
    got = [int(policy.access(s).outcome) for s in trace]
    assert got == [M, M, M, H, M, H, M, H, M]


def test_belady_with_sizes_evicts_farthest_regardless_of_size() -> None:
    sizes = np.array([0, 5, 1, 1, 4])
    # capacity 6: 1 (5 bytes) + 2 (1 byte) fill it; 3 (next use at 5) needs 1 byte.
    # farthest resident is 1 (next use 6) -> evicted although 2 would have been enough.
    trace = np.array([1, 2, 3, 2, 9 % 5, 3, 1])  # 9 % 5 == 4: a 4-byte item used once
    policy = Belady(Budget(capacity_bytes=6, sizes=sizes), bypass=False)
    policy.set_future(trace)
    decision = policy.access(1), policy.access(2), policy.access(3)
    assert decision[2].evicted == (1,)
    assert policy.used_bytes == 2 and policy.resident() == {2, 3}


def test_minio_never_evicts_and_oracle_always_hits() -> None:
    trace = [5, 6, 7, 5, 6, 7]
    got = _outcomes("minio", trace, Budget(capacity_items=2))  # no universe: first come
    assert got == [M, M, M, H, H, M]
    assert _outcomes("oracle", trace, Budget(capacity_items=0)) == [H] * 6
    assert _outcomes("nocache", trace, Budget(capacity_items=10)) == [M] * 6


@pytest.mark.parametrize("name", ["fifo", "lru", "lfu", "minio", "belady"])
def test_item_larger_than_budget_is_never_admitted_and_evicts_nothing(name: str) -> None:
    sizes = np.array([3, 3, 11, 3])
    trace = np.array([0, 1, 2, 0, 1, 3, 2])
    policy = _policy(name, Budget(capacity_bytes=10, sizes=sizes), trace)
    policy.access(0)
    policy.access(1)
    before = policy.resident()
    decision = policy.access(2)
    assert decision.outcome is Outcome.MISS and not decision.admitted and decision.evicted == ()
    assert policy.resident() == before and 2 not in policy


@pytest.mark.parametrize("name", ["fifo", "lru", "lfu", "minio", "belady"])
def test_decisions_report_what_entered_and_left(name: str) -> None:
    trace = np.array([0, 1, 2, 3, 0, 1, 2, 3])
    policy = _policy(name, Budget(capacity_items=2), trace)
    held: set[int] = set()
    for sid in trace.tolist():
        d = policy.access(sid)
        assert d.requested == d.served == sid
        if d.outcome is Outcome.HIT:
            assert sid in held and not d.evicted
        held -= set(d.evicted)
        if d.admitted:
            held.add(sid)
        assert policy.resident() == held
        assert all(s in policy for s in held)
        assert policy.used_items == len(held)


@pytest.mark.parametrize("name", CLASSIC)
def test_bad_ids_are_rejected(name: str) -> None:
    sizes = np.array([1, 1, 1])
    policy = _policy(name, Budget(capacity_items=2, sizes=sizes), np.array([0, 1]))
    with pytest.raises(HotsetError, match="non-negative"):
        policy.replay(np.array([0, -1]))
    with pytest.raises(HotsetError, match="no size"):
        policy.replay(np.array([0, 7]))
    with pytest.raises(HotsetError, match="integers"):
        policy.replay(np.array([0.5, 1.0]))


def test_belady_needs_the_future_and_follows_it() -> None:
    policy = Belady(Budget(capacity_items=1))
    with pytest.raises(HotsetError, match="set_future"):
        policy.access(0)
    policy.set_future(np.array([0, 1, 0]))
    policy.access(0)
    with pytest.raises(HotsetError, match="future says 1"):
        policy.access(0)
    with pytest.raises(HotsetError, match="not accesses"):
        policy.replay(np.array([1, 1]))


def test_next_uses_matches_a_plain_scan() -> None:
    rng = np.random.default_rng(0)
    trace = rng.integers(0, 20, 500)
    expected = []
    for i, sid in enumerate(trace.tolist()):
        later = [j for j in range(i + 1, len(trace)) if trace[j] == sid]
        expected.append(later[0] if later else len(trace))
    assert next_uses(trace).tolist() == expected


# -- invariants ------------------------------------------------------------------------
traces = st.lists(st.integers(0, 11), min_size=1, max_size=60)
size_tables = st.lists(st.integers(0, 9), min_size=12, max_size=12)
budgets = st.tuples(
    st.one_of(st.none(), st.integers(0, 30)),  # capacity_bytes
    st.one_of(st.none(), st.integers(0, 6)),  # capacity_items
    st.booleans(),  # sized?
).filter(lambda b: b[0] is not None or b[1] is not None)


def _budget(spec: tuple[int | None, int | None, bool], sizes: list[int]) -> Budget:
    cap_b, cap_i, sized = spec
    return Budget(
        capacity_bytes=cap_b, capacity_items=cap_i, sizes=np.array(sizes) if sized else None
    )


@pytest.mark.parametrize("name", CLASSIC)
@settings(max_examples=60, deadline=None)
@given(trace=traces, spec=budgets, sizes=size_tables)
def test_replay_equals_access_and_never_exceeds_budget(
    name: str, trace: list[int], spec: tuple[int | None, int | None, bool], sizes: list[int]
) -> None:
    budget = _budget(spec, sizes)
    arr = np.array(trace, dtype=np.int64)
    one = _policy(name, budget, arr)
    stepped = []
    for sid in trace:
        stepped.append(int(one.access(sid).outcome))
        assert budget.fits(one.used_bytes, one.used_items)
        held = one.resident()
        assert one.used_items == (0 if name == "oracle" else len(held))
        if name != "oracle":
            assert one.used_bytes == sum(budget.size_of(s) for s in held)
    two = _policy(name, budget, arr)
    # replay in two pieces: the state carried between calls must be the same too
    cut = len(trace) // 2
    replayed = np.concatenate([two.replay(arr[:cut]), two.replay(arr[cut:])])
    assert replayed.dtype == np.int8
    assert replayed.tolist() == stepped
    assert two.resident() == one.resident()
    assert (two.used_bytes, two.used_items) == (one.used_bytes, one.used_items)


@settings(max_examples=80, deadline=None)
@given(trace=traces, spec=budgets, sizes=size_tables)
def test_demand_belady_replay_equals_access(
    trace: list[int], spec: tuple[int | None, int | None, bool], sizes: list[int]
) -> None:
    budget = _budget(spec, sizes)
    arr = np.array(trace, dtype=np.int64)
    one, two = Belady(budget, bypass=False), Belady(budget, bypass=False)
    one.set_future(arr)
    stepped = []
    for sid in trace:
        stepped.append(int(one.access(sid).outcome))
        assert budget.fits(one.used_bytes, one.used_items)
    assert two.replay(arr).tolist() == stepped
    assert two.resident() == one.resident() and two.used_bytes == one.used_bytes


@cache
def _optimal_hits(trace: tuple[int, ...], capacity: int, pos: int, held: frozenset[int]) -> int:
    """Exhaustive optimum with unit sizes where a miss may or may not be admitted."""
    if pos == len(trace):
        return 0
    sid = trace[pos]
    if sid in held:
        return 1 + _optimal_hits(trace, capacity, pos + 1, held)
    options = [held]  # bypass
    if len(held) < capacity:
        options.append(held | {sid})
    elif capacity > 0:
        options += [(held - {victim}) | {sid} for victim in held]
    return max(_optimal_hits(trace, capacity, pos + 1, s) for s in options)


@settings(max_examples=150, deadline=None)
@given(trace=st.lists(st.integers(0, 4), min_size=1, max_size=14), capacity=st.integers(0, 4))
def test_belady_with_bypass_is_optimal_for_unit_sizes(trace: list[int], capacity: int) -> None:
    arr = np.array(trace)
    policy = Belady(Budget(capacity_items=capacity))
    policy.set_future(arr)
    hits = int((policy.replay(arr) == H).sum())
    assert hits == _optimal_hits(tuple(trace), capacity, 0, frozenset())


@settings(max_examples=80, deadline=None)
@given(
    trace=st.lists(st.integers(0, 15), min_size=1, max_size=120),
    capacity=st.integers(1, 10),
    as_bytes=st.booleans(),
)
def test_belady_beats_every_online_policy(trace: list[int], capacity: int, as_bytes: bool) -> None:
    """Unit sizes (an item budget or a byte budget of unit items): MIN is the bound."""
    arr = np.array(trace, dtype=np.int64)
    budget = Budget(capacity_bytes=capacity) if as_bytes else Budget(capacity_items=capacity)
    best = int((_policy("belady", budget, arr).replay(arr) == H).sum())
    for name in ONLINE:
        assert int((_policy(name, budget, arr).replay(arr) == H).sum()) <= best, name


# -- resumption ------------------------------------------------------------------------
@pytest.mark.parametrize("name", CLASSIC)
@pytest.mark.parametrize("sized", [False, True])
def test_state_dict_round_trip_resumes_identically(name: str, sized: bool) -> None:
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 20, 40)
    trace = np.concatenate([rng.permutation(40), rng.integers(0, 40, 80), rng.permutation(40)])
    budget = (
        Budget(capacity_bytes=150, capacity_items=12, sizes=sizes)
        if sized
        else Budget(capacity_items=12)
    )
    for cut in (0, 57, len(trace)):  # from scratch, mid-trace, at the end
        original = _policy(name, budget, trace)
        original.begin_epoch(0)
        original.replay(trace[:cut])
        state = json.loads(json.dumps(original.state_dict()))  # must survive JSON
        restored = make_policy(name, budget, seed=3)
        restored.load_state_dict(state)
        assert restored.resident() == original.resident()
        assert (restored.used_bytes, restored.used_items) == (
            original.used_bytes,
            original.used_items,
        )
        rest = trace[cut:]
        assert restored.replay(rest).tolist() == original.replay(rest).tolist()
        assert restored.resident() == original.resident()


@pytest.mark.parametrize("name", CLASSIC)
def test_state_of_another_policy_is_refused(name: str) -> None:
    other = "lru" if name != "lru" else "fifo"
    state = make_policy(other, Budget(capacity_items=2)).state_dict()
    with pytest.raises(HotsetError, match="state is for policy"):
        make_policy(name, Budget(capacity_items=2)).load_state_dict(state)


def test_minio_on_one_rank_chooses_among_its_first_shard() -> None:
    """A rank's shard is its universe: its cache fills in the first epoch, as CoorDL's."""
    from hotset.policies.minio import MinIO

    shard = np.arange(0, 100, 4)  # rank 0 of 4
    minio = MinIO(Budget(capacity_items=10), seed=1, n=100)
    minio.begin_epoch(0, shard)
    assert minio.subset is not None and minio.subset <= set(shard.tolist())
    minio.replay(shard)
    assert len(minio.resident()) == 10
    minio.begin_epoch(1, np.arange(1, 100, 4))  # another shard: the cache stays
    assert minio.subset <= set(shard.tolist()) and len(minio.resident()) == 10
