"""The cache-size advisor: knee, target answer, bounds, bytes and coverage on a real small set."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from hotset.data import SynthConfig, make_synth
from hotset.errors import HotsetError
from hotset.sim.advise import advise, knee, smallest_reaching


def test_knee_is_the_point_farthest_above_the_chord() -> None:
    assert knee([0.1, 0.2, 0.4, 0.8], [0.1, 0.6, 0.7, 0.8]) == 0.2
    assert knee([0.1, 0.2, 0.4, 0.8], [0.1, 0.2, 0.4, 0.8]) is None  # straight: no knee
    noisy = [0.049, 0.1, 0.2, 0.399, 0.599, 0.799]  # MinIO on digits: a line plus noise
    assert knee([0.05, 0.1, 0.2, 0.4, 0.6, 0.8], noisy) is None
    assert knee([0.05, 0.1, 0.2, 0.4, 0.6, 0.8], noisy, min_gap=0.0) is not None  # noise alone
    assert knee([0.1, 0.2, 0.4], [0.5, 0.5, 0.5]) is None  # flat
    assert knee([0.1, 0.8], [0.1, 0.9]) is None  # two points make no curve
    # saturating: the knee is where the curve bends, not an end point
    assert knee([0.1, 0.2, 0.3, 0.4, 0.6, 0.8], [0.1, 0.3, 0.5, 0.9, 0.95, 0.96]) == 0.4


def test_smallest_reaching() -> None:
    assert smallest_reaching([0.1, 0.2, 0.4], [0.3, 0.81, 0.9], 0.8) == 0.2
    assert smallest_reaching([0.1, 0.2], [0.3, 0.5], 0.8) is None
    assert smallest_reaching([0.4, 0.1, 0.2], [0.9, 0.3, 0.8], 0.8) == 0.2  # order-free, >=


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("advise") / "ds"
    make_synth(path, SynthConfig(n=300, image_size=8, classes=3, seed=5), workers=1)
    return path


FRACS = [0.4, 0.1, 0.2, 0.05, 0.8]


@pytest.fixture(scope="module")
def result(dataset: Path) -> dict[str, Any]:
    return advise(
        dataset, systems=["lru", "minio", "shade"], fracs=[*FRACS, 0.2], epochs=3, target=0.3
    )


def test_every_cell_once_sorted(result: dict[str, Any]) -> None:
    cells = [(r["system"], r["cache_frac"]) for r in result["table"]]
    assert cells == [(s, f) for s in ("lru", "minio", "shade") for f in sorted(FRACS)]


def test_belady_bounds_every_system_at_every_size(result: dict[str, Any]) -> None:
    rows = result["table"]
    for r in rows:
        assert 0 <= r["exact_hit_ratio_all"] <= r["belady_hit_ratio_all"] + 1e-9, r
        assert r["substitution_ratio"] == 0  # reported apart, never folded into hits
    # the bound grows with the cache, per system
    for system in ("lru", "minio", "shade"):
        bound = [r["belady_hit_ratio_all"] for r in rows if r["system"] == system]
        assert bound == sorted(bound)


def test_coverage_reads_and_bytes_are_reported(result: dict[str, Any], dataset: Path) -> None:
    from hotset.sim.cell import train_sizes

    n_train = len(train_sizes(dataset, 0, 0.1))  # the validation split is held out
    assert 250 < n_train < 300
    train_bytes = result["train_bytes"]
    for r in result["table"]:
        assert 0 < r["unique_ids_trained_after_first"] <= n_train
        assert r["cache_bytes"] == math.floor(r["cache_frac"] * train_bytes)
        reads, nbytes = r["reads_per_epoch_after_first"], r["storage_bytes_per_epoch_after_first"]
        assert (reads == 0) == (nbytes == 0)
        if reads:  # bytes per read is a real sample size, not a count
            assert 0.2 * train_bytes / n_train < nbytes / reads < 5 * train_bytes / n_train
        if r["system"] in ("lru", "minio"):  # the baselines train every sample every epoch
            assert r["unique_ids_trained_after_first"] == n_train
    minio = [r for r in result["table"] if r["system"] == "minio"]
    assert [r["exact_hit_ratio"] for r in minio] == sorted(r["exact_hit_ratio"] for r in minio)
    assert abs(minio[-1]["exact_hit_ratio"] - 0.8) < 0.05  # MinIO hits ~ its share
    reads = [r["storage_bytes_per_epoch_after_first"] for r in minio]
    assert reads == sorted(reads, reverse=True)  # more cache, fewer bytes read


def test_knee_and_target_come_from_the_table(result: dict[str, Any]) -> None:
    fracs = sorted(FRACS)
    for s in result["summary"]:
        rows = [r for r in result["table"] if r["system"] == s["system"]]
        hits = [r["exact_hit_ratio"] for r in rows]
        assert s["knee"] is None or s["knee"] in fracs[1:-1]  # a grid point, never an end
        assert s["knee"] == knee(fracs, hits)
        need = s["size_for_0.3"]
        reaching = [f for f, h in zip(fracs, hits, strict=True) if h >= 0.3]
        assert need == (min(reaching) if reaching else None)
        if need is not None:  # the smallest: every smaller size misses the target
            assert all(h < 0.3 for f, h in zip(fracs, hits, strict=True) if f < need)
            assert s["bytes_for_0.3"] == math.floor(need * result["train_bytes"])
        else:
            assert s["bytes_for_0.3"] is None
    summary = {s["system"]: s for s in result["summary"]}
    assert summary["minio"]["size_for_0.3"] == 0.4
    assert summary["lru"]["size_for_0.3"] != 0.05


def test_notes_say_it_is_modeled(result: dict[str, Any]) -> None:
    notes = " ".join(result["notes"])
    assert "Simulated" in notes and "2 ms per request" in notes and "Knee" in notes


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"systems": ["nope"]}, "unknown system 'nope'"),
        ({"systems": []}, "at least one system"),
        ({"fracs": []}, "at least one cache size"),
        ({"fracs": [0.0]}, r"fractions in \(0, 1\], got 0.0"),
        ({"fracs": [0.2, 1.5]}, "got 1.5"),
        ({"fracs": [float("nan")]}, "got nan"),
        ({"target": 2.0}, "target"),
        ({"epochs": 1}, "epochs"),
        ({"epochs": True}, "epochs"),
        ({"seed": -1}, "seed"),
        ({"latency_ms": -1.0}, "latency_ms"),
        ({"bandwidth_mb_s": 0.0}, "bandwidth_mb_s"),
    ],
)
def test_bad_input_is_named(dataset: Path, kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        advise(dataset, **kwargs)  # type: ignore[arg-type]


def test_a_missing_dataset(tmp_path: Path) -> None:
    with pytest.raises(HotsetError, match=r"nothing.*does not exist"):
        advise(tmp_path / "nothing")
    with pytest.raises(HotsetError, match="manifest"):
        advise(tmp_path, systems=["lru"], fracs=[0.5])  # a directory, but no data set


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from packed_support import packed_synth

    return packed_synth(tmp_path_factory.mktemp("advise-packed") / "ds", n=400, seed=3)


@pytest.mark.slow
def test_no_system_shows_exact_hits_above_their_bound(packed: Path) -> None:
    """Systems that read ahead (chunks, ranged reads, slots, loads) and substitute: their
    first uses of bytes read ahead are fetched ahead, so exact hits stay under the bound
    of the same epochs and the whole run's under Belady's."""
    systems = ["scout", "quiver", "brand", "shade", "icache", "impact", "lru"]
    result = advise(packed, systems=systems, fracs=[0.1, 0.3], epochs=3, target=0.5)
    ahead = {}
    for r in result["table"]:
        assert r["exact_hit_ratio"] <= r["exact_hit_bound"] + 1e-9, r
        assert r["exact_hit_ratio_all"] <= r["belady_hit_ratio_all"] + 1e-9, r
        served = r["exact_hit_ratio"] + r["substitution_ratio"] + r["fetched_ahead_ratio"]
        assert served <= 1 + 1e-9
        ahead[r["system"]] = max(ahead.get(r["system"], 0.0), r["fetched_ahead_ratio"])
    # what reads ahead says so; what only caches on demand never does
    assert ahead["scout"] > 0.5 and ahead["brand"] > 0 and ahead["quiver"] > 0
    assert ahead["lru"] == 0 and ahead["shade"] == 0
