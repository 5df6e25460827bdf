"""``hotset stores`` and ``--store PRESET`` on every command that models storage.

Each command run here is as small as it allows; what is checked is that the preset
reaches the store model (the run's own config/params) and that the output names it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli_support import run_cli
from hotset.cli import cli
from hotset.data import SynthConfig, make_synth
from hotset.storage.presets import PRESETS, get_preset

NFS = get_preset("nfs-10gbe")
NFS_LINE = "store: nfs-10gbe (2 ms, 1250 MB/s, 8 in flight)"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli_stores") / "ds"
    make_synth(path, SynthConfig(n=200, image_size=8, classes=3, seed=4), workers=1)
    return path


def test_stores_lists_every_preset_with_its_figures_and_source() -> None:
    code, out = run_cli("stores")
    assert code == 0, out
    for preset in PRESETS.values():
        assert f"{preset.name}" in out and f"{preset.latency_ms:g} ms" in out
        assert preset.source in out
    rows = json.loads(CliRunner().invoke(cli, ["stores", "--json"]).stdout)
    assert [r["name"] for r in rows] == list(PRESETS)
    assert rows[0]["bandwidth_mb_s"] == next(iter(PRESETS.values())).bandwidth_mb_s


def _live(data: Path, *extra: str) -> dict[str, object]:
    args = ["simulate", "--system", "lru", "--dataset", str(data), "--cache-frac", "0.3"]
    result = CliRunner().invoke(cli, [*args, "--epochs", "2", *extra, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, object] = json.loads(result.stdout)
    return doc


def test_simulate_system_models_the_preset_and_reports_it(data: Path) -> None:
    doc = _live(data, "--store", "nfs-10gbe")
    config = doc["config"]
    assert isinstance(config, dict)
    assert (config["latency_ms"], config["bandwidth_mb_s"], config["concurrency"]) == (
        NFS.latency_ms,
        NFS.bandwidth_mb_s,
        NFS.max_concurrency,
    )
    assert doc["store"] == {
        "preset": "nfs-10gbe",
        "latency_ms": 2.0,
        "bandwidth_mb_s": 1250.0,
        "max_concurrency": 8,
    }


def test_simulate_explicit_values_override_the_preset(data: Path) -> None:
    doc = _live(data, "--store", "s3-small", "--latency-ms", "1", "--concurrency", "2")
    config = doc["config"]
    assert isinstance(config, dict)
    s3 = get_preset("s3-small")
    assert (config["latency_ms"], config["bandwidth_mb_s"], config["concurrency"]) == (
        1.0,
        s3.bandwidth_mb_s,
        2,
    )


def test_simulate_default_is_unchanged_and_stated(data: Path) -> None:
    doc = _live(data)
    config = doc["config"]
    assert isinstance(config, dict)
    assert (config["latency_ms"], config["bandwidth_mb_s"], config["concurrency"]) == (2, 100, 4)
    code, out = run_cli(
        "simulate", "--system", "lru", "--dataset", str(data), "--cache-frac", "0.3",
        "--epochs", "2", "--store", "nfs-10gbe",
    )  # fmt: skip
    assert code == 0, out
    assert NFS_LINE in out
    code, out = run_cli(
        "simulate", "--system", "lru", "--dataset", str(data), "--cache-frac", "0.3",
        "--epochs", "2",
    )  # fmt: skip
    assert "store: latency 2 ms, 100 MB/s, 4 in flight (no preset)" in out


def test_simulate_store_outside_system_mode_and_unknown_presets_fail(data: Path) -> None:
    code, out = run_cli("simulate", "--sampler", "random", "--n", "10", "--policy", "lru",
                        "--cache-items", "2", "--store", "nfs-10gbe")  # fmt: skip
    assert code == 2 and "--store goes with --system" in out, out
    code, out = run_cli(
        "simulate", "--system", "lru", "--dataset", str(data), "--cache-frac", "0.3",
        "--store", "tape",
    )  # fmt: skip
    assert code == 2 and "'tape'" in out and "nfs-10gbe" in out, out


def test_advise_models_the_preset_and_reports_it(data: Path) -> None:
    args = ["advise", "--dataset", str(data), "--systems", "lru", "--sizes", "0.3"]
    result = CliRunner().invoke(cli, [*args, "--epochs", "2", "--store", "nfs-10gbe", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["store"]["preset"] == "nfs-10gbe"
    params = doc["params"]
    assert (params["latency_ms"], params["bandwidth_mb_s"], params["concurrency"]) == (
        2.0,
        1250.0,
        8,
    )
    assert "1250 MB/s, 8 requests in flight" in doc["notes"][0]
    code, out = run_cli(*args, "--epochs", "2", "--store", "nfs-10gbe", "--latency-ms", "4")
    assert code == 0, out
    assert "store: nfs-10gbe (4 ms, 1250 MB/s, 8 in flight)" in out


def test_advise_default_is_unchanged_and_stated(data: Path) -> None:
    code, out = run_cli(
        "advise", "--dataset", str(data), "--systems", "lru", "--sizes", "0.3", "--epochs", "2"
    )
    assert code == 0, out
    assert "4 requests in flight" in out
    assert "store: latency 2 ms, 100 MB/s, 4 in flight (no preset)" in out


_LOADER = (
    "bench", "loader", "--n", "200", "--epochs", "1", "--workers", "0", "--batch-size", "32",
    "--compute-ms", "0", "--systems", "pytorch",
)  # fmt: skip


def test_bench_loader_models_the_preset_and_reports_it(tmp_path: Path) -> None:
    code, out = run_cli(*_LOADER, "--root", str(tmp_path), "--store", "nfs-10gbe")
    assert code == 0, out
    assert NFS_LINE in out
    doc = json.loads((tmp_path / "benchmarks" / "results" / "loader.json").read_text())
    result = doc["result"]
    assert result["store"] == [
        {"preset": "nfs-10gbe", "latency_ms": 2.0, "bandwidth_mb_s": 1250.0, "max_concurrency": 8}
    ]
    params = result["runs"][0]["params"]
    assert (params["latency_ms"], params["bandwidth_mb_s"], params["concurrency"]) == (
        2.0,
        1250.0,
        8,
    )
    assert {row["latency_ms"] for row in result["table"]} == {2.0}


def test_bench_loader_explicit_latencies_override_the_preset(tmp_path: Path) -> None:
    code, out = run_cli(
        *_LOADER, "--root", str(tmp_path), "--store", "s3-small", "--latency-ms", "0,1",
        "--bandwidth-mb-s", "50",
    )  # fmt: skip
    assert code == 0, out
    assert "store: s3-small (0 ms, 50 MB/s, 16 in flight); s3-small (1 ms, 50 MB/s" in out
    doc = json.loads((tmp_path / "benchmarks" / "results" / "loader.json").read_text())
    assert [run["params"]["bandwidth_mb_s"] for run in doc["result"]["runs"]] == [50.0, 50.0]


def test_bench_loader_without_a_preset_keeps_an_unlimited_link(tmp_path: Path) -> None:
    code, out = run_cli(*_LOADER, "--root", str(tmp_path), "--latency-ms", "0")
    assert code == 0, out
    assert "store: latency 0 ms, unlimited bandwidth, 4 in flight (no preset)" in out
    doc = json.loads((tmp_path / "benchmarks" / "results" / "loader.json").read_text())
    params = doc["result"]["runs"][0]["params"]
    assert params["bandwidth_mb_s"] is None and params["concurrency"] == 4


def test_bench_brand_models_the_preset_and_reports_it(tmp_path: Path) -> None:
    code, out = run_cli(
        "bench", "brand", "--root", str(tmp_path), "--store", "nfs-10gbe", "--latency-ms", "0",
        "--cache-fracs", "0.3", "--chunk-sizes", "32", "--n", "256", "--epochs", "1",
        "--workers", "0", "--no-progress",
    )  # fmt: skip
    assert code == 0, out
    assert "store: nfs-10gbe (0 ms, 1250 MB/s, 8 in flight)" in out
    doc = json.loads((tmp_path / "benchmarks" / "results" / "brand.json").read_text())
    result = doc["result"]
    assert result["store"][0]["preset"] == "nfs-10gbe"
    assert (result["params"]["concurrency"], result["params"]["bandwidth_mb_s"]) == (8, 1250.0)
    assert "8 requests in flight across all workers, one 1250 MB/s link" in result["notes"][0]


def _hitratio(tmp_path: Path, *extra: str) -> dict[str, object]:
    args = ["bench", "hitratio", "--workloads", "synth", "--synth-n", "200", "--systems", "lru"]
    args += ["--fracs", "0.3", "--epochs", "2", "--data-dir", str(tmp_path / "data")]
    result = CliRunner().invoke(cli, [*args, "--root", str(tmp_path), *extra, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, object] = json.loads(result.stdout)
    return doc


def test_bench_hitratio_models_the_preset_and_keeps_its_default(tmp_path: Path) -> None:
    s3 = _hitratio(tmp_path, "--store", "s3-small")
    plain = _hitratio(tmp_path)
    assert s3["params"]["store"]["preset"] == "s3-small"  # type: ignore[index]
    assert plain["params"]["store"] == {  # type: ignore[index]
        "preset": None,
        "latency_ms": 2.0,
        "bandwidth_mb_s": 100.0,
        "max_concurrency": 4,
    }
    # the same decisions, read from a slower store: the modeled epoch takes longer
    (fast,), (slow,) = plain["table"], s3["table"]  # type: ignore[misc]
    assert slow["exact_hit_ratio"] == fast["exact_hit_ratio"]
    assert slow["reads_per_epoch_after_first"] == fast["reads_per_epoch_after_first"]
    assert slow["modeled_epoch_seconds_after_first"] > fast["modeled_epoch_seconds_after_first"]
    assert "s3-small (30 ms, 1250 MB/s, 16 in flight)" in s3["notes"][0]  # type: ignore[index]


def _train(tmp_path: Path, *extra: str) -> dict[str, object]:
    args = ["bench", "train", "--workloads", "synth", "--synth-n", "300", "--systems", "pytorch"]
    args += ["--seeds", "0", "--epochs", "2", "--data-dir", str(tmp_path / "data")]
    result = CliRunner().invoke(cli, [*args, "--root", str(tmp_path), *extra])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("store: "), result.stdout
    doc: dict[str, object] = json.loads(
        (tmp_path / "benchmarks" / "results" / "train.json").read_text()
    )["result"]
    return doc


def test_bench_train_models_the_preset_and_keeps_its_default(tmp_path: Path) -> None:
    plain = _train(tmp_path)
    s3 = _train(tmp_path, "--store", "s3-small", "--concurrency", "2")
    assert plain["params"]["store"]["latency_ms"] == 2.0  # type: ignore[index]
    assert s3["params"]["store"] == {  # type: ignore[index]
        "preset": "s3-small",
        "latency_ms": 30.0,
        "bandwidth_mb_s": 1250.0,
        "max_concurrency": 2,
    }
    (fast,), (slow,) = plain["table"], s3["table"]  # type: ignore[misc]
    assert slow["final_acc_mean"] == fast["final_acc_mean"]  # the same training
    assert slow["modeled_seconds_total_mean"] > fast["modeled_seconds_total_mean"]
