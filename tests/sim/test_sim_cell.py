"""The bound on exact hits of the epochs after the first: exact, and equal to MIN over all."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.sim.cell import belady_hits, hits_bound


def _best(trace: list[int], k: int, count_from: int) -> int:
    """Exhaustive search: the most hits at positions >= count_from of any cache of k items
    (any admission, any eviction), over every reachable cache content."""
    states = {frozenset()}
    best = {frozenset(): 0}
    for p, sid in enumerate(trace):
        nxt: dict[frozenset[int], int] = {}
        for cache in states:
            got = best[cache] + (1 if sid in cache and p >= count_from else 0)
            with_it = cache | {sid}
            options = [cache]  # bypass, or keep as is
            if len(with_it) <= k:
                options.append(with_it)
            else:
                options += [with_it - {v} for v in cache]
            for c in options:
                if got > nxt.get(c, -1):
                    nxt[c] = got
        states, best = set(nxt), nxt
    return max(best.values())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=11), st.integers(1, 3), st.data())
def test_the_bound_is_the_optimum_of_an_exhaustive_search(trace, k, data) -> None:
    count_from = data.draw(st.integers(0, len(trace)))
    sizes = np.ones(5, dtype=np.int64)
    assert hits_bound(np.array(trace), sizes, k, count_from=count_from) == _best(
        trace, k, count_from
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=300), st.integers(1, 2000))
def test_over_every_position_it_equals_belady_and_later_hits_never_exceed_it(trace, cap) -> None:
    arr = np.array(trace, dtype=np.int64)
    sizes = np.random.default_rng(len(trace)).integers(50, 150, size=31)
    hits = belady_hits(arr, sizes, cap)
    assert hits_bound(arr, sizes, cap, count_from=0) == int(hits.sum())
    half = len(trace) // 2
    later = hits_bound(arr, sizes, cap, count_from=half)
    assert int(hits[half:].sum()) <= later <= int(hits.sum())


def test_min_gives_up_later_hits_the_bound_counts() -> None:
    """One slot: MIN keeps 0 for its two early hits; counting only the last request, the
    bound keeps 1 for it instead."""
    trace = np.array([0, 1, 0, 0, 1])
    sizes = np.ones(2, dtype=np.int64)
    assert belady_hits(trace, sizes, 1).tolist() == [False, False, True, True, False]
    assert hits_bound(trace, sizes, 1, count_from=4) == 1
    assert hits_bound(trace, sizes, 1, count_from=0) == 2
