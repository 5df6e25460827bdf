"""Owner ranks: one fixed, even map from ids to ranks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotset.engine.owners import owner_ranks
from hotset.errors import HotsetError


def test_ids_spread_evenly_over_the_ranks() -> None:
    counts = np.bincount(owner_ranks(np.arange(40_000), 8), minlength=8)
    assert counts.min() > 4_500 and counts.max() < 5_500


@given(st.lists(st.integers(0, 2**40), min_size=1, max_size=50), st.integers(1, 64))
def test_an_owner_is_a_rank_and_depends_on_the_id_alone(ids: list[int], world: int) -> None:
    owners = owner_ranks(ids, world)
    assert ((owners >= 0) & (owners < world)).all()
    assert owners.tolist() == [int(owner_ranks([i], world)[0]) for i in ids]
    assert owners[::-1].tolist() == owner_ranks(ids[::-1], world).tolist()


@pytest.mark.parametrize(
    ("ids", "world", "match"),
    [([1], 0, "world_size"), ([1], True, "world_size"), ([-1], 2, "non-negative"),
     ([0.5], 2, "non-negative")],
)  # fmt: skip
def test_bad_input_names_the_value(ids: list[float], world: int, match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        owner_ranks(ids, world)
