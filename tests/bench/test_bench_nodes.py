"""``hotset bench nodes``: the grid of private vs pooled runs and its result file."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from cli_support import run_cli
from hotset.bench.nodes import MEAN_BYTES, NodesOptions, run, workload_sizes
from hotset.sim.nodes import Costs


def test_sizes_are_seeded_and_average_about_an_imagenet_jpeg() -> None:
    sizes = workload_sizes(20_000, seed=0)
    assert np.array_equal(sizes, workload_sizes(20_000, seed=0))
    assert abs(sizes.mean() - MEAN_BYTES) < 0.03 * MEAN_BYTES


def test_one_node_runs_private_only_and_more_nodes_run_both_scopes() -> None:
    opts = NodesOptions(systems=("minio",), nodes=(1, 4), cache_fracs=(0.1,), n=2000, epochs=3,
                        batch_size=32)  # fmt: skip
    result = run(opts, progress=False)
    rows = result["table"]
    assert [(r["nodes"], r["scope"]) for r in rows] == [
        (1, "private"),
        (4, "private"),
        (4, "pooled"),
    ]
    pooled = rows[2]
    assert pooled["exact_hit_ratio"] > 3 * rows[1]["exact_hit_ratio"]
    assert pooled["remote_gb_per_epoch"] > 0 and rows[1]["remote_gb_per_epoch"] == 0
    assert any(note.startswith("Simulated") for note in result["notes"])


def test_the_command_writes_its_result_with_system_options(tmp_path: Path) -> None:
    code, out = run_cli(
        "bench", "nodes", "--root", str(tmp_path), "--systems", "shade[adaptive=false],lru",
        "--nodes", "2", "--cache-fracs", "0.2", "--n", "600", "--epochs", "2",
        "--batch-size", "16", "--no-progress",
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads((tmp_path / "benchmarks" / "results" / "nodes.json").read_text())
    systems = [r["system"] for r in doc["result"]["table"]]
    assert systems == ["shade[adaptive=false]"] * 2 + ["lru"] * 2
    assert "## nodes" in (tmp_path / "benchmarks" / "README.md").read_text()


def test_an_unknown_system_fails_before_any_work(tmp_path: Path) -> None:
    code, out = run_cli("bench", "nodes", "--root", str(tmp_path), "--systems", "lru,nope")
    assert code == 2 and "nope" in out
    assert not (tmp_path / "benchmarks").exists()


def _nodes(tmp_path: Path, *extra: str) -> tuple[dict[str, Any], str]:
    code, out = run_cli(
        "bench", "nodes", "--root", str(tmp_path), "--systems", "lru", "--nodes", "2",
        "--cache-fracs", "0.2", "--n", "600", "--epochs", "2", "--batch-size", "16",
        "--no-progress", *extra,
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads((tmp_path / "benchmarks" / "results" / "nodes.json").read_text())
    result: dict[str, Any] = doc["result"]
    return result, out


def test_the_store_preset_reaches_the_cost_model_and_the_default_is_stated(
    tmp_path: Path,
) -> None:
    plain, plain_out = _nodes(tmp_path)
    nfs, nfs_out = _nodes(tmp_path, "--store", "nfs-10gbe")
    assert "store: latency 2 ms, 100 MB/s, 4 in flight (no preset)" in plain_out
    assert "store: nfs-10gbe (2 ms, 1250 MB/s, 8 in flight)" in nfs_out
    assert plain["store"] == {
        "preset": None,
        "latency_ms": 2.0,
        "bandwidth_mb_s": 100.0,
        "max_concurrency": 4,
    }
    assert nfs["store"]["preset"] == "nfs-10gbe"
    assert plain["costs"] == asdict(Costs())  # the default is the model's own, as before
    costs = nfs["costs"]
    assert (costs["storage_latency_ms"], costs["storage_mb_s"], costs["storage_concurrency"]) == (
        2.0,
        1250.0,
        8,
    )
    assert any("nfs-10gbe (2 ms, 1250 MB/s, 8 in flight)" in note for note in nfs["notes"])
    # the same decisions, read over a wider store: the modeled epochs are shorter
    for fast, slow in zip(nfs["table"], plain["table"], strict=True):
        assert fast["exact_hit_ratio"] == slow["exact_hit_ratio"]
        assert fast["storage_requests_per_epoch"] == slow["storage_requests_per_epoch"]
        assert fast["modeled_epoch_seconds"] < slow["modeled_epoch_seconds"]
