"""The replay-speed benchmark: its rows, its hit ratios, its input checks (not its speed)."""

from __future__ import annotations

import pytest

from hotset.bench.sim import SimBenchOptions, permutation_trace, run
from hotset.errors import HotsetError


def test_rows_per_policy_with_rates_and_hit_ratios() -> None:
    opts = SimBenchOptions(
        accesses=20_000, n=2_000, cache_frac=0.25, policies=("lru", "minio", "oracle")
    )
    result = run(opts)
    rows = {row["policy"]: row for row in result["table"]}
    assert list(rows) == ["lru", "minio", "oracle"]
    assert all(row["accesses"] == 20_000 and row["accesses_per_s"] > 0 for row in rows.values())
    assert rows["oracle"]["hit_ratio"] == 1.0
    assert rows["minio"]["hit_ratio"] == pytest.approx(0.25 * 9 / 10)  # 9 warm epochs of 10
    assert result["params"]["n"] == 2_000


def test_trace_is_back_to_back_permutations() -> None:
    trace = permutation_trace(accesses=25, n=10, seed=3)
    assert len(trace) == 25
    assert sorted(trace[:10].tolist()) == list(range(10))
    assert sorted(trace[10:20].tolist()) == list(range(10))


def test_bad_arguments() -> None:
    with pytest.raises(HotsetError, match="unknown policy"):
        run(SimBenchOptions(accesses=10, n=10, policies=("nope",)))
    with pytest.raises(HotsetError, match="cache_frac"):
        run(SimBenchOptions(accesses=10, n=10, cache_frac=0.0))
