"""``hotset bench hitratio``: per-system counts next to Belady on the same sequence."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.bench.hitratio import belady_hits, needs_training
from hotset.cli import main


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
