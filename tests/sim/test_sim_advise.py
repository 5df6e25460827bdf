"""The cache-size advisor: knee, target answer, bounds and coverage on a real small data set."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotset.data import SynthConfig, make_synth
from hotset.errors import HotsetError
from hotset.sim.advise import advise, knee, smallest_reaching


def test_knee_is_the_point_farthest_above_the_chord() -> None:
    assert knee([0.1, 0.2, 0.4, 0.8], [0.1, 0.6, 0.7, 0.8]) == 0.2
    assert knee([0.1, 0.2, 0.4, 0.8], [0.1, 0.2, 0.4, 0.8]) is None  # straight: no knee
    assert knee([0.1, 0.2, 0.4], [0.5, 0.5, 0.5]) is None  # flat


def test_smallest_reaching() -> None:
    assert smallest_reaching([0.1, 0.2, 0.4], [0.3, 0.81, 0.9], 0.8) == 0.2
    assert smallest_reaching([0.1, 0.2], [0.3, 0.5], 0.8) is None


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("advise") / "ds"
    make_synth(path, SynthConfig(n=300, image_size=8, classes=3, seed=5), workers=1)
    return path


def test_advise_reports_every_cell_with_its_bound_and_coverage(dataset: Path) -> None:
    result = advise(dataset, systems=["lru", "minio"], fracs=[0.4, 0.1, 0.2], epochs=3)
    rows = result["table"]
    assert [(r["system"], r["cache_frac"]) for r in rows] == [
        ("lru", 0.1),
        ("lru", 0.2),
        ("lru", 0.4),
        ("minio", 0.1),
        ("minio", 0.2),
        ("minio", 0.4),
    ]
    for r in rows:
        assert r["exact_hit_ratio_all"] <= r["belady_hit_ratio_all"] + 1e-9  # the bound holds
        assert r["unique_ids_trained_after_first"] > 0 and r["substitution_ratio"] == 0
    minio = [r["exact_hit_ratio"] for r in rows if r["system"] == "minio"]
    assert minio == sorted(minio) and abs(minio[-1] - 0.4) < 0.05  # MinIO hits ~ its share
    summary = {s["system"]: s for s in result["summary"]}
    assert summary["minio"]["size_for_0.8"] is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"systems": ["nope"]}, "unknown system"),
        ({"fracs": [0.0]}, "fractions in"),
        ({"fracs": [1.5]}, "fractions in"),
        ({"target": 2.0}, "target"),
        ({"epochs": 1}, "epochs"),
    ],
)
def test_bad_input_is_named(dataset: Path, kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        advise(dataset, **kwargs)  # type: ignore[arg-type]


def test_a_missing_dataset(tmp_path: Path) -> None:
    with pytest.raises(HotsetError, match="does not exist"):
        advise(tmp_path / "nothing")
