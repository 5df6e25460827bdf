"""``hotset bench train``: the baseline reaches its own target; deltas are relative to it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
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


def test_epoch_order_correlation_tells_a_repeated_order_from_fresh_permutations() -> None:
    from hotset.bench.train import epoch_order_correlation

    rng = np.random.default_rng(0)
    same = list(range(2000))
    assert epoch_order_correlation([same, same, same]) == 1.0
    assert epoch_order_correlation([same, same[::-1]]) == -1.0
    fresh = [rng.permutation(2000).tolist() for _ in range(4)]
    # independent permutations: about 0, within 4 standard deviations of 1/sqrt(n - 1) / sqrt(3)
    assert abs(epoch_order_correlation(fresh) or 1.0) < 4 / (1999**0.5 * 3**0.5)
    # chunks of 100 in the same sequence, shuffled inside: the chunk order alone correlates
    chunked = [np.concatenate([rng.permutation(100) + 100 * c for c in range(20)]).tolist()
               for _ in range(3)]  # fmt: skip
    assert epoch_order_correlation(chunked) > 0.98
    # compared on the ids both epochs train, first positions: repeats and gaps allowed
    assert epoch_order_correlation([[0, 1, 1, 2, 3], [0, 2, 1, 3]]) == pytest.approx(0.8)
    assert epoch_order_correlation([[0, 1], [0, 1]]) is None


def test_label_sorted_workloads_follow_labels_and_differ_in_their_chunks(tmp_path: Path) -> None:
    from hotset.bench.workloads import workload_dir
    from hotset.data.chunks import load_layout
    from hotset.data.manifest import Manifest

    source = Manifest.load(workload_dir("synth", data_dir=tmp_path, synth_n=300))
    layouts = {}
    for name in ("synth-sorted", "synth-sorted-unshuffled"):
        path = workload_dir(name, data_dir=tmp_path, synth_n=300, packed=True)
        sorted_ = Manifest.load(path)
        labels = np.asarray(sorted_.labels)
        assert (np.diff(labels) >= 0).all() and len(labels) == 300
        # the same samples (content hashes), only renumbered
        assert sorted(sorted_.hashes) == sorted(source.hashes)
        layout = load_layout(path)
        assert layout is not None
        layouts[name] = layout
        assert workload_dir(name, data_dir=tmp_path, synth_n=300, packed=True) == path  # reused

    def classes_per_chunk(name: str) -> float:
        layout = layouts[name]
        members = [layout.members(c) for c in range(layout.n_chunks)]
        return float(np.mean([len(set(labels[np.asarray(m)])) for m in members]))

    assert layouts["synth-sorted"].shuffle_seed == 0
    assert layouts["synth-sorted-unshuffled"].shuffle_seed is None
    # 30 samples a class, chunks of 64: runs of 2-3 classes, against nearly all 10 shuffled
    assert classes_per_chunk("synth-sorted-unshuffled") <= 3.0
    assert classes_per_chunk("synth-sorted") >= 8.0


ROOT = Path(__file__).resolve().parents[2]


def test_the_gpu_importance_script_runs_its_command_at_a_tiny_scale(tmp_path: Path) -> None:
    """benchmarks/gpu/importance.sh with its sizes overridden: the code path the H100 run
    takes (synth-noisy, measured compute, RHO-loss's held-out models charged before the
    first epoch), on the CPU, writing train-importance-gpu.json under ROOT."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHON": sys.executable, "N": "300", "MODEL": "cnn",
           "DEVICE": "cpu", "EPOCHS": "3", "BATCH": "32", "SEEDS": "0",
           "SYSTEMS": "pytorch,scout[warm_up=1],impact[sampler=rho,max_warm_up=2]",
           "ROOT": str(tmp_path), "DATA": str(tmp_path / "data")}  # fmt: skip
    script = ROOT / "benchmarks" / "gpu" / "importance.sh"
    done = subprocess.run(
        ["bash", str(script)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(
        (tmp_path / "benchmarks" / "results" / "train-importance-gpu.json").read_text()
    )
    params = doc["result"]["params"]
    assert params["measure_compute"] and params["model"] == "cnn"
    assert params["device_name"].startswith("CPU") and params["wall_seconds_total"] > 0
    assert doc["command"].startswith("hotset bench train --workloads synth-noisy --synth-n 300")
    runs = {r["system"]: r for r in doc["result"]["runs"]}
    assert runs["impact[sampler=rho,max_warm_up=2]"]["setup_seconds"] > 0  # held-out models
    assert runs["pytorch"]["setup_seconds"] == 0
    # measured compute: time passes for every run, and no run is charged the modeled 20 ms
    for run in runs.values():
        assert run["modeled_seconds"] > 0
    assert "measured on cpu" in doc["result"]["notes"][0]


def test_a_chunk_size_other_than_64_packs_a_linked_copy(tmp_path: Path) -> None:
    from hotset.bench.workloads import workload_dir
    from hotset.data.chunks import load_layout

    data = tmp_path / "data"
    base = workload_dir("synth", data_dir=data, synth_n=300, packed=True)
    small = workload_dir("synth", data_dir=data, synth_n=300, packed=True, chunk_size=16)
    assert small == data / "synth-300-chunk16" and base == data / "synth-300"
    big, little = load_layout(str(base)), load_layout(str(small))
    assert big is not None and little is not None
    assert big.n_chunks == 5 and little.n_chunks == 19  # 300 / 64 and 300 / 16, rounded up
    assert (small / "manifest.csv").read_text() != ""  # its own manifest, same samples


def test_train_options_check_themselves_in_python() -> None:
    from hotset.bench.train import TrainOptions
    from hotset.errors import HotsetError

    assert TrainOptions().systems == ("pytorch", "lru", "minio", "shade")
    with pytest.raises(HotsetError, match="--seeds: seeds must be non-negative, got '0,-1'"):
        TrainOptions(seeds=(0, -1))
    with pytest.raises(HotsetError, match="nosuch"):
        TrainOptions(systems=("pytorch", "nosuch"))
    with pytest.raises(HotsetError, match="--test-n: workload 'digits' has no test set"):
        TrainOptions(workloads=("synth", "digits"), test_n=500)
    with pytest.raises(HotsetError, match="--test-n: must be an integer >= 0, got -5"):
        TrainOptions(workloads=("synth",), test_n=-5)


def test_a_test_set_measures_the_accuracy_and_leaves_the_reads(tmp_path: Path) -> None:
    """``bench train --test-n``: the same reads and modeled time as without it, accuracy
    (so every target) in steps of 1/200 of the test set, and a note saying so."""
    args = ["bench", "train", "--data-dir", str(tmp_path / "data"), "--workloads", "synth",
            "--synth-n", "300", "--systems", "pytorch,lru", "--seeds", "0", "--epochs", "2",
            "--batch-size", "16", "--compute-ms", "5", "--json"]  # fmt: skip
    docs = []
    for test_n in ("0", "200"):
        main([*args, "--root", str(tmp_path / test_n), "--test-n", test_n])
        path = tmp_path / test_n / "benchmarks" / "results" / "train.json"
        docs.append(json.loads(path.read_text())["result"])
    plain, tested = docs
    for a, b in zip(plain["runs"], tested["runs"], strict=True):
        assert a["storage_reads_per_epoch"] == b["storage_reads_per_epoch"]
        assert a["modeled_seconds"] == b["modeled_seconds"]
        assert abs(b["final_val_accuracy"] * 200 - round(b["final_val_accuracy"] * 200)) < 1e-9
    assert [r["final_val_accuracy"] for r in tested["runs"]] != [
        r["final_val_accuracy"] for r in plain["runs"]
    ]
    assert tested["params"]["test_n"] == 200
    assert any("clean test set of 200 samples" in note for note in tested["notes"])
