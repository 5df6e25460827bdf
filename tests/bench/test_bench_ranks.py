"""``hotset bench ranks``: real ranks over private and pooled caches (a real redis-server)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import run_cli


def test_two_ranks_private_and_pooled(tmp_path: Path) -> None:
    code, out = run_cli(
        "bench", "ranks", "--root", str(tmp_path), "--worlds", "2", "--systems", "lru",
        "--cache-fracs", "0.3", "--n", "200", "--epochs", "2", "--batch-size", "16",
        "--no-progress",
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads((tmp_path / "benchmarks" / "results" / "ranks.json").read_text())
    private, pooled = doc["result"]["table"]
    assert (private["scope"], pooled["scope"]) == ("private", "pooled")
    for row in (private, pooled):
        assert row["unique_ids_trained_per_epoch"] == 200  # lru: each sample once across ranks
        assert row["refused_puts_per_epoch"] == 0
        assert row["exact_hit_ratio"] > 0
    assert private["pool_hit_ratio"] == 0 < pooled["pool_hit_ratio"]
    # the pool's hits are storage reads saved
    assert pooled["storage_requests_per_epoch"] < private["storage_requests_per_epoch"]


def test_bad_input_fails_before_any_work(tmp_path: Path) -> None:
    code, out = run_cli("bench", "ranks", "--root", str(tmp_path), "--cache-fracs", "1.5")
    assert code == 2 and "cache share" in out
    code, out = run_cli("bench", "ranks", "--root", str(tmp_path), "--systems", "nope")
    assert code == 2 and "nope" in out
    assert not (tmp_path / "benchmarks").exists()


def test_a_system_spec_reaches_each_rank_loader(tmp_path: Path) -> None:
    """``shade[coverage_floor=0.5]`` beside plain ``shade``: half of each epoch goes to the
    samples trained longest ago, so the spec's row trains far more distinct samples."""
    code, out = run_cli(
        "bench", "ranks", "--root", str(tmp_path), "--worlds", "1",
        "--systems", "shade,shade[coverage_floor=0.5]", "--cache-fracs", "0.3", "--n", "200",
        "--epochs", "2", "--batch-size", "16", "--no-progress",
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads((tmp_path / "benchmarks" / "results" / "ranks.json").read_text())
    rows = {row["system"]: row for row in doc["result"]["table"]}
    assert list(rows) == ["shade", "shade[coverage_floor=0.5]"]
    plain, floored = rows["shade"], rows["shade[coverage_floor=0.5]"]
    # the floor's half epoch: 100 distinct samples, those trained longest ago
    assert floored["unique_ids_trained_per_epoch"] >= 100
    assert floored["unique_ids_trained_per_epoch"] > plain["unique_ids_trained_per_epoch"]
