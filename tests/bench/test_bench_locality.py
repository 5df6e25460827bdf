"""``hotset bench locality``: chunk locality of each system's delivered order, on real packs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_support import run_cli
from hotset.sim.locality import uniform_adjacency


def test_it_measures_every_system_on_both_layouts_against_exact_uniform_values(
    tmp_path: Path,
) -> None:
    code, out = run_cli(
        "bench", "locality", "--root", str(tmp_path), "--data-dir", str(tmp_path / "data"),
        "--n", "400", "--chunk-sizes", "8", "--cache-fracs", "0.2", "--epochs", "3",
        "--seeds", "0,1", "--no-progress",
    )  # fmt: skip
    assert code == 0, out
    assert "adj/unif" in out and "epoch_rho" in out  # the terminal table's headers
    doc = json.loads((tmp_path / "benchmarks" / "results" / "locality.json").read_text())
    result = doc["result"]
    rows = {(r["layout"], r["system"]): r for r in result["table"]}
    assert set(rows) == {
        (layout, system)
        for layout in ("shuffled", "label-sorted")
        for system in ("uniform (exact)", "pytorch", "brand", "quiver")
    }
    exact = rows[("shuffled", "uniform (exact)")]
    assert exact["same_chunk_adjacency"] == pytest.approx(7 / 399)  # chunks of 8 of 400
    for layout in ("shuffled", "label-sorted"):
        plain, quiver = rows[(layout, "pytorch")], rows[(layout, "quiver")]
        assert abs(plain["epoch_rank_corr_z"]) < 4  # the sampler's epochs are independent
        # a job alone deals its chunks afresh each round (issue #40): no longer the same
        # order every epoch (0.96-1.00 with the fixed stripes), though a chunk file's
        # members come together, so it spreads more than a uniform order's
        assert abs(quiver["epoch_rank_corr"]) < 0.4
        assert quiver["spread_vs_uniform"] < 0.5 < plain["spread_vs_uniform"]
    # chunks of one class: adjacency by chunk is adjacency by class for a chunk system
    label_sorted = rows[("label-sorted", "quiver")]
    assert label_sorted["label_adjacency_vs_uniform"] > 2
    warned = {(d["layout"], d["chunk_size"]): d["warned"] for d in result["layouts"]}
    assert warned == {("shuffled", 8): False, ("label-sorted", 8): True}
    assert json.dumps(result, allow_nan=False)  # plain numbers only


def test_the_uniform_rows_use_the_exact_expectation(tmp_path: Path) -> None:
    """A short last chunk (400 ids in chunks of 64) is in the exact value too."""
    from hotset.bench.locality import _uniform_row

    chunk_of = [i // 64 for i in range(400)]
    labels = [i % 4 for i in range(400)]
    row = _uniform_row(chunk_of, labels, 3)
    assert row["same_chunk_adjacency"] == uniform_adjacency(chunk_of)
    assert row["same_label_adjacency"] == pytest.approx(99 / 399)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("--chunk-sizes", "1"), "chunk sizes must be >= 2"),
        (("--cache-fracs", "1.5"), "cache shares must be in (0, 1]"),
        (("--seeds", "x"), "--seeds: expected a comma-separated list of integers"),
    ],
)
def test_bad_values_fail_before_any_work(tmp_path: Path, args: tuple[str, ...], match: str) -> None:
    code, out = run_cli("bench", "locality", "--root", str(tmp_path), *args)
    assert code == 2 and match in out, out
    assert not (tmp_path / "benchmarks").exists()
