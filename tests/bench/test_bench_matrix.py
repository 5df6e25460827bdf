"""``hotset bench matrix``: every row measured in one group, ratios inside the group,
repeats with their spread, simulated accuracy beside the measured speed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cli_support import run_cli
from hotset.bench.matrix import StandInLosses, acc_noise_pt, summarize
from hotset.errors import HotsetError


def _measured(name: str, rep: int, rate: float, *, frac: float | None = 0.2) -> dict[str, object]:
    row: dict[str, object] = {
        "name": name,
        "preset": "cloud-nas",
        "workload": "synth",
        "repeat": rep,
        "samples_per_s": rate,
        "vs_torch": rate / 100.0,
        "vs_no_io": rate / 400.0,
        "stall_share": 0.5,
        "storage_requests": 3000,
        "storage_bytes": 6_000_000,
        "delivered_bytes": 3_000_000,
        "exact_hit_ratio": 0.25,
        "substitution_ratio": 0.5,
        "unique_ids_trained_per_epoch": 1000.0,
        "epochs": 3,
        "wall_seconds": 3000 / rate,
        "seconds_per_epoch": 1000 / rate,
    }
    if frac is not None:
        row["cache_frac"] = frac
    return row


def _acc(system: str, seed: int, final: float, epochs_to: int | None, distinct: float) -> dict:
    return {
        "workload": "synth",
        "cache_frac": 0.2,
        "seed": seed,
        "system": system,
        "final_val_accuracy": final,
        "target": 0.7,
        "epochs_to_target": epochs_to,
        "distinct_ids_per_epoch": distinct,
        "n_train": 800,
        "n_val": 200,
    }


def test_summary_gives_median_and_spread_and_the_simulated_cell_beside_it() -> None:
    measured = [
        _measured("torch", 0, 100.0, frac=None),
        _measured("quiver", 0, 300.0),
        _measured("torch", 1, 100.0, frac=None),
        _measured("quiver", 1, 200.0),
        _measured("torch", 2, 100.0, frac=None),
        _measured("quiver", 2, 260.0),
    ]
    accuracy = [
        _acc("pytorch", 0, 0.70, 10, 800.0),
        _acc("pytorch", 1, 0.72, 10, 800.0),
        _acc("quiver", 0, 0.69, 8, 800.0),
        _acc("quiver", 1, 0.71, None, 800.0),
    ]
    table = {r["system"]: r for r in summarize(measured, accuracy)}
    quiver = table["quiver"]
    assert (quiver["vs_torch"], quiver["vs_torch_min"], quiver["vs_torch_max"]) == (2.6, 2.0, 3.0)
    assert quiver["repeats"] == 3
    # bytes per epoch and over what training received, never a hit ratio alone
    assert quiver["mb_read_per_epoch"] == 2.0 and quiver["read_per_delivered"] == 2.0
    assert quiver["exact_hit_ratio"] == 0.25 and quiver["substitution_ratio"] == 0.5
    assert quiver["sim_acc_delta_pt"] == pytest.approx(-1.0)
    assert quiver["reached"] == "1/2" and quiver["epochs_to_target"] == 8
    # 8 simulated epochs of 800 samples at the measured 260 samples/s
    assert quiver["modeled_tta_s"] == pytest.approx(8 * 800 / 260, abs=0.01)
    # torch's row (no cache size of its own) is laid beside every cache size, as pytorch
    assert table["torch"]["cache_frac"] == 0.2 and table["torch"]["sim_acc_delta_pt"] == 0.0


def test_accuracy_noise_shrinks_with_validation_samples_and_seeds() -> None:
    wide = acc_noise_pt(0.7, 200, 1)
    assert wide == pytest.approx(200 * (2 * 0.21 / 200) ** 0.5)
    assert acc_noise_pt(0.7, 800, 1) == pytest.approx(wide / 2)
    assert acc_noise_pt(0.7, 200, 4) == pytest.approx(wide / 2)
    assert acc_noise_pt(1.0, 200, 1) == 0.0


def test_stand_in_losses_keep_each_sample_hard_or_easy_across_epochs() -> None:
    losses = StandInLosses(500, seed=3)
    ids = np.arange(500)
    first, later = losses(ids, 0), losses(ids, 4)
    # the same samples stay on top (importance sampling has something to learn) ...
    top_first, top_later = set(np.argsort(first)[-50:]), set(np.argsort(later)[-50:])
    assert len(top_first & top_later) >= 40
    # ... while losses fall as training goes, and a seed gives the same difficulties
    assert later.mean() < first.mean()
    np.testing.assert_array_equal(StandInLosses(500, seed=3).difficulty, losses.difficulty)


def test_the_matrix_measures_every_row_in_groups_and_draws_it(tmp_path: Path) -> None:
    code, out = run_cli(
        "bench", "matrix", "--root", str(tmp_path), "--stores", "nfs-10gbe",
        "--workloads", "synth", "--cache-fracs", "0.25", "--systems", "pytorch,quiver",
        "--repeats", "2", "--epochs", "2", "--n", "400", "--sim-n", "400", "--seeds", "0",
        "--sim-epochs", "1", "--workers", "2", "--data-dir", str(tmp_path / "data"),
        "--no-progress",
    )  # fmt: skip
    assert code == 0, out
    results = tmp_path / "benchmarks" / "results"
    doc = json.loads((results / "matrix.json").read_text())
    result = doc["result"]
    table = {r["system"]: r for r in result["table"]}
    assert set(table) == {"torch", "pytorch", "quiver", "no-io"}
    assert table["torch"]["vs_torch"] == 1.0 and table["no-io"]["vs_no_io"] == 1.0
    # without a cache every byte is read once per epoch; the ceiling reads nothing
    assert table["pytorch"]["read_per_delivered"] == 1.0
    assert table["no-io"]["mb_read_per_epoch"] == 0.0
    quiver = table["quiver"]
    assert quiver["repeats"] == 2 and quiver["requests_per_epoch"] < 400  # chunk reads
    assert quiver["exact_hit_ratio"] + quiver["substitution_ratio"] <= 1.0
    assert quiver["distinct_ids_per_epoch"] == 400 and "sim_acc" in quiver
    # the second repeat runs the systems in another order (rotation), same rows
    names = [[r["name"] for r in result["measured"] if r["repeat"] == k] for k in (0, 1)]
    assert names[0] == ["torch", "pytorch", "quiver", "no-io"]
    assert names[1] == ["torch", "quiver", "pytorch", "no-io"]
    assert result["params"]["stores"]["nfs-10gbe"]["latency_ms"] == 2.0
    assert (results / "matrix.png").stat().st_size > 10_000
    assert "vs_torch" in out and "quiver" in out


def test_bad_inputs_are_named_before_any_work(tmp_path: Path) -> None:
    from hotset.bench.matrix import MatrixOptions, run

    with pytest.raises(HotsetError, match="cache sizes must be in"):
        run(MatrixOptions(data_dir=tmp_path, cache_fracs=(0.0,)))
    with pytest.raises(HotsetError, match="unknown store preset"):
        run(MatrixOptions(data_dir=tmp_path, presets=("floppy",)))
    with pytest.raises(HotsetError, match="repeats"):
        run(MatrixOptions(data_dir=tmp_path, repeats=0))
    assert not any(tmp_path.iterdir())
