"""``hotset bench nodes``: the grid of private vs pooled runs and its result file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from cli_support import run_cli
from hotset.bench.nodes import MEAN_BYTES, run, workload_sizes


def test_sizes_are_seeded_and_average_about_an_imagenet_jpeg() -> None:
    sizes = workload_sizes(20_000, seed=0)
    assert np.array_equal(sizes, workload_sizes(20_000, seed=0))
    assert abs(sizes.mean() - MEAN_BYTES) < 0.03 * MEAN_BYTES


def test_one_node_runs_private_only_and_more_nodes_run_both_scopes() -> None:
    result = run(systems=["minio"], nodes=[1, 4], cache_fracs=[0.1], n=2000, epochs=3,
                 batch_size=32, progress=False)  # fmt: skip
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
