"""ICache: the H min-heap with its shadow heap, the L-cache's substitution, the H/L sizing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.errors import HotsetError
from hotset.policies.base import Budget, Outcome
from hotset.policies.icache import ICache
from hotset.policies.icache import policy as icache


def _items(cap: int, **kw: object) -> ICache:
    return ICache(Budget(capacity_items=cap), **kw)  # type: ignore[arg-type]


def test_authors_constants_are_pinned() -> None:
    assert (icache.H_SHARE, icache.H_START) == (0.7, 0.9)
    p = _items(100)
    assert (p.cap_h, p.cap_l) == (90, 10)
    assert p.regions() == {"h": (0, 90), "l": (0, 10)}


def test_h_list_is_the_top_70_percent_of_the_planned_ids() -> None:
    p = _items(10)
    p.update_importance(np.arange(20, dtype=np.float64))
    p.begin_epoch(1, np.arange(10, dtype=np.int64))
    assert [s for s in range(10) if p.is_h(s)] == [3, 4, 5, 6, 7, 8, 9]


def test_full_heap_evicts_its_minimum_only_for_a_more_important_newcomer() -> None:
    p = _items(3, h_start=1.0, h_share=1.0)
    p.update_importance(np.array([5.0, 1.0, 3.0, 0.5, 9.0]))
    p.begin_epoch(1)
    for sid in (0, 1, 2):
        assert p.access(sid).admitted
    d = p.access(3)  # 0.5 < min 1.0: not cached
    assert d.outcome is Outcome.MISS and not d.admitted and d.evicted == ()
    d = p.access(4)  # 9.0 > min 1.0: evict id 1
    assert d.admitted and d.evicted == (1,)
    assert p.resident() == {0, 2, 4}


def test_importance_updates_go_to_a_shadow_heap_swapped_in_at_the_epoch_start() -> None:
    p = _items(2, h_start=1.0, h_share=1.0)
    p.update_importance(np.array([1.0, 2.0, 1.5]))
    p.begin_epoch(1)
    p.access(0)
    p.access(1)
    # new snapshot: id 0 became the most important; not in force before the swap
    p.update_importance(np.array([10.0, 2.0, 1.5]))
    assert p._heap[0] == (1.0, 0)  # the live heap is untouched
    assert p._shadow is not None and sorted(p._shadow) == [(2.0, 1), (10.0, 0)]
    p.begin_epoch(2)
    assert p._shadow is None and p._heap[0] == (2.0, 1)
    d = p.access(2)  # 1.5 < new min 2.0: rejected (with the old keys id 0 would go)
    assert not d.admitted and p.resident() == {0, 1}


def test_l_misses_are_substituted_by_unserved_l_residents_never_as_hits() -> None:
    p = _items(10, resize=False)  # H 9, L 1
    p.update_importance(np.arange(10, dtype=np.float64))
    p.begin_epoch(1, np.arange(10, dtype=np.int64))  # L-list: ids 0, 1, 2
    assert p.access(0).admitted  # fills L
    d = p.access(1)  # L full, id 0 served already by its admission: a real miss
    assert d.outcome is Outcome.MISS and p.missed == [1]
    p.begin_epoch(2, np.arange(10, dtype=np.int64))
    d = p.access(2)
    assert d.outcome is Outcome.SUBSTITUTION and d.served in p.resident()
    assert d.served != 2
    d = p.access(0 if d.served != 0 else 1)  # nothing unserved is left in L
    assert d.outcome is not Outcome.SUBSTITUTION


def test_st_hc_substitutes_from_the_h_cache() -> None:
    p = _items(10, resize=False, substitute_to="h")
    p.update_importance(np.arange(10, dtype=np.float64))
    p.begin_epoch(1, np.arange(10, dtype=np.int64))
    p.access(9)
    p.access(0)  # fills L
    p.begin_epoch(2, np.arange(10, dtype=np.int64))
    d = p.access(1)
    assert d.outcome is Outcome.SUBSTITUTION and d.served in (0, 9)


def test_h_is_resized_by_observed_access_frequencies() -> None:
    p = _items(100, lookahead=False)  # the paper's rule
    p.update_importance(np.arange(100, dtype=np.float64))
    p.begin_epoch(1, np.arange(100, dtype=np.int64))  # 70 H ids, 30 L ids
    assert (p.cap_h, p.cap_l) == (90, 10)  # nothing observed yet: the 90/10 start
    for sid in range(100):
        p.access(sid)
    p.begin_epoch(2, np.arange(100, dtype=np.int64))
    assert (p.cap_h, p.cap_l) == (70, 30)
    h, lo = p.regions()["h"], p.regions()["l"]
    assert h[1] + lo[1] == 100 and h[0] <= h[1] and lo[0] <= lo[1]


def test_with_lookahead_h_is_sized_by_the_epochs_planned_requests() -> None:
    """The plan is known: F_H and F_L are the epoch's own requests, repeats counted,
    from its first epoch with an L-list on (no 90/10 start sized for no L traffic)."""
    p = _items(100)
    p.update_importance(np.arange(100, dtype=np.float64))
    p.begin_epoch(1, np.arange(100, dtype=np.int64))  # 70 H ids, 30 L ids
    assert (p.cap_h, p.cap_l) == (70, 30)
    planned = np.concatenate([np.arange(100), np.full(20, 99)]).astype(np.int64)
    p.begin_epoch(2, planned)  # F_H = 70 + 20 repeats of H id 99, F_L = 30
    assert (p.cap_h, p.cap_l) == (75, 25)
    p.begin_epoch(3, None)  # no plan: the last epoch's observed requests (none): kept
    assert (p.cap_h, p.cap_l) == (75, 25)


@pytest.mark.parametrize("lookahead", [True, False])
def test_lookahead_never_evicts_a_resident_the_epoch_still_plans(lookahead: bool) -> None:
    """The paper's heap evicts id 1 (least important) although it is due later this
    epoch; with lookahead it is held, and the newcomer takes a resident already served."""
    p = _items(3, h_start=1.0, h_share=1.0, lookahead=lookahead)
    p.update_importance(np.array([5.0, 1.0, 3.0, 9.0]))
    p.begin_epoch(1, np.array([0, 1, 2], dtype=np.int64))
    for sid in (0, 1, 2):
        p.access(sid)
    p.begin_epoch(2, np.array([2, 0, 3, 1], dtype=np.int64))
    assert p.access(2).outcome is Outcome.HIT  # served: evictable from now on
    assert p.access(0).outcome is Outcome.HIT
    d = p.access(3)  # 9.0 beats every key
    assert d.admitted
    if lookahead:
        assert d.evicted == (2,)  # the least important of the served ones (3.0 < 5.0)
        assert p.access(1).outcome is Outcome.HIT
    else:
        assert d.evicted == (1,)
        assert p.access(1).outcome is Outcome.MISS


def test_held_residents_survive_a_mid_epoch_resume() -> None:
    def run(resume_at: int | None) -> list[tuple[Outcome, tuple[int, ...]]]:
        p = _items(3, h_start=1.0, h_share=1.0)
        p.update_importance(np.array([5.0, 1.0, 3.0, 9.0, 7.0]))
        p.begin_epoch(1, np.array([0, 1, 2], dtype=np.int64))
        for sid in (0, 1, 2):
            p.access(sid)
        order = [2, 3, 4, 0, 1]
        p.begin_epoch(2, np.array(order, dtype=np.int64))
        out = []
        for i, sid in enumerate(order):
            if i == resume_at:
                q = _items(3, h_start=1.0, h_share=1.0)
                q.load_state_dict(p.state_dict())
                p = q
            d = p.access(sid)
            out.append((d.outcome, d.evicted))
        return out

    straight = run(None)
    assert straight[1] == (Outcome.MISS, (2,)) and straight[-1][0] is Outcome.HIT
    assert all(run(k) == straight for k in range(1, 5))


@pytest.mark.parametrize(
    ("kwargs", "bad"),
    [
        ({"h_share": 1.5}, "h_share"),
        ({"h_start": -0.1}, "h_start"),
        ({"substitute_to": "x"}, "substitute_to"),
        ({"resize": 1}, "resize"),
        ({"lookahead": "yes"}, "lookahead"),
    ],
)
def test_bad_options_name_the_value(kwargs: dict[str, object], bad: str) -> None:
    with pytest.raises(HotsetError, match=bad):
        _items(10, **kwargs)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**16),
    st.floats(0.05, 0.9),
    st.sampled_from(["l", "h"]),
)
def test_budget_holds_across_regions(seed: int, frac: float, sub: str) -> None:
    rng = np.random.default_rng(seed)
    n = 60
    sizes = rng.integers(1, 50, n).astype(np.int64)
    cap = int(frac * sizes.sum())
    p = ICache(Budget(capacity_bytes=cap, sizes=sizes), seed=seed, substitute_to=sub)
    for epoch in range(4):
        order = rng.permutation(n)[: rng.integers(10, n)].astype(np.int64)
        p.begin_epoch(epoch, order)
        for sid in order.tolist():
            p.access(sid)
            regions = p.regions()
            assert sum(c for _, c in regions.values()) <= cap
            assert all(0 <= u <= c for u, c in regions.values())
            assert p.used_bytes == sum(int(sizes[s]) for s in p.resident()) <= cap
        p.end_epoch()
        p.update_importance(rng.exponential(1.0, n))
