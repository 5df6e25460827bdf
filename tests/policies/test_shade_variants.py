"""The §6.2 / §6.6 comparison policies: priority, priority+LFU, random, fill-keep, substitution."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.engine.roles import ObservesScores
from hotset.errors import HotsetError
from hotset.policies.base import Budget, Outcome, Policy
from hotset.policies.shade_variants import (
    FillKeep,
    IndexedSet,
    Priority,
    PriorityLFU,
    RandomEvict,
    SubstituteFromCache,
)

ALL = [PriorityLFU, Priority, RandomEvict, FillKeep, SubstituteFromCache]


def test_priority_lfu_evicts_least_score_then_least_frequency() -> None:
    p = PriorityLFU(Budget(capacity_items=2))
    p.access(0)
    p.access(1)
    p.access(1)
    p.observe(np.array([0, 1]), np.array([2.0, 2.0]))
    d = p.access(5)  # unscored newcomers are admitted too: this is plain replacement
    assert d.admitted and d.evicted == (0,)  # equal loss, id 0 used less
    p.observe(np.array([5]), np.array([9.0]))
    assert p.access(6).evicted == (1,)


def test_priority_ignores_frequency_and_breaks_ties_by_age() -> None:
    p = Priority(Budget(capacity_items=2))
    p.access(0)
    p.access(1)
    for _ in range(5):
        p.access(0)
    p.observe(np.array([0, 1]), np.array([2.0, 2.0]))
    assert p.access(2).evicted == (0,)  # oldest among equal scores despite 6 accesses
    p.observe(np.array([1, 2]), np.array([5.0, 1.0]))
    assert p.access(3).evicted == (2,)  # lowest score


def test_random_evict_is_seeded() -> None:
    def run(seed: int) -> list[tuple[int, ...]]:
        p = RandomEvict(Budget(capacity_items=5), seed=seed)
        rng = np.random.default_rng(0)
        out = []
        for epoch in range(3):
            p.begin_epoch(epoch)
            out += [p.access(s).evicted for s in rng.integers(0, 30, size=40).tolist()]
        return out

    assert run(1) == run(1)
    assert run(1) != run(2)
    assert all(len(e) <= 1 for e in run(3))


def test_fill_keep_never_evicts() -> None:
    p = FillKeep(Budget(capacity_items=3))
    first = [p.access(s) for s in (4, 5, 6, 7, 4)]
    assert [d.admitted for d in first] == [True, True, True, False, False]
    assert first[-1].outcome is Outcome.HIT
    assert all(d.evicted == () for d in first)
    assert p.resident() == {4, 5, 6}


def test_substitution_serves_each_resident_once_per_epoch() -> None:
    p = SubstituteFromCache(Budget(capacity_items=4), seed=7)
    for sid in range(4):
        assert p.access(sid).outcome is Outcome.MISS
    p.begin_epoch(1)
    hit = p.access(2)
    assert hit.outcome is Outcome.HIT
    served = [p.access(sid) for sid in range(10, 13)]
    assert all(d.outcome is Outcome.SUBSTITUTION and not d.storage_read for d in served)
    assert {d.served for d in served} == {0, 1, 3}  # the three not yet served this epoch
    assert all(d.requested != d.served for d in served)
    more = p.access(20)  # every resident served: read storage, keep the cache
    assert more.outcome is Outcome.MISS and more.served == 20 and not more.admitted
    assert p.resident() == {0, 1, 2, 3}
    p.begin_epoch(2)
    assert p.access(21).outcome is Outcome.SUBSTITUTION


def test_substitution_is_seeded_and_needs_a_resident() -> None:
    empty = SubstituteFromCache(Budget(capacity_items=0))
    assert empty.access(3).outcome is Outcome.MISS

    def run(seed: int) -> list[int]:
        p = SubstituteFromCache(Budget(capacity_items=8), seed=seed)
        for sid in range(8):
            p.access(sid)
        out = []
        for epoch in range(1, 4):
            p.begin_epoch(epoch)
            out += [p.access(sid).served for sid in range(100, 112)]
        return out

    assert run(0) == run(0)
    assert run(0) != run(1)
    first_epoch = run(0)[:12]
    assert Counter(first_epoch[:8]) == Counter(range(8))  # each resident stands in once
    assert first_epoch[8:] == [108, 109, 110, 111]  # then misses read storage


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(ALL),
    st.lists(st.integers(0, 20), max_size=60),
    st.lists(st.integers(1, 5), min_size=21, max_size=21),
    st.integers(0, 12),
)
def test_budget_is_never_exceeded(
    cls: type[Policy], trace: list[int], sizes: list[int], capacity: int
) -> None:
    budget = Budget(capacity_bytes=capacity, sizes=np.array(sizes))
    p = cls(budget, seed=3)
    resident: set[int] = set()
    for step, sid in enumerate(trace):
        if step % 7 == 0 and isinstance(p, ObservesScores):  # the scored ones take scores
            p.observe(np.array([sid]), np.array([float(step % 3)]))
        d = p.access(sid)
        resident -= set(d.evicted)
        if d.admitted:
            resident.add(sid)
        if d.outcome is Outcome.SUBSTITUTION:
            assert d.served in resident and d.served != sid
        if d.outcome is Outcome.HIT:
            assert sid in resident
        assert budget.fits(p.used_bytes, p.used_items)
        assert p.resident() == resident
        assert p.used_bytes == sum(sizes[i] for i in resident)


@pytest.mark.parametrize("cls", ALL)
def test_state_dict_round_trip(cls: type[Policy]) -> None:
    rng = np.random.default_rng(5)
    p = cls(Budget(capacity_items=6), seed=2)
    p.begin_epoch(1)
    for sid in rng.integers(0, 25, size=40).tolist():
        p.access(sid)
    if isinstance(p, ObservesScores):
        p.observe(np.arange(25), rng.random(25))
    q = cls(Budget(capacity_items=6), seed=2)
    q.load_state_dict(p.state_dict())
    trace = rng.integers(0, 25, size=40).tolist()
    assert [q.access(s) for s in trace] == [p.access(s) for s in trace]
    with pytest.raises(HotsetError, match="missing"):
        cls(Budget(capacity_items=6)).load_state_dict({})


def test_indexed_set() -> None:
    s = IndexedSet([5, 6, 7, 5])
    assert len(s) == 3 and s.items() == [5, 6, 7]
    s.discard(5)
    assert s.items() == [7, 6] and 5 not in s and s.at(0) == 7
    s.discard(42)
    s.add(5)
    assert s.items() == [7, 6, 5]
