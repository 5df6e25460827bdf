"""Fixtures for the loader tests: a tiny real dataset on disk.

The dataset is generated once per session (200 PNGs of 8x8 pixels, a few kB in
all). The Redis servers come from tests/conftest.py, shared with the cache-store
tests, so one session starts one server and one cluster.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hotset.data import SynthConfig, make_synth


@pytest.fixture(scope="session")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("torchds") / "ds"
    make_synth(path, SynthConfig(n=200, image_size=8, classes=4, seed=3), workers=1)
    return path


@pytest.fixture(scope="session")
def photo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 photo-like JPEGs of 64x48 (a quarter portrait), for the image paths' tests."""
    from hotset.data.photos import PhotoConfig, make_photos

    path = tmp_path_factory.mktemp("photos") / "ds"
    make_photos(path, PhotoConfig(n=40, width=64, height=48, portrait=0.25, classes=4), workers=1)
    return path
