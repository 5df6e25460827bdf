"""Sweeps over cache sizes and policies, and the plot drawn from them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hotset.errors import HotsetError
from hotset.sim.sweep import plot_sweep, sweep, sweep_series, write_sweep_json
from hotset.sim.trace import sampler_epochs, simulate_epochs


def test_sweep_is_one_run_per_policy_and_size() -> None:
    orders = sampler_epochs("random", n=400, epochs=3, seed=1)
    results = sweep(orders, ["lru", "minio"], cache_fracs=[0.1, 0.5], n=400, planned=True)
    assert [(r["policy"], r["cache_frac"]) for r in results] == [
        ("lru", 0.1),
        ("lru", 0.5),
        ("minio", 0.1),
        ("minio", 0.5),
    ]
    single = simulate_epochs(orders, "lru", cache_frac=0.5, n=400, planned=True)
    assert {k: v for k, v in results[1].items() if k != "cache_frac"} == single
    assert results[3]["hits"] == 2 * 200  # minio: half the ids, hit in epochs 1 and 2


def test_plot_and_json_are_written(tmp_path: Path) -> None:
    orders = sampler_epochs("random", n=200, epochs=2, seed=0)
    results = sweep(orders, ["fifo", "belady"], cache_items=[10, 50, 100], n=200)
    png = plot_sweep(results, tmp_path / "hit.png", title="test")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = write_sweep_json(results, tmp_path / "hit.json")
    assert json.loads(out.read_text()) == results


def test_sweep_needs_exactly_one_size_kind_and_a_policy() -> None:
    orders = sampler_epochs("random", n=10, epochs=1)
    with pytest.raises(HotsetError, match="exactly one"):
        sweep(orders, ["lru"])
    with pytest.raises(HotsetError, match="at least one policy"):
        sweep(orders, [], cache_items=[1])
    with pytest.raises(HotsetError, match="nothing to plot"):
        plot_sweep([], "x.png")


def test_sweep_series_keeps_substitutions_apart_and_flags_them_when_missing(
    tmp_path: Path,
) -> None:
    orders = sampler_epochs("random", n=400, epochs=3, seed=0)
    fracs = [0.4, 0.1]
    verbose = sweep(
        orders, ["minio", "emul_quiv"], cache_fracs=fracs, n=400, planned=True, verbose=True
    )
    minio, quiver = sweep_series(verbose)
    assert quiver.xs == (0.1, 0.4)  # ascending, whatever order the sweep ran in
    rows = sorted((r for r in verbose if r["policy"] == "emul_quiv"), key=lambda r: r["cache_frac"])
    assert quiver.exact == tuple(r["hits"] / r["requests"] for r in rows)
    assert quiver.substituted == tuple(r["substitutions"] / r["requests"] for r in rows)
    assert quiver.substitutes and min(quiver.substituted) > 0  # served, not merged into exact
    assert not minio.substitutes and minio.substituted == (0.0, 0.0)
    plain = sweep(orders, ["minio", "emul_quiv"], cache_fracs=fracs, n=400, planned=True)
    _, unknown = sweep_series(plain)
    assert unknown.substituted is None and unknown.exact == quiver.exact
    for results in (verbose, plain):
        assert plot_sweep(results, tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
