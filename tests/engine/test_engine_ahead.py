"""Fetched ahead vs exact hit: the first use of bytes read before anyone asked is not a hit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.engine.ahead import AheadTracker
from hotset.engine.outcome import Outcome
from hotset.errors import HotsetError

HIT, SUB, MISS, PRE = (int(o) for o in Outcome)


def _batch(tracker: AheadTracker, rows: list[tuple[int, int, tuple[int, ...], tuple[int, ...]]]):
    """rows: (outcome, served, evicted, also_admitted) per request, in order."""
    outcomes = np.array([r[0] for r in rows], dtype=np.int8)
    served = np.array([r[1] for r in rows], dtype=np.int64)
    evictions = {j: r[2] for j, r in enumerate(rows) if r[2]}
    also = {j: r[3] for j, r in enumerate(rows) if r[3]}
    return tracker.batch(outcomes, served, evictions, also).tolist()


def test_a_chunk_reads_members_ahead_their_first_use_is_ahead_and_a_reuse_is_a_hit() -> None:
    t = AheadTracker(10)
    # request 0 misses and its read admits 1, 2, 3 as well; 1 is asked for next: ahead
    assert _batch(t, [(MISS, 0, (), (1, 2, 3)), (HIT, 1, (), ())]) == [1]
    assert t.ids().tolist() == [2, 3]
    # 1 again (kept since its use) is an exact hit; 2's first use is still ahead
    assert _batch(t, [(HIT, 1, (), ()), (HIT, 2, (), ())]) == [1]
    # 3 served as a substitute: a use (not counted here), so a later hit on it is a hit
    assert _batch(t, [(SUB, 3, (), ()), (HIT, 3, (), ())]) == []
    assert len(t) == 0


def test_an_eviction_clears_it_and_a_readmission_ahead_sets_it_again() -> None:
    t = AheadTracker(6)
    _batch(t, [(MISS, 0, (), (4, 5))])
    assert _batch(t, [(MISS, 1, (4,), ())]) == []  # 4 left unused
    assert t.ids().tolist() == [5]
    _batch(t, [(MISS, 2, (), (4,))])  # read ahead again
    assert _batch(t, [(HIT, 4, (), ()), (HIT, 5, (), ())]) == [0, 1]
    t.drop([0, 1])  # nothing ahead: a no-op
    assert len(t) == 0


def test_demand_admissions_are_never_ahead_and_background_loads_are() -> None:
    t = AheadTracker(5)
    assert _batch(t, [(MISS, 0, (), ()), (HIT, 0, (), ())]) == []  # an LRU's reuse
    t.add([2, 3])  # a background load (Quiver's, iCACHE's packages)
    assert _batch(t, [(HIT, 2, (), ()), (PRE, 3, (), ())]) == [0]  # PRE: counted as such


def test_a_unit_cached_whole_stands_for_its_members_but_the_one_served() -> None:
    members = {0: np.array([0, 1, 2]), 1: np.array([3, 4])}
    t = AheadTracker(5, lambda u: members[u])
    _batch(t, [(MISS, 1, (), (5 + 0,))])  # cache id n + 0: unit 0 whole, serving 1
    assert t.ids().tolist() == [0, 2]
    t.drop([5 + 0])
    assert len(t) == 0


def test_state_round_trips_and_bad_ids_are_refused() -> None:
    t = AheadTracker(8)
    t.load([1, 6])
    assert t.ids().tolist() == [1, 6] and len(t) == 2
    with pytest.raises(HotsetError, match=r"outside 0\.\.7"):
        t.load([8])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([HIT, SUB, MISS, PRE]),
            st.integers(0, 7),
            st.lists(st.integers(0, 7), max_size=2),
            st.lists(st.integers(0, 7), max_size=3),
        ),
        max_size=40,
    ),
    st.integers(1, 8),
)
def test_the_tracker_agrees_with_a_plain_set_model(rows: list, cut: int) -> None:
    """Any split into batches gives the same ahead positions as one set followed by hand."""
    model: set[int] = set()
    expected = []
    for j, (o, sid, gone, more) in enumerate(rows):
        if sid in model:
            if o == HIT:
                expected.append(j)
            model.discard(sid)
        model -= set(gone)
        model |= set(more) - {sid}
    t = AheadTracker(8)
    got = []
    for start in range(0, len(rows), cut):
        part = [(o, s, tuple(g), tuple(m)) for o, s, g, m in rows[start : start + cut]]
        got += [start + j for j in _batch(t, part)]
    assert got == expected
    assert t.ids().tolist() == sorted(model)
