"""``hotset simulate --system S --nodes K``: sizes from three sources, a table or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cli_support import run_cli
from hotset.data import SynthConfig, make_synth


def test_json_has_one_result_per_scope_with_the_models_limits() -> None:
    code, out = run_cli(
        "simulate", "--system", "minio", "--nodes", "4", "--n", "2000", "--sample-bytes",
        "1000", "--cache-frac", "0.1", "--epochs", "2", "--batch-size", "32", "--json",
    )  # fmt: skip
    assert code == 0, out
    results = json.loads(out)
    assert [r["scope"] for r in results] == ["private", "pooled"]
    pooled = results[1]
    assert pooled["nodes"] == 4 and pooled["cache_bytes_total"] == 4 * 200_000
    assert pooled["epochs"][-1]["exact_hit_ratio"] == pytest.approx(0.4, abs=0.03)
    assert pooled["epochs"][-1]["remote_bytes"] > 0
    assert any(line.startswith("simulated") for line in pooled["model"])


def test_the_table_names_its_scopes_and_says_it_is_simulated(tmp_path: Path) -> None:
    sizes = tmp_path / "sizes.txt"
    sizes.write_text("\n".join(str(s) for s in np.full(600, 300)) + "\n")
    out_file = tmp_path / "nodes.json"
    code, out = run_cli(
        "simulate", "--system", "lru", "--nodes", "2", "--scope", "pooled", "--sizes",
        str(sizes), "--cache-frac", "0.2", "--epochs", "2", "--out", str(out_file),
    )  # fmt: skip
    assert code == 0, out
    assert "simulated" in out and "pooled" in out and "private" not in out
    assert json.loads(out_file.read_text())[0]["n"] == 600


def test_sizes_come_from_a_dataset(tmp_path: Path) -> None:
    data = tmp_path / "ds"
    make_synth(data, SynthConfig(n=300, image_size=8, seed=0))
    code, out = run_cli(
        "simulate", "--system", "shade", "--nodes", "2", "--dataset", str(data),
        "--cache-frac", "0.2", "--epochs", "2", "--batch-size", "16", "--json",
    )  # fmt: skip
    assert code == 0, out
    result = json.loads(out)[0]
    assert result["n"] == 300 and result["losses"].startswith("synthetic")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodes", "2", "--n", "100", "--sample-bytes", "10"], "--nodes goes with --system"),
        (["--system", "lru", "--nodes", "2", "--cache-frac", "0.1"], "exactly one of --dataset"),
        (["--system", "lru", "--nodes", "2", "--n", "100", "--cache-frac", "0.1"], "go together"),
        (["--system", "lru", "--nodes", "0", "--n", "100", "--sample-bytes", "10",
          "--cache-frac", "0.1"], "node count"),
        (["--system", "lru", "--nodes", "2", "--n", "100", "--sample-bytes", "10",
          "--cache-frac", "0.1,0.2"], "single --cache-frac"),
        (["--system", "lru", "--nodes", "2", "--n", "100", "--sample-bytes", "10",
          "--cache-frac", "0.1", "--scope", "cluster"], "scope must be one of"),
        (["--sampler", "random", "--n", "100", "--sample-bytes", "10", "--policy", "lru",
          "--cache-frac", "0.1"], "--sample-bytes goes with --nodes"),
    ],
)  # fmt: skip
def test_bad_input_is_one_clear_error(args: list[str], message: str) -> None:
    code, out = run_cli("simulate", *args)
    assert code == 2 and message in out, out


def test_the_table_has_eight_columns_and_v_every_counter() -> None:
    args = ("simulate", "--system", "minio", "--nodes", "2", "--n", "400", "--sample-bytes",
            "100", "--cache-frac", "0.2", "--epochs", "2", "--batch-size", "16")  # fmt: skip
    code, out = run_cli(*args)
    assert code == 0, out
    header = out.splitlines()[1].split()
    assert header == [
        "scope", "epoch", "exact_hit_ratio", "remote_hit_share", "storage_requests",
        "remote_bytes", "unique_ids_trained", "modeled_epoch_seconds",
    ]  # fmt: skip
    assert [line.split()[:2] for line in out.splitlines()[2:]] == [
        ["private", "1"], ["private", "2"], ["pooled", "1"], ["pooled", "2"],
    ]  # fmt: skip
    code, verbose = run_cli(*args, "-v")
    assert code == 0, verbose
    full = verbose.splitlines()[1].split()
    assert full[:2] == ["scope", "epoch"] and set(header) < set(full)
    assert {"storage_bytes", "exact_hits", "remote_put_bytes"} <= set(full)


def test_a_system_spec_reaches_every_node_system(monkeypatch: pytest.MonkeyPatch) -> None:
    from spec_support import record_builds

    built = record_builds(monkeypatch, "hotset.sim.nodes")
    code, out = run_cli(
        "simulate", "--system", "shade[coverage_floor=0.05,unbiased=true]", "--nodes", "2",
        "--scope", "private", "--n", "400", "--sample-bytes", "1000", "--cache-frac", "0.1",
        "--epochs", "1", "--batch-size", "16", "--json",
    )  # fmt: skip
    assert code == 0, out
    assert len(built) == 2  # a private cache per node: a system each
    for system in built:
        assert system.sampler.coverage_floor == 0.05  # type: ignore[attr-defined]
        assert system.weighted is True
    code, out = run_cli(
        "simulate", "--system", "shade[coverage_flor=0.05]", "--nodes", "2", "--n", "400",
        "--sample-bytes", "1000", "--cache-frac", "0.1",
    )  # fmt: skip
    assert code == 2 and "system 'shade' has no option 'coverage_flor'" in out
