"""hotset.bench.store: both clocks read everything and respect the bound; a chunk read
costs one request where single reads cost one each; ``hotset bench store`` writes both.

(Lives here because the bench module is a thin driver over ThrottledStore; move it
to tests/bench/ with the rest of the bench suite if that directory takes it.)
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import fsspec
import pytest

from hotset.bench.store import run_chunk_vs_singles, run_throttled
from hotset.cli import main
from hotset.errors import HotsetError


def test_small_run_reports_both_clocks_against_the_bound() -> None:
    before = set(fsspec.filesystem("memory").store)
    result = run_throttled(
        n=60, threads=4, latency_ms=1.0, concurrency=3, bandwidth_mb_s=50.0, sample_bytes=500
    )
    bound = max(math.ceil(60 / 3) * 0.001, 60 * 500 / 50e6)
    assert result["lower_bound_seconds"] == pytest.approx(bound)
    for clock in ("real", "virtual"):
        figures = result[clock]
        assert figures["reads"] == 60
        assert figures["bytes_read"] == 60 * 500
        assert figures["seconds"] >= bound * (1 - 1e-9)
        assert figures["samples_per_s"] == pytest.approx(60 / figures["seconds"])
    # The virtual makespan obeys the model's upper bound; the real run cannot beat the bound.
    assert result["virtual"]["seconds"] <= 60 * 0.001 + 60 * 500 / 50e6 + 1e-9
    assert set(fsspec.filesystem("memory").store) == before  # cleaned up after itself


@pytest.mark.parametrize(
    ("options", "culprit"),
    [({"n": 0}, "n: .*0"), ({"threads": 0}, "threads: .*0"), ({"sample_bytes": -1}, "-1")],
)
def test_bad_arguments_are_named(options: dict[str, int], culprit: str) -> None:
    with pytest.raises(HotsetError, match=culprit):
        run_throttled(**options)


def test_chunk_read_costs_one_request_against_one_per_sample() -> None:
    before = set(fsspec.filesystem("memory").store)
    result = run_chunk_vs_singles(
        samples=16,
        threads=4,
        latency_ms=1.0,
        concurrency=2,
        bandwidth_mb_s=50.0,
        sample_bytes=500,
        repeats=2,
    )
    rows = {(row["case"], row["clock"]): row for row in result["rows"]}
    chunk_case = "16 as one chunk"
    threads_case = "16 single reads, 4 threads"
    sequential_case = "16 single reads, one at a time"
    assert set(rows) == {
        (case, clock)
        for case in (chunk_case, threads_case, sequential_case)
        for clock in ("real", "virtual")
    }
    transfer = 16 * 500 / 50e6
    model = 0.001 + transfer
    assert result["chunk_model_seconds"] == pytest.approx(model)
    for clock in ("real", "virtual"):
        assert rows[(chunk_case, clock)]["reads"] == 1
        assert rows[(threads_case, clock)]["reads"] == 16
        assert rows[(sequential_case, clock)]["reads"] == 16
        assert rows[(chunk_case, clock)]["vs_chunk"] == 1.0
        summary = result["summary"][clock]
        assert summary["singles_over_chunk"] == pytest.approx(
            rows[(threads_case, clock)]["seconds"] / rows[(chunk_case, clock)]["seconds"]
        )
    # virtual: exactly the model; the threaded reads obey the store's two bounds
    assert rows[(chunk_case, "virtual")]["seconds"] == pytest.approx(model)
    assert rows[(sequential_case, "virtual")]["seconds"] == pytest.approx(16 * 0.001 + transfer)
    threaded = rows[(threads_case, "virtual")]["seconds"]
    assert max(8 * 0.001, transfer) - 1e-9 <= threaded <= 16 * 0.001 + transfer + 1e-9
    # real: never faster than the model, and the chunk clearly beats one request per sample
    assert rows[(chunk_case, "real")]["seconds"] >= model * (1 - 1e-9)
    assert rows[(sequential_case, "real")]["seconds"] >= 16 * 0.001
    assert result["summary"]["real"]["sequential_over_chunk"] > 2
    assert set(fsspec.filesystem("memory").store) == before


@pytest.mark.parametrize(
    ("options", "culprit"),
    [({"samples": 0}, "samples: .*0"), ({"repeats": 0}, "repeats: .*0"), ({"threads": 0}, "0")],
)
def test_bad_chunk_arguments_are_named(options: dict[str, int], culprit: str) -> None:
    with pytest.raises(HotsetError, match=culprit):
        run_chunk_vs_singles(**options)


def test_bench_store_cli_writes_both_measurements(tmp_path: Path) -> None:
    argv = ["bench", "store", "--n", "40", "--threads", "4", "--chunk-size", "8"]
    main([*argv, "--root", str(tmp_path)])
    doc = json.loads((tmp_path / "benchmarks" / "results" / "store.json").read_text())
    result = doc["result"]
    assert result["real"]["reads"] == result["virtual"]["reads"] == 40
    cases = [(row["case"], row["clock"], row["reads"]) for row in result["table"]]
    assert cases == [
        ("40 single reads, 4 threads", "real", 40),
        ("40 single reads, 4 threads", "virtual", 40),
        ("8 as one chunk", "real", 1),
        ("8 as one chunk", "virtual", 1),
        ("8 single reads, 4 threads", "real", 8),
        ("8 single reads, 4 threads", "virtual", 8),
        ("8 single reads, one at a time", "real", 8),
        ("8 single reads, one at a time", "virtual", 8),
    ]
    assert result["chunk"]["samples"] == 8
    readme = (tmp_path / "benchmarks" / "README.md").read_text()
    assert "| 8 as one chunk | real | " in readme and "vs_chunk" in readme


def test_bench_store_cli_refuses_a_bad_chunk_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["bench", "store", "--chunk-size", "0", "--root", str(tmp_path)])
    assert info.value.code == 2
    assert "--chunk-size" in capsys.readouterr().err
    assert not (tmp_path / "benchmarks").exists()
