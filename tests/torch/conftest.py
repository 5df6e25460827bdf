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
