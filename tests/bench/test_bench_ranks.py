"""``hotset bench ranks``: real ranks over private and pooled caches (a real redis-server)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from cli_support import run_cli
from hotset.data import Manifest, SynthConfig, make_synth


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


def test_the_store_preset_reaches_the_ranks_server(tmp_path: Path) -> None:
    # one rank over a narrow link: it cannot train faster than the link moves its samples
    code, out = run_cli(
        "bench", "ranks", "--root", str(tmp_path), "--worlds", "1", "--systems", "pytorch",
        "--cache-fracs", "0.3", "--n", "128", "--epochs", "2", "--batch-size", "16",
        "--no-progress", "--store", "nfs-10gbe", "--bandwidth-mb-s", "0.2",
    )  # fmt: skip
    assert code == 0, out
    assert "store: nfs-10gbe (2 ms, 0.2 MB/s, 8 in flight)" in out
    result = json.loads((tmp_path / "benchmarks" / "results" / "ranks.json").read_text())["result"]
    assert result["store"] == {
        "preset": "nfs-10gbe",
        "latency_ms": 2.0,
        "bandwidth_mb_s": 0.2,
        "max_concurrency": 8,
    }
    params = result["params"]
    assert (params["latency_ms"], params["bandwidth_mb_s"], params["concurrency"]) == (2, 0.2, 8)
    assert "nfs-10gbe (2 ms, 0.2 MB/s, 8 in flight)" in result["notes"][0]
    # the suite's data set, made again: its mean sample size bounds the rank's speed
    make_synth(tmp_path / "same", SynthConfig(n=128, image_size=16, seed=0), workers=1)
    mean_bytes = float(np.mean(Manifest.load(tmp_path / "same").sizes))
    (row,) = result["table"]
    assert row["samples_per_s"] <= 0.2e6 / mean_bytes * 1.02


def test_ranks_default_store_is_unchanged_and_stated(tmp_path: Path) -> None:
    code, out = run_cli(
        "bench", "ranks", "--root", str(tmp_path), "--worlds", "1", "--systems", "pytorch",
        "--cache-fracs", "0.3", "--n", "64", "--epochs", "2", "--no-progress",
    )  # fmt: skip
    assert code == 0, out
    assert "store: latency 2 ms, unlimited bandwidth, 4 in flight (no preset)" in out
    result = json.loads((tmp_path / "benchmarks" / "results" / "ranks.json").read_text())["result"]
    assert result["store"] == {
        "preset": None,
        "latency_ms": 2.0,
        "bandwidth_mb_s": None,
        "max_concurrency": 4,
    }
