"""The headline demo: every row measured in each repeat, and a verdict the figures decide."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_support import run_cli
from hotset.bench.demo import verdict
from hotset.errors import HotsetError

PARAMS = {
    "store": {"preset": "cloud-nas", "latency_ms": 5.0, "bandwidth_mb_s": 380.0,
              "max_concurrency": 8},
    "mean_sample_bytes": 107_000,
    "n": 2000,
    "cache_frac": 0.2,
}  # fmt: skip


def _row(system: str, vs_torch: float, **extra: Any) -> dict[str, Any]:
    return {
        "system": system,
        "vs_torch": vs_torch,
        "vs_torch_min": vs_torch - 0.2,
        "vs_torch_max": vs_torch + 0.2,
        "vs_no_io": vs_torch / 3,
        "repeats": 3,
        "exact_hit_ratio": 0.1,
        "substitution_ratio": 0.8,
        "read_per_delivered": 1.0,
        "mb_read_per_epoch": 228.0,
        "requests_per_epoch": 1618,
        "sim_acc_delta_pt": 0.0,
        "sim_acc_noise_pt": 0.5,
        "sim_distinct_share": 1.0,
    } | extra


def test_the_winner_trains_every_sample_and_the_loser_is_explained() -> None:
    table = [
        _row("torch", 1.0),
        _row("shade", 4.0, sim_distinct_share=0.35),  # fastest, on a third of the data
        _row("quiver", 3.0),
        _row("brand", 0.8, read_per_delivered=5.3),
        _row("no-io", 4.5),
    ]
    text = verdict(table, PARAMS)
    assert "quiver wins: 3.00x a DataLoader tuned to the store's requests in flight" in text
    assert "(2.80-3.20 over 3 repeats)" in text and "100% coverage" in text
    # what the store moved, against the data set (2,000 x 107 kB): never "from its cache"
    assert "the store moved 228 MB an epoch (1.07x the 214 MB data set) in 1618 requests" in text
    assert "from its cache" not in text and "served" not in text
    assert "brand is slowest at 0.80x torch: it reads 5.3x the bytes it delivers" in text
    assert text.startswith("On cloud-nas (5 ms per request, 380.0 MB/s, 8 in flight)")


def test_a_subset_or_an_accuracy_loss_is_named_as_the_reason() -> None:
    table = [
        _row("quiver", 3.0),
        _row("shade", 0.9, sim_distinct_share=0.35),
        _row("impact", 2.0, sim_acc_delta_pt=-3.0),
    ]
    assert "shade is slowest at 0.90x torch: it trains only 35% of the samples" in verdict(
        table, PARAMS
    )
    table[1]["vs_torch"] = 5.0
    table[2]["vs_torch"] = 0.5
    text = verdict(table, PARAMS)
    assert "quiver wins" in text and "impact is slowest" in text and "-3.0 pt" in text


def test_no_system_rows_is_an_error() -> None:
    with pytest.raises(HotsetError, match="no system"):
        verdict([_row("torch", 1.0)], PARAMS)


def test_the_demo_prints_the_table_and_the_verdict_and_writes_json_and_png(
    tmp_path: Path,
) -> None:
    out = tmp_path / "demo"
    code, printed = run_cli(
        "demo", "--out", str(out), "--store", "nfs-10gbe", "--workload", "synth",
        "--n", "400", "--systems", "pytorch,quiver", "--repeats", "2", "--epochs", "2",
        "--sim-epochs", "1", "--workers", "2",
    )  # fmt: skip
    assert code == 0, printed
    assert "store: nfs-10gbe (2 ms, 1250 MB/s, 8 in flight)" in printed
    assert "repeat 2/2" in printed  # progress per repeat and row on stderr
    lines = printed.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("system"))
    rows = lines[header + 2 : header + 6]
    assert [r.split()[0] for r in rows] == ["torch", "pytorch", "quiver", "no-io"]
    assert "tuned to keep the store's" in printed and "ahead" in lines[header]
    assert all(len(r) == len(lines[header]) for r in rows)  # columns line up
    doc = json.loads((out / "demo-results.json").read_text())
    assert doc["verdict"] in printed and " wins: " in doc["verdict"]
    assert [r["system"] for r in doc["table"]] == ["torch", "pytorch", "quiver", "no-io"]
    assert all(r["repeats"] == 2 for r in doc["table"])
    assert (out / "demo-results.png").stat().st_size > 10_000


def test_a_bad_cache_fraction_is_refused_before_any_work(tmp_path: Path) -> None:
    code, printed = run_cli("demo", "--out", str(tmp_path / "d"), "--cache-frac", "1.5")
    assert code != 0 and "cache-frac" in printed
    assert not (tmp_path / "d" / "data").exists()
