"""``hotset bench traingrid``: the cache x chunk grid, each cell's rows against the first
system's, the baseline trained once per seed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_support import run_cli


def test_a_tiny_grid_compares_every_cell_with_the_reference(tmp_path: Path) -> None:
    code, out = run_cli(
        "bench", "traingrid", "--root", str(tmp_path), "--data-dir", str(tmp_path / "data"),
        "--synth-n", "300", "--cache-fracs", "0.1,0.4", "--chunk-sizes", "16,64",
        "--seeds", "0", "--epochs", "2", "--compute-ms", "5", "--latency-ms", "10", "--json",
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads((tmp_path / "benchmarks" / "results" / "traingrid.json").read_text())
    result = doc["result"]
    table = result["table"]
    assert len(table) == 8  # 2 caches x 2 chunk sizes x quiver, scout
    assert {(r["cache_frac"], r["chunk_size"]) for r in table} == {
        (0.1, 16), (0.1, 64), (0.4, 16), (0.4, 64),
    }  # fmt: skip
    for row in table:
        if row["system"] == "quiver":
            assert row["epoch_vs_ref"] == 1.0  # the reference against itself
        else:
            assert row["bytes_read_over_trained"] <= 1.2  # ranged: no byte it does not train
            assert row["meets"] == (
                row["epoch_vs_ref"] <= 1.05
                and row["time_to_target_s"] is not None
                and (row["ttt_vs_ref"] is None or row["ttt_vs_ref"] <= 1.0)
            )
        assert row["unique_ids_trained_per_epoch"] > 0  # coverage beside every count
    assert len(result["runs"]) == 8  # one seed: the baseline is apart, run once
    for run in result["runs"]:  # the audit's target: 0.99 of the baseline's final accuracy
        base = result["baseline"]["final_acc"]
        assert run["target"] == pytest.approx(0.99 * base, abs=1e-4)
        assert len(run["curve"]) == 2 and run["curve"][-1][1] == run["final_val_accuracy"]
        if run["time_to_full_target_s"] is not None:
            assert run["time_to_target_s"] <= run["time_to_full_target_s"]
    assert result["baseline"]["system"] == "pytorch"
    assert result["cells_met"].endswith("/4")
    assert "Simulated time" in result["notes"][0]


def test_the_baseline_is_refused_as_a_compared_system(tmp_path: Path) -> None:
    code, out = run_cli("bench", "traingrid", "--root", str(tmp_path), "--systems",
                        "pytorch,scout")  # fmt: skip
    assert code != 0 and "pytorch is the baseline" in out


def test_grid_options_refuse_what_the_grid_cannot_run() -> None:
    from hotset.bench.train_grid import TrainGridOptions
    from hotset.errors import HotsetError

    with pytest.raises(HotsetError, match="pytorch is the baseline"):
        TrainGridOptions(systems=("pytorch", "scout"))
    with pytest.raises(HotsetError, match=r"--cache-fracs: each must be in \(0, 1\]"):
        TrainGridOptions(cache_fracs=(0.0, 0.5))
    with pytest.raises(HotsetError, match="--chunk-sizes: each must be >= 1"):
        TrainGridOptions(chunk_sizes=(0,))
