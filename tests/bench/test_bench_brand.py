"""``hotset bench brand``: the main grid and the chunk sweep, on a packed data set."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import run_cli


def test_the_grid_and_the_sweep_measure_brand_on_chunks(tmp_path: Path) -> None:
    code, out = run_cli(
        "bench", "brand", "--root", str(tmp_path), "--latency-ms", "1", "--cache-fracs",
        "0.3", "--chunk-sizes", "16,32", "--n", "512", "--epochs", "2", "--workers", "0",
        "--no-progress",
    )  # fmt: skip
    assert code == 0, out
    table = json.loads((tmp_path / "benchmarks" / "results" / "brand.json").read_text())["result"][
        "table"
    ]
    main = {r["name"]: r for r in table if r["part"] == "main"}
    assert set(main) == {"torch", "pytorch", "brand", "no-io"}
    brand = main["brand"]
    assert brand["unique_ids_trained_per_epoch"] == 512  # every sample, once per epoch
    assert brand["storage_requests"] < main["pytorch"]["storage_requests"]  # chunk reads
    assert 0 <= brand["wasted_read_share"] < 1 and brand["substitution_ratio"] > 0
    sweep = [r for r in table if r["part"] == "chunk sweep"]
    assert [r["chunk_size"] for r in sweep] == [16, 32]
    # bigger chunks, fewer requests for the same samples
    assert sweep[1]["storage_requests"] < sweep[0]["storage_requests"]


def test_a_bad_chunk_size_fails_before_any_work(tmp_path: Path) -> None:
    code, out = run_cli("bench", "brand", "--root", str(tmp_path), "--chunk-sizes", "0")
    assert code == 2 and "chunk sizes" in out
    assert not (tmp_path / "benchmarks").exists()
