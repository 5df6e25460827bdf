"""``hotset bench overhead``: each measurement is a positive, finite figure or says why not."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hotset.bench import overhead
from hotset.cli import main


def test_cache_bandwidths_are_positive_and_every_get_hits() -> None:
    rows = overhead.shm_rows(count=16, size=10_000, rounds=2)
    assert [r["metric"] for r in rows] == [
        "shared-memory hit bandwidth",
        "shared-memory put bandwidth",
    ]
    assert all(r["value"] > 0 and math.isfinite(r["value"]) for r in rows)


def test_redis_row_is_measured_against_a_real_server() -> None:
    rows = overhead.redis_rows(count=16, size=10_000, rounds=2)
    assert rows[0]["value"] is not None and rows[0]["value"] > 0


def test_redis_row_without_a_server_carries_no_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overhead.shutil, "which", lambda _: None)
    rows = overhead.redis_rows()
    assert rows == [
        {
            "metric": "redis hit throughput",
            "value": None,
            "unit": "GB/s",
            "detail": "not measured: redis-server is not on PATH",
        }
    ]


def test_cli_writes_every_metric(tmp_path: Path) -> None:
    main(
        [
            "bench", "overhead", "--root", str(tmp_path), "--accesses", "5000", "--loader-n", "200",
            "--cache-count", "8", "--cache-size", "1000", "--cache-rounds", "2", "--json",
        ]
    )  # fmt: skip
    doc = json.loads((tmp_path / "benchmarks" / "results" / "overhead.json").read_text())
    metrics = [r["metric"] for r in doc["result"]["table"]]
    assert "policy decisions (lru)" in metrics
    assert "hotset loader overhead per sample (lru)" in metrics
    assert "shared-memory hit bandwidth" in metrics
    assert "redis hit throughput" in metrics
    for row in doc["result"]["table"]:
        if row["metric"].startswith(("policy", "shared", "redis", "plain")):
            assert row["value"] > 0
