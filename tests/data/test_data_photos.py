"""make_photos: photo-like JPEGs of ImageNet's dimensions and sizes, a hotset data set."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import hotset
from hotset.data import pack_dataset
from hotset.data.photos import PhotoConfig, make_photos
from hotset.errors import HotsetError


def test_imagenet_sized_photos_weigh_about_a_hundred_kilobytes(tmp_path: Path) -> None:
    cfg = PhotoConfig(n=12, portrait=0.5, classes=3, seed=4)
    manifest = make_photos(tmp_path / "ds", cfg, workers=1)
    mean = manifest.total_bytes / len(manifest)
    assert 90_000 < mean < 120_000, mean
    assert manifest.meta["photos"]["mean_bytes"] == round(mean)
    data = hotset.open_dataset(tmp_path / "ds", decode="bytes")
    shapes = set()
    for i in range(len(manifest)):
        blob, label = data[i]  # the manifest's size and xxh3 are checked by the read
        image = Image.open(io.BytesIO(blob))
        assert image.format == "JPEG" and image.mode == "RGB"
        shapes.add(image.size)
        assert label == int(cfg.labels()[i])
    assert shapes == {(500, 375), (375, 500)}
    assert sorted(np.bincount(manifest.labels).tolist()) == [4, 4, 4]


def test_the_bytes_depend_on_the_arguments_only(tmp_path: Path) -> None:
    """A pool of processes (256 images and more) writes what one process writes."""
    cfg = PhotoConfig(n=300, width=24, height=16, classes=5, seed=1)
    one = make_photos(tmp_path / "one", cfg, workers=1)
    two = make_photos(tmp_path / "two", cfg, workers=2)
    assert one.hashes == two.hashes and one.keys == two.keys
    other = make_photos(tmp_path / "other", PhotoConfig(n=300, width=24, height=16, seed=2))
    assert other.hashes != one.hashes
    pack_dataset(tmp_path / "two", chunk_size=64, shuffle_seed=0)  # `hotset data pack` takes it
    packed = hotset.open_dataset(tmp_path / "two", decode="bytes")
    assert (
        packed.layout is not None and packed[7][0] == (tmp_path / "one" / one.keys[7]).read_bytes()
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 0}, "n must be an integer >= 1"),
        ({"quality": 100}, "quality must be an integer in 1..95"),
        ({"portrait": 2.0}, r"portrait must be a share in \[0, 1\]"),
        ({"width": 4}, "width must be an integer >= 8"),
    ],
)
def test_bad_options_are_named(kwargs: dict, match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        PhotoConfig(**kwargs)
