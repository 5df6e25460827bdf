"""APP (SHADE Algorithm 1): admission by ghost score, budget, known-beats-unknown."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.errors import HotsetError
from hotset.policies.app import APP
from hotset.policies.base import Budget, Outcome


def _items(k: int) -> Budget:
    return Budget(capacity_items=k)


def test_fill_then_hit() -> None:
    app = APP(_items(2))
    d = app.access(0)
    assert d.outcome is Outcome.MISS and d.admitted and d.evicted == ()
    app.access(1)
    assert app.access(0).outcome is Outcome.HIT
    assert app.resident() == {0, 1} and 0 in app and 2 not in app
    assert (app.used_items, app.used_bytes) == (2, 2)


def test_unscored_newcomer_never_displaces() -> None:
    app = APP(_items(2))
    app.access(0)
    app.access(1)
    app.observe(np.array([0, 1]), np.array([2.3, 2.4]))
    d = app.access(5)  # never scored
    assert d.outcome is Outcome.MISS and not d.admitted and d.evicted == ()
    assert app.resident() == {0, 1}


def test_scored_newcomer_displaces_only_if_at_least_the_minimum() -> None:
    app = APP(_items(2))
    app.access(0)
    app.access(1)
    app.observe(np.array([0, 1, 7, 8]), np.array([3.0, 5.0, 2.0, 4.0]))
    d = app.access(7)  # 2.0 < min 3.0
    assert not d.admitted and app.resident() == {0, 1}
    d = app.access(8)  # (4.0, 1) >= (3.0, 1)
    assert d.admitted and d.evicted == (0,)
    assert app.resident() == {1, 8}


def test_frequency_breaks_score_ties() -> None:
    app = APP(_items(2))
    app.access(0)
    app.access(1)
    app.access(0)  # 0 now has frequency 2
    app.observe(np.array([0, 1, 9]), np.array([3.0, 3.0, 3.0]))
    d = app.access(9)  # (3.0, 1) >= min (3.0, 1) of id 1, but < (3.0, 2) of id 0
    assert d.admitted and d.evicted == (1,)
    # a tie on both parts also displaces (x >= min_score)
    app.observe(np.array([4]), np.array([3.0]))
    assert app.access(4).evicted == (9,)


def test_unscored_residents_go_before_scored_ones() -> None:
    app = APP(_items(2))
    app.access(0)
    app.access(1)
    app.observe(np.array([1, 3]), np.array([0.1, 0.05]))  # 0 stays unscored
    d = app.access(3)  # low score, but beats the unknown resident
    assert d.admitted and d.evicted == (0,)


def test_scores_change_the_victim_while_resident() -> None:
    app = APP(_items(2))
    for sid in (0, 1):
        app.access(sid)
    app.observe(np.array([0, 1]), np.array([5.0, 6.0]))
    app.observe(np.array([0]), np.array([9.0]))  # 1 becomes the minimum
    app.observe(np.array([2]), np.array([7.0]))
    assert app.access(2).evicted == (1,)
    assert app.min_key() == ((7.0, 1), 2)


def test_byte_budget_evicts_several_or_none() -> None:
    sizes = np.array([4, 4, 4, 8, 8])
    app = APP(Budget(capacity_bytes=12, sizes=sizes))
    for sid in (0, 1, 2):
        app.access(sid)
    app.observe(np.array([0, 1, 2, 3, 4]), np.array([5.0, 1.0, 2.0, 1.5, 3.0]))
    # id 3 needs two victims (1: 1.0 and 2: 2.0); 2.0 > 1.5, so nothing happens
    d = app.access(3)
    assert not d.admitted and app.resident() == {0, 1, 2} and app.used_bytes == 12
    # id 4 (3.0) may displace both
    d = app.access(4)
    assert d.admitted and d.evicted == (1, 2)
    assert app.resident() == {0, 4} and app.used_bytes == 12


def test_too_big_to_ever_fit() -> None:
    app = APP(Budget(capacity_bytes=5, sizes=np.array([3, 9])))
    app.observe(np.array([1]), np.array([100.0]))
    d = app.access(1)
    assert d.outcome is Outcome.MISS and not d.admitted and app.used_bytes == 0


def test_update_importance_snapshot() -> None:
    app = APP(_items(1))
    app.access(0)
    snapshot = np.ones(6)  # the table's never-seen default: nobody is scored
    snapshot[4] = 7.0
    app.update_importance(snapshot, 3)
    assert app.scored(4) and not app.scored(2) and not app.scored(0)
    assert app.access(2).evicted == ()  # unknown
    assert app.access(4).evicted == (0,)
    # an explicit mask can mark a real score of 1.0
    app.update_importance(np.ones(6), 4, scored=np.array([0, 0, 1, 0, 0, 0], dtype=bool))
    assert app.scored(2)
    assert app.key(4)[0] == 7.0 and app.key(2)[0] == 1.0
    with pytest.raises(HotsetError, match="sample id 2"):
        app.update_importance(np.array([1.0, 1.0, np.inf]))
    with pytest.raises(HotsetError, match="shape"):
        app.update_importance(np.ones(3), scored=np.ones(2, dtype=bool))


def test_observe_validation() -> None:
    app = APP(_items(2))
    with pytest.raises(HotsetError, match="equally long"):
        app.observe(np.array([1, 2]), np.array([1.0]))
    with pytest.raises(HotsetError, match="sample id 2"):
        app.observe(np.array([1, 2]), np.array([1.0, np.nan]))
    with pytest.raises(HotsetError, match="-1"):
        app.observe(np.array([-1]), np.array([1.0]))
    with pytest.raises(HotsetError):
        app.access(-3)
    assert not app.scored(1)


def test_heap_stays_bounded() -> None:
    app = APP(_items(50))
    rng = np.random.default_rng(0)
    for step in range(200):
        ids = rng.integers(0, 400, size=32)
        for sid in ids.tolist():
            app.access(sid)
        app.observe(ids, np.log(rng.permutation(32) + 10.0))
        assert len(app._heap) <= 2 * len(app.resident()) + 65, step
    assert app.used_items == 50


def test_state_dict_round_trip() -> None:
    rng = np.random.default_rng(1)
    app = APP(_items(10))
    for _ in range(20):
        ids = rng.integers(0, 40, size=8)
        for sid in ids.tolist():
            app.access(sid)
        app.observe(ids, rng.random(8) + 2)
    restored = APP(_items(10))
    restored.load_state_dict(app.state_dict())
    assert restored.resident() == app.resident()
    for _ in range(10):
        ids = rng.integers(0, 40, size=8)
        scores = rng.random(8) + 2
        assert [restored.access(s) for s in ids.tolist()] == [app.access(s) for s in ids.tolist()]
        app.observe(ids, scores)
        restored.observe(ids, scores)
    with pytest.raises(HotsetError, match="missing"):
        APP(_items(10)).load_state_dict({"ghost": []})


@pytest.mark.parametrize(("key", "value"), [("used_bytes", 0), ("used_items", 3)])
def test_a_state_whose_counts_disagree_with_its_residents_is_refused(key: str, value: int) -> None:
    """A damaged count would let the cache admit past its budget (the store then
    refuses the bytes mid-epoch) or never admit again."""
    sizes = np.full(40, 100, dtype=np.int64)
    app = APP(Budget(capacity_bytes=1000, sizes=sizes))
    for sid in range(10):
        app.access(sid)
    state = {**app.state_dict(), key: value}
    with pytest.raises(HotsetError, match=f"{key}=.*residents hold 1000 bytes"):
        APP(Budget(capacity_bytes=1000, sizes=sizes)).load_state_dict(state)


class ReferenceAPP:
    """Algorithm 1 written the slow, obvious way: linear scans instead of a heap."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.score: dict[int, float] = {}
        self.freq: dict[int, int] = {}
        self.res: set[int] = set()

    def key(self, sid: int) -> tuple[float, int]:
        return self.score.get(sid, -math.inf), self.freq.get(sid, 0)

    def used(self, ids: set[int]) -> tuple[int, int]:
        return sum(self.budget.size_of(i) for i in ids), len(ids)

    def access(self, sid: int) -> tuple[Outcome, bool, tuple[int, ...]]:
        self.freq[sid] = self.freq.get(sid, 0) + 1
        if sid in self.res:
            return Outcome.HIT, False, ()
        if not self.budget.can_ever_hold(sid):
            return Outcome.MISS, False, ()
        remaining = set(self.res)
        victims: list[int] = []
        while True:
            b, i = self.used(remaining)
            if self.budget.fits(b + self.budget.size_of(sid), i + 1):
                break
            victim = min(remaining, key=lambda r: (*self.key(r), r))
            if sid not in self.score or self.key(sid) < self.key(victim):
                return Outcome.MISS, False, ()
            victims.append(victim)
            remaining.discard(victim)
        self.res = remaining | {sid}
        return Outcome.MISS, True, tuple(victims)


ops = st.lists(
    st.one_of(
        st.tuples(st.just("access"), st.integers(0, 15)),
        st.tuples(
            st.just("observe"),
            st.lists(
                st.tuples(st.integers(0, 15), st.sampled_from([2.3, 2.4, 2.5, 3.0])), max_size=6
            ),
        ),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(
    ops,
    st.lists(st.integers(1, 6), min_size=16, max_size=16),
    st.integers(1, 14),
    st.booleans(),
)
def test_app_matches_reference_and_keeps_invariants(
    operations: list, sizes: list[int], capacity: int, by_bytes: bool
) -> None:
    budget = (
        Budget(capacity_bytes=capacity, sizes=np.array(sizes))
        if by_bytes
        else Budget(capacity_items=max(1, capacity // 3))
    )
    app = APP(budget)
    ref = ReferenceAPP(budget)
    for op, arg in operations:
        if op == "access":
            was_scored = app.scored(arg)
            d = app.access(arg)
            assert (d.outcome, d.admitted, d.evicted) == ref.access(arg)
            if not was_scored:
                assert d.evicted == ()  # a never-scored sample never displaces
            for victim in d.evicted:
                assert app.key(victim) <= app.key(arg)
        else:
            ids = np.array([sid for sid, _ in arg], dtype=np.int64)
            scores = np.array([s for _, s in arg], dtype=np.float64)
            app.observe(ids, scores)
            for sid, s in arg:
                ref.score[sid] = s
        assert budget.fits(app.used_bytes, app.used_items)
        assert app.resident() == ref.res
        assert (app.used_bytes, app.used_items) == ref.used(ref.res)
