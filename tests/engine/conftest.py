"""Fixtures for the engine tests: the test-only chunked systems, registered per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chunked_system import registered
from hotset.data import SynthConfig, make_synth
from hotset.data.chunks import pack_dataset


@pytest.fixture(autouse=True)
def chunked_systems() -> Iterator[None]:
    """``chunk_lru``, ``chunk_lru_prefetch`` and ``split_lru`` exist for the test, and only for it."""
    with registered():
        yield


@pytest.fixture(scope="session")
def packed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 small PNGs, packed 8 per chunk in a seeded shuffle."""
    path = tmp_path_factory.mktemp("engineds") / "ds"
    make_synth(path, SynthConfig(n=200, image_size=8, classes=4, seed=3), workers=1)
    pack_dataset(path, chunk_size=8, shuffle_seed=1)
    return path
