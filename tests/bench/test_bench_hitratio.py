"""``hotset bench hitratio``: per-system counts next to Belady on the same sequence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.bench.hitratio import (
    _draw_service,
    belady_hits,
    needs_training,
    service_series,
)
from hotset.cli import main
from hotset.errors import HotsetError


def test_which_systems_need_a_model() -> None:
    assert not needs_training("lru")
    assert not needs_training("minio")
    assert needs_training("shade")


def test_belady_bound_on_a_permutation_trace_is_the_cache_fraction() -> None:
    # every reuse crosses an epoch boundary, so MIN keeps a fixed set: C hits per later epoch
    n, epochs, c = 200, 4, 50
    rng = np.random.default_rng(0)
    trace = np.concatenate([rng.permutation(n) for _ in range(epochs)])
    hits = belady_hits(trace, np.ones(n, dtype=np.int64), c)
    assert int(hits[:n].sum()) == 0
    assert int(hits[n:].sum()) == c * (epochs - 1)


def test_cli_sweep_writes_table_figure_and_bounds(tmp_path: Path) -> None:
    main(
        [
            "bench", "hitratio", "--root", str(tmp_path), "--data-dir", str(tmp_path / "data"),
            "--workloads", "synth", "--synth-n", "400", "--systems", "lru,minio,shade",
            "--fracs", "0.2,0.5", "--epochs", "2", "--json",
        ]
    )  # fmt: skip
    results = tmp_path / "benchmarks" / "results"
    doc = json.loads((results / "hitratio.json").read_text())
    table = doc["result"]["table"]
    assert {(r["system"], r["cache_frac"]) for r in table} == {
        (s, f) for s in ("lru", "minio", "shade") for f in (0.2, 0.5)
    }
    for row in table:
        # Belady on the row's own sequence can never be beaten by the row itself
        assert row["belady_hit_ratio_all"] >= row["exact_hit_ratio_all"] - 1e-9
        assert row["trained"] == (row["system"] == "shade")
        assert (row["final_val_accuracy"] is None) == (not row["trained"])
    minio = {r["cache_frac"]: r for r in table if r["system"] == "minio"}
    assert minio[0.5]["exact_hit_ratio"] > minio[0.2]["exact_hit_ratio"]
    assert (results / "hitratio.png").stat().st_size > 0
    assert "hitratio.png" in (tmp_path / "benchmarks" / "README.md").read_text()


@pytest.mark.parametrize(
    ("args", "culprit"),
    [
        (["--fracs", "0.2,1.5"], "--fracs"),
        (["--systems", "lru,nope"], "nope"),
        (["--workloads", "imagenet"], "imagenet"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], culprit: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "hitratio", "--root", str(tmp_path), "--data-dir", str(tmp_path), *args])
    assert exc.value.code == 2
    assert culprit in capsys.readouterr().err


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 15), min_size=1, max_size=120),
    st.lists(st.integers(1, 50), min_size=16, max_size=16),
    st.integers(1, 300),
)
def test_the_bound_holds_for_byte_budgets(
    trace: list[int], sizes: list[int], capacity: int
) -> None:
    from hotset.policies import Budget, Outcome, make_policy

    arr = np.asarray(trace, dtype=np.int64)
    size_arr = np.asarray(sizes, dtype=np.int64)
    bound = int(belady_hits(arr, size_arr, capacity).sum())
    for name in ("lru", "fifo", "lfu"):
        policy = make_policy(name, Budget(capacity_bytes=capacity, sizes=size_arr))
        assert bound >= int((policy.replay(arr) == int(Outcome.HIT)).sum())


def test_importance_rows_name_their_service_reads_and_warm_up(tmp_path: Path) -> None:
    main(
        [
            "bench", "hitratio", "--root", str(tmp_path), "--data-dir", str(tmp_path / "data"),
            "--workloads", "synth", "--synth-n", "1500", "--systems", "lru,icache,impact",
            "--fracs", "0.3", "--epochs", "8", "--name", "hitratio-importance", "--json",
        ]
    )  # fmt: skip
    results = tmp_path / "benchmarks" / "results"
    assert not (results / "hitratio.json").exists()  # its own file, next to the default one
    doc = json.loads((results / "hitratio-importance.json").read_text())
    rows = {r["system"]: r for r in doc["result"]["table"]}
    for row in rows.values():
        assert row["service_ratio"] == pytest.approx(
            row["exact_hit_ratio"] + row["substitution_ratio"], abs=2e-4
        )
    icache = rows["icache"]
    assert icache["selective_epochs"] > 0 and icache["service_ratio_selective"] is not None
    assert icache["unit_reads_per_epoch_after_first"] > 0  # packages, one request each
    assert icache["pack_reads_per_epoch_after_first"] > 0  # what the packer read
    assert icache["policy"]["packaging"] == "dynamic" and icache["policy"]["packages"] > 0
    assert rows["lru"]["policy"] == {} and rows["lru"]["service_ratio_selective"] is None
    warm = rows["impact"]["policy"]["warm_up_epochs"]
    assert warm is None or 3 <= warm <= 8
    readme = (tmp_path / "benchmarks" / "README.md").read_text()
    assert "## hitratio-importance" in readme and "hitratio-importance.png" in readme


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A real sweep with a substituting cache (quiver) and one that trains a subset (shade)."""
    root = tmp_path_factory.mktemp("served")
    main(
        [
            "bench", "hitratio", "--root", str(root), "--data-dir", str(root / "data"),
            "--workloads", "synth", "--synth-n", "400", "--systems", "lru,quiver,shade",
            "--fracs", "0.5,0.2", "--epochs", "3", "--json",
        ]
    )  # fmt: skip
    doc = json.loads((root / "benchmarks" / "results" / "hitratio.json").read_text())
    return root, doc["result"]["table"]


def test_rows_carry_coverage_as_a_share_of_the_training_ids(
    served: tuple[Path, list[dict[str, Any]]],
) -> None:
    _, table = served
    for row in table:
        assert row["coverage_after_first"] == pytest.approx(
            row["unique_ids_trained_after_first"] / row["n_train"], abs=1e-4
        )
    assert all(r["coverage_after_first"] < 0.9 for r in table if r["system"] == "shade")


def test_service_series_keeps_exact_hits_substitutions_and_coverage_apart(
    served: tuple[Path, list[dict[str, Any]]],
) -> None:
    _, table = served
    series = service_series(table)["synth"]
    assert list(series) == ["lru", "quiver", "shade"]
    for name, s in series.items():
        mine = sorted((r for r in table if r["system"] == name), key=lambda r: r["cache_frac"])
        assert s.fracs == (0.2, 0.5)  # ascending, whatever order the sweep ran in
        assert s.exact == tuple(r["exact_hit_ratio"] for r in mine)
        assert s.substituted == tuple(r["substitution_ratio"] for r in mine)
        assert s.coverage == tuple(r["coverage_after_first"] for r in mine)
        assert s.belady_all == tuple(r["belady_hit_ratio_all"] for r in mine)
    # the two failure modes the figure exists to show, read off the series it draws
    assert min(series["quiver"].substituted) > 0.5 > max(series["quiver"].exact)
    assert max(series["shade"].coverage) < 0.9 and max(series["shade"].substituted) == 0


def test_a_row_without_a_count_is_refused_not_drawn_as_zero(
    served: tuple[Path, list[dict[str, Any]]],
) -> None:
    _, table = served
    for key in ("substitution_ratio", "coverage_after_first"):
        rows = [dict(r) for r in table]
        del rows[1][key]
        with pytest.raises(HotsetError, match=key):
            service_series(rows)
    with pytest.raises(HotsetError, match="no rows"):
        service_series([])


def test_substitutions_are_drawn_stacked_on_exact_hits_and_coverage_beside(
    served: tuple[Path, list[dict[str, Any]]],
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    root, table = served
    series = service_series(table)["synth"]
    fig, ax = plt.subplots()
    try:
        _draw_service(ax, series, {name: f"C{i}" for i, name in enumerate(series)})
        solid = [p for p in ax.patches if not p.get_hatch()]
        hatched = [p for p in ax.patches if p.get_hatch()]
        dots = [tuple(float(y) for _x, y in c.get_offsets()) for c in ax.collections]
    finally:
        plt.close(fig)
    exact = [h for s in series.values() for h in s.exact]
    substituted = [h for s in series.values() for h in s.substituted]
    assert [p.get_height() for p in solid] == pytest.approx(exact)
    assert [p.get_height() for p in hatched] == pytest.approx(substituted)
    assert [p.get_y() for p in hatched] == pytest.approx(exact)  # on top, not merged
    assert dots == [s.coverage for s in series.values()]
    assert (root / "benchmarks" / "results" / "hitratio.png").read_bytes()[:4] == b"\x89PNG"
