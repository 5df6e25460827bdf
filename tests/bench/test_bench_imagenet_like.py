"""The ``imagenet-like`` workload (ImageNet-like byte sizes) runs in the benches that take workloads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hotset.cli import main


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One generated copy (~215 MB) shared by this module's bench runs."""
    return tmp_path_factory.mktemp("imagenet-like-data")


def _result(root: Path, name: str) -> dict[str, object]:
    doc = json.loads((root / "benchmarks" / "results" / f"{name}.json").read_text())
    result = doc["result"]
    assert isinstance(result, dict)
    return result


def test_hitratio_counts_bytes_of_the_imagenet_like_set(data_dir: Path, tmp_path: Path) -> None:
    main(
        [
            "bench", "hitratio", "--root", str(tmp_path), "--data-dir", str(data_dir),
            "--workloads", "imagenet-like", "--systems", "lru,minio", "--fracs", "0.2",
            "--epochs", "2", "--json",
        ]
    )  # fmt: skip
    table = _result(tmp_path, "hitratio")["table"]
    assert isinstance(table, list)
    assert {(r["workload"], r["system"]) for r in table} == {
        ("imagenet-like", "lru"),
        ("imagenet-like", "minio"),
    }
    # minio pins a fifth of the bytes: with sizes spread out it still serves some reads
    minio = next(r for r in table if r["system"] == "minio")
    assert 0.05 < minio["exact_hit_ratio"] < 0.6


def test_train_learns_on_the_imagenet_like_set(data_dir: Path, tmp_path: Path) -> None:
    main(
        [
            "bench", "train", "--root", str(tmp_path), "--data-dir", str(data_dir),
            "--workloads", "imagenet-like", "--systems", "pytorch", "--seeds", "0",
            "--epochs", "2", "--compute-ms", "5", "--json",
        ]
    )  # fmt: skip
    runs = _result(tmp_path, "train")["runs"]
    assert isinstance(runs, list) and len(runs) == 1
    # ten balanced classes: chance is 0.1; the padded pixels are synth's, so it learns
    assert runs[0]["workload"] == "imagenet-like" and runs[0]["final_val_accuracy"] > 0.3
