"""``hotset bench loader``: one table per latency, with ratios to PyTorch and no-I/O."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hotset.cli import main


def test_ratios_are_relative_to_the_torch_and_no_io_rows_of_the_same_latency(
    tmp_path: Path,
) -> None:
    main(
        [
            "bench", "loader", "--root", str(tmp_path), "--latency-ms", "0.5,1",
            "--n", "200", "--epochs", "1", "--workers", "0", "--batch-size", "32",
            "--compute-ms", "0", "--systems", "pytorch", "--json",
        ]
    )  # fmt: skip
    doc = json.loads((tmp_path / "benchmarks" / "results" / "loader.json").read_text())
    table = doc["result"]["table"]
    assert sorted({row["latency_ms"] for row in table}) == [0.5, 1.0]
    for latency in (0.5, 1.0):
        rows = {r["name"]: r for r in table if r["latency_ms"] == latency}
        assert set(rows) >= {"torch", "pytorch", "no-io"}
        assert rows["torch"]["vs_torch"] == 1.0
        assert rows["no-io"]["vs_no_io"] == 1.0
        expected = round(rows["pytorch"]["samples_per_s"] / rows["torch"]["samples_per_s"], 3)
        assert rows["pytorch"]["vs_torch"] == expected
    assert "## loader" in (tmp_path / "benchmarks" / "README.md").read_text()


def test_bad_latency_list_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "loader", "--latency-ms", "2,fast"])
    assert exc.value.code == 2
    assert "--latency-ms" in capsys.readouterr().err


def test_sizes_imagenet_moves_imagenet_like_bytes(tmp_path: Path) -> None:
    args = [
        "bench", "loader", "--latency-ms", "0.5", "--n", "200", "--epochs", "1",
        "--workers", "0", "--batch-size", "16", "--compute-ms", "0", "--systems", "lru",
        "--cache-frac", "0.4", "--json",
    ]  # fmt: skip
    # 40%: a 20% cache of 200 ImageNet-sized samples (4.5 MB) is less than the 16 largest
    means = {}
    for sizes in ("small", "imagenet"):
        root = tmp_path / sizes
        main([*args, "--root", str(root), "--sizes", sizes])
        doc = json.loads((root / "benchmarks" / "results" / "loader.json").read_text())
        params = doc["result"]["runs"][0]["params"]
        assert params["sizes"] == sizes
        means[sizes] = params["mean_sample_bytes"]
    assert means["small"] < 2_000  # 16x16 PNGs, as before
    assert 80_000 < means["imagenet"] < 140_000  # n=200 of the mean-110 kB log-normal


def test_repeats_report_the_median_run_and_list_every_run(tmp_path: Path) -> None:
    main(
        [
            "bench", "loader", "--root", str(tmp_path), "--latency-ms", "0.5",
            "--n", "200", "--epochs", "1", "--workers", "0", "--batch-size", "32",
            "--compute-ms", "0", "--systems", "pytorch", "--repeats", "3", "--json",
        ]
    )  # fmt: skip
    doc = json.loads((tmp_path / "benchmarks" / "results" / "loader.json").read_text())
    result = doc["result"]
    assert len(result["runs"]) == 3
    rows = {r["name"]: r for r in result["table"]}
    assert set(rows) == {"torch", "pytorch", "no-io"}
    speeds = sorted(run["table"][1]["samples_per_s"] for run in result["runs"])
    assert rows["pytorch"]["samples_per_s"] == round(speeds[1], 3)
    ratios = rows["pytorch"]["vs_no_io_runs"]
    assert len(ratios) == 3 and rows["pytorch"]["vs_no_io"] == sorted(ratios)[1]
    for run, ratio in zip(result["runs"], ratios, strict=True):
        by_name = {r["name"]: r["samples_per_s"] for r in run["table"]}
        assert ratio == round(by_name["pytorch"] / by_name["no-io"], 3)
    assert any("3 runs of every table" in note for note in result["notes"])


def test_each_epoch_of_a_repeated_row_is_the_median_of_its_runs() -> None:
    from hotset.bench.loader import median_of_runs

    runs = [
        [{"name": "lru", "samples_per_s": s, "per_epoch_samples_per_s": e}]
        for s, e in ((3.0, [1.0, 9.0]), (1.0, [2.0, 7.0]), (2.0, [3.0, 8.0]))
    ]
    (row,) = median_of_runs(runs)
    assert row["samples_per_s"] == 2.0
    assert row["per_epoch_samples_per_s"] == [2.0, 8.0]


def test_runs_with_other_rows_are_not_combined() -> None:
    from hotset.bench.loader import median_of_runs
    from hotset.errors import HotsetError

    a = [{"name": "pytorch", "samples_per_s": 1.0}]
    b = [{"name": "lru", "samples_per_s": 1.0}]
    with pytest.raises(HotsetError, match="not have the same rows"):
        median_of_runs([a, b])
    with pytest.raises(HotsetError, match="no runs"):
        median_of_runs([])


def test_the_untuned_dataloader_is_a_labelled_row_and_ratios_stay_against_the_tuned(
    tmp_path: Path,
) -> None:
    main(
        [
            "bench", "loader", "--root", str(tmp_path), "--latency-ms", "1", "--concurrency",
            "4", "--n", "128", "--epochs", "1", "--workers", "1", "--batch-size", "32",
            "--compute-ms", "0", "--systems", "pytorch", "--torch-untuned", "--json",
        ]
    )  # fmt: skip
    doc = json.loads((tmp_path / "benchmarks" / "results" / "loader.json").read_text())
    rows = {r["name"]: r for r in doc["result"]["table"]}
    assert list(rows) == ["torch", "torch-untuned", "pytorch", "no-io"]
    assert rows["torch"]["vs_torch"] == 1.0 and rows["torch"]["requests_in_flight"] >= 4
    assert rows["torch-untuned"]["requests_in_flight"] == 1
    expected = round(rows["torch-untuned"]["samples_per_s"] / rows["torch"]["samples_per_s"], 3)
    assert rows["torch-untuned"]["vs_torch"] == expected
