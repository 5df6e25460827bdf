"""The synthetic loss model the node simulator feeds learning systems."""

from __future__ import annotations

import numpy as np
import pytest

from hotset.errors import HotsetError
from hotset.sim.losses import SyntheticLosses


def test_losses_fall_as_a_sample_is_trained_and_differ_between_samples() -> None:
    model = SyntheticLosses(1000, seed=1, jitter=0.0)
    ids = np.arange(1000)
    first = model(ids)
    second = model(ids)
    assert np.all(second < first)
    assert first.std() > 0.5 * first.mean()  # log-normal difficulty: samples differ


def test_the_same_calls_give_the_same_losses() -> None:
    a, b = SyntheticLosses(50, seed=7), SyntheticLosses(50, seed=7)
    ids = np.array([3, 9, 3, 40])
    assert np.array_equal(a(ids), b(ids)) and np.array_equal(a(ids), b(ids))
    assert not np.array_equal(SyntheticLosses(50, seed=8)(ids), SyntheticLosses(50, seed=7)(ids))


def test_losses_are_never_negative() -> None:
    model = SyntheticLosses(100, seed=0, jitter=5.0)
    assert model(np.arange(100)).min() >= 0.0


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"n": 0}, "n must be"), ({"rate": -1.0}, "rate"), ({"sigma": np.nan}, "sigma")],
)
def test_bad_parameters_name_the_value(kw: dict[str, float], match: str) -> None:
    args = {"n": 10, "seed": 0, **kw}
    with pytest.raises(HotsetError, match=match):
        SyntheticLosses(**args)  # type: ignore[arg-type]
