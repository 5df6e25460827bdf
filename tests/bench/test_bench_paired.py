"""``hotset.bench.paired``: a seed-paired difference, its standard error and 95% interval."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.bench.paired import paired, t95


def test_three_pairs_match_a_hand_computed_interval() -> None:
    # mean 2, sample sd 1, se 1/sqrt(3); t(0.975, 2) = 4.303
    got = paired([1.0, 2.0, 3.0])
    half = 4.303 / math.sqrt(3)
    assert got.n == 3
    assert got.mean == pytest.approx(2.0)
    assert got.se == pytest.approx(1 / math.sqrt(3))
    assert got.low == pytest.approx(2.0 - half) and got.high == pytest.approx(2.0 + half)
    assert not got.above_zero  # -0.48 .. 4.48: zero is inside


def test_a_tight_positive_difference_lies_above_zero() -> None:
    got = paired([5.0, 6.0, 7.0])
    assert got.low == pytest.approx(6.0 - 4.303 / math.sqrt(3))
    assert got.above_zero


def test_too_few_pairs_say_nothing_they_cannot() -> None:
    none = paired([])
    assert (none.n, none.mean, none.se, none.low, none.high) == (0, None, None, None, None)
    one = paired([1.5])
    assert (one.n, one.mean, one.se, one.low) == (1, 1.5, None, None)
    assert not one.above_zero


def test_as_dict_names_every_field_under_its_prefix() -> None:
    got = paired([1.0, 3.0]).as_dict("d", digits=2)
    assert got == {"d_mean": 2.0, "d_se": 1.0, "d_low": round(2.0 - 12.706, 2),
                   "d_high": round(2.0 + 12.706, 2), "d_n": 2}  # fmt: skip


def test_a_non_finite_difference_is_refused() -> None:
    with pytest.raises(ValueError, match="must be finite"):
        paired([1.0, math.nan])


def test_t_quantiles_from_the_table_and_beyond_it() -> None:
    assert t95(1) == 12.706 and t95(4) == 2.776 and t95(20) == 2.086
    assert t95(25) >= 2.060  # the true quantile at 25; the tail never narrows it
    assert t95(10_000) >= 1.96
    with pytest.raises(ValueError, match="degrees of freedom"):
        t95(0)


@settings(max_examples=60, deadline=None)
@given(
    diffs=st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=12),
    shift=st.floats(-1e3, 1e3),
)
def test_shifting_every_pair_shifts_the_interval_and_keeps_its_width(
    diffs: list[float], shift: float
) -> None:
    a, b = paired(diffs), paired([d + shift for d in diffs])
    assert a.mean is not None and b.mean is not None and a.se is not None and b.se is not None
    assert a.low is not None and a.high is not None and b.low is not None and b.high is not None
    assert a.low <= a.mean <= a.high
    assert b.mean == pytest.approx(a.mean + shift, abs=1e-6)
    assert b.se == pytest.approx(a.se, abs=1e-6)
    assert b.high - b.low == pytest.approx(a.high - a.low, abs=1e-5)
