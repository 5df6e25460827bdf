"""Locality statistics of epoch orders (hotset.sim.locality): definitions and exact expectations."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hotset.errors import HotsetError
from hotset.sim.locality import (
    epoch_rank_correlation,
    group_spread,
    measure,
    same_group_adjacency,
    uniform,
    uniform_adjacency,
    uniform_rank_correlation_sd,
    uniform_spread,
)


def test_statistics_of_hand_made_orders() -> None:
    groups = np.array([0, 0, 1, 1, 2, 2])
    chunk_by_chunk = np.array([0, 1, 2, 3, 4, 5])
    interleaved = np.array([0, 2, 4, 1, 3, 5])
    assert same_group_adjacency(chunk_by_chunk, groups) == pytest.approx(3 / 5)
    assert same_group_adjacency(interleaved, groups) == 0.0
    assert group_spread(chunk_by_chunk, groups) == pytest.approx(1 / 5)
    assert group_spread(interleaved, groups) == pytest.approx(3 / 5)
    assert epoch_rank_correlation(chunk_by_chunk, chunk_by_chunk) == pytest.approx(1.0)
    assert epoch_rank_correlation(chunk_by_chunk, chunk_by_chunk[::-1]) == pytest.approx(-1.0)


def test_uniform_expectations_are_exact_against_many_permutations() -> None:
    """Unequal groups (a short last chunk) included: the formulas hold for any sizes."""
    groups = np.repeat(np.arange(7), [5, 5, 5, 5, 5, 5, 2])
    n, draws = len(groups), 20_000
    rng = np.random.default_rng(3)
    perms = [rng.permutation(n) for _ in range(draws)]
    adjacency = np.mean([same_group_adjacency(p, groups) for p in perms])
    spread = np.mean([group_spread(p, groups) for p in perms])
    rhos = [epoch_rank_correlation(a, b) for a, b in zip(perms[::2], perms[1::2], strict=True)]
    # within 4 standard errors of the exact values
    assert abs(adjacency - uniform_adjacency(groups)) < 4 * 0.06 / np.sqrt(draws)
    assert abs(spread - uniform_spread(groups)) < 4 * 0.1 / np.sqrt(draws)
    assert abs(np.mean(rhos)) < 4 * uniform_rank_correlation_sd(n) / np.sqrt(len(rhos))
    assert np.std(rhos) == pytest.approx(uniform_rank_correlation_sd(n), rel=0.05)
    assert uniform_adjacency(np.repeat(np.arange(4), 16)) == pytest.approx(15 / 63)


def test_orders_with_repeats_are_measured_on_the_ids_they_hold() -> None:
    groups = np.array([0, 0, 1, 1])
    first = np.array([0, 0, 2, 3, 1])  # 0 twice, 1 last
    second = np.array([3, 2, 1])  # 0 missing
    # common ids 1, 2, 3 at first positions (4, 2, 3) and (2, 1, 0): ranks (2, 0, 1), (2, 1, 0)
    assert epoch_rank_correlation(first, second) == pytest.approx(0.5)
    assert same_group_adjacency(first, groups) == pytest.approx(2 / 4)
    # group 0 at positions 0, 1, 4 (range 4); group 1 at 2, 3 (range 1); over len - 1 = 4
    assert group_spread(first, groups) == pytest.approx((4 / 4 + 1 / 4) / 2)
    assert epoch_rank_correlation(np.array([0, 1]), np.array([1, 0])) is None  # 2 common ids


def test_singleton_groups_have_no_spread() -> None:
    groups = np.arange(5)
    assert group_spread(np.arange(5), groups) is None
    assert uniform_spread(groups) is None
    assert uniform_adjacency(groups) == 0.0


def test_measure_averages_epochs_and_is_plain_json() -> None:
    groups = np.repeat(np.arange(10), 10)
    rng = np.random.default_rng(1)
    orders = [rng.permutation(100) for _ in range(3)]
    got = measure(orders, groups)
    assert got.epochs == 3
    assert got.adjacency == pytest.approx(
        np.mean([same_group_adjacency(o, groups) for o in orders])
    )
    assert got.rank_correlation == pytest.approx(
        np.mean(
            [
                epoch_rank_correlation(orders[0], orders[1]),
                epoch_rank_correlation(orders[1], orders[2]),
            ]
        )
    )
    row = got.as_dict() | uniform(groups).as_dict()
    assert all(type(v) in (int, float) for v in row.values())
    json.dumps(row, allow_nan=False)
    assert measure(orders[:1], groups).rank_correlation is None
    assert uniform(groups, epochs=1).rank_correlation is None


@pytest.mark.parametrize(
    ("order", "groups", "match"),
    [
        (np.array([0, 5]), np.zeros(3, dtype=np.int64), "id 5 is outside the grouping's ids 0..2"),
        (np.array([0]), np.zeros(3, dtype=np.int64), "at least 2 ids"),
        (np.array([0.0, 1.0]), np.zeros(3, dtype=np.int64), "integer ids"),
        (np.array([0, 1]), np.array([0, -1, 0]), "group ids must be >= 0, got -1"),
        (np.array([0, 1]), np.array([0.5, 1.0]), "integer group ids"),
    ],
)
def test_bad_inputs_name_the_value(order: np.ndarray, groups: np.ndarray, match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        same_group_adjacency(order, groups)


def test_bad_calls_name_what_is_missing() -> None:
    with pytest.raises(HotsetError, match="at least one epoch"):
        measure([], np.zeros(3, dtype=np.int64))
    with pytest.raises(HotsetError, match="at least 3 ids"):
        uniform_rank_correlation_sd(2)
