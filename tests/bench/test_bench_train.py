"""``hotset bench train``: the baseline reaches its own target; deltas are relative to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hotset.bench.train import time_to_target
from hotset.cli import main


def test_time_to_target_is_the_end_of_the_first_epoch_reaching_it() -> None:
    rows = [
        {"modeled_epoch_seconds": 2.0, "val_accuracy": 0.5},
        {"modeled_epoch_seconds": 3.0, "val_accuracy": 0.8},
        {"modeled_epoch_seconds": 4.0, "val_accuracy": 0.7},
    ]
    assert time_to_target(rows, 0.8) == 5.0
    assert time_to_target(rows, 0.5) == 2.0
    assert time_to_target(rows, 0.9) is None


def test_cli_over_two_seeds(tmp_path: Path) -> None:
    main(
        [
            "bench", "train", "--root", str(tmp_path), "--data-dir", str(tmp_path / "data"),
            "--workloads", "synth", "--synth-n", "300", "--systems", "pytorch,lru",
            "--seeds", "0,1", "--epochs", "2", "--compute-ms", "5", "--json",
        ]
    )  # fmt: skip
    doc = json.loads((tmp_path / "benchmarks" / "results" / "train.json").read_text())
    rows = {r["system"]: r for r in doc["result"]["table"]}
    assert set(rows) == {"pytorch", "lru"}
    # the baseline reaches its own final accuracy on every seed, by definition
    assert rows["pytorch"]["reached"] == "2/2"
    assert rows["pytorch"]["acc_delta_vs_pytorch"] == 0.0
    # lru reads the same random order with the same init: same accuracy, less I/O time
    assert rows["lru"]["final_acc_mean"] == rows["pytorch"]["final_acc_mean"]
    assert (
        rows["lru"]["modeled_seconds_total_mean"] <= rows["pytorch"]["modeled_seconds_total_mean"]
    )
    # a random order is no selection: identification precision is only for those
    assert rows["pytorch"]["top1_precision_mean"] is None
    runs = doc["result"]["runs"]
    assert len(runs) == 4
    assert all(r["target"] == next(
        p["final_val_accuracy"] for p in runs if p["system"] == "pytorch" and p["seed"] == r["seed"]
    ) for r in runs)  # fmt: skip


def test_bad_seed_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "train", "--root", str(tmp_path), "--seeds", "0,x"])
    assert exc.value.code == 2
    assert "--seeds" in capsys.readouterr().err


def test_top1_precision_is_reported_over_the_selective_epochs() -> None:
    from hotset.bench.train import _top1

    rows = [
        {"requests": 100},
        {"requests": 100, "top1_precision": 0.2},  # a full epoch: not a selection
        {"requests": 70, "top1_precision": 0.5},
        {"requests": 80, "top1_precision": 1.0},
    ]
    assert _top1(rows) == 0.75
    assert _top1(rows[:2]) is None
