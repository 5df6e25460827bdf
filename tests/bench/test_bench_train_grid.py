"""``hotset bench traingrid``: the cache x chunk grid, each cell's rows against the first
system's, the baseline trained once per seed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
    with pytest.raises(HotsetError, match="--jobs: must be an integer >= 1, got 0"):
        TrainGridOptions(jobs=0)
    with pytest.raises(HotsetError, match="--test-n: must be an integer >= 0, got -1"):
        TrainGridOptions(test_n=-1)
    with pytest.raises(HotsetError, match="--test-n: workload 'digits' has no test set"):
        TrainGridOptions(workload="digits", test_n=100)


def _grids(tmp_path: Path, option: str, values: tuple[str, ...], *, seeds: str) -> list[Any]:
    """The results of one tiny grid (one cell) run once per value of ``option``."""
    args = ["bench", "traingrid", "--data-dir", str(tmp_path / "data"), "--synth-n", "300",
            "--cache-fracs", "0.4", "--chunk-sizes", "16", "--seeds", seeds, "--epochs", "2",
            "--compute-ms", "5", "--latency-ms", "10", "--json"]  # fmt: skip
    docs = []
    for value in values:
        code, out = run_cli(*args, "--root", str(tmp_path / value), option, value)
        assert code == 0, out
        path = tmp_path / value / "benchmarks" / "results" / "traingrid.json"
        docs.append(json.loads(path.read_text())["result"])
    return docs


def test_a_test_set_changes_what_accuracy_is_measured_on_and_nothing_read(
    tmp_path: Path,
) -> None:
    """``--test-n``: every run's modeled times, requests and bytes are those of the grid
    without it (the test set is never read through a cache); the curves are measured on
    the test set's samples, and the result says so."""
    plain, tested = _grids(tmp_path, "--test-n", ("0", "250"), seeds="0")
    assert (tmp_path / "data" / "synth-test-250").is_dir()
    keys = ("epoch_seconds", "requests_per_epoch", "bytes_read_over_trained",
            "unique_ids_trained_per_epoch")  # fmt: skip
    for a, b in zip(plain["runs"], tested["runs"], strict=True):
        assert [a[k] for k in keys] == [b[k] for k in keys]
        assert [t for t, _ in a["curve"]] == [t for t, _ in b["curve"]]
    # accuracy in 1/250ths, not in the held-out split's 1/30ths
    accs = [acc for run in tested["runs"] for _, acc in run["curve"]]
    assert all(abs(acc * 250 - round(acc * 250)) < 1e-9 for acc in accs)
    assert [r["curve"] for r in tested["runs"]] != [r["curve"] for r in plain["runs"]]
    assert tested["params"]["test_n"] == 250 and plain["params"]["test_n"] == 0
    assert any("clean test set of 250 samples" in note for note in tested["notes"])
    assert any("held-out split" in note for note in plain["notes"])


def _run(system: str, seed: int, ttt: float | None, accs: list[float]) -> dict[str, Any]:
    return {"system": system, "seed": seed, "time_to_target_s": ttt,
            "curve": [[float(e + 1), a] for e, a in enumerate(accs)]}  # fmt: skip


def test_a_row_is_behind_only_where_the_paired_interval_is_above_zero() -> None:
    from hotset.bench.train_grid import _noise

    tight = [_run("q", s, 10.0, [0.5, 0.6]) for s in range(3)]
    tight += [_run("s", s, 12.0 + 0.1 * s, [0.5, 0.7]) for s in range(3)]
    got = _noise(tight, "s", "q")
    assert got["ttt_diff_s_mean"] == pytest.approx(2.1) and got["ttt_diff_s_n"] == 3
    assert got["ttt_diff_s_low"] > 0 and got["ttt_reading"] == "behind beyond the noise"
    assert got["acc_diff_per_epoch_mean"] == pytest.approx(0.05)  # (0 + 0.1) / 2 per seed

    spread = [_run("q", s, 10.0, [0.5]) for s in range(3)]
    spread += [_run("s", s, t, [0.5]) for s, t in enumerate([7.0, 11.0, 15.0])]
    got = _noise(spread, "s", "q")
    assert got["ttt_diff_s_mean"] == pytest.approx(1.0)
    assert got["ttt_reading"] == "behind within the noise"  # 1 +- 4.303 * 4 / sqrt(3)

    ahead = [_run("q", s, 10.0, [0.5]) for s in range(2)]
    ahead += [_run("s", 0, 9.0, [0.5]), _run("s", 1, None, [0.4])]
    got = _noise(ahead, "s", "q")
    assert got["ttt_diff_s_n"] == 1  # the seed where it never reached is no pair
    assert got["ttt_reading"] == "at most the reference"
    assert _noise(ahead, "q", "q")["ttt_reading"] == "reference"


def test_runs_in_processes_give_the_figures_of_one_process(tmp_path: Path) -> None:
    one, two = _grids(tmp_path, "--jobs", ("1", "2"), seeds="0,1")
    assert one["runs"] == two["runs"] and one["table"] == two["table"]
    assert two["params"]["jobs"] == 2
    scout = next(r for r in two["table"] if r["system"] == "scout")
    pairs = [s["time_to_target_s"] - q["time_to_target_s"]
             for s in two["runs"] if s["system"] == "scout"
             for q in two["runs"] if q["system"] == "quiver" and q["seed"] == s["seed"]
             if s["time_to_target_s"] is not None and q["time_to_target_s"] is not None]  # fmt: skip
    assert scout["ttt_diff_s_n"] == len(pairs)
    if pairs:
        assert scout["ttt_diff_s_mean"] == pytest.approx(sum(pairs) / len(pairs), abs=1e-4)
    assert set(two["acc_diff_per_epoch_pooled"]) == {"scout"}


class _Bar:
    def __init__(self) -> None:
        self.updates: list[int] = []

    def update(self, n: int = 1) -> None:
        self.updates.append(n)

    def set_postfix_str(self, _text: str) -> None:
        pass


def test_a_run_that_fails_in_a_worker_process_fails_the_grid_with_its_error(
    tmp_path: Path,
) -> None:
    from hotset.bench.train_grid import _Runner
    from hotset.errors import HotsetError
    from hotset.storage.presets import StoreModel

    store = StoreModel(latency_ms=1.0, bandwidth_mb_s=100.0, max_concurrency=4)
    job = ("quiver", {"dataset": tmp_path / "absent", "seed": 0, "cache_frac": 0.2,
                      "target": None, "epochs": 1, "compute_ms": 0.0, "store": store})  # fmt: skip
    bar = _Bar()
    with pytest.raises(HotsetError, match="absent' does not exist"), _Runner(2, bar) as runner:
        runner.map([job])
    assert bar.updates == []  # nothing counted as done
