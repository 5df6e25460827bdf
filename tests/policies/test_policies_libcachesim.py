"""Hit counts against libCacheSim, an independent implementation (GPL: tests only).

libCacheSim's FIFO, LRU and LFU evict before inserting and refuse an object
larger than the cache, like ours. Its LFU keeps each frequency's objects in
arrival order, which is our "least recently used among the least frequent"
(see hotset.policies.lfu), so LFU is compared on every trace, ties included.
Its ``Belady`` is demand-paging MIN -- every missed object that fits is
admitted, farthest next use leaves first, sizes or not -- which is our
``Belady(bypass=False)``; the default bypassing Belady is checked against an
exhaustive optimum in test_policies_classic.py instead.
"""

from __future__ import annotations

import libcachesim as lcs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.policies import Budget, Outcome, make_policy
from hotset.policies.belady import Belady

INT64_MAX = 2**63 - 1
THEIRS = {"fifo": lcs.FIFO, "lru": lcs.LRU, "lfu": lcs.LFU, "belady": lcs.Belady}


def _their_hits(name: str, trace: np.ndarray, capacity: int, sizes: np.ndarray | None) -> int:
    cache = THEIRS[name](capacity, hashpower=12)
    # Belady reads each request's next access time; we compute it by a plain reverse scan
    nxt = [INT64_MAX] * len(trace)
    last: dict[int, int] = {}
    for i in range(len(trace) - 1, -1, -1):
        sid = int(trace[i])
        nxt[i] = last.get(sid, INT64_MAX)
        last[sid] = i
    hits = 0
    for i, sid in enumerate(trace.tolist()):
        req = lcs.Request(
            obj_size=1 if sizes is None else int(sizes[sid]), obj_id=sid, clock_time=i
        )
        if name == "belady":
            req.next_access_vtime = nxt[i]
        hits += int(cache.get(req))
    return hits


def _our_hits(name: str, trace: np.ndarray, capacity: int, sizes: np.ndarray | None) -> int:
    budget = (
        Budget(capacity_items=capacity)
        if sizes is None
        else Budget(capacity_bytes=capacity, sizes=sizes)
    )
    policy = Belady(budget, bypass=False) if name == "belady" else make_policy(name, budget, seed=0)
    if policy.capabilities.needs_future:
        policy.set_future(trace)
    return int(np.count_nonzero(policy.replay(trace) == Outcome.HIT))


def _traces() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(2024)
    n = 300
    perms = np.concatenate([rng.permutation(n) for _ in range(4)])
    zipf = (rng.zipf(1.2, 3000) - 1) % n
    runs = np.repeat(rng.integers(0, 60, 700), rng.integers(1, 5, 700))  # bursts of one id
    return [("permutations", perms), ("zipf", zipf), ("repeats", runs)]


@pytest.mark.parametrize("name", sorted(THEIRS))
@pytest.mark.parametrize(("label", "trace"), _traces())
@pytest.mark.parametrize("frac", [0.05, 0.3])
def test_item_sized_hits_equal_libcachesim(
    name: str, label: str, trace: np.ndarray, frac: float
) -> None:
    capacity = max(1, int(frac * len(np.unique(trace))))
    assert _our_hits(name, trace, capacity, None) == _their_hits(name, trace, capacity, None)


@pytest.mark.parametrize("name", sorted(THEIRS))
@pytest.mark.parametrize(("label", "trace"), _traces())
@pytest.mark.parametrize("frac", [0.05, 0.3])
def test_byte_sized_hits_equal_libcachesim(
    name: str, label: str, trace: np.ndarray, frac: float
) -> None:
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 4000, int(trace.max()) + 1)
    sizes[::37] = 10**6  # a few objects larger than any cache here: never admitted
    capacity = int(frac * sizes[np.unique(trace)].clip(max=4000).sum())
    ours = _our_hits(name, trace, capacity, sizes)
    assert ours == _their_hits(name, trace, capacity, sizes)
    assert ours > 0  # the comparison is not vacuous


@pytest.mark.parametrize("name", sorted(THEIRS))
@settings(max_examples=40, deadline=None)
@given(
    trace=st.lists(st.integers(0, 25), min_size=1, max_size=150),
    sizes=st.lists(st.integers(1, 12), min_size=26, max_size=26),
    capacity=st.integers(1, 60),
    sized=st.booleans(),
)
def test_random_traces_equal_libcachesim(
    name: str, trace: list[int], sizes: list[int], capacity: int, sized: bool
) -> None:
    arr = np.array(trace, dtype=np.int64)
    table = np.array(sizes) if sized else None
    assert _our_hits(name, arr, capacity, table) == _their_hits(name, arr, capacity, table)
