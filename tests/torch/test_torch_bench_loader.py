"""The loader benchmark runs end to end and its rows are consistent (tiny sizes)."""

from __future__ import annotations

import math

import pytest

from hotset.bench.loader import LoaderBenchOptions, run
from hotset.errors import HotsetError
from hotset.storage.presets import StoreModel


def test_tiny_run_rows() -> None:
    result = run(
        LoaderBenchOptions(
            n=192,
            epochs=2,
            workers=0,
            batch_size=32,
            compute_ms=1.0,
            image_size=8,
            systems=("pytorch", "lru"),
        ),
        store=StoreModel(latency_ms=1.0, bandwidth_mb_s=math.inf, max_concurrency=2),
    )
    rows = {row["name"]: row for row in result["table"]}
    assert list(rows) == ["torch", "pytorch", "lru", "no-io"]
    assert rows["torch"]["storage_requests"] == rows["pytorch"]["storage_requests"] == 2 * 192
    assert rows["pytorch"]["exact_hit_ratio"] == 0.0
    assert rows["no-io"]["storage_requests"] == 0
    assert rows["lru"]["storage_requests"] < 2 * 192  # a 20% LRU cache hits something
    for row in rows.values():
        assert row["samples_per_s"] > 0
        assert 0.0 <= row["stall_share"] <= 1.0
    # 384 reads of >= 1 ms through 2 lanes: the throttled rows cannot beat that
    assert rows["torch"]["wall_seconds"] >= 2 * 192 * 0.001 / 2
    assert result["params"]["n"] == 192


def test_bad_arguments() -> None:
    with pytest.raises(HotsetError, match="unknown system"):
        run(LoaderBenchOptions(systems=("nope",), n=10))
    with pytest.raises(HotsetError, match="cache_frac"):
        run(LoaderBenchOptions(cache_frac=0.0, n=10))
