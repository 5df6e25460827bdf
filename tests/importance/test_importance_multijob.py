"""iCACHE §III-D: relative importance, cache eligibility and the adjusted importance."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.errors import HotsetError
from hotset.importance.multijob import (
    ELIGIBLE_ABOVE,
    JobImportance,
    adjusted_importance,
    eligible,
    relative_importance,
)

scores = st.lists(st.floats(min_value=0.0, max_value=1e6, allow_nan=False), min_size=2, max_size=60)


def _order(values: np.ndarray) -> list[int]:
    """Ids by value then id: the order a heap keyed by ``values`` evicts in."""
    return np.lexsort((np.arange(len(values)), values)).tolist()


def test_relative_importance_is_the_midrank_percentile() -> None:
    riv = relative_importance([0.3, 0.1, 0.9, 0.3, 0.5])
    # sorted: 0.1, 0.3, 0.3, 0.5, 0.9 -> ranks 0, 1.5, 1.5, 3, 4 over n - 1 = 4
    assert riv.tolist() == [0.375, 0.0, 1.0, 0.375, 0.75]


def test_relative_importance_leaves_unknown_items_unknown() -> None:
    riv = relative_importance([np.nan, 2.0, 1.0, np.nan])
    assert np.isnan(riv[[0, 3]]).all()
    assert riv[[1, 2]].tolist() == [1.0, 0.0]
    assert relative_importance([np.nan, 7.0]).tolist()[1] == 0.5  # one known value
    assert np.isnan(relative_importance([np.nan, np.nan])).all()


def test_relative_importance_refuses_bad_scores() -> None:
    with pytest.raises(HotsetError, match="1-D"):
        relative_importance(np.zeros((2, 2)))
    with pytest.raises(HotsetError, match="finite"):
        relative_importance([1.0, np.inf])


@settings(max_examples=200, deadline=None)
@given(values=scores)
def test_relative_importance_keeps_the_order_and_ignores_the_scale(values: list[float]) -> None:
    raw = np.asarray(values)
    riv = relative_importance(raw)
    assert ((riv >= 0) & (riv <= 1)).all()
    assert np.array_equal(relative_importance(raw * 4.0), riv)  # scale-free (4x: exact)
    for a in range(len(raw)):
        for b in range(len(raw)):
            if raw[a] < raw[b]:
                assert riv[a] < riv[b]
            elif raw[a] == raw[b]:
                assert riv[a] == riv[b]  # ties: one percentile, whatever the ids


@settings(max_examples=100, deadline=None)
@given(values=scores, seed=st.integers(0, 2**16))
def test_relative_importance_does_not_depend_on_the_ids(values: list[float], seed: int) -> None:
    raw = np.asarray(values)
    perm = np.random.default_rng(seed).permutation(len(raw))
    assert np.array_equal(relative_importance(raw[perm]), relative_importance(raw)[perm])


def test_eligible_is_strictly_above_the_threshold() -> None:
    assert ELIGIBLE_ABOVE == 1.5
    assert eligible(1.51) and not eligible(1.5) and not eligible(1.2)
    assert eligible(1.2, threshold=1.1)
    for bad in (0.5, math.nan, math.inf, "1.5", True):
        with pytest.raises(HotsetError, match="threshold"):
            eligible(2.0, threshold=bad)  # type: ignore[arg-type]
    for bad_benefit in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(HotsetError, match=r"'A'.*benefit"):
            eligible(bad_benefit, job="A")


def test_aiv_is_the_benefit_weighted_sum_over_eligible_jobs() -> None:
    a = JobImportance.from_scores("A", 3.0, [0.1, 0.2, 0.3])  # riv 0, .5, 1
    b = JobImportance.from_scores("B", 2.0, [0.9, 0.8, 0.7])  # riv 1, .5, 0
    slow = JobImportance.from_scores("C", 1.2, [5.0, 1.0, 9.0])  # not eligible
    aiv = adjusted_importance([a, b, slow])
    assert aiv is not None
    assert aiv.tolist() == [2.0, 2.5, 3.0]


def test_aiv_is_none_when_no_job_is_eligible() -> None:
    jobs = [
        JobImportance.from_scores("A", 1.5, [1.0, 2.0]),
        JobImportance("B", 1.0, np.array([0.0, 1.0])),
    ]
    assert adjusted_importance(jobs) is None
    assert adjusted_importance([]) is None
    assert adjusted_importance(jobs, threshold=1.0) is not None  # A (1.5 > 1.0) counts then


def test_aiv_is_unknown_only_where_no_eligible_job_knows_the_item() -> None:
    a = JobImportance.from_scores("A", 2.0, [np.nan, 1.0, np.nan, 3.0])
    b = JobImportance.from_scores("B", 4.0, [np.nan, np.nan, 1.0, 2.0])
    aiv = adjusted_importance([a, b])
    assert aiv is not None
    assert np.isnan(aiv[0])
    assert aiv[1:].tolist() == [0.0, 0.0, 2.0 + 4.0]


def test_aiv_refuses_mismatched_jobs() -> None:
    a = JobImportance.from_scores("A", 2.0, [1.0, 2.0])
    with pytest.raises(HotsetError, match="same items"):
        adjusted_importance([a, JobImportance.from_scores("B", 2.0, [1.0, 2.0, 3.0])])
    with pytest.raises(HotsetError, match="distinct"):
        adjusted_importance([a, a])
    with pytest.raises(HotsetError, match=r"\[0, 1\]"):
        JobImportance("C", 2.0, np.array([0.5, 1.5]))


@settings(max_examples=100, deadline=None)
@given(values=scores, benefit=st.floats(min_value=1.51, max_value=50.0))
def test_one_eligible_job_orders_items_as_its_own_importance(
    values: list[float], benefit: float
) -> None:
    raw = np.asarray(values)
    aiv = adjusted_importance([JobImportance.from_scores("A", benefit, raw)])
    assert aiv is not None
    assert _order(aiv) == _order(raw)


@settings(max_examples=100, deadline=None)
@given(
    pair=st.integers(2, 40).flatmap(
        lambda n: st.tuples(
            *(st.lists(st.floats(0.0, 100.0), min_size=n, max_size=n) for _ in range(3))
        )
    ),
    benefits=st.tuples(st.floats(1.51, 20.0), st.floats(1.51, 20.0), st.floats(0.1, 1.5)),
)
def test_an_ineligible_job_changes_nothing(
    pair: tuple[list[float], list[float], list[float]],
    benefits: tuple[float, float, float],
) -> None:
    a = JobImportance.from_scores("A", benefits[0], pair[0])
    b = JobImportance.from_scores("B", benefits[1], pair[1])
    c = JobImportance.from_scores("C", benefits[2], pair[2])
    with_c, without = adjusted_importance([c, a, b]), adjusted_importance([a, b])
    assert with_c is not None and without is not None
    assert np.array_equal(with_c, without)
    swapped = adjusted_importance([b, a])
    assert swapped is not None and np.array_equal(swapped, without)  # the jobs' order: no matter
