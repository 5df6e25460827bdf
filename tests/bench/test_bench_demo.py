"""The headline demo: every row trains through a real loader and counts what storage saw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hotset.bench.demo import run
from hotset.cli import main
from hotset.errors import HotsetError


def test_rows_count_reads_and_hits_consistently(tmp_path: Path) -> None:
    result = run(
        out=tmp_path,
        n=300,
        epochs=2,
        cache_frac=1.0,
        systems=("pytorch", "lru"),
        workers=0,
        batch_size=64,
        latency_ms=0.0,
    )
    rows = {r["system"]: r for r in result["table"]}
    assert list(rows) == ["torch", "pytorch", "lru"]
    n_train = result["params"]["n_train"]
    # no cache: every sample is read every epoch, through either loader
    assert rows["torch"]["storage_reads_per_epoch"] == n_train
    assert rows["pytorch"]["storage_reads_per_epoch"] == n_train
    assert rows["pytorch"]["exact_hit_ratio"] == 0.0
    # a cache that holds everything: epoch 1 reads all, epoch 2 hits all
    assert rows["lru"]["storage_reads_epoch1"] == n_train
    assert rows["lru"]["exact_hit_ratio"] == 1.0
    assert rows["lru"]["storage_reads_per_epoch"] == n_train / 2
    # coverage beside the hit ratio: every system trains every sample each epoch
    for row in rows.values():
        assert row["unique_ids_trained_per_epoch"] == n_train
    for row in rows.values():
        assert 0.0 <= row["val_accuracy"] <= 1.0
        assert row["samples_per_s"] > 0
        assert 0.0 <= row["stall_share"] <= 1.0
    assert rows["torch"]["speedup_vs_torch"] == 1.0


def test_same_seed_gives_the_same_model_whatever_the_loader(tmp_path: Path) -> None:
    # pytorch (no cache) and lru at a full cache read the same random order, so
    # training sees identical batches and ends at the same accuracy
    result = run(
        out=tmp_path, n=300, epochs=1, cache_frac=1.0, systems=("pytorch", "lru"), workers=0
    )
    accs = {r["system"]: r["val_accuracy"] for r in result["table"]}
    assert accs["pytorch"] == accs["lru"]


def test_bad_cache_fraction_is_refused_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(HotsetError, match="cache-frac"):
        run(out=tmp_path, n=300, cache_frac=1.5)
    assert not any(tmp_path.iterdir())


def test_cli_prints_the_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    main(
        [
            "demo",
            "--out",
            str(out),
            "--n",
            "300",
            "--epochs",
            "1",
            "--systems",
            "lru",
            "--workers",
            "0",
            "--latency-ms",
            "0",
            "--cache-frac",
            "1.0",
        ]
    )
    captured = capsys.readouterr()
    printed = captured.out
    assert "samples/s" in printed and "lru" in printed and "torch" in printed
    # progress per system and epoch on stderr, and a plot next to the JSON
    assert "lru epoch 1/1: exact hits" in captured.err and "torch epoch 1/1" in captured.err
    assert (out / "demo-results.png").stat().st_size > 10_000
    lines = printed.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("system"))
    rows = lines[header + 2 : header + 4]  # torch (no hit ratio: a dash) and lru
    assert [r.split()[0] for r in rows] == ["torch", "lru"]
    assert all(len(r) == len(lines[header]) for r in rows)  # columns line up
    doc = json.loads((out / "demo-results.json").read_text())
    assert [r["system"] for r in doc["table"]] == ["torch", "lru"]
