"""``hotset bench pipeline``: every row, its keys and ratios, at a tiny CPU scale; and the
GPU script's own command, run here with tiny sizes on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli_support import run_cli

ROOT = Path(__file__).resolve().parents[2]
N = 48
TINY = ["--n", str(N), "--image-size", "64x48", "--batch-size", "8", "--epochs", "2",
        "--workers", "2", "--model", "small", "--crop", "32", "--device", "cpu",
        "--cache-frac", "0.3"]  # fmt: skip
BASELINES = ["model-only", "no-io", "torch"]
KEYS = {"name", "samples_per_s", "samples_per_s_overall", "vs_model_only", "vs_no_io",
        "stall_share", "cpu_s_per_sample_main", "cpu_s_per_sample_workers",
        "storage_requests_per_epoch", "storage_mb_per_epoch", "every_id_every_epoch"}  # fmt: skip


def _check_table(table: list[dict[str, Any]], systems: list[str]) -> None:
    assert [row["name"] for row in table] == BASELINES + [
        f"{s}/{p}" for s in systems for p in ("worker", "device")
    ]
    n = N
    rows = {row["name"]: row for row in table}
    top, ceiling = rows["model-only"]["samples_per_s"], rows["no-io"]["samples_per_s"]
    for row in table:
        assert set(row) >= KEYS, (row["name"], KEYS - set(row))
        assert row["samples_per_s"] > 0
        assert row["vs_model_only"] == round(row["samples_per_s"] / top, 3)
        assert row["vs_no_io"] == round(row["samples_per_s"] / ceiling, 3)
        if row["name"] != "model-only":
            assert row["every_id_every_epoch"] is True, row["name"]  # each sample, each epoch
            assert 0 <= row["stall_share"] <= 1
            assert row["cpu_s_per_sample_workers"] > 0  # two real worker processes decoded
    assert rows["no-io"]["storage_requests_per_epoch"] == 0
    assert rows["torch"]["storage_requests_per_epoch"] == n
    if "pytorch" in systems:
        assert rows["pytorch/device"]["storage_requests_per_epoch"] == n  # no cache: each read
        assert rows["pytorch/device"]["exact_hit_ratio"] == 0
    assert rows["scout/device"]["exact_hit_ratio"] > 0
    for key in ("storage_requests_per_epoch", "exact_hit_ratio"):  # the path moves no bytes
        assert rows["scout/worker"][key] == rows["scout/device"][key]


def test_every_row_with_its_ratios_as_json(tmp_path: Path) -> None:
    code, out = run_cli("bench", "pipeline", "--root", str(tmp_path), "--json", *TINY)
    assert code == 0, out
    result = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    _check_table(result["table"], ["pytorch", "quiver", "scout"])
    params = result["params"]
    assert params["device"] == "cpu" and params["model"] == "small"
    assert params["images"]["n"] == N and params["store"]["preset"] == "cloud-nas"
    assert (tmp_path / "benchmarks" / "results" / "pipeline.json").is_file()


def test_the_gpu_script_runs_its_command_at_a_tiny_scale(tmp_path: Path) -> None:
    """benchmarks/gpu/pipeline.sh with its sizes overridden: the same code path the H100
    run takes, writing pipeline-gpu.json under ROOT with the device named."""
    env = {**os.environ, "PYTHON": sys.executable, "N": str(N), "IMAGE_SIZE": "64x48",
           "BATCH": "8", "WORKERS": "2", "EPOCHS": "2", "MODEL": "small", "CROP": "32",
           "DEVICE": "cpu", "ROOT": str(tmp_path), "DATA": str(tmp_path / "photos"),
           "SYSTEMS": "scout", "CACHE_FRAC": "0.3"}  # fmt: skip
    script = ROOT / "benchmarks" / "gpu" / "pipeline.sh"
    done = subprocess.run(
        ["bash", str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pipeline: scout/device:" in done.stderr  # progress, row by row
    doc = json.loads((tmp_path / "benchmarks" / "results" / "pipeline-gpu.json").read_text())
    assert doc["command"].startswith(f"hotset bench pipeline --n {N} ")
    assert doc["result"]["params"]["device_name"].startswith("CPU")
    _check_table(doc["result"]["table"], ["scout"])
    assert (tmp_path / "photos" / "manifest.csv").is_file()  # DATA keeps the JPEGs


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--image-size", "500"], "WIDTHxHEIGHT"),
        (["--paths", "gpu"], "paths must be among worker, device"),
        (["--systems", "nosuch"], "nosuch"),
        (["--device", "cuda:x"], "device"),
        (["--cache-frac", "0.05"], "smaller than one batch needs"),
    ],
)
def test_bad_options_fail_before_any_work(tmp_path: Path, args: list[str], match: str) -> None:
    code, out = run_cli("bench", "pipeline", "--root", str(tmp_path), *TINY, *args)
    assert code == 2 and match in out, out
    assert not (tmp_path / "benchmarks").exists()


def test_options_left_unset_take_the_device_s_defaults() -> None:
    from hotset.bench.pipeline_options import PipelineOptions
    from hotset.errors import HotsetError

    opts = PipelineOptions(batch_size=8, image_size="64x48")
    cpu, gpu = opts.sizes("cpu"), opts.sizes("cuda")
    assert (cpu.n, cpu.batch_size, cpu.workers, cpu.model) == (256, 8, 2, "small")
    assert (gpu.n, gpu.batch_size, gpu.workers, gpu.model) == (10_000, 8, 14, "auto")
    photos = opts.photos(cpu)
    assert (photos.width, photos.height, photos.classes) == (64, 48, 10)
    with pytest.raises(HotsetError, match="WIDTHxHEIGHT"):
        PipelineOptions(image_size="500")
    with pytest.raises(HotsetError, match="paths must be among worker, device"):
        PipelineOptions(paths=("gpu",))
